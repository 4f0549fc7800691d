//! [`PgLog`]: the event log on PostgreSQL.

use crate::append::{self, seq_of, sql_seq, Attempt};
use crate::error::backend;
use crate::fast::{self, Called};
use crate::inner::{Inner, Listening, KNOWN_HEADS};
use crate::listen;
use crate::notify;
use crate::pool::Pool;
use crate::schema;
use crate::target::Target;
use ctxlog_core::{Envelope, Seq, SessionId};
use ctxlog_store::backend::{check_expected, repeated_id, Hub};
use ctxlog_store::record::{self, Chain};
use ctxlog_store::{
    AppendError, Appended, EventLog, Expected, Followable, NewEvent, OpenError, ReadError,
    Snapshot, Subscription,
};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

/// Events read per query.
const PAGE: i64 = 512;

/// Connections kept open per log (its handles share them): as many as
/// threads that append at once, so none connects again per append.
const KEEP_CONNECTIONS: usize = 16;

/// How a [`PgLog`] is opened.
#[derive(Debug, Clone, Default)]
pub struct PgOptions {
    /// The schema the tables live in (made when missing); `None`: the
    /// connection's `search_path` (`public` by default).
    pub schema: Option<String>,
}

/// The event log on PostgreSQL: the same records (bytes, CRC, chain),
/// expected versions, idempotent ids, snapshots and subscriptions as the
/// sled store, for any number of processes and hosts at once. Cloning
/// gives another handle on the same connections.
#[derive(Clone)]
pub struct PgLog {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for PgLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgLog({})", self.inner.pool.target())
    }
}

impl PgLog {
    /// Opens the log at `url` (a `postgresql://` connection string),
    /// applying the schema's migrations when needed.
    pub fn open(url: &str) -> Result<PgLog, OpenError> {
        PgLog::open_with(url, PgOptions::default())
    }

    /// [`PgLog::open`] with options.
    pub fn open_with(url: &str, options: PgOptions) -> Result<PgLog, OpenError> {
        let target = Target::parse(url).map_err(OpenError::InvalidConfig)?;
        PgLog::open_at(target, options)
    }

    /// [`PgLog::open_with`] of a connection string already parsed.
    pub fn open_at(target: Target, options: PgOptions) -> Result<PgLog, OpenError> {
        let channel = match &options.schema {
            Some(schema) => format!("ctxlog:{schema}"),
            None => "ctxlog".to_owned(),
        };
        let pool = Pool::new(target, options.schema, KEEP_CONNECTIONS);
        let mut client = pool.connect()?;
        schema::migrate(&mut client).map_err(|e| match e {
            schema::SchemaError::Sql(e) => {
                OpenError::Backend(backend(pool.target(), "cannot migrate the schema", e))
            }
            e => OpenError::InvalidConfig(format!("{}: {e}", pool.target())),
        })?;
        drop(client);
        Ok(PgLog {
            inner: Arc::new(Inner {
                pool,
                hub: Hub::default(),
                channel,
                listener: Mutex::new(None),
                known: Mutex::new(BTreeMap::new()),
                ringer: Mutex::new(None),
            }),
        })
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// Whether its connections are encrypted (TLS), as the server sees
    /// them.
    pub fn encrypted(&self) -> Result<bool, ReadError> {
        let row = self.inner.pool.with(|c| {
            c.query_opt(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .map_err(self.read_error("cannot ask about TLS"))
        })?;
        Ok(row.is_some_and(|r| r.get(0)))
    }

    /// The log's search index, in PostgreSQL's full-text search.
    pub fn search(&self) -> crate::search::PgSearch {
        crate::search::PgSearch::new(Arc::clone(&self.inner))
    }

    /// Where the log is (the connection string without its password).
    pub fn target(&self) -> String {
        self.inner.pool.target().to_string()
    }

    fn read_error(&self, what: &str) -> impl Fn(postgres::Error) -> ReadError + '_ {
        let what = what.to_owned();
        move |e| ReadError::Backend(backend(self.inner.pool.target(), &what, e))
    }

    /// One page of `session`'s records from `from`.
    fn page(&self, session: SessionId, from: Seq) -> Result<Vec<Envelope>, ReadError> {
        if i64::try_from(from).is_err() {
            // Past any seq the log can hold: nothing.
            return Ok(Vec::new());
        }
        let rows = self.inner.pool.with(|c| {
            c.query(
                "SELECT seq, record FROM ctxlog_events \
                 WHERE session = $1 AND seq >= $2 ORDER BY seq LIMIT $3",
                &[&session.0, &sql_seq(from)?, &PAGE],
            )
            .map_err(self.read_error("cannot read events"))
        })?;
        let mut out = Vec::with_capacity(rows.len());
        for (want, row) in (from..).zip(rows) {
            let seq = seq_of(row.get(0))?;
            if seq != want {
                return Err(ReadError::Lost {
                    session,
                    detail: format!(
                        "events {want}..{} are missing from the log (the next stored is {seq}); \
                         `ctxlog verify` lists what is damaged",
                        seq - 1
                    ),
                });
            }
            let decoded =
                record::decode(row.get(1), session, seq).map_err(|problem| ReadError::Corrupt {
                    session,
                    seq,
                    problem,
                })?;
            out.push(decoded.envelope);
        }
        Ok(out)
    }

    /// The chain of the record at (`session`, `seq`), if it is stored and
    /// sound.
    fn chain_at(&self, session: SessionId, seq: Seq) -> Result<Option<Chain>, ReadError> {
        let row = self.inner.pool.with(|c| {
            c.query_opt(
                "SELECT record FROM ctxlog_events WHERE session = $1 AND seq = $2",
                &[&session.0, &sql_seq(seq)?],
            )
            .map_err(self.read_error("cannot read a record"))
        })?;
        Ok(row.and_then(|r| record::decode(r.get(0), session, seq).ok().map(|d| d.chain)))
    }

    /// The kept snapshot of `session` of reducer `version`, when it is at
    /// or below the session's head, sound, and its chain still matches the
    /// log.
    fn snapshot(&self, session: SessionId, version: u32) -> Result<Option<Snapshot>, ReadError> {
        let head = self.head(session)?;
        let row = self.inner.pool.with(|c| {
            c.query_opt(
                "SELECT seq, value FROM ctxlog_snapshots WHERE session = $1 AND reducer = $2",
                &[&session.0, &(version as i32)],
            )
            .map_err(self.read_error("cannot read a snapshot"))
        })?;
        let Some(row) = row else { return Ok(None) };
        let seq = seq_of(row.get(0))?;
        if seq > head {
            return Ok(None);
        }
        match record::parse_snapshot_value(row.get(1)) {
            Some((chain, state)) if self.chain_at(session, seq)? == Some(chain) => {
                Ok(Some(Snapshot {
                    session,
                    head: seq,
                    version,
                    state: state.to_vec(),
                }))
            }
            _ => {
                tracing::warn!(%session, seq, "snapshot unusable; falling back to replay");
                Ok(None)
            }
        }
    }
}

impl PgLog {
    /// An append in one round trip (`fast.rs`), from the head this process
    /// last saw; `None` when it must take the slow path (ids already
    /// stored, a race on a unique key, a head that kept moving).
    fn append_fast(
        &self,
        session: SessionId,
        expected: Expected,
        events: &[NewEvent],
    ) -> Result<Option<Appended>, AppendError> {
        let inner = &self.inner;
        let target = inner.pool.target();
        let known = lock(&inner.known).get(&session).copied();
        inner.pool.with_conn(|conn| {
            let (mut at, mut fresh) = match (expected, known) {
                (Expected::NoStream, _) => ((0, record::genesis(session)), false),
                (_, Some(k)) => (k, false),
                (_, None) => (fast::head(conn, target, session)?, true),
            };
            for _ in 0..MOVES_BEFORE_SLOW_PATH {
                if check_expected(session, expected, at.0).is_err() {
                    if fresh {
                        // A conflict, or a retry of stored events: the slow
                        // path tells them apart.
                        return Ok(None);
                    }
                    at = fast::head(conn, target, session)?;
                    fresh = true;
                    continue;
                }
                match fast::call(conn, target, session, at, events)? {
                    Called::Stored(last, chain) => {
                        remember(&inner.known, session, (last, chain));
                        return Ok(Some(Appended {
                            session,
                            first: at.0 + 1,
                            last,
                            duplicate: false,
                        }));
                    }
                    Called::Moved(head, chain) => {
                        at = (head, chain);
                        fresh = true;
                    }
                    Called::TakeTheSlowPath => return Ok(None),
                }
            }
            Ok(None)
        })
    }

    /// An append in a transaction of its own (`append.rs`), which answers
    /// a retry of stored ids; tried twice, since a lost race on a unique
    /// key means another writer stored some of these ids meanwhile.
    fn append_slow(
        &self,
        session: SessionId,
        expected: Expected,
        events: &[NewEvent],
    ) -> Result<Appended, AppendError> {
        let inner = &self.inner;
        lock(&inner.known).remove(&session);
        for _ in 0..2 {
            let attempt = inner
                .pool
                .with(|c| append::append(c, inner.pool.target(), session, expected, events))?;
            if let Attempt::Done(done) = attempt {
                return Ok(done);
            }
        }
        Err(AppendError::WrongExpectedVersion {
            session,
            expected,
            actual: self.head(session)?,
        })
    }
}

impl PgLog {
    /// Hands a new head to the thread that wakes other processes
    /// (`notify.rs`), starting it on first use.
    fn ring(&self, session: SessionId, head: Seq) {
        let mut ringer = lock(&self.inner.ringer);
        if ringer.is_none() {
            *ringer = notify::start(Arc::downgrade(&self.inner));
        }
        if let Some(tx) = ringer.as_ref() {
            if tx.send((session, head)).is_err() {
                *ringer = None;
            }
        }
    }
}

/// How often the fast path follows a head that moved before it takes the
/// slow path, which queues on the session's lock.
const MOVES_BEFORE_SLOW_PATH: usize = 8;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps `head` as the one this process last saw of `session`.
fn remember(
    known: &Mutex<BTreeMap<SessionId, (Seq, Chain)>>,
    session: SessionId,
    head: (Seq, Chain),
) {
    let mut known = lock(known);
    if known.len() >= KNOWN_HEADS {
        known.clear();
    }
    known.insert(session, head);
}

impl EventLog for PgLog {
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, AppendError> {
        if events.is_empty() {
            return Err(AppendError::EmptyAppend);
        }
        if let Some(id) = repeated_id(&events) {
            return Err(AppendError::PartialDuplicate { id });
        }
        let done = match self.append_fast(session, expected, &events)? {
            Some(done) => done,
            None => self.append_slow(session, expected, &events)?,
        };
        if !done.duplicate {
            self.inner
                .hub
                .notify(&BTreeMap::from([(session, done.last)]));
            self.ring(session, done.last);
        }
        Ok(done)
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, ReadError>> + '_>, ReadError> {
        Ok(Box::new(Pages {
            log: self,
            session,
            next: from.max(1),
            buffer: VecDeque::new(),
            done: false,
        }))
    }

    fn head(&self, session: SessionId) -> Result<Seq, ReadError> {
        let row = self.inner.pool.with(|c| {
            c.query_opt(
                "SELECT seq FROM ctxlog_heads WHERE session = $1",
                &[&session.0],
            )
            .map_err(self.read_error("cannot read a head"))
        })?;
        row.map_or(Ok(0), |r| seq_of(r.get(0)))
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, ReadError> {
        self.inner.heads()
    }

    fn newest_snapshot(
        &self,
        session: SessionId,
        version: u32,
    ) -> Result<Option<Snapshot>, ReadError> {
        self.snapshot(session, version)
    }

    fn keeps_snapshots(&self) -> bool {
        true
    }

    fn keep_snapshot(&self, snapshot: Snapshot) -> Result<(), AppendError> {
        let session = snapshot.session;
        let Some(chain) = self.chain_at(session, snapshot.head)? else {
            return Ok(());
        };
        let value = record::snapshot_value(&chain, &snapshot.state);
        let target = self.inner.pool.target();
        self.inner.pool.with(|c| {
            c.execute(
                "INSERT INTO ctxlog_snapshots (session, reducer, seq, value) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (session, reducer) DO UPDATE SET seq = $3, value = $4 \
                 WHERE ctxlog_snapshots.seq <= $3",
                &[&session.0, &(snapshot.version as i32), &sql_seq(snapshot.head)?, &value],
            )
            .map_err(|e| AppendError::Backend(backend(target, "cannot save a snapshot", e)))
        })?;
        Ok(())
    }
}

impl Followable for PgLog {
    fn subscribe(&self) -> Subscription {
        let sub = self.inner.hub.subscribe();
        let mut listener = self
            .inner
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if listener.as_ref().is_none_or(Listening::stopped) {
            *listener = Some(listen::start(Arc::downgrade(&self.inner)));
        }
        sub
    }

    fn durable_heads(&self) -> Result<BTreeMap<SessionId, Seq>, ReadError> {
        Ok(self.sessions()?.into_iter().collect())
    }
}

/// A session's events read a page at a time.
struct Pages<'a> {
    log: &'a PgLog,
    session: SessionId,
    next: Seq,
    buffer: VecDeque<Envelope>,
    done: bool,
}

impl Iterator for Pages<'_> {
    type Item = Result<Envelope, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buffer.is_empty() && !self.done {
            match self.log.page(self.session, self.next) {
                Ok(page) => {
                    self.done = (page.len() as i64) < PAGE;
                    self.next += page.len() as Seq;
                    self.buffer = page.into();
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        self.buffer.pop_front().map(Ok)
    }
}
