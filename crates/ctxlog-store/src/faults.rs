//! [`FaultyLog`]: a log that fails on schedule (feature `testing`), over
//! the memory log or a durable log (`ctxlog_sled` implements
//! [`Faultable`] for its store), so that what a log failure does to
//! the engine is tested from a seed and replays exactly: the same seed
//! gives the same faults at the same calls, without a clock, a kill or a
//! mount. The faults strike at the call boundary; what sled itself does
//! when its process is killed is the kill tests' subject.
//!
//! Every call to the log is one numbered operation (from 1). A [`Fault`]
//! planned at operation `n` strikes the `n`-th call. The log remembers
//! every event an append acknowledged; [`FaultyLog::check_acknowledged`]
//! says whether each is still stored where it was acknowledged.
//!
//! A batch is atomic in every log (the conformance suite checks it), so a
//! crash tears no batch here: it strikes before or after the commit point
//! ([`Fault::Crash`]`{ written }`). What a crash does tear is the engine's
//! work between two appends: a decision stored, its reaction not yet.

use crate::error::{AppendError, BackendError, Expected, ReadError};
use crate::follower::Followable;
use crate::log::{Appended, EventLog, NewEvent, Snapshot};
use crate::memory::MemoryLog;
use crate::subscribe::Subscription;
use ctxlog_core::{Envelope, EventId, Seq, SessionId};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What goes wrong at an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The call fails and nothing is written (a refused write, an error
    /// noticed before anything reached the disk).
    Fail,
    /// An append is written and durable, but the caller hears an error:
    /// the acknowledgement was lost on its way back.
    LostAck,
    /// The log goes down: the call in flight fails (an append in flight is
    /// stored when `written`, the crash struck past its commit point), and
    /// every later call fails until [`FaultyLog::restart`].
    Crash {
        /// Whether an append in flight reached the disk.
        written: bool,
    },
    /// The sync of an append fails: the caller hears an error and the log
    /// is poisoned until [`FaultyLog::restart`]; after it the append is
    /// stored or not (`survives`), as the disk kept it or not.
    SyncError {
        /// Whether the unsynced append is there after the restart.
        survives: bool,
    },
    /// The log cannot be reached for `calls` calls (this one and the next
    /// ones fail, nothing is written), then answers again by itself: a
    /// dropped connection, no restart.
    Outage {
        /// How many calls fail.
        calls: u32,
    },
}

/// Why the log is not answering.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Down {
    Up,
    /// Crashed at an operation: every call fails until the restart.
    Crashed(u64),
    /// Poisoned by a failed sync; the append to drop at the restart, when
    /// it does not survive.
    Poisoned(u64, Option<(SessionId, Seq, Seq)>),
    /// Unreachable for this many more calls.
    Unreachable(u32),
}

#[derive(Debug)]
struct Plan {
    operations: u64,
    faults: BTreeMap<u64, Fault>,
    down: Down,
    /// Every event an append acknowledged: where, and its id.
    acknowledged: Vec<(SessionId, Seq, EventId)>,
    /// Every fault that struck: (operation, fault).
    struck: Vec<(u64, Fault)>,
}

/// A log under a [`FaultyLog`]: what a failed sync can do to it.
pub trait Faultable: Followable + Clone + Send + Sync + 'static {
    /// Drops `session`'s events from seq `first` on, as a disk that lost
    /// an unsynced write would; `false` when this log cannot (its writes
    /// are durable once made, so a failed sync's write survives).
    fn drop_unsynced(&self, session: SessionId, first: Seq) -> bool;
}

impl Faultable for MemoryLog {
    fn drop_unsynced(&self, session: SessionId, first: Seq) -> bool {
        self.drop_tail(session, first);
        true
    }
}

/// A log that fails on schedule; see the module doc. Clones share the log
/// and its plan, so a test keeps one while an engine uses another, and
/// hands it to a new engine after a restart.
#[derive(Debug, Clone)]
pub struct FaultyLog<L = MemoryLog> {
    inner: L,
    plan: Arc<Mutex<Plan>>,
}

/// What a struck call does.
enum Strike {
    /// Nothing: the call goes on.
    Pass,
    /// The call fails with this message; an append is written first when
    /// `write` says so.
    Fail { message: String, write: bool },
}

impl Default for FaultyLog {
    fn default() -> Self {
        FaultyLog::new()
    }
}

impl FaultyLog {
    /// An empty memory log with no fault planned.
    pub fn new() -> Self {
        FaultyLog::over(MemoryLog::new())
    }
}

impl<L: Faultable> FaultyLog<L> {
    /// `inner` (empty), with no fault planned.
    pub fn over(inner: L) -> Self {
        FaultyLog {
            inner,
            plan: Arc::new(Mutex::new(Plan {
                operations: 0,
                faults: BTreeMap::new(),
                down: Down::Up,
                acknowledged: Vec::new(),
                struck: Vec::new(),
            })),
        }
    }

    fn plan(&self) -> MutexGuard<'_, Plan> {
        self.plan.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Plans `fault` at operation `n` (the `n`-th call from now on counts
    /// from the log's first call, 1).
    pub fn fail_at(&self, n: u64, fault: Fault) {
        self.plan().faults.insert(n, fault);
    }

    /// How many calls the log has had.
    pub fn operations(&self) -> u64 {
        self.plan().operations
    }

    /// The faults that struck, with their operations.
    pub fn struck(&self) -> Vec<(u64, Fault)> {
        self.plan().struck.clone()
    }

    /// Whether the log is down until a restart (crashed or poisoned).
    pub fn needs_restart(&self) -> bool {
        matches!(self.plan().down, Down::Crashed(_) | Down::Poisoned(..))
    }

    /// Cancels the faults still planned and ends an outage (a crash or a
    /// failed sync still needs [`FaultyLog::restart`]): for the checks at
    /// the end of a run.
    pub fn disarm(&self) {
        let mut plan = self.plan();
        plan.faults.clear();
        if let Down::Unreachable(_) = plan.down {
            plan.down = Down::Up;
        }
    }

    /// The log comes back after a crash or a failed sync: an unsynced
    /// append that did not survive is gone, every later call answers.
    pub fn restart(&self) {
        let mut plan = self.plan();
        if let Down::Poisoned(_, Some((session, first, last))) = plan.down {
            if self.inner.drop_unsynced(session, first) {
                plan.acknowledged
                    .retain(|&(s, seq, _)| s != session || seq < first || seq > last);
            }
        }
        plan.down = Down::Up;
    }

    /// Every event still stored where an append acknowledged it, or the
    /// first that is not.
    pub fn check_acknowledged(&self) -> Result<(), String> {
        let acknowledged = self.plan().acknowledged.clone();
        let mut by_session: BTreeMap<SessionId, Vec<(Seq, EventId)>> = BTreeMap::new();
        for (s, seq, id) in acknowledged {
            by_session.entry(s).or_default().push((seq, id));
        }
        for (session, events) in by_session {
            let stored: BTreeMap<Seq, EventId> = self
                .inner
                .read(session, 1)
                .map_err(|e| e.to_string())?
                .map(|e| e.map(|e| (e.seq, e.id)))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            for (seq, id) in events {
                match stored.get(&seq) {
                    Some(found) if *found == id => {}
                    Some(found) => {
                        return Err(format!(
                            "session {session} seq {seq}: event {id} was acknowledged, {found} is stored"
                        ))
                    }
                    None => {
                        return Err(format!(
                            "session {session} seq {seq}: event {id} was acknowledged and is gone"
                        ))
                    }
                }
            }
        }
        Ok(())
    }

    /// Counts a call and says what the plan does to it.
    fn strike(&self, what: &str) -> Strike {
        let mut plan = self.plan();
        plan.operations += 1;
        let n = plan.operations;
        match plan.down.clone() {
            Down::Up => {}
            Down::Crashed(at) => {
                return Strike::Fail {
                    message: format!("{what}: the log crashed at operation {at}"),
                    write: false,
                }
            }
            Down::Poisoned(at, _) => {
                return Strike::Fail {
                    message: format!("{what}: a sync failed at operation {at}"),
                    write: false,
                }
            }
            Down::Unreachable(left) => {
                plan.down = if left > 1 {
                    Down::Unreachable(left - 1)
                } else {
                    Down::Up
                };
                return Strike::Fail {
                    message: format!("{what}: the log is unreachable (operation {n})"),
                    write: false,
                };
            }
        }
        let Some(fault) = plan.faults.remove(&n) else {
            return Strike::Pass;
        };
        plan.struck.push((n, fault));
        let message = format!("{what}: {fault:?} at operation {n}");
        match fault {
            Fault::Fail => Strike::Fail {
                message,
                write: false,
            },
            Fault::LostAck => Strike::Fail {
                message,
                write: true,
            },
            Fault::Crash { written } => {
                plan.down = Down::Crashed(n);
                Strike::Fail {
                    message,
                    write: written,
                }
            }
            Fault::SyncError { .. } => {
                // Which append to drop is known once it is written.
                plan.down = Down::Poisoned(n, None);
                Strike::Fail {
                    message,
                    write: true,
                }
            }
            Fault::Outage { calls } => {
                if calls > 1 {
                    plan.down = Down::Unreachable(calls - 1);
                }
                Strike::Fail {
                    message,
                    write: false,
                }
            }
        }
    }

    /// A read-side call, failing as planned.
    fn read_call<T>(
        &self,
        what: &str,
        call: impl FnOnce() -> Result<T, ReadError>,
    ) -> Result<T, ReadError> {
        match self.strike(what) {
            Strike::Pass => call(),
            Strike::Fail { message, .. } => Err(ReadError::Backend(BackendError::new(message))),
        }
    }

    /// Notes an acknowledged append.
    fn acknowledge(&self, session: SessionId, appended: &Appended, events: &[NewEvent]) {
        let mut plan = self.plan();
        for (seq, e) in (appended.first..=appended.last).zip(events) {
            if !plan.acknowledged.contains(&(session, seq, e.id)) {
                plan.acknowledged.push((session, seq, e.id));
            }
        }
    }
}

impl<L: Faultable> EventLog for FaultyLog<L> {
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, AppendError> {
        match self.strike("append") {
            Strike::Pass => {
                let appended = self.inner.append(session, expected, events.clone())?;
                self.acknowledge(session, &appended, &events);
                Ok(appended)
            }
            Strike::Fail { message, write } => {
                if write {
                    if let Ok(a) = self.inner.append(session, expected, events) {
                        let mut plan = self.plan();
                        if let Down::Poisoned(at, None) = plan.down {
                            let survives = matches!(
                                plan.struck.last(),
                                Some((_, Fault::SyncError { survives: true }))
                            );
                            if !survives && !a.duplicate {
                                plan.down = Down::Poisoned(at, Some((session, a.first, a.last)));
                            }
                        }
                    }
                }
                Err(AppendError::Backend(BackendError::new(message)))
            }
        }
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, ReadError>> + '_>, ReadError> {
        self.read_call("read", || self.inner.read(session, from))
    }

    fn head(&self, session: SessionId) -> Result<Seq, ReadError> {
        self.read_call("head", || self.inner.head(session))
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, ReadError> {
        self.read_call("sessions", || self.inner.sessions())
    }

    fn newest_snapshot(
        &self,
        session: SessionId,
        version: u32,
    ) -> Result<Option<Snapshot>, ReadError> {
        self.read_call("newest_snapshot", || {
            self.inner.newest_snapshot(session, version)
        })
    }

    fn flush(&self) -> Result<(), AppendError> {
        match self.strike("flush") {
            Strike::Pass => Ok(()),
            Strike::Fail { message, .. } => Err(AppendError::Backend(BackendError::new(message))),
        }
    }

    fn keeps_snapshots(&self) -> bool {
        self.inner.keeps_snapshots()
    }

    fn keep_snapshot(&self, snapshot: Snapshot) -> Result<(), AppendError> {
        match self.strike("keep_snapshot") {
            Strike::Pass => self.inner.keep_snapshot(snapshot),
            Strike::Fail { message, .. } => Err(AppendError::Backend(BackendError::new(message))),
        }
    }
}

impl<L: Faultable> Followable for FaultyLog<L> {
    fn subscribe(&self) -> Subscription {
        self.inner.subscribe()
    }

    fn durable_heads(&self) -> Result<BTreeMap<SessionId, Seq>, ReadError> {
        self.read_call("durable_heads", || self.inner.durable_heads())
    }
}
