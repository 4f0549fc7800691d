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
use std::time::Duration;
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

struct Request {
    session: SessionId,
    expected: Expected,
    events: Vec<NewEvent>,
    reply: Sender<Result<Appended, StoreError>>,
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
        let db = sled::Config::new()
            .path(&config.path)
            // The writer flushes itself; sled's background flusher would
            // blur what "acknowledged" means.
            .flush_every_ms(None)
            .open()?;
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
        self.send(Request {
            session: SessionId(Uuid::nil()),
            expected: Expected::Any,
            events: Vec::new(),
            reply,
        })?;
        rx.recv().map_err(|_| StoreError::Closed)?.map(|_| ())
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
        let mut bytes = state.to_snapshot();
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        let snaps = &self.inner.trees.snapshots;
        for old in snaps.scan_prefix(session.as_bytes()).keys() {
            snaps.remove(old?)?;
        }
        snaps.insert(snapshot_key(session, REDUCER_VERSION, state.head), bytes)?;
        Ok(())
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
            let seq = Seq::from_be_bytes(k[20..28].try_into().expect("snapshot key"));
            if seq > head {
                continue;
            }
            match decode_snapshot(&v) {
                Some(state) if state.session == Some(session) && state.head == seq => {
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
    pub fn verify(&self) -> Result<VerifyReport, StoreError> {
        self.inner.shared.check()?;
        verify(&self.inner.trees)
    }
}

fn snapshot_key(session: SessionId, version: u32, seq: Seq) -> Vec<u8> {
    let mut k = session.as_bytes().to_vec();
    k.extend_from_slice(&version.to_be_bytes());
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

fn decode_snapshot(v: &[u8]) -> Option<SessionState> {
    if v.len() < 4 {
        return None;
    }
    let (body, crc) = v.split_at(v.len() - 4);
    if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().ok()?) {
        return None;
    }
    SessionState::from_snapshot(body).ok()
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
        self.send(Request {
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
        let range = record::key(session, from)..=record::key(session, Seq::MAX);
        let mut expect = from;
        let mut failed = false;
        let iter = self.inner.trees.events.range(range).map_while(move |kv| {
            if failed {
                return None;
            }
            let item = (|| {
                let (k, v) = kv?;
                let (_, seq) = record::parse_key(&k).expect("range keys are 24 bytes");
                if seq != expect {
                    return Err(StoreError::Corrupt {
                        session,
                        seq: expect,
                        problem: RecordProblem::Undecodable(format!(
                            "record missing (next stored is seq {seq})"
                        )),
                    });
                }
                expect += 1;
                record::decode(&v, session, seq)
                    .map(|d| d.envelope)
                    .map_err(|problem| StoreError::Corrupt {
                        session,
                        seq,
                        problem,
                    })
            })();
            failed = item.is_err();
            Some(item)
        });
        Ok(Box::new(iter))
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

fn session_of(k: &[u8]) -> Result<SessionId, StoreError> {
    let bytes: [u8; 16] = k
        .try_into()
        .map_err(|_| StoreError::Damaged(format!("head key of {} bytes", k.len())))?;
    Ok(SessionId(Uuid::from_bytes(bytes)))
}

/// The single writer: applies appends one transaction each, flushes once per
/// group, then acknowledges and notifies.
struct Writer {
    trees: Trees,
    shared: Arc<Shared>,
    rx: Receiver<Request>,
    config: StoreConfig,
}

impl Writer {
    fn run(self) {
        let buffered = self.config.durability == Durability::Buffered;
        let interval = Duration::from_millis(self.config.buffered_flush_ms.max(1));
        // Committed but not yet flushed: session -> last seq.
        let mut unflushed: BTreeMap<SessionId, Seq> = BTreeMap::new();
        loop {
            let first = if unflushed.is_empty() {
                match self.rx.recv() {
                    Ok(r) => r,
                    Err(_) => break,
                }
            } else {
                match self.rx.recv_timeout(interval) {
                    Ok(r) => r,
                    Err(RecvTimeoutError::Timeout) => {
                        self.flush(&mut unflushed, Vec::new(), false);
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            };
            let mut group = vec![first];
            while group.len() < self.config.max_group {
                match self.rx.try_recv() {
                    Ok(r) => group.push(r),
                    Err(_) => break,
                }
            }
            let mut replies = Vec::with_capacity(group.len());
            let mut explicit_flush = false;
            for req in group {
                if req.events.is_empty() {
                    explicit_flush = true;
                    replies.push((req.reply, Ok(None)));
                    continue;
                }
                let result = match self.shared.check() {
                    Err(e) => Err(e),
                    Ok(()) => self.apply(&req),
                };
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
                replies.push((req.reply, result.map(Some)));
            }
            if buffered && !explicit_flush && unflushed.len() < 4096 {
                for (reply, r) in replies {
                    let _ = reply.send(r.map(|a| a.unwrap_or_else(flush_ack)));
                }
                continue;
            }
            self.flush(&mut unflushed, replies, explicit_flush);
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
    /// `replies` (errors if the flush failed) and notifies subscribers of what
    /// became durable.
    #[allow(clippy::type_complexity)]
    fn flush(
        &self,
        unflushed: &mut BTreeMap<SessionId, Seq>,
        replies: Vec<(
            Sender<Result<Appended, StoreError>>,
            Result<Option<Appended>, StoreError>,
        )>,
        force: bool,
    ) {
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
        let committed = std::mem::take(unflushed);
        if flushed.is_ok() && !committed.is_empty() {
            let mut durable = self.shared.durable.write().expect("durable lock");
            for (s, q) in &committed {
                durable.insert(*s, *q);
            }
        }
        for (reply, r) in replies {
            let r = match (&flushed, r) {
                (_, Err(e)) => Err(e),
                (Err(StoreError::Poisoned(why)), Ok(_)) => Err(StoreError::Poisoned(why.clone())),
                (Err(_), Ok(_)) => Err(StoreError::Closed),
                (Ok(()), Ok(a)) => Ok(a.unwrap_or_else(flush_ack)),
            };
            let _ = reply.send(r);
        }
        if flushed.is_ok() {
            self.shared.hub.notify(&committed);
        }
    }

    fn apply(&self, req: &Request) -> Result<Appended, StoreError> {
        let session = req.session;
        // Repeated ids inside the batch can never be stored.
        let mut seen = std::collections::BTreeSet::new();
        for e in &req.events {
            if !seen.insert(e.id) {
                return Err(StoreError::PartialDuplicate { id: e.id });
            }
        }
        let t = &self.trees;
        let result = (&t.events, &t.heads, &t.ids).transaction(|(ev, hd, ix)| {
            let abort = ConflictableTransactionError::Abort;
            // Idempotency first (a retry of a stored batch must not fail the version check).
            let mut stored = Vec::new();
            for e in &req.events {
                if let Some(pos) = ix.get(e.id.as_bytes())? {
                    stored.push((e, pos));
                }
            }
            if !stored.is_empty() {
                if stored.len() != req.events.len() {
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
                    let same = record::decode(&bytes, s, seq)
                        .map(|d| d.envelope == e.at(s, seq))
                        .unwrap_or(false);
                    if !same {
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
            let ok = match req.expected {
                Expected::Any => true,
                Expected::NoStream => head == 0,
                Expected::Exactly(n) => head == n,
            };
            if !ok {
                return Err(abort(StoreError::WrongExpectedVersion {
                    session,
                    expected: req.expected,
                    actual: head,
                }));
            }
            let mut seq = head;
            for e in &req.events {
                seq += 1;
                let env = e.at(session, seq);
                let (bytes, next) = record::encode(&env, &chain)
                    .map_err(|source| abort(StoreError::Encode { id: e.id, source }))?;
                chain = next;
                ev.insert(&position(session, seq)[..], bytes)?;
                ix.insert(e.id.as_bytes(), &position(session, seq)[..])?;
            }
            hd.insert(session.as_bytes(), &encode_head(seq, &chain)[..])?;
            Ok(Appended {
                session,
                first: head + 1,
                last: seq,
                duplicate: false,
            })
        });
        match result {
            Ok(a) => Ok(a),
            Err(TransactionError::Abort(e)) => Err(e),
            Err(TransactionError::Storage(e)) => {
                self.shared.poison(format!("write failed: {e}"));
                Err(StoreError::Sled(e))
            }
        }
    }
}

/// The acknowledgement of an explicit flush request.
fn flush_ack() -> Appended {
    Appended {
        session: SessionId(Uuid::nil()),
        first: 0,
        last: 0,
        duplicate: false,
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
    // Per session: (last seq seen, chain to continue from, chain trustworthy).
    let mut cur: Option<(SessionId, Seq, Chain)> = None;
    let mut finished: BTreeMap<SessionId, (Seq, Chain)> = BTreeMap::new();
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
        let (mut last, mut chain) = match cur {
            Some((s, last, chain)) if s == session => (last, chain),
            other => {
                if let Some((s, last, chain)) = other {
                    finished.insert(s, (last, chain));
                }
                (0, record::genesis(session))
            }
        };
        let mut chain_known = true;
        if seq != last + 1 {
            if seq > last + 1 {
                let missing = if seq == last + 2 {
                    format!("record missing (seq {} absent)", last + 1)
                } else {
                    format!("records missing (seq {} to {} absent)", last + 1, seq - 1)
                };
                err(&mut report, session, last + 1, missing);
            }
            chain_known = false;
        }
        match record::decode(&v, session, seq) {
            Ok(d) => {
                if chain_known && !d.chain_follows(&chain, &v) {
                    err(&mut report, session, seq, RecordProblem::Chain.to_string());
                }
                chain = d.chain;
            }
            Err(p) => {
                err(&mut report, session, seq, p.to_string());
                // Continue from the stored chain bytes if present, so one bad
                // record is one error, not a cascade.
                if v.len() >= record::MIN_RECORD_LEN {
                    let end = v.len() - 4;
                    chain = v[end - record::CHAIN_LEN..end]
                        .try_into()
                        .expect("32 bytes");
                }
            }
        }
        last = seq;
        cur = Some((session, last, chain));
    }
    if let Some((s, last, chain)) = cur {
        finished.insert(s, (last, chain));
    }
    for (s, (head, head_chain)) in &heads {
        match finished.get(s) {
            None => err(
                &mut report,
                *s,
                1,
                format!("head is {head} but no record is stored"),
            ),
            Some((last, chain)) => {
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
                } else if chain != head_chain {
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
    for (s, (last, _)) in &finished {
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
