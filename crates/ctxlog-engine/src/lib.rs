//! ctxlog-engine: what an agent embeds. It turns commands into events on the
//! durable log and runs compaction as the seeds describe it — a queued job in
//! the same event stream:
//!
//! 1. after every finished step the overflow predicate is checked; on
//!    overflow the engine queues a marker (`CompactionRequested`, `auto`);
//! 2. [`Engine::run_pending`] runs queued jobs: `CompactionStarted` (with the
//!    prompt's hash and size), the summarizer (no tools), the redacted summary
//!    text, `SummaryCompleted`; on failure `CompactionFailed`, history intact;
//! 3. after an automatic compaction, the synthetic user message
//!    `Continue if you have next steps` (never after a manual one);
//! 4. [`Engine::end_turn`] prunes.
//!
//! Clock and ids are injected ([`Clock`], [`ctxlog_core::IdSource`]), so the
//! same commands give byte-identical logs.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod openai;
pub mod recording;
pub mod redact;
pub mod summarize;
pub mod workers;

use ctxlog_core::policy::Estimator;
use ctxlog_core::window::{estimate_json, window, Window, CONTINUE_TEXT};
use ctxlog_core::{
    plan_prune, CompactionTrigger, Envelope, Event, EventId, FinishReason, IdSource, JobStatus,
    MessageId, ModelLimits, ModelRef, OverflowCheck, PartBody, PartId, Policy, PromptRecord, Role,
    Seq, SessionId, SessionState, TimestampMs, TokenUsage,
};
use ctxlog_store::{EventLog, Expected, NewEvent, SledStore, StoreError};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use summarize::{
    SummarizeError, Summarizer, SummaryRequest, COMPACTION_INSTRUCTION, COMPACTION_SYSTEM_PROMPT,
};
use thiserror::Error;

/// Where time comes from. Injected so that tests and replays are deterministic.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> TimestampMs;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> TimestampMs {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when asked (1 ms per reading by default), for tests
/// and deterministic replays.
#[derive(Debug, Default)]
pub struct ManualClock(std::sync::atomic::AtomicU64);

impl ManualClock {
    /// A clock starting at `ms`.
    pub fn new(ms: TimestampMs) -> Self {
        ManualClock(std::sync::atomic::AtomicU64::new(ms))
    }
    /// Moves the clock forward.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
    }
    /// Moves the clock forward to `ms` if it is behind (never backwards).
    pub fn advance_to(&self, ms: TimestampMs) {
        self.0.fetch_max(ms, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> TimestampMs {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }
}

/// What a compacting hook adds: context lines appended to the instruction, or
/// a whole replacement prompt. Treated as untrusted and length-capped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookOutput {
    /// Extra context lines.
    pub context: Vec<String>,
    /// A replacement for the instruction.
    pub prompt: Option<String>,
}

/// The seeds' `experimental.session.compacting` plugin hook.
///
/// It is called while the engine holds the session's lock: it must not call
/// back into the engine for the same session (it would wait on itself).
pub trait CompactingHook: Send + Sync {
    /// Called before each compaction request is built.
    fn compacting(&self, session: SessionId) -> HookOutput;
}

/// Caps on what a hook may supply.
pub const HOOK_MAX_LINES: usize = 32;
/// Longest hook context line kept, in chars.
pub const HOOK_MAX_LINE_CHARS: usize = 2_000;
/// Longest hook replacement prompt kept, in chars.
pub const HOOK_MAX_PROMPT_CHARS: usize = 8_000;

/// How the engine behaves beyond the policy in the log.
pub struct EngineConfig {
    /// Time source.
    pub clock: Arc<dyn Clock>,
    /// Id source. It must never repeat an id already in the store: a
    /// deterministic source reopened on the same store needs a new seed (the
    /// store refuses a repeated id with different content, so nothing is
    /// corrupted, but the command fails).
    pub ids: Box<dyn IdSource + Send>,
    /// The summarizer.
    pub summarizer: Arc<dyn Summarizer>,
    /// A model used only for compaction, when configured.
    pub compaction_model: Option<ModelRef>,
    /// The compacting hook, if any.
    pub hook: Option<Arc<dyn CompactingHook>>,
    /// When automatic compaction stops itself.
    pub loop_guard: LoopGuard,
}

/// The loop guard: automatic compaction pauses (recorded as
/// `AutoCompactionPaused`) until the next real user message when it does not
/// help or fires too often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopGuard {
    /// An automatic compaction must shrink the estimated window by at least
    /// this many percent.
    pub min_shrink_percent: u64,
    /// Most automatic compactions (completed or failed)...
    pub max_auto: u32,
    /// ...within this many finished steps.
    pub within_steps: u32,
}

impl Default for LoopGuard {
    fn default() -> Self {
        LoopGuard {
            min_shrink_percent: 20,
            max_auto: 3,
            within_steps: 6,
        }
    }
}

impl EngineConfig {
    /// System clock, random-free ids seeded from the clock, extractive summarizer.
    pub fn new(ids: Box<dyn IdSource + Send>, clock: Arc<dyn Clock>) -> Self {
        EngineConfig {
            clock,
            ids,
            summarizer: Arc::new(summarize::ExtractiveSummarizer::default()),
            compaction_model: None,
            hook: None,
            loop_guard: LoopGuard::default(),
        }
    }
}

/// Everything an engine call can fail with.
#[derive(Debug, Error)]
pub enum EngineError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The command would break an invariant; nothing was written.
    #[error(transparent)]
    Refused(#[from] ctxlog_core::RefusedEvent),
    /// No such session.
    #[error("unknown session {0}")]
    UnknownSession(SessionId),
    /// A seq beyond the session's head.
    #[error("session {session} has no event {seq} (head {head})")]
    NoSuchSeq {
        /// The session.
        session: SessionId,
        /// The seq asked for.
        seq: Seq,
        /// The head.
        head: Seq,
    },
}

/// What a finished step led to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepOutcome {
    /// The step's message.
    pub message: MessageId,
    /// The overflow check of this step.
    pub overflow: Option<OverflowCheck>,
    /// The compaction job queued because of it, if any.
    pub queued: Option<MessageId>,
}

/// What became of one compaction job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// The summary completed; the window now starts at the marker.
    Completed {
        /// The job.
        job: MessageId,
        /// The summary message.
        summary: MessageId,
        /// Whether a synthetic continue message was appended.
        continued: bool,
        /// Secrets redacted from the summary.
        redactions: u32,
    },
    /// The job failed; history is as it was.
    Failed {
        /// The job.
        job: MessageId,
        /// Why.
        error: String,
    },
}

/// What the engine tells its subscribers, after the events are durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A compaction completed: the window now starts at its marker.
    Compacted {
        /// The session.
        session: SessionId,
        /// The job.
        job: MessageId,
    },
    /// A compaction failed; history is as it was.
    CompactionFailed {
        /// The session.
        session: SessionId,
        /// The job.
        job: MessageId,
        /// Why.
        error: String,
    },
    /// Tool outputs were pruned.
    Pruned {
        /// The session.
        session: SessionId,
        /// How many parts.
        parts: usize,
        /// Their estimated tokens.
        tokens: u64,
    },
    /// The loop guard paused automatic compaction.
    AutoCompactionPaused {
        /// The session.
        session: SessionId,
        /// Why.
        reason: String,
    },
}

/// The engine: a store, injected clock and ids, a summarizer, and the cached
/// state of each open session.
pub struct Engine {
    store: SledStore,
    clock: Arc<dyn Clock>,
    ids: Mutex<Box<dyn IdSource + Send>>,
    summarizer: Arc<dyn Summarizer>,
    compaction_model: Option<ModelRef>,
    hook: Option<Arc<dyn CompactingHook>>,
    loop_guard: LoopGuard,
    sessions: Mutex<BTreeMap<SessionId, Arc<Mutex<SessionState>>>>,
    subscribers: Mutex<Vec<crossbeam_channel::Sender<Notice>>>,
}

impl Engine {
    /// An engine over `store`.
    pub fn new(store: SledStore, config: EngineConfig) -> Self {
        Engine {
            store,
            clock: config.clock,
            ids: Mutex::new(config.ids),
            summarizer: config.summarizer,
            compaction_model: config.compaction_model,
            hook: config.hook,
            loop_guard: config.loop_guard,
            sessions: Mutex::new(BTreeMap::new()),
            subscribers: Mutex::new(Vec::new()),
        }
    }

    /// The underlying store.
    pub fn store(&self) -> &SledStore {
        &self.store
    }

    /// Subscribes to notices (compacted, failed, pruned, paused) on a bounded
    /// channel of `capacity`. A notice that does not fit is dropped for that
    /// subscriber (the log, and `audit`, always have the full story).
    pub fn subscribe(&self, capacity: usize) -> crossbeam_channel::Receiver<Notice> {
        let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
        self.subscribers.lock().expect("subscribers lock").push(tx);
        rx
    }

    fn notify(&self, notice: Notice) {
        self.subscribers
            .lock()
            .expect("subscribers lock")
            .retain(|tx| {
                !matches!(
                    tx.try_send(notice.clone()),
                    Err(crossbeam_channel::TrySendError::Disconnected(_))
                )
            });
    }

    fn uuid(&self, at: TimestampMs) -> uuid::Uuid {
        self.ids.lock().expect("ids lock").next_uuid(at)
    }

    /// The cached state of `session`, loaded from the store on first use.
    fn session(&self, session: SessionId) -> Result<Arc<Mutex<SessionState>>, EngineError> {
        if let Some(s) = self.sessions.lock().expect("sessions lock").get(&session) {
            return Ok(s.clone());
        }
        let loaded = self.store.load_state(session)?;
        if loaded.state.session.is_none() {
            return Err(EngineError::UnknownSession(session));
        }
        let arc = Arc::new(Mutex::new(loaded.state));
        Ok(self
            .sessions
            .lock()
            .expect("sessions lock")
            .entry(session)
            .or_insert(arc)
            .clone())
    }

    /// Applies `events` to `state` and appends them durably, atomically: if
    /// the reducer refuses one or the store fails, nothing is kept and the
    /// state is reloaded from the log.
    fn commit(
        &self,
        session: SessionId,
        state: &mut SessionState,
        events: Vec<Event>,
    ) -> Result<Vec<Envelope>, EngineError> {
        let head = state.head;
        let mut envelopes = Vec::with_capacity(events.len());
        let mut causation = state.last_event;
        for (i, event) in events.into_iter().enumerate() {
            let at = self.clock.now_ms();
            let env = Envelope {
                session,
                seq: head + 1 + i as u64,
                id: EventId(self.uuid(at)),
                recorded_at: at,
                causation,
                correlation: None,
                event,
            };
            causation = Some(env.id);
            if let Err(e) = state.evolve(&env) {
                self.reload(session, state)?;
                return Err(e.into());
            }
            envelopes.push(env);
        }
        let batch: Vec<NewEvent> = envelopes.iter().cloned().map(NewEvent::from).collect();
        let expected = if head == 0 {
            Expected::NoStream
        } else {
            Expected::Exactly(head)
        };
        if let Err(e) = self.store.append(session, expected, batch) {
            self.reload(session, state)?;
            return Err(e.into());
        }
        Ok(envelopes)
    }

    fn reload(&self, session: SessionId, state: &mut SessionState) -> Result<(), EngineError> {
        *state = self.store.load_state(session)?.state;
        Ok(())
    }

    /// Runs `f` on the session's state under its lock.
    fn with<T>(
        &self,
        session: SessionId,
        f: impl FnOnce(&mut SessionState) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let s = self.session(session)?;
        let mut state = match s.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                // A panic under this lock (a bug, or a hook) may have left
                // the cached state half-updated: the log is the truth.
                let mut guard = poisoned.into_inner();
                s.clear_poison();
                self.reload(session, &mut guard)?;
                guard
            }
        };
        f(&mut state)
    }

    /// Starts a session with a policy and the model's limits.
    pub fn start_session(
        &self,
        policy: Policy,
        limits: ModelLimits,
        title: Option<String>,
    ) -> Result<SessionId, EngineError> {
        self.start_session_from(policy, limits, title, None)
    }

    /// Starts a session replayed from a recording whose own id is `source_id`.
    pub fn start_session_from(
        &self,
        policy: Policy,
        limits: ModelLimits,
        title: Option<String>,
        source_id: Option<String>,
    ) -> Result<SessionId, EngineError> {
        let session = SessionId(self.uuid(self.clock.now_ms()));
        let mut state = SessionState::new();
        self.commit(
            session,
            &mut state,
            vec![Event::SessionStarted {
                policy,
                limits,
                title,
                source_id,
            }],
        )?;
        self.sessions
            .lock()
            .expect("sessions lock")
            .insert(session, Arc::new(Mutex::new(state)));
        Ok(session)
    }

    /// Appends `events` as they are (ids and source ids included) in one
    /// atomic append: how a recording is fed through the engine. When the
    /// last one finishes a step, the overflow check runs as after
    /// [`Engine::finish_step`] and its outcome is returned.
    pub fn apply(
        &self,
        session: SessionId,
        events: Vec<Event>,
    ) -> Result<Option<StepOutcome>, EngineError> {
        if events.is_empty() {
            return Ok(None);
        }
        let step = match events.last() {
            Some(Event::StepFinished { message, .. }) => Some(*message),
            _ => None,
        };
        self.with(session, |state| {
            self.commit(session, state, events)?;
            match step {
                Some(message) => self.after_step(session, state, message).map(Some),
                None => Ok(None),
            }
        })
    }

    /// Appends a user message with one text part. A real (non-synthetic)
    /// message also lifts a loop-guard pause.
    pub fn user_message(&self, session: SessionId, text: &str) -> Result<MessageId, EngineError> {
        self.with(session, |state| self.push_user(session, state, text, false))
    }

    fn push_user(
        &self,
        session: SessionId,
        state: &mut SessionState,
        text: &str,
        synthetic: bool,
    ) -> Result<MessageId, EngineError> {
        let at = self.clock.now_ms();
        let message = MessageId(self.uuid(at));
        let part = PartId(self.uuid(at));
        self.commit(
            session,
            state,
            vec![
                Event::MessageAppended {
                    message,
                    role: Role::User,
                    agent: None,
                    model: None,
                    synthetic,
                    parent: None,
                    source_id: None,
                },
                Event::PartAppended {
                    message,
                    part,
                    body: PartBody::Text {
                        text: text.into(),
                        synthetic,
                        time: None,
                    },
                    source_id: None,
                },
            ],
        )?;
        Ok(message)
    }

    /// Records one finished assistant step: its message, its parts, its
    /// usage and finish reason, in one atomic append. Then checks overflow
    /// and, when the policy says so, queues an automatic compaction.
    pub fn record_step(
        &self,
        session: SessionId,
        parent: MessageId,
        model: Option<ModelRef>,
        parts: Vec<PartBody>,
        tokens: TokenUsage,
        reason: FinishReason,
    ) -> Result<StepOutcome, EngineError> {
        self.with(session, |state| {
            let at = self.clock.now_ms();
            let message = MessageId(self.uuid(at));
            let mut events = vec![Event::MessageAppended {
                message,
                role: Role::Assistant,
                agent: None,
                model,
                synthetic: false,
                parent: Some(parent),
                source_id: None,
            }];
            for body in parts {
                events.push(Event::PartAppended {
                    message,
                    part: PartId(self.uuid(at)),
                    body,
                    source_id: None,
                });
            }
            events.push(Event::StepFinished {
                message,
                part: PartId(self.uuid(at)),
                reason,
                tokens,
                cost_micros: None,
            });
            self.commit(session, state, events)?;
            self.after_step(session, state, message)
        })
    }

    /// The overflow check after a finished step; queues an automatic
    /// compaction when it fires, auto is on, no job is pending and the loop
    /// guard has not paused automatic compaction.
    fn after_step(
        &self,
        session: SessionId,
        state: &mut SessionState,
        message: MessageId,
    ) -> Result<StepOutcome, EngineError> {
        let overflow = state.overflow();
        let mut queued = None;
        if let Some(check) = overflow.filter(|c| c.overflow) {
            if state.auto_paused.is_none() && state.pending_jobs().next().is_none() {
                queued = Some(self.queue(
                    session,
                    state,
                    true,
                    CompactionTrigger::Overflow {
                        step: message,
                        check,
                    },
                )?);
            }
        }
        Ok(StepOutcome {
            message,
            overflow,
            queued,
        })
    }

    fn queue(
        &self,
        session: SessionId,
        state: &mut SessionState,
        auto: bool,
        trigger: CompactionTrigger,
    ) -> Result<MessageId, EngineError> {
        let at = self.clock.now_ms();
        let message = MessageId(self.uuid(at));
        let part = PartId(self.uuid(at));
        self.commit(
            session,
            state,
            vec![Event::CompactionRequested {
                message,
                part,
                auto,
                overflow: false,
                trigger,
                agent: None,
                model: None,
                source_id: None,
            }],
        )?;
        Ok(message)
    }

    /// Appends an assistant message with no parts (for streaming agents that
    /// add parts and finish the step themselves).
    pub fn assistant_message(
        &self,
        session: SessionId,
        parent: MessageId,
        model: Option<ModelRef>,
    ) -> Result<MessageId, EngineError> {
        self.with(session, |state| {
            let message = MessageId(self.uuid(self.clock.now_ms()));
            self.commit(
                session,
                state,
                vec![Event::MessageAppended {
                    message,
                    role: Role::Assistant,
                    agent: None,
                    model,
                    synthetic: false,
                    parent: Some(parent),
                    source_id: None,
                }],
            )?;
            Ok(message)
        })
    }

    /// Appends a part to a message.
    pub fn append_part(
        &self,
        session: SessionId,
        message: MessageId,
        body: PartBody,
    ) -> Result<PartId, EngineError> {
        self.with(session, |state| {
            let part = PartId(self.uuid(self.clock.now_ms()));
            self.commit(
                session,
                state,
                vec![Event::PartAppended {
                    message,
                    part,
                    body,
                    source_id: None,
                }],
            )?;
            Ok(part)
        })
    }

    /// Replaces a part's content (a tool going pending → running → completed/error).
    pub fn update_part(
        &self,
        session: SessionId,
        part: PartId,
        body: PartBody,
    ) -> Result<(), EngineError> {
        self.with(session, |state| {
            self.commit(session, state, vec![Event::PartUpdated { part, body }])
                .map(|_| ())
        })
    }

    /// Finishes a step of a message built part by part; see [`Engine::record_step`].
    pub fn finish_step(
        &self,
        session: SessionId,
        message: MessageId,
        tokens: TokenUsage,
        reason: FinishReason,
    ) -> Result<StepOutcome, EngineError> {
        let part = PartId(self.uuid(self.clock.now_ms()));
        let event = Event::StepFinished {
            message,
            part,
            reason,
            tokens,
            cost_micros: None,
        };
        self.apply(session, vec![event])
            .map(|o| o.expect("a finished step has an outcome"))
    }

    /// Queues a compaction by hand (`auto: false`): no continue message after it.
    pub fn request_compaction(&self, session: SessionId) -> Result<MessageId, EngineError> {
        self.with(session, |state| {
            self.queue(session, state, false, CompactionTrigger::Manual)
        })
    }

    /// Restores pruned parts (an undo recorded as its own event).
    pub fn restore(
        &self,
        session: SessionId,
        parts: Vec<PartId>,
        reason: &str,
    ) -> Result<(), EngineError> {
        self.with(session, |state| {
            self.commit(
                session,
                state,
                vec![Event::PartsRestored {
                    parts,
                    reason: reason.into(),
                }],
            )
            .map(|_| ())
        })
    }

    /// Prunes under the session's policy if the plan applies; returns the
    /// pruned parts' total tokens.
    pub fn prune(&self, session: SessionId) -> Result<Option<u64>, EngineError> {
        self.with(session, |state| {
            let policy = state.policy.clone();
            let plan = plan_prune(state, &policy);
            match plan.to_event(&policy) {
                Some(event) => {
                    self.commit(session, state, vec![event])?;
                    self.notify(Notice::Pruned {
                        session,
                        parts: plan.parts.len(),
                        tokens: plan.prunable_tokens,
                    });
                    Ok(Some(plan.prunable_tokens))
                }
                None => Ok(None),
            }
        })
    }

    /// The end of a turn: prune, as the seeds do when the loop exits.
    pub fn end_turn(&self, session: SessionId) -> Result<Option<u64>, EngineError> {
        self.prune(session)
    }

    /// The exact model input at the head.
    pub fn window(&self, session: SessionId) -> Result<Window, EngineError> {
        self.with(session, |state| Ok(window(state)))
    }

    /// The exact model input as it was right after event `seq`.
    pub fn window_at(&self, session: SessionId, seq: Seq) -> Result<Window, EngineError> {
        let head = self.store.head(session)?;
        if head == 0 {
            return Err(EngineError::UnknownSession(session));
        }
        if seq > head || seq == 0 {
            return Err(EngineError::NoSuchSeq { session, seq, head });
        }
        let mut state = SessionState::new();
        for e in self.store.read(session, 1)? {
            let e = e?;
            if e.seq > seq {
                break;
            }
            state.evolve(&e)?;
        }
        Ok(window(&state))
    }

    /// A copy of the session's state.
    pub fn state(&self, session: SessionId) -> Result<SessionState, EngineError> {
        self.with(session, |state| Ok(state.clone()))
    }

    /// Whether `session` has compaction jobs still to run.
    pub fn has_pending(&self, session: SessionId) -> Result<bool, EngineError> {
        self.with(session, |state| Ok(state.pending_jobs().next().is_some()))
    }

    /// Sessions of the store with compaction jobs still pending (to resubmit
    /// to workers after a restart). Reads every session's state.
    pub fn pending_sessions(&self) -> Result<Vec<SessionId>, EngineError> {
        let mut out = Vec::new();
        for (session, _) in self.store.sessions()? {
            if self.has_pending(session)? {
                out.push(session);
            }
        }
        Ok(out)
    }

    /// Runs every pending compaction job of `session`, oldest first (jobs
    /// left running by a crash run again; completed jobs never run twice).
    pub fn run_pending(&self, session: SessionId) -> Result<Vec<JobOutcome>, EngineError> {
        self.with(session, |state| {
            let mut outcomes = Vec::new();
            loop {
                let next = state.pending_jobs().next().map(|j| j.marker);
                let Some(job) = next else { break };
                outcomes.push(self.run_job(session, state, job)?);
            }
            Ok(outcomes)
        })
    }

    fn hook_output(&self, session: SessionId) -> HookOutput {
        let Some(hook) = &self.hook else {
            return HookOutput::default();
        };
        let raw = hook.compacting(session);
        let cap = |s: &str, n: usize| s.chars().take(n).collect::<String>();
        HookOutput {
            context: raw
                .context
                .iter()
                .take(HOOK_MAX_LINES)
                .map(|l| cap(l, HOOK_MAX_LINE_CHARS))
                .collect(),
            prompt: raw.prompt.map(|p| cap(&p, HOOK_MAX_PROMPT_CHARS)),
        }
    }

    /// Builds the request for `job`: the window up to and including the
    /// marker, the system prompt, and the instruction (with hook context).
    /// The request type has no tools field: none can be passed.
    fn build_request(
        &self,
        session: SessionId,
        state: &SessionState,
        job: MessageId,
    ) -> SummaryRequest {
        let marker_index = state.message_index(job).expect("pending job has a marker");
        let w = window(state);
        let messages = w
            .messages
            .into_iter()
            .filter(|m| state.message_index(m.id).is_some_and(|i| i <= marker_index))
            .collect();
        let hook = self.hook_output(session);
        let instruction = match hook.prompt {
            Some(p) => p,
            None => std::iter::once(COMPACTION_INSTRUCTION.to_owned())
                .chain(hook.context)
                .collect::<Vec<_>>()
                .join("\n\n"),
        };
        let max_output = state.policy.max_output_tokens(&state.limits);
        SummaryRequest {
            session,
            job,
            system: COMPACTION_SYSTEM_PROMPT.into(),
            messages,
            instruction,
            model: self.compaction_model.clone(),
            max_output_tokens: max_output,
        }
    }

    fn run_job(
        &self,
        session: SessionId,
        state: &mut SessionState,
        job: MessageId,
    ) -> Result<JobOutcome, EngineError> {
        let auto = state.job(job).map(|j| j.auto).unwrap_or(false);
        let estimator: Estimator = state.policy.estimator;
        // Only the loop guard needs it, and only after automatic jobs.
        let window_before = auto.then(|| window(state).estimate(&estimator));
        let base = self.build_request(session, state, job);
        let prompt = base.prompt_text();
        let limit = state.policy.usable(&state.limits);
        let summary_message = MessageId(self.uuid(self.clock.now_ms()));
        self.commit(
            session,
            state,
            vec![Event::CompactionStarted {
                job,
                summary_message,
                agent: Some("compaction".into()),
                model: self.compaction_model.clone(),
                prompt: Some(PromptRecord {
                    sha256: hex(&Sha256::digest(prompt.as_bytes())),
                    bytes: prompt.len() as u64,
                }),
                tail_start: None,
                source_id: None,
            }],
        )?;
        // Full request first; if it would not fit, tool outputs cut to 2,000
        // characters; then only the most recent turns. Every attempt is recorded.
        let mut last_error = String::from(
            "the compaction request does not fit the model, even with only the most recent turns",
        );
        let mut output = None;
        // The size each attempt must stay under: the model's budget, lowered
        // below the last request whenever the provider says it was too large.
        let mut target = limit;
        let mut previous: Option<u64> = None;
        let mut plan: std::collections::VecDeque<Strategy> = Strategy::ALL.into();
        // After a "too large" answer, recent turns are tried again with a
        // smaller target, a bounded number of times.
        let mut shrinks_left = 4;
        while let Some(strategy) = plan.pop_front() {
            let Some(request) = strategy.apply(&base, target, &estimator) else {
                continue;
            };
            let request_tokens = request_tokens(&request, &estimator);
            if previous == Some(request_tokens) {
                // The same request again would get the same answer.
                continue;
            }
            previous = Some(request_tokens);
            let fits = target.is_none_or(|l| request_tokens <= l);
            self.commit(
                session,
                state,
                vec![Event::CompactionAttempted {
                    job,
                    strategy: strategy.name().into(),
                    request_tokens,
                    limit: target,
                    fits,
                }],
            )?;
            if !fits {
                continue;
            }
            let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.summarizer.summarize(&request)
            }))
            .unwrap_or_else(|panic| {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(SummarizeError::Failed(format!(
                    "the summarizer panicked: {why}"
                )))
            });
            match called {
                Ok(out) if out.text.trim().is_empty() => {
                    last_error = "the summarizer returned no text".into();
                    break;
                }
                Ok(out) if out.finish == FinishReason::Error => {
                    last_error = "the summarizer finished with an error".into();
                    break;
                }
                Ok(out) => {
                    output = Some(out);
                    break;
                }
                Err(e @ SummarizeError::TooLarge(_)) => {
                    last_error = e.to_string();
                    target = Some(request_tokens.saturating_mul(2) / 3);
                    if strategy == Strategy::RecentTurns && shrinks_left > 0 {
                        shrinks_left -= 1;
                        plan.push_front(Strategy::RecentTurns);
                    }
                }
                Err(e) => {
                    last_error = e.to_string();
                    break;
                }
            }
        }
        let Some(out) = output else {
            // Provider error bodies can echo what they were sent.
            let last_error = redact::redact(&last_error).0;
            self.commit(
                session,
                state,
                vec![Event::CompactionFailed {
                    job,
                    error: last_error.clone(),
                }],
            )?;
            self.notify(Notice::CompactionFailed {
                session,
                job,
                error: last_error.clone(),
            });
            if auto {
                self.guard(session, state, None)?;
            }
            return Ok(JobOutcome::Failed {
                job,
                error: last_error,
            });
        };
        let (text, found) = redact::redact(&out.text);
        let redactions = found + out.redacted;
        let at = self.clock.now_ms();
        let mut events = vec![
            Event::PartAppended {
                message: summary_message,
                part: PartId(self.uuid(at)),
                body: PartBody::Text {
                    text,
                    synthetic: false,
                    time: None,
                },
                source_id: None,
            },
            Event::SummaryCompleted {
                job,
                part: PartId(self.uuid(at)),
                reason: out.finish,
                tokens: out.tokens,
                redactions,
            },
        ];
        if auto {
            let message = MessageId(self.uuid(at));
            events.push(Event::MessageAppended {
                message,
                role: Role::User,
                agent: None,
                model: None,
                synthetic: true,
                parent: None,
                source_id: None,
            });
            events.push(Event::PartAppended {
                message,
                part: PartId(self.uuid(at)),
                body: PartBody::Text {
                    text: CONTINUE_TEXT.into(),
                    synthetic: true,
                    time: None,
                },
                source_id: None,
            });
        }
        self.commit(session, state, events)?;
        debug_assert!(matches!(
            state.job(job).map(|j| &j.status),
            Some(JobStatus::Completed { .. })
        ));
        self.notify(Notice::Compacted { session, job });
        if auto {
            self.guard(session, state, window_before)?;
        }
        Ok(JobOutcome::Completed {
            job,
            summary: summary_message,
            continued: auto,
            redactions,
        })
    }

    /// After an automatic compaction (completed, with the window size
    /// before it, or failed): pause automatic compaction when it did not
    /// shrink the window enough, or when too many fired within the last few
    /// steps.
    fn guard(
        &self,
        session: SessionId,
        state: &mut SessionState,
        before: Option<u64>,
    ) -> Result<(), EngineError> {
        let after = window(state).estimate(&state.policy.estimator);
        let g = self.loop_guard;
        let shrunk_enough = before.is_none_or(|b| {
            after.saturating_mul(100) <= b.saturating_mul(100 - g.min_shrink_percent.min(100))
        });
        // The message of the `within_steps`-th most recent finished step.
        let since = state
            .messages
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, m)| m.role == Role::Assistant && !m.summary && m.finish.is_some())
            .nth(g.within_steps.saturating_sub(1) as usize)
            .map(|(i, _)| i);
        let recent_auto = state
            .jobs
            .iter()
            .filter(|j| j.auto && !j.status.is_pending())
            .filter(|j| since.is_none_or(|s| state.message_index(j.marker).is_some_and(|i| i > s)))
            .count() as u32;
        let reason = if !shrunk_enough {
            Some(format!(
                "automatic compaction shrank the window from ~{} to ~{after} tokens, less than {}%",
                before.unwrap_or(0),
                g.min_shrink_percent
            ))
        } else if recent_auto >= g.max_auto {
            Some(format!(
                "{recent_auto} automatic compactions within the last {} steps",
                g.within_steps
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            tracing::warn!(%session, %reason, "auto-compaction paused");
            self.commit(
                session,
                state,
                vec![Event::AutoCompactionPaused {
                    reason: reason.clone(),
                    window_before: before.unwrap_or(after),
                    window_after: after,
                }],
            )?;
            self.notify(Notice::AutoCompactionPaused { session, reason });
        }
        Ok(())
    }
}

/// Estimated tokens of a whole compaction request.
fn request_tokens(r: &SummaryRequest, e: &Estimator) -> u64 {
    estimate_json(&r.messages, e) + e.estimate(&r.system) + e.estimate(&r.instruction)
}

/// How a compaction request is cut down when it would not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Full,
    TruncatedToolOutputs,
    RecentTurns,
}

/// Tool outputs are cut to this many characters in the second attempt.
pub const TRUNCATED_TOOL_OUTPUT_CHARS: usize = 2_000;

impl Strategy {
    const ALL: [Strategy; 3] = [
        Strategy::Full,
        Strategy::TruncatedToolOutputs,
        Strategy::RecentTurns,
    ];

    fn name(self) -> &'static str {
        match self {
            Strategy::Full => "full",
            Strategy::TruncatedToolOutputs => "truncated-tool-outputs",
            Strategy::RecentTurns => "recent-turns",
        }
    }

    /// The request under this strategy; `None` when it cannot make one.
    fn apply(
        self,
        base: &SummaryRequest,
        limit: Option<u64>,
        e: &Estimator,
    ) -> Option<SummaryRequest> {
        use ctxlog_core::window::{ToolResult, WindowPart};
        let mut r = base.clone();
        if self == Strategy::Full {
            return Some(r);
        }
        for m in &mut r.messages {
            for p in &mut m.parts {
                if let WindowPart::Tool {
                    result: ToolResult::Output { text, .. },
                    ..
                } = p
                {
                    let n = text.chars().count();
                    if n > TRUNCATED_TOOL_OUTPUT_CHARS {
                        let mut cut: String =
                            text.chars().take(TRUNCATED_TOOL_OUTPUT_CHARS).collect();
                        cut.push_str(&format!(
                            "\n[Tool output truncated for compaction: omitted {} chars]",
                            n - TRUNCATED_TOOL_OUTPUT_CHARS
                        ));
                        *text = cut;
                    }
                }
            }
        }
        if self == Strategy::TruncatedToolOutputs {
            return Some(r);
        }
        // Recent turns: the longest suffix that fits, always ending with the
        // marker; it starts at a user message when one is in reach, else (a
        // long autonomous turn) at any message, as long as it keeps at least
        // two messages of the conversation.
        let limit = limit?;
        let fixed = e.estimate(&r.system) + e.estimate(&r.instruction);
        let n = r.messages.len();
        let (mut at_user, mut at_any) = (None, None);
        for i in (0..n.saturating_sub(1)).rev() {
            let tokens = fixed + estimate_json(&r.messages[i..], e);
            if tokens > limit {
                break;
            }
            at_any = Some(i);
            if r.messages[i].role == Role::User {
                at_user = Some(i);
            }
        }
        let start = at_user.or(at_any.filter(|&i| n - 1 - i >= 2));
        let start = start?;
        r.messages.drain(..start);
        Some(r)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
