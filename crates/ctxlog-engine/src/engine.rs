//! [`Engine`]: the I/O around [`ctxlog_core::decide()`]. A command is decided
//! on the session's cached state, its events are applied and appended to the
//! log in one atomic append, then every reaction the decision asks for is
//! decided the same way. Subscribers get a [`Notice`] for each committed
//! event that concerns them.

use crate::config::{CompactingHook, EngineConfig};
use crate::error::EngineError;
use crate::outcome::Notice;
use crate::summarize::Summarizer;
use crate::Clock;
use ctxlog_core::decide::{overflow_check, records_events};
use ctxlog_core::{
    decide, Command, Context, Decided, Draft, Envelope, IdSource, LoopGuard, ModelRef,
    OverflowCheck, SessionId, SessionState,
};
use ctxlog_store::{EventLog, Expected, NewEvent, SessionStates};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// How many times a command is decided again when other writers keep
/// moving its session's head (see `Engine::run`).
pub const MAX_CONFLICT_RETRIES: u32 = 16;

/// The fewest events between two snapshots of a session's state.
pub const SNAPSHOT_EVERY: u64 = 10_000;

/// Whether an append that moved a session's head from `before` to `after`
/// is due a snapshot: every [`SNAPSHOT_EVERY`] events, and every eighth of
/// the session's length beyond that, so a load folds at most that many
/// events and a long session does not pay for a snapshot (a walk over its
/// whole state) every few thousand events.
pub fn snapshot_due(before: u64, after: u64) -> bool {
    let step = (after.next_power_of_two() / 8).max(SNAPSHOT_EVERY);
    before / step != after / step
}

/// The engine: a log, injected clock and ids, a summarizer, and the cached
/// state of each open session. It runs the same code over any
/// [`EventLog`]: `Engine<SledStore>` is durable, `Engine<MemoryLog>` runs
/// in memory; [`EngineBuilder`](crate::EngineBuilder) makes either.
///
/// [`SledStore`]: ctxlog_sled::SledStore
/// [`MemoryLog`]: ctxlog_store::MemoryLog
pub struct Engine<L: EventLog> {
    pub(crate) log: L,
    pub(crate) clock: Arc<dyn Clock>,
    ids: Mutex<Box<dyn IdSource + Send>>,
    pub(crate) summarizer: Arc<dyn Summarizer>,
    pub(crate) compaction_model: Option<ModelRef>,
    pub(crate) hook: Option<Arc<dyn CompactingHook>>,
    loop_guard: LoopGuard,
    sessions: Mutex<BTreeMap<SessionId, Arc<Mutex<SessionState>>>>,
    subscribers: Mutex<Vec<crossbeam_channel::Sender<Notice>>>,
}

/// What a command and the reactions it led to decided, in order, and the
/// overflow check one of them made (see [`overflow_check`]).
pub(crate) struct Ran {
    pub(crate) decided: Vec<Decided>,
    pub(crate) overflow: Option<OverflowCheck>,
}

/// Locks a mutex whose data stays consistent even if a holder panicked.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The engine's id source, locked for each id only.
struct SharedIds<'a>(&'a Mutex<Box<dyn IdSource + Send>>);

impl IdSource for SharedIds<'_> {
    fn next_uuid(&mut self, now_ms: ctxlog_core::TimestampMs) -> uuid::Uuid {
        lock(self.0).next_uuid(now_ms)
    }
}

impl<L: EventLog> Engine<L> {
    /// An engine over `log`; fails when `config` is invalid.
    pub(crate) fn new(log: L, config: EngineConfig) -> Result<Self, EngineError> {
        config.validate()?;
        Ok(Engine {
            log,
            clock: config.clock,
            ids: Mutex::new(config.ids),
            summarizer: config.summarizer,
            compaction_model: config.compaction_model,
            hook: config.hook,
            loop_guard: config.loop_guard,
            sessions: Mutex::new(BTreeMap::new()),
            subscribers: Mutex::new(Vec::new()),
        })
    }

    /// The underlying log.
    pub fn store(&self) -> &L {
        &self.log
    }

    /// The loop guard in force.
    pub fn loop_guard(&self) -> LoopGuard {
        self.loop_guard
    }

    /// Subscribes to notices (compacted, failed, pruned, paused) on a bounded
    /// channel of `capacity`. A notice that does not fit is dropped for that
    /// subscriber (the log, and `audit`, always have the full story).
    pub fn subscribe(&self, capacity: usize) -> crossbeam_channel::Receiver<Notice> {
        let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
        lock(&self.subscribers).push(tx);
        rx
    }

    fn notify(&self, notice: Notice) {
        lock(&self.subscribers).retain(|tx| {
            !matches!(
                tx.try_send(notice.clone()),
                Err(crossbeam_channel::TrySendError::Disconnected(_))
            )
        });
    }

    /// A fresh id at the clock's time (for session ids).
    pub(crate) fn uuid(&self) -> uuid::Uuid {
        let at = self.clock.now_ms();
        lock(&self.ids).next_uuid(at)
    }

    /// Whether `session` is cached here or has events in the log (a cached
    /// session answers without a read).
    pub(crate) fn holds(&self, session: SessionId) -> Result<bool, EngineError> {
        if lock(&self.sessions).contains_key(&session) {
            return Ok(true);
        }
        Ok(self.log.head(session)? > 0)
    }

    /// The cached state of `session`, loaded from the log on first use.
    fn cached(&self, session: SessionId) -> Result<Arc<Mutex<SessionState>>, EngineError> {
        if let Some(s) = lock(&self.sessions).get(&session) {
            return Ok(s.clone());
        }
        let loaded = self.log.load_state(session)?;
        if loaded.state.session.is_none() {
            return Err(EngineError::UnknownSession(session));
        }
        let arc = Arc::new(Mutex::new(loaded.state));
        Ok(lock(&self.sessions).entry(session).or_insert(arc).clone())
    }

    /// Runs `f` on the session's state under its lock.
    pub(crate) fn with<T>(
        &self,
        session: SessionId,
        f: impl FnOnce(&mut SessionState) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let s = self.cached(session)?;
        let mut state = match s.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                // A panic under this lock (a bug, or a hook) may have left
                // the cached state half-updated: the log is the truth.
                let mut guard = poisoned.into_inner();
                s.clear_poison();
                *guard = SessionState::new();
                guard
            }
        };
        if state.session.is_none() {
            // Forgotten after a failed commit (or a panic): load it again.
            self.reload(session, &mut state)?;
        }
        f(&mut state)
    }

    fn reload(&self, session: SessionId, state: &mut SessionState) -> Result<(), EngineError> {
        *state = self.log.load_state(session)?.state;
        Ok(())
    }

    /// Reloads `state` from the log after a failed commit; when the log
    /// cannot be read either, forgets it (an empty state, which
    /// `with` loads again before the next use), so that no
    /// decision is ever made on events the log may not hold.
    fn reload_or_forget(&self, session: SessionId, state: &mut SessionState) {
        if let Err(e) = self.reload(session, state) {
            tracing::warn!(%session, error = %e, "the session's state is reloaded at its next use");
            *state = SessionState::new();
        }
    }

    /// Decides `command` on `state` and commits what it decided, then every
    /// reaction it leads to; returns the decisions in order, with the
    /// overflow check one of them made.
    pub(crate) fn run(
        &self,
        session: SessionId,
        state: &mut SessionState,
        command: Command,
    ) -> Result<Ran, EngineError> {
        // Doubling from one: a `Decided` is large, and a list's usual first
        // growth (to four) took glibc's slow path (`malloc_consolidate`) on
        // every append, 3 µs of 110.
        let mut ran = Ran {
            decided: Vec::with_capacity(1),
            overflow: None,
        };
        let mut next = Some(command);
        while let Some(command) = next {
            let (decided, check) = self.decide_and_commit(session, state, command)?;
            next = decided.then.clone();
            ran.overflow = ran.overflow.or(check);
            if ran.decided.len() == ran.decided.capacity() {
                ran.decided.reserve_exact(ran.decided.capacity());
            }
            ran.decided.push(decided);
        }
        Ok(ran)
    }

    /// Decides `command` on `state` and commits it. When another writer
    /// (another process or host on a shared log) moved the session's head
    /// meanwhile, the append is refused, the state caught up from the log
    /// and the command decided again on it, at most
    /// [`MAX_CONFLICT_RETRIES`] times: every decision is made on the state
    /// it follows.
    fn decide_and_commit(
        &self,
        session: SessionId,
        state: &mut SessionState,
        command: Command,
    ) -> Result<(Decided, Option<OverflowCheck>), EngineError> {
        let mut conflicts = 0;
        loop {
            // What the command's overflow check finds, on the state it is
            // decided on (a query: `decide` makes the same check).
            let check = overflow_check(state, &command);
            let decided = {
                // The ids lock is taken per id, never for a whole decision:
                // decisions on other sessions go on meanwhile.
                let mut ids = SharedIds(&self.ids);
                let mut context = Context {
                    ids: &mut ids,
                    at: self.clock.now_ms(),
                    guard: self.loop_guard,
                };
                decide(state, command.clone(), &mut context)?
            };
            if decided.events.is_empty() {
                return Ok((decided, check));
            }
            let made_here = !records_events(&command);
            match self.commit(session, state, decided.events.clone(), made_here) {
                Ok(()) => return Ok((decided, check)),
                Err(e) if e.is_version_conflict() && conflicts < MAX_CONFLICT_RETRIES => {
                    conflicts += 1;
                    tracing::debug!(%session, conflicts, "another writer moved the head; deciding again");
                    if state.session.is_none() {
                        // The commit could not reload it: the error says why.
                        self.reload(session, state)?;
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Applies `drafts` to `state` and appends them, atomically: if the
    /// reducer refuses one or the log fails, nothing is kept and the state is
    /// reloaded from the log. Notices follow the append. `made_here`: the
    /// drafts are `decide`'s own (not a recording's events), so the reducer
    /// refusing one is a bug (`decide` checks every input it takes).
    fn commit(
        &self,
        session: SessionId,
        state: &mut SessionState,
        drafts: Vec<Draft>,
        made_here: bool,
    ) -> Result<(), EngineError> {
        let head = state.head;
        let mut envelopes: Vec<Envelope> = Vec::with_capacity(drafts.len());
        let mut causation = state.last_event;
        for (seq, draft) in (head + 1..).zip(drafts) {
            let env = Envelope {
                session,
                seq,
                id: draft.id,
                recorded_at: draft.at,
                causation,
                correlation: None,
                event: draft.event,
            };
            causation = Some(env.id);
            if let Err(e) = state.evolve(&env) {
                debug_assert!(
                    !made_here,
                    "the reducer refused an event decide made ({e}): decide must check it"
                );
                self.reload_or_forget(session, state);
                return Err(e.into());
            }
            envelopes.push(env);
        }
        let notices: Vec<Notice> = envelopes
            .iter()
            .filter_map(|e| Notice::of(session, &e.event))
            .collect();
        let expected = if head == 0 {
            Expected::NoStream
        } else {
            Expected::Exactly(head)
        };
        let batch = envelopes.into_iter().map(NewEvent::from).collect();
        if let Err(e) = self.log.append(session, expected, batch) {
            // The append may or may not be stored (a lost acknowledgement):
            // only the log can say.
            self.reload_or_forget(session, state);
            return Err(e.into());
        }
        if snapshot_due(head, state.head) {
            // A cache: a failure costs the next load a longer fold, no more.
            if let Err(e) = self.log.save_snapshot(state) {
                tracing::warn!(%session, error = %e, "snapshot not saved");
            }
        }
        for notice in notices {
            if let Notice::AutoCompactionPaused { reason, .. } = &notice {
                tracing::warn!(%session, %reason, "auto-compaction paused");
            }
            self.notify(notice);
        }
        Ok(())
    }

    /// Starts `session`, an id the caller chose (one derived from a name,
    /// say); the log refuses it if the session already has events.
    pub(crate) fn start_as(&self, session: SessionId, command: Command) -> Result<(), EngineError> {
        let mut state = SessionState::new();
        self.run(session, &mut state, command)?;
        lock(&self.sessions).insert(session, Arc::new(Mutex::new(state)));
        Ok(())
    }
}
