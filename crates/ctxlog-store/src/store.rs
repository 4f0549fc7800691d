//! [`SledStore`]: the sled-backed [`EventLog`] with a single writer thread
//! that groups concurrent appends into one flush.

use crate::error::{Expected, StoreError};
use crate::record::{self, Chain, RecordProblem};
use crate::subscribe::{Hub, Subscription};
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use ctxlog_core::{
    Envelope, Event, EventId, Seq, SessionId, SessionState, TimestampMs, REDUCER_VERSION,
};
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// When an append is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// After the events are flushed to disk (default).
    Durable,
    /// Right after the write; flushed within `buffered_flush_ms`.
    Buffered,
}

/// How to open a store.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// The directory of the sled database.
    pub path: PathBuf,
    /// When appends are acknowledged.
    pub durability: Durability,
    /// Most appends grouped into one flush.
    pub max_group: usize,
    /// Capacity of the bounded append queue.
    pub queue: usize,
    /// In buffered mode, the longest time an acknowledged event stays unflushed.
    pub buffered_flush_ms: u64,
}

impl StoreConfig {
    /// Durable defaults for a database at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        StoreConfig {
            path: path.into(),
            durability: Durability::Durable,
            max_group: 256,
            queue: 1024,
            buffered_flush_ms: 100,
        }
    }
}

/// An event to append; the store stamps the session and the seq.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Unique id (UUID v7); the idempotency key.
    pub id: EventId,
    /// When it was recorded, ms.
    pub recorded_at: TimestampMs,
    /// The event that caused it.
    pub causation: Option<EventId>,
    /// Correlation id.
    pub correlation: Option<Uuid>,
    /// The event.
    pub event: Event,
}

impl NewEvent {
    /// The envelope this event becomes at (`session`, `seq`).
    pub fn at(&self, session: SessionId, seq: Seq) -> Envelope {
        Envelope {
            session,
            seq,
            id: self.id,
            recorded_at: self.recorded_at,
            causation: self.causation,
            correlation: self.correlation,
            event: self.event.clone(),
        }
    }
}

impl From<Envelope> for NewEvent {
    fn from(e: Envelope) -> Self {
        NewEvent {
            id: e.id,
            recorded_at: e.recorded_at,
            causation: e.causation,
            correlation: e.correlation,
            event: e.event,
        }
    }
}

/// Where an append landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The session.
    pub session: SessionId,
    /// Seq of the first event of the batch.
    pub first: Seq,
    /// Seq of the last event of the batch.
    pub last: Seq,
    /// True when the batch was already stored (an idempotent retry).
    pub duplicate: bool,
}

/// One problem found by [`SledStore::verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyError {
    /// The session, when the damaged key names one.
    pub session: Option<SessionId>,
    /// The seq, when known.
    pub seq: Option<Seq>,
    /// What is wrong.
    pub problem: String,
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.session, self.seq) {
            (Some(s), Some(q)) => write!(f, "session {s} seq {q}: {}", self.problem),
            (Some(s), None) => write!(f, "session {s}: {}", self.problem),
            _ => f.write_str(&self.problem),
        }
    }
}

/// The outcome of a store-wide verification.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VerifyReport {
    /// Sessions seen (in the heads or in the records).
    pub sessions: u64,
    /// Records read.
    pub events: u64,
    /// Last seq stored per session.
    pub heads: BTreeMap<SessionId, Seq>,
    /// Problems, in key order: the first is the first bad (session, seq).
    pub errors: Vec<VerifyError>,
}

impl VerifyReport {
    /// No problem found.
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// A state loaded from the store, and how.
#[derive(Debug, Clone)]
pub struct LoadedState {
    /// The state at the session's head.
    pub state: SessionState,
    /// The snapshot it started from, if one was usable.
    pub snapshot: Option<Seq>,
    /// Events replayed on top.
    pub replayed: u64,
}

/// The storage trait: what the engine needs from a log. Another backend can
/// implement it without touching the reducers.
pub trait EventLog: Send + Sync {
    /// Appends `events` to `session` if its head is `expected`; see [`Expected`].
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError>;

    /// The session's events from seq `from` on, in order.
    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, StoreError>> + '_>, StoreError>;

    /// The session's head (0 = no stream).
    fn head(&self, session: SessionId) -> Result<Seq, StoreError>;

    /// Every session with its head, in session-id order.
    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, StoreError>;

    /// Replays a session into its state.
    fn replay(&self, session: SessionId) -> Result<SessionState, StoreError> {
        let mut state = SessionState::new();
        for e in self.read(session, 1)? {
            state.evolve(&e?)?;
        }
        Ok(state)
    }
}

const HEAD_LEN: usize = 8 + record::CHAIN_LEN;

fn encode_head(seq: Seq, chain: &Chain) -> [u8; HEAD_LEN] {
    let mut v = [0u8; HEAD_LEN];
    v[..8].copy_from_slice(&seq.to_be_bytes());
    v[8..].copy_from_slice(chain);
    v
}

fn decode_head(session: SessionId, v: &[u8]) -> Result<(Seq, Chain), StoreError> {
    if v.len() != HEAD_LEN {
        return Err(StoreError::Damaged(format!(
            "head of session {session} is {} bytes, expected {HEAD_LEN}",
            v.len()
        )));
    }
    let seq = Seq::from_be_bytes(v[..8].try_into().expect("8 bytes"));
    Ok((seq, v[8..].try_into().expect("32 bytes")))
}

fn position(session: SessionId, seq: Seq) -> [u8; 24] {
    record::key(session, seq)
}

/// The trees, shared by the writer and the readers.
#[derive(Clone)]
struct Trees {
    db: sled::Db,
    events: sled::Tree,
    heads: sled::Tree,
    ids: sled::Tree,
    snapshots: sled::Tree,
}

enum Request {
    Append {
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
        reply: Sender<Result<Appended, StoreError>>,
    },
    Flush {
        reply: Sender<Result<(), StoreError>>,
    },
    Verify {
        reply: Sender<Result<VerifyReport, StoreError>>,
    },
}

/// State shared between handles and the writer.
/// Counters of the writer's work since the store was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreStats {
    /// Appends committed (idempotent retries excluded).
    pub appends: u64,
    /// Events committed.
    pub events: u64,
    /// Flushes (fsyncs) performed: fewer than `appends` means group commit.
    pub flushes: u64,
}

#[derive(Default)]
struct Counters {
    appends: std::sync::atomic::AtomicU64,
    events: std::sync::atomic::AtomicU64,
    flushes: std::sync::atomic::AtomicU64,
}

struct Shared {
    counters: Counters,
    poison: Mutex<Option<String>>,
    /// Heads known to be flushed (initialised from disk at open).
    durable: RwLock<BTreeMap<SessionId, Seq>>,
    hub: Hub,
}

impl Shared {
    fn check(&self) -> Result<(), StoreError> {
        match &*self.poison.lock().expect("poison lock") {
            Some(why) => Err(StoreError::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    fn poison(&self, why: String) {
        tracing::error!(%why, "store poisoned");
        let mut p = self.poison.lock().expect("poison lock");
        if p.is_none() {
            *p = Some(why);
        }
    }
}

struct Inner {
    trees: Trees,
    shared: Arc<Shared>,
    queue: Mutex<Option<Sender<Request>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    path: PathBuf,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the queue stops the writer after it drains and flushes.
        self.queue.lock().expect("queue lock").take();
        if let Some(w) = self.writer.lock().expect("writer lock").take() {
            let _ = w.join();
        }
        if self.shared.check().is_err() {
            // sled 0.34 flushes when its last handle drops, and blocks forever
            // doing so after an I/O error. A poisoned store therefore leaks one
            // handle so that the last one never drops; restart the process
            // (opening the store again recovers what was flushed).
            tracing::warn!("poisoned store: leaking its sled handles");
            std::mem::forget(self.trees.clone());
        }
    }
}

/// The sled-backed event store. Cheap to clone; the last clone closes it.
#[derive(Clone)]
pub struct SledStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SledStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SledStore")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl SledStore {
    /// Opens (or creates) a durable store at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(StoreConfig::new(path.as_ref()))
    }

    /// Opens a store with `config`.
    pub fn open_with(config: StoreConfig) -> Result<Self, StoreError> {
        assert!(config.max_group >= 1 && config.queue >= 1);
        let db = open_db(&config.path)?;
        let trees = Trees {
            events: db.open_tree("events")?,
            heads: db.open_tree("heads")?,
            ids: db.open_tree("ids")?,
            snapshots: db.open_tree("snapshots")?,
            db,
        };
        let mut durable = BTreeMap::new();
        for kv in trees.heads.iter() {
            let (k, v) = kv?;
            let session = session_of(&k)?;
            durable.insert(session, decode_head(session, &v)?.0);
        }
        let shared = Arc::new(Shared {
            poison: Mutex::new(None),
            durable: RwLock::new(durable),
            hub: Hub::default(),
            counters: Counters::default(),
        });
        let (tx, rx) = bounded(config.queue);
        let writer = Writer {
            trees: trees.clone(),
            shared: shared.clone(),
            rx,
            config: config.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("ctxlog-writer".into())
            .spawn(move || writer.run())
            .map_err(|e| StoreError::Damaged(format!("cannot start the writer thread: {e}")))?;
        Ok(SledStore {
            inner: Arc::new(Inner {
                trees,
                shared,
                queue: Mutex::new(Some(tx)),
                writer: Mutex::new(Some(handle)),
                path: config.path,
            }),
        })
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The last seq of `session` known to be on disk.
    pub fn durable_head(&self, session: SessionId) -> Seq {
        self.inner
            .shared
            .durable
            .read()
            .expect("durable lock")
            .get(&session)
            .copied()
            .unwrap_or(0)
    }

    /// Every session with its durable head.
    pub fn durable_heads(&self) -> BTreeMap<SessionId, Seq> {
        self.inner
            .shared
            .durable
            .read()
            .expect("durable lock")
            .clone()
    }

    /// What the writer has done since the store was opened.
    pub fn stats(&self) -> StoreStats {
        use std::sync::atomic::Ordering::Relaxed;
        let c = &self.inner.shared.counters;
        StoreStats {
            appends: c.appends.load(Relaxed),
            events: c.events.load(Relaxed),
            flushes: c.flushes.load(Relaxed),
        }
    }

    /// Subscribes to commit notifications (delivered after the flush).
    pub fn subscribe(&self) -> Subscription {
        self.inner.shared.hub.subscribe()
    }

    /// Flushes everything written so far (useful in buffered mode).
    pub fn flush(&self) -> Result<(), StoreError> {
        self.inner.shared.check()?;
        // Route through the writer so that notifications and durable heads follow.
        let (reply, rx) = bounded(1);
        self.send(Request::Flush { reply })?;
        rx.recv().map_err(|_| StoreError::Closed)?
    }

    fn send(&self, req: Request) -> Result<(), StoreError> {
        let queue = self.inner.queue.lock().expect("queue lock").clone();
        queue
            .ok_or(StoreError::Closed)?
            .send(req)
            .map_err(|_| StoreError::Closed)
    }

    /// Saves a snapshot of `state` (a cache: keyed by session, reducer
    /// version and seq; older snapshots of the session are dropped).
    pub fn save_snapshot(&self, state: &SessionState) -> Result<(), StoreError> {
        self.inner.shared.check()?;
        let Some(session) = state.session else {
            return Ok(());
        };
        // The chain of the record at the snapshot's head ties the snapshot to
        // the log it was derived from.
        let Some(chain) = self.chain_at(session, state.head)? else {
            return Ok(());
        };
        let mut bytes = chain.to_vec();
        bytes.extend_from_slice(&state.to_snapshot());
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        let snaps = &self.inner.trees.snapshots;
        let mut batch = sled::Batch::default();
        for old in snaps.scan_prefix(session.as_bytes()).keys() {
            batch.remove(old?);
        }
        batch.insert(snapshot_key(session, REDUCER_VERSION, state.head), bytes);
        snaps.apply_batch(batch)?;
        Ok(())
    }

    /// The chain value of the record at (`session`, `seq`), if it is stored
    /// and sound.
    fn chain_at(&self, session: SessionId, seq: Seq) -> Result<Option<Chain>, StoreError> {
        Ok(self
            .inner
            .trees
            .events
            .get(record::key(session, seq))?
            .and_then(|v| record::decode(&v, session, seq).ok())
            .map(|d| d.chain))
    }

    /// Loads a session's state: the newest usable snapshot of this reducer
    /// version plus the tail, or a full replay when there is none or it does
    /// not decode.
    pub fn load_state(&self, session: SessionId) -> Result<LoadedState, StoreError> {
        self.inner.shared.check()?;
        let head = self.head(session)?;
        let mut prefix = session.as_bytes().to_vec();
        prefix.extend_from_slice(&REDUCER_VERSION.to_be_bytes());
        let mut start = None;
        for kv in self.inner.trees.snapshots.scan_prefix(&prefix).rev() {
            let (k, v) = kv?;
            let Some(seq) = k
                .get(20..28)
                .and_then(|b| b.try_into().ok())
                .map(Seq::from_be_bytes)
            else {
                tracing::warn!(%session, "snapshot with a damaged key ignored");
                continue;
            };
            if seq > head {
                continue;
            }
            match decode_snapshot(&v) {
                Some((chain, state))
                    if state.session == Some(session)
                        && state.head == seq
                        && self.chain_at(session, seq)? == Some(chain) =>
                {
                    start = Some(state);
                    break;
                }
                _ => tracing::warn!(%session, seq, "snapshot unusable; falling back to replay"),
            }
        }
        let snapshot = start.as_ref().map(|s| s.head);
        let mut state = start.unwrap_or_default();
        let mut replayed = 0;
        for e in self.read(session, state.head + 1)? {
            state.evolve(&e?)?;
            replayed += 1;
        }
        Ok(LoadedState {
            state,
            snapshot,
            replayed,
        })
    }

    /// Checks every record (CRC, header, decode, key, chain, contiguity) and
    /// every head, and reports every problem in key order.
    ///
    /// It runs on the writer thread between append groups, so appends in
    /// flight never make it report a false error.
    pub fn verify(&self) -> Result<VerifyReport, StoreError> {
        self.inner.shared.check()?;
        let (reply, rx) = bounded(1);
        self.send(Request::Verify { reply })?;
        rx.recv().map_err(|_| StoreError::Closed)?
    }
}

/// How long `open` waits for the database lock a just-closed store of this
/// process may still hold (sled releases it from a background thread).
const LOCK_WAIT: Duration = Duration::from_secs(3);

fn open_db(path: &Path) -> Result<sled::Db, StoreError> {
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        let opened = sled::Config::new()
            .path(path)
            // The writer flushes itself; sled's background flusher would
            // blur what "acknowledged" means.
            .flush_every_ms(None)
            .open();
        match opened {
            Err(sled::Error::Io(e))
                if e.to_string().contains("could not acquire lock")
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return Ok(other?),
        }
    }
}

fn snapshot_key(session: SessionId, version: u32, seq: Seq) -> Vec<u8> {
    let mut k = session.as_bytes().to_vec();
    k.extend_from_slice(&version.to_be_bytes());
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// A snapshot value: chain of the record at its head ‖ state ‖ CRC32C.
fn decode_snapshot(v: &[u8]) -> Option<(Chain, SessionState)> {
    if v.len() < record::CHAIN_LEN + 4 {
        return None;
    }
    let (body, crc) = v.split_at(v.len() - 4);
    if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().ok()?) {
        return None;
    }
    let (chain, state) = body.split_at(record::CHAIN_LEN);
    Some((
        chain.try_into().ok()?,
        SessionState::from_snapshot(state).ok()?,
    ))
}

impl EventLog for SledStore {
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        self.inner.shared.check()?;
        if events.is_empty() {
            return Err(StoreError::EmptyAppend);
        }
        let (reply, rx) = bounded(1);
        self.send(Request::Append {
            session,
            expected,
            events,
            reply,
        })?;
        rx.recv().map_err(|_| StoreError::Closed)?
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, StoreError>> + '_>, StoreError> {
        self.inner.shared.check()?;
        let from = from.max(1);
        let head = self.head(session)?;
        let range = record::key(session, from)..=record::key(session, Seq::MAX);
        Ok(Box::new(ReadIter {
            inner: self.inner.trees.events.range(range),
            session,
            expect: from,
            head,
            done: false,
        }))
    }

    fn head(&self, session: SessionId) -> Result<Seq, StoreError> {
        self.inner.shared.check()?;
        match self.inner.trees.heads.get(session.as_bytes())? {
            Some(v) => Ok(decode_head(session, &v)?.0),
            None => Ok(0),
        }
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, StoreError> {
        self.inner.shared.check()?;
        let mut out = Vec::new();
        for kv in self.inner.trees.heads.iter() {
            let (k, v) = kv?;
            let session = session_of(&k)?;
            out.push((session, decode_head(session, &v)?.0));
        }
        Ok(out)
    }
}

/// Reads one session in order, checking every record and that no seq is
/// missing up to the head read when it started; stops at the first error.
struct ReadIter {
    inner: sled::Iter,
    session: SessionId,
    expect: Seq,
    head: Seq,
    done: bool,
}

impl ReadIter {
    fn missing(&self, next: Option<Seq>) -> StoreError {
        StoreError::Corrupt {
            session: self.session,
            seq: self.expect,
            problem: RecordProblem::Missing {
                head: self.head,
                next,
            },
        }
    }
}

impl Iterator for ReadIter {
    type Item = Result<Envelope, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = match self.inner.next() {
            None if self.expect <= self.head => Err(self.missing(None)),
            None => {
                self.done = true;
                return None;
            }
            Some(Err(e)) => Err(e.into()),
            Some(Ok((k, v))) => {
                let (_, seq) = record::parse_key(&k).expect("range keys are 24 bytes");
                if seq != self.expect {
                    Err(self.missing(Some(seq)))
                } else {
                    self.expect += 1;
                    record::decode(&v, self.session, seq)
                        .map(|d| d.envelope)
                        .map_err(|problem| StoreError::Corrupt {
                            session: self.session,
                            seq,
                            problem,
                        })
                }
            }
        };
        self.done = item.is_err();
        Some(item)
    }
}

fn session_of(k: &[u8]) -> Result<SessionId, StoreError> {
    let bytes: [u8; 16] = k
        .try_into()
        .map_err(|_| StoreError::Damaged(format!("head key of {} bytes", k.len())))?;
    Ok(SessionId(Uuid::from_bytes(bytes)))
}

/// The single writer: applies each group of appends in one transaction (each
/// append with its own outcome; readers wait for the whole group, since sled
/// 0.34 transactions hold its global write lock), flushes once per group,
/// then acknowledges and notifies. Verification also runs here, between
/// groups, so it sees no half-applied append.
struct Writer {
    trees: Trees,
    shared: Arc<Shared>,
    rx: Receiver<Request>,
    config: StoreConfig,
}

/// A reply waiting for the group's flush.
enum Pending {
    Append(
        Sender<Result<Appended, StoreError>>,
        Result<Appended, StoreError>,
    ),
    Flush(Sender<Result<(), StoreError>>),
}

impl Writer {
    fn run(self) {
        let buffered = self.config.durability == Durability::Buffered;
        let interval = Duration::from_millis(self.config.buffered_flush_ms.max(1));
        // Committed but not yet flushed: session -> last seq.
        let mut unflushed: BTreeMap<SessionId, Seq> = BTreeMap::new();
        // Buffered mode: when the oldest unflushed commit must be flushed by.
        let mut deadline: Option<Instant> = None;
        loop {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                self.flush(&mut unflushed, Vec::new(), false);
                deadline = None;
            }
            let first = match deadline {
                None => match self.rx.recv() {
                    Ok(r) => r,
                    Err(_) => break,
                },
                Some(d) => match self.rx.recv_deadline(d) {
                    Ok(r) => r,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                },
            };
            let mut group = vec![first];
            while group.len() < self.config.max_group {
                match self.rx.try_recv() {
                    Ok(r) => group.push(r),
                    Err(_) => break,
                }
            }
            let mut pending = Vec::with_capacity(group.len());
            let mut verifies = Vec::new();
            let mut force = false;
            // Every append of the group goes into one transaction; each keeps
            // its own outcome (one refused append does not fail the others).
            let mut appends = Vec::new();
            for req in group {
                match req {
                    Request::Append {
                        session,
                        expected,
                        events,
                        reply,
                    } => {
                        appends.push((session, expected, events));
                        pending.push(Pending::Append(reply, Err(StoreError::Closed)));
                    }
                    Request::Flush { reply } => {
                        force = true;
                        pending.push(Pending::Flush(reply));
                    }
                    Request::Verify { reply } => verifies.push(reply),
                }
            }
            let mut results = match self.shared.check() {
                Ok(()) => self.apply_group(&appends),
                Err(e) => appends.iter().map(|_| Err(e.clone_kind())).collect(),
            }
            .into_iter();
            for p in pending.iter_mut() {
                if let Pending::Append(_, slot) = p {
                    let result = results.next().expect("one result per append");
                    if let Ok(a) = &result {
                        if !a.duplicate {
                            use std::sync::atomic::Ordering::Relaxed;
                            let c = &self.shared.counters;
                            c.appends.fetch_add(1, Relaxed);
                            c.events.fetch_add(a.last - a.first + 1, Relaxed);
                            let last = unflushed.entry(a.session).or_insert(0);
                            *last = (*last).max(a.last);
                        }
                    }
                    *slot = result;
                }
            }
            if buffered && !force {
                for p in pending {
                    if let Pending::Append(reply, r) = p {
                        let _ = reply.send(r);
                    }
                }
                if !unflushed.is_empty() && deadline.is_none() {
                    deadline = Some(Instant::now() + interval);
                }
            } else {
                self.flush(&mut unflushed, pending, force);
                deadline = None;
            }
            for reply in verifies {
                let _ = reply.send(self.shared.check().and_then(|()| verify(&self.trees)));
            }
        }
        // A final flush of what was acknowledged in buffered mode. Never after
        // a failure: sled 0.34 can block forever flushing after an I/O error.
        if self.shared.check().is_ok() {
            if let Err(e) = self.trees.db.flush() {
                self.shared.poison(format!("final flush failed: {e}"));
            }
        }
    }

    /// Flushes (when anything was committed, or when `force`d), then answers
    /// `pending` (errors if the flush failed) and notifies subscribers of what
    /// became durable.
    fn flush(&self, unflushed: &mut BTreeMap<SessionId, Seq>, pending: Vec<Pending>, force: bool) {
        let flushed = match self.shared.check() {
            Err(e) => Err(e),
            Ok(()) if unflushed.is_empty() && !force => Ok(()),
            Ok(()) => {
                self.shared
                    .counters
                    .flushes
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.trees.db.flush().map(|_| ()).map_err(|e| {
                    let why = format!("flush failed: {e}");
                    self.shared.poison(why.clone());
                    StoreError::Poisoned(why)
                })
            }
        };
        let failed = |e: &StoreError| match e {
            StoreError::Poisoned(why) => StoreError::Poisoned(why.clone()),
            _ => StoreError::Closed,
        };
        let committed = std::mem::take(unflushed);
        if flushed.is_ok() && !committed.is_empty() {
            let mut durable = self.shared.durable.write().expect("durable lock");
            for (s, q) in &committed {
                durable.insert(*s, *q);
            }
        }
        for p in pending {
            match p {
                Pending::Append(reply, r) => {
                    let r = match (&flushed, r) {
                        (_, Err(e)) => Err(e),
                        (Err(e), Ok(_)) => Err(failed(e)),
                        (Ok(()), Ok(a)) => Ok(a),
                    };
                    let _ = reply.send(r);
                }
                Pending::Flush(reply) => {
                    let _ = reply.send(flushed.as_ref().map(|_| ()).map_err(failed));
                }
            }
        }
        if flushed.is_ok() {
            self.shared.hub.notify(&committed);
        }
    }

    /// Applies a group of appends in one transaction; one outcome each, in order.
    fn apply_group(
        &self,
        appends: &[(SessionId, Expected, Vec<NewEvent>)],
    ) -> Vec<Result<Appended, StoreError>> {
        // Repeated ids inside a batch can never be stored.
        let precheck: Vec<Option<StoreError>> = appends
            .iter()
            .map(|(_, _, events)| {
                let mut seen = std::collections::BTreeSet::new();
                events
                    .iter()
                    .find(|e| !seen.insert(e.id))
                    .map(|e| StoreError::PartialDuplicate { id: e.id })
            })
            .collect();
        let t = &self.trees;
        let result = (&t.events, &t.heads, &t.ids).transaction(|(ev, hd, ix)| {
            // Built afresh by every attempt of the closure.
            let mut outcomes: Vec<Result<Appended, StoreError>> = Vec::new();
            for ((session, expected, events), bad) in appends.iter().zip(&precheck) {
                if let Some(e) = bad {
                    outcomes.push(Err(e.clone_kind()));
                    continue;
                }
                match Self::apply_one(ev, hd, ix, *session, *expected, events)? {
                    Ok(a) => outcomes.push(Ok(a)),
                    Err(e) => outcomes.push(Err(e)),
                }
            }
            Ok::<_, ConflictableTransactionError<StoreError>>(outcomes)
        });
        match result {
            Ok(outcomes) => outcomes,
            Err(TransactionError::Abort(e)) => {
                appends.iter().map(|_| Err(e.clone_kind())).collect()
            }
            Err(TransactionError::Storage(e)) => {
                let why = format!("write failed: {e}");
                self.shared.poison(why.clone());
                appends
                    .iter()
                    .map(|_| Err(StoreError::Poisoned(why.clone())))
                    .collect()
            }
        }
    }

    /// One append inside the group's transaction. The outer `Err` is a
    /// storage error (the transaction fails); the inner one refuses only this
    /// append, before it wrote anything.
    #[allow(clippy::type_complexity)]
    fn apply_one(
        ev: &sled::transaction::TransactionalTree,
        hd: &sled::transaction::TransactionalTree,
        ix: &sled::transaction::TransactionalTree,
        session: SessionId,
        expected: Expected,
        events: &[NewEvent],
    ) -> Result<Result<Appended, StoreError>, ConflictableTransactionError<StoreError>> {
        let result: Result<Appended, ConflictableTransactionError<StoreError>> = (|| {
            let abort = ConflictableTransactionError::Abort;
            // Idempotency first (a retry of a stored batch must not fail the version check).
            let mut stored = Vec::new();
            for e in events {
                if let Some(pos) = ix.get(e.id.as_bytes())? {
                    stored.push((e, pos));
                }
            }
            if !stored.is_empty() {
                if stored.len() != events.len() {
                    return Err(abort(StoreError::PartialDuplicate { id: stored[0].0.id }));
                }
                let mut prev: Option<Seq> = None;
                for (e, pos) in &stored {
                    let (s, seq) = record::parse_key(pos).ok_or_else(|| {
                        abort(StoreError::Damaged(format!(
                            "id index entry of event {}",
                            e.id
                        )))
                    })?;
                    let conflict = StoreError::IdConflict {
                        id: e.id,
                        session: s,
                        seq,
                    };
                    if s != session || prev.is_some_and(|p| p + 1 != seq) {
                        return Err(abort(conflict));
                    }
                    prev = Some(seq);
                    let bytes = ev.get(pos)?.ok_or_else(|| {
                        abort(StoreError::Damaged(format!(
                            "event {} indexed at session {s} seq {seq} but not stored",
                            e.id
                        )))
                    })?;
                    let stored = record::decode(&bytes, s, seq).map_err(|problem| {
                        abort(StoreError::Corrupt {
                            session: s,
                            seq,
                            problem,
                        })
                    })?;
                    if stored.envelope != e.at(s, seq) {
                        return Err(abort(conflict));
                    }
                }
                let first = record::parse_key(stored[0].1.as_ref()).expect("checked").1;
                return Ok(Appended {
                    session,
                    first,
                    last: prev.expect("non-empty"),
                    duplicate: true,
                });
            }
            let (head, mut chain) = match hd.get(session.as_bytes())? {
                Some(v) => decode_head(session, &v).map_err(abort)?,
                None => (0, record::genesis(session)),
            };
            let ok = match expected {
                Expected::Any => true,
                Expected::NoStream => head == 0,
                Expected::Exactly(n) => head == n,
            };
            if !ok {
                return Err(abort(StoreError::WrongExpectedVersion {
                    session,
                    expected,
                    actual: head,
                }));
            }
            // Encode everything before writing anything: a refused append
            // must leave no trace in the group's transaction, which commits.
            let mut seq = head;
            let mut records = Vec::with_capacity(events.len());
            for e in events {
                seq += 1;
                let env = e.at(session, seq);
                let (bytes, next) = record::encode(&env, &chain)
                    .map_err(|source| abort(StoreError::Encode { id: e.id, source }))?;
                chain = next;
                records.push((e.id, seq, bytes));
            }
            for (id, seq, bytes) in records {
                ev.insert(&position(session, seq)[..], bytes)?;
                ix.insert(id.as_bytes(), &position(session, seq)[..])?;
            }
            hd.insert(session.as_bytes(), &encode_head(seq, &chain)[..])?;
            Ok(Appended {
                session,
                first: head + 1,
                last: seq,
                duplicate: false,
            })
        })();
        match result {
            Ok(a) => Ok(Ok(a)),
            Err(ConflictableTransactionError::Abort(e)) => Ok(Err(e)),
            Err(other) => Err(other),
        }
    }
}

fn verify(t: &Trees) -> Result<VerifyReport, StoreError> {
    let mut report = VerifyReport::default();
    let mut heads: BTreeMap<SessionId, (Seq, Chain)> = BTreeMap::new();
    for kv in t.heads.iter() {
        let (k, v) = kv?;
        match session_of(&k).and_then(|s| Ok((s, decode_head(s, &v)?))) {
            Ok((s, h)) => {
                heads.insert(s, h);
            }
            Err(e) => report.errors.push(VerifyError {
                session: None,
                seq: None,
                problem: e.to_string(),
            }),
        }
    }
    // Per session: (last seq seen, chain to continue from, whether that chain
    // can be trusted: not after a gap or a record that did not decode).
    let mut cur: Option<(SessionId, Seq, Chain, bool)> = None;
    let mut finished: BTreeMap<SessionId, (Seq, Chain, bool)> = BTreeMap::new();
    let err = |report: &mut VerifyReport, s: SessionId, q: Seq, p: String| {
        report.errors.push(VerifyError {
            session: Some(s),
            seq: Some(q),
            problem: p,
        })
    };
    for kv in t.events.iter() {
        let (k, v) = kv?;
        report.events += 1;
        let Some((session, seq)) = record::parse_key(&k) else {
            report.errors.push(VerifyError {
                session: None,
                seq: None,
                problem: format!("record key of {} bytes", k.len()),
            });
            continue;
        };
        let (last, mut chain, mut trusted) = match cur {
            Some((s, last, chain, trusted)) if s == session => (last, chain, trusted),
            other => {
                if let Some((s, last, chain, trusted)) = other {
                    finished.insert(s, (last, chain, trusted));
                }
                (0, record::genesis(session), true)
            }
        };
        if seq > last + 1 {
            let missing = if seq == last + 2 {
                format!("record missing (seq {} absent)", last + 1)
            } else {
                format!("records missing (seq {} to {} absent)", last + 1, seq - 1)
            };
            err(&mut report, session, last + 1, missing);
            trusted = false;
        }
        match record::decode(&v, session, seq) {
            Ok(d) => {
                if trusted && !d.chain_follows(&chain, &v) {
                    err(&mut report, session, seq, RecordProblem::Chain.to_string());
                }
                if t.ids.get(d.envelope.id.as_bytes())?.as_deref() != Some(&k[..]) {
                    err(&mut report, session, seq, RecordProblem::Index.to_string());
                }
                chain = d.chain;
                trusted = true;
            }
            Err(p) => {
                // One bad record is one error: the next one's chain is not
                // checked against bytes that could not be read.
                err(&mut report, session, seq, p.to_string());
                trusted = false;
            }
        }
        cur = Some((session, seq, chain, trusted));
    }
    if let Some((s, last, chain, trusted)) = cur {
        finished.insert(s, (last, chain, trusted));
    }
    for (s, (head, head_chain)) in &heads {
        match finished.get(s) {
            None => err(
                &mut report,
                *s,
                1,
                format!("head is {head} but no record is stored"),
            ),
            Some((last, chain, trusted)) => {
                if last < head {
                    err(
                        &mut report,
                        *s,
                        last + 1,
                        format!("head is {head} but the last record is seq {last}"),
                    );
                } else if last > head {
                    err(
                        &mut report,
                        *s,
                        head + 1,
                        format!("record beyond head {head}"),
                    );
                } else if *trusted && chain != head_chain {
                    err(
                        &mut report,
                        *s,
                        *head,
                        "head chain differs from the last record".into(),
                    );
                }
            }
        }
    }
    for (s, (last, _, _)) in &finished {
        if !heads.contains_key(s) {
            err(
                &mut report,
                *s,
                *last,
                "records stored without a head".into(),
            );
        }
        report.heads.insert(*s, *last);
    }
    report.sessions = heads
        .keys()
        .chain(finished.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .len() as u64;
    report.errors.sort_by_key(|e| (e.session, e.seq));
    Ok(report)
}
