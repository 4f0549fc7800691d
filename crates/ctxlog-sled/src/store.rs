//! [`SledStore`]: the sled-backed [`EventLog`]. Handles read the trees
//! directly and send appends, flushes and verifications to the single writer
//! thread (`writer.rs`).

use crate::config::StoreConfig;
use crate::errors::damaged;
use crate::errors::from_sled;
use crate::guard::guarded;
use crate::private;
use crate::repair;
use crate::serve::{Holder, Server};
use crate::shared::{LostHead, Shared, StoreStats};
use crate::snapshot;
use crate::ticket::Answer;
use crate::trees::{Trees, Values};
use ctxlog_store::pack::{self, Unpacked};
use ctxlog_store::record::{self, RecordProblem};
use ctxlog_store::Followable;
use ctxlog_store::StoreError;
use ctxlog_store::{AppendError, Expected, OpenError, ReadError};
use ctxlog_store::{Appended, EventLog, NewEvent, Snapshot};

use crate::group::Request;
use crate::witness;
use crate::writer::Committer;
use ctxlog_core::{Envelope, Seq, SessionId};
use ctxlog_store::Subscription;
use ctxlog_store::VerifyReport;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Locks `m`, recovering it if a holder panicked (the server handle is an
/// `Option`, valid whatever happened).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Inner {
    trees: Trees,
    shared: Arc<Shared>,
    committer: Arc<Committer>,
    /// Answers other processes' reads while the store is open.
    server: Mutex<Option<Server>>,
    path: PathBuf,
    /// What opening found readable by others and made private.
    widened: Vec<String>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // No new reader is served by a store that is closing.
        lock(&self.server).take();
        // No caller is left (this is the last handle): the committer
        // flushes what buffered mode acknowledged and stops.
        self.committer.close();
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
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        Self::open_with(StoreConfig::new(path.as_ref()))
    }

    /// Opens a store with `config`; [`OpenError::InvalidConfig`] if
    /// `max_group` or `queue` is 0.
    pub fn open_with(config: StoreConfig) -> Result<Self, OpenError> {
        config.check().map_err(StoreError::into_open)?;
        let path = config.path.clone();
        guarded(&path, "opening the store", || Self::open_unguarded(config))
            .map_err(StoreError::into_open)
    }

    fn open_unguarded(config: StoreConfig) -> Result<Self, StoreError> {
        private::check_owner(&config.path)?;
        // A new store is created private (0700) before sled writes in it.
        private::create_dir(&config.path).map_err(|e| {
            StoreError::Open(OpenError::Io {
                path: config.path.clone(),
                error: e,
            })
        })?;
        let trees = Trees::open(&config.path, config.in_use_wait, config.cache_bytes)?;
        // Before anything reads a head: what a crash left past one goes.
        repair::finish_cut_appends(&trees)?;
        let (file, losses) = witness::check(&trees, &config.path)?;
        let mut lost = BTreeMap::new();
        for l in &losses {
            tracing::error!(store = %config.path.display(), "{}", l.as_error());
            if let Some((s, w)) = l.session.and_then(|s| Some((s, file.heads.get(&s)?))) {
                let head = LostHead {
                    seq: w.seq,
                    chain: w.chain,
                    detail: l.detail.clone(),
                };
                lost.insert(s, head);
            }
        }
        let witness = witness::open_for_writer(&trees, &config.path, &file, &losses)?;
        // sled and the witness made their files under the umask; an older
        // store may be wider still.
        let widened = private::tighten(&config.path).map_err(|e| {
            StoreError::Open(OpenError::Io {
                path: config.path.clone(),
                error: e,
            })
        })?;
        if !widened.is_empty() {
            tracing::warn!(store = %config.path.display(), "made private to its owner: {}", widened.join(", "));
        }
        let durable: BTreeMap<SessionId, Seq> = trees.heads()?.into_iter().collect();
        let shared = Arc::new(Shared::new(durable, lost));
        let committer = Committer::start(trees.clone(), witness, shared.clone(), config.clone())?;
        let store = SledStore {
            inner: Arc::new(Inner {
                trees,
                shared,
                committer,
                server: Mutex::new(None),
                path: config.path,
                widened,
            }),
        };
        if config.serve_readers {
            store.serve();
        }
        Ok(store)
    }

    /// Starts answering other processes' reads (`serve.rs`); a store that
    /// cannot serve still works, and readers are told who holds it.
    fn serve(&self) {
        let weak = Arc::downgrade(&self.inner);
        let open = move || weak.upgrade().map(|inner| SledStore { inner });
        match Server::start(&self.inner.path, open) {
            Ok(server) => *lock(&self.inner.server) = Some(server),
            Err(e) => tracing::warn!(
                store = %self.inner.path.display(),
                "cannot serve readers of the store: {e}"
            ),
        }
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The files and directories of the store that opening found readable
    /// by other users and made private (`path (old mode)`); empty for a
    /// store that was private.
    pub fn widened(&self) -> &[String] {
        &self.inner.widened
    }

    /// The last seq of `session` known to be on disk.
    pub fn durable_head(&self, session: SessionId) -> Seq {
        self.inner.shared.durable_head(session)
    }

    /// Every session with its durable head.
    pub fn durable_heads(&self) -> BTreeMap<SessionId, Seq> {
        self.inner.shared.durable_heads()
    }

    /// What the writer has done since the store was opened.
    pub fn stats(&self) -> StoreStats {
        self.inner.shared.stats()
    }

    /// Subscribes to commit notifications (delivered after the flush).
    pub fn subscribe(&self) -> Subscription {
        self.inner.shared.hub.subscribe()
    }

    /// Flushes everything written so far (useful in buffered mode); the same
    /// as [`EventLog::flush`].
    pub fn flush(&self) -> Result<(), AppendError> {
        self.flush_now().map_err(StoreError::into_append)
    }

    fn flush_now(&self) -> Result<(), StoreError> {
        self.inner.shared.check()?;
        // Through the committer, so that notifications and durable heads
        // follow.
        match self.inner.committer.submit(Request::Flush)? {
            Answer::Flushed => Ok(()),
            other => Err(unexpected("a flush", &other)),
        }
    }

    /// Keeps `snapshot` (a cache: keyed by session, reducer version and
    /// seq; older snapshots of the session are dropped); the same as
    /// [`EventLog::keep_snapshot`].
    pub fn keep_snapshot(&self, snapshot: Snapshot) -> Result<(), AppendError> {
        self.inner.shared.check().map_err(StoreError::into_append)?;
        snapshot::save(&self.inner.trees, snapshot).map_err(StoreError::into_append)
    }

    /// The newest usable snapshot of `session` of reducer `version`; the
    /// same as [`EventLog::newest_snapshot`].
    pub fn newest_snapshot(
        &self,
        session: SessionId,
        version: u32,
    ) -> Result<Option<Snapshot>, ReadError> {
        let newest = || {
            self.inner.shared.check()?;
            let head = self.head_now(session)?;
            snapshot::newest_usable(&self.inner.trees, session, version, head)
        };
        newest().map_err(StoreError::into_read)
    }

    /// Checks every record (CRC, header, decode, key, chain, contiguity) and
    /// every head, and reports every problem in key order.
    ///
    /// The records are scanned on the calling thread while appends go on,
    /// up to the heads durable when it starts; the heads and what was
    /// appended meanwhile are checked by the committer between append
    /// groups, so appends in flight never make it report a false error and
    /// the writer is held only for that last part.
    pub fn verify(&self) -> Result<VerifyReport, ReadError> {
        self.verify_with(&mut || {}).map_err(StoreError::into_read)
    }

    /// [`SledStore::verify`], calling `pace` between chunks of the scan.
    fn verify_with(&self, pace: &mut dyn FnMut()) -> Result<VerifyReport, StoreError> {
        self.inner.shared.check()?;
        let bound = self.inner.shared.durable_heads();
        let scan = guarded(self.path(), "verifying the store", || {
            crate::verify::scan(&self.inner.trees, &bound, pace)
        })?;
        let request = Request::Verify {
            scan: Box::new(scan),
        };
        match self.inner.committer.submit(request)? {
            Answer::Verified(report) => Ok(*report),
            other => Err(unexpected("a verification", &other)),
        }
    }
}

impl SledStore {
    /// [`EventLog::append`], failing with any log error (a [`StoreError`]).
    fn append_now(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        self.inner.shared.check()?;
        self.inner.shared.check_session(session)?;
        if events.is_empty() {
            return Err(StoreError::Append(AppendError::EmptyAppend));
        }
        let request = Request::Append {
            session,
            expected,
            events,
        };
        match self.inner.committer.submit(request)? {
            Answer::Appended(a) => Ok(a),
            other => Err(unexpected("an append", &other)),
        }
    }

    /// [`EventLog::read`], failing with any log error (a [`StoreError`]).
    pub(crate) fn read_now(&self, session: SessionId, from: Seq) -> Result<ReadIter, StoreError> {
        self.inner.shared.check()?;
        let from = from.max(1);
        let head = self.head_now(session)?;
        let lost = self.inner.shared.lost_head(session);
        // Records past the head read first are an append still being
        // written (or one a crash cut short): not part of the session yet.
        let last = lost.as_ref().map_or(head, |l| l.seq.max(head));
        let inner = guarded(self.path(), "reading a session", || {
            self.inner.trees.values_from(session, from, last)
        })?;
        Ok(ReadIter {
            inner,
            path: self.inner.path.clone(),
            session,
            expect: Some(from),
            head,
            last,
            lost,
            current: None,
            damaged: None,
            done: false,
        })
    }

    /// [`EventLog::head`], failing with any log error (a [`StoreError`]).
    pub(crate) fn head_now(&self, session: SessionId) -> Result<Seq, StoreError> {
        self.inner.shared.check()?;
        guarded(self.path(), "reading a head", || {
            Ok(self.inner.trees.head(session)?.map_or(0, |(seq, _)| seq))
        })
    }

    /// [`EventLog::sessions`], failing with any log error (a [`StoreError`]).
    pub(crate) fn sessions_now(&self) -> Result<Vec<(SessionId, Seq)>, StoreError> {
        self.inner.shared.check()?;
        let mut heads: BTreeMap<SessionId, Seq> =
            guarded(self.path(), "listing the sessions", || {
                self.inner.trees.heads()
            })?
            .into_iter()
            .collect();
        // A session the witness vouches for is listed even when sled lost
        // it whole: reading it says what is lost.
        for s in self.inner.shared.lost_sessions() {
            heads.entry(s).or_insert(0);
        }
        Ok(heads.into_iter().collect())
    }
}

impl EventLog for SledStore {
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, AppendError> {
        self.append_now(session, expected, events)
            .map_err(StoreError::into_append)
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, ReadError>> + '_>, ReadError> {
        let events = self
            .read_now(session, from)
            .map_err(StoreError::into_read)?;
        Ok(Box::new(events.map(|e| e.map_err(StoreError::into_read))))
    }

    fn head(&self, session: SessionId) -> Result<Seq, ReadError> {
        self.head_now(session).map_err(StoreError::into_read)
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, ReadError> {
        self.sessions_now().map_err(StoreError::into_read)
    }

    fn newest_snapshot(
        &self,
        session: SessionId,
        version: u32,
    ) -> Result<Option<Snapshot>, ReadError> {
        SledStore::newest_snapshot(self, session, version)
    }

    fn keeps_snapshots(&self) -> bool {
        true
    }

    fn keep_snapshot(&self, snapshot: Snapshot) -> Result<(), AppendError> {
        SledStore::keep_snapshot(self, snapshot)
    }

    fn flush(&self) -> Result<(), AppendError> {
        SledStore::flush(self)
    }
}

impl Holder for SledStore {
    fn durable_head(&self, session: SessionId) -> Seq {
        SledStore::durable_head(self, session)
    }

    fn durable_heads(&self) -> BTreeMap<SessionId, Seq> {
        SledStore::durable_heads(self)
    }

    fn verify_paced(&self, pace: &mut dyn FnMut()) -> Result<VerifyReport, StoreError> {
        SledStore::verify_with(self, pace)
    }

    fn writer_progress(&self) -> u64 {
        self.inner.shared.stats().events
    }
}

impl Followable for SledStore {
    fn subscribe(&self) -> Subscription {
        self.inner.shared.hub.subscribe()
    }

    fn durable_heads(&self) -> Result<BTreeMap<SessionId, Seq>, ReadError> {
        Ok(self.inner.shared.durable_heads())
    }
}

/// Reads one session in order, checking every record and that no seq is
/// missing up to the head read when it started (or up to the witnessed
/// head, for a session that lost acknowledged events); stops at the first
/// error.
pub(crate) struct ReadIter {
    /// The session's values, from the one holding the first seq read.
    inner: Values,
    /// The store directory (for errors).
    path: PathBuf,
    session: SessionId,
    /// The next seq; `None` after seq `u64::MAX`.
    expect: Option<Seq>,
    head: Seq,
    /// The last seq read: the head, or the witnessed head when greater.
    last: Seq,
    /// The witnessed head of a session that lost events.
    lost: Option<LostHead>,
    /// The value being read.
    current: Option<Current>,
    /// Why the last value read ends before its records did.
    damaged: Option<RecordProblem>,
    done: bool,
}

/// A value of the session being read: a record or a pack of them.
struct Current {
    /// The seq of its first record.
    first: Seq,
    value: sled::IVec,
    unpacked: Unpacked,
    /// The index of the next record to read in it.
    next: usize,
}

impl ReadIter {
    fn corrupt(&self, seq: Seq, problem: RecordProblem) -> StoreError {
        StoreError::Read(ReadError::Corrupt {
            session: self.session,
            seq,
            problem,
        })
    }

    /// The next record of the current value at or after the expected seq:
    /// `None` when the value has no more.
    fn next_in_value(&mut self, expect: Seq) -> Option<Result<Envelope, StoreError>> {
        let cur = self.current.as_mut()?;
        while let Some(range) = cur.unpacked.records.get(cur.next).cloned() {
            // Past `Seq::MAX` only by a damaged key: the value ends there.
            let seq = cur.first.checked_add(cur.next as Seq)?;
            cur.next += 1;
            if seq < expect {
                continue;
            }
            if seq > self.last {
                return None;
            }
            self.expect = seq.checked_add(1);
            let d = record::decode(&cur.value[range], self.session, seq);
            return Some(match d {
                Err(problem) => Err(self.corrupt(seq, problem)),
                Ok(d) => match &self.lost {
                    Some(l) if l.seq == seq && l.chain != d.chain => Err(l.error(self.session)),
                    _ => Ok(d.envelope),
                },
            });
        }
        // A pack whose framing does not read: the seqs it held are known
        // only once the next value is (it may have ended before `expect`).
        self.damaged = cur.unpacked.damage.take();
        self.current = None;
        None
    }

    /// What is wrong at `expect`, the next seq to read, when it is not
    /// stored: the damage of the value before it, or a gap.
    fn not_stored(&mut self, expect: Seq, next: Option<Seq>) -> StoreError {
        let problem = self.damaged.take().unwrap_or(RecordProblem::Missing {
            head: self.head,
            next,
        });
        self.corrupt(expect, problem)
    }

    /// Takes the value stored under key `k` as the current one; an error
    /// when it starts past the expected seq (records are missing).
    fn enter(&mut self, expect: Seq, k: &[u8], v: sled::IVec) -> Result<(), StoreError> {
        // Every key of the range starts with the session; a key of another
        // length is damage, named by the seq that should be there.
        let Some((_, first)) = record::parse_key(k) else {
            return Err(damaged(format!(
                "session {} seq {expect}: record key of {} bytes",
                self.session,
                k.len()
            )));
        };
        if first > expect {
            return Err(self.not_stored(expect, Some(first)));
        }
        self.damaged = None;
        self.current = Some(Current {
            first,
            unpacked: pack::unpack(&v),
            value: v,
            next: 0,
        });
        Ok(())
    }

    /// The end of the values: an error when the head says more is stored.
    fn end(&mut self, expect: Option<Seq>) -> Option<Result<Envelope, StoreError>> {
        match expect {
            Some(expect) if expect <= self.head => Some(Err(self.not_stored(expect, None))),
            Some(expect) if self.lost.as_ref().is_some_and(|l| expect <= l.seq) => Some(Err(self
                .lost
                .as_ref()
                .map_or(StoreError::Read(ReadError::Closed), |l| {
                    l.error(self.session)
                }))),
            _ => None,
        }
    }

    fn step(&mut self) -> Option<Result<Envelope, StoreError>> {
        loop {
            let Some(expect) = self.expect else {
                return self.end(None);
            };
            if expect > self.last {
                return None;
            }
            if let Some(item) = self.next_in_value(expect) {
                return Some(item);
            }
            let (path, inner) = (&self.path, &mut self.inner);
            let next = match guarded(path, "reading a session", || Ok(inner.next())) {
                Ok(next) => next.map(|kv| kv.map_err(from_sled)),
                Err(panicked) => Some(Err(panicked)),
            };
            match next {
                None => return self.end(Some(expect)),
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok((k, v))) => {
                    if let Err(e) = self.enter(expect, &k, v) {
                        return Some(Err(e));
                    }
                }
            }
        }
    }
}

impl Iterator for ReadIter {
    type Item = Result<Envelope, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.step();
        self.done = item.as_ref().is_none_or(|i| i.is_err());
        item
    }
}

/// The error of a committer answer of the wrong kind (never expected).
fn unexpected(asked: &str, answer: &Answer) -> StoreError {
    damaged(format!("the committer answered {asked} with {answer:?}"))
}
