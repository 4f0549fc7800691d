//! The engine's commands, by session id: each one is a [`Command`] decided
//! and committed by [`Engine::run`](crate::Engine), with what the caller
//! needs read back from the decisions.

use crate::error::EngineError;
use crate::outcome::{RequestCheck, StepOutcome};
use crate::Engine;
use ctxlog_core::decide::{drafted, first_message, pruned, queued};
use ctxlog_core::window::{estimate_window, window, Window};
use ctxlog_core::{
    AuditEntry, Auditor, Command, Decided, Event, FinishReason, MessageId, ModelLimits, ModelRef,
    PartBody, PartId, Policy, PrunedPart, Seq, SessionId, SessionState, Step, TokenUsage,
};
use ctxlog_store::EventLog;

/// The step outcome of a run that finished the step of `message`.
pub(crate) fn step_outcome(message: MessageId, decided: &[Decided]) -> StepOutcome {
    StepOutcome {
        message,
        overflow: decided.iter().find_map(|d| d.overflow),
        queued: queued(decided),
    }
}

/// What a prune marked: the parts with their estimated tokens, and the sum.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Pruned {
    /// The pruned tool parts, newest first.
    pub parts: Vec<PrunedPart>,
    /// Their estimated tokens in all.
    pub tokens: u64,
}

/// What a new session starts with.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewSession {
    /// The compaction policy (default: `opencode-seed`).
    pub policy: Policy,
    /// The model's limits (default: context 0, never compacts automatically).
    pub limits: ModelLimits,
    /// A title.
    pub title: Option<String>,
    /// The own id of the recording this session was made from, if any.
    pub source_id: Option<String>,
}

impl NewSession {
    /// A session for a model with these limits, under the default policy.
    pub fn new(limits: ModelLimits) -> Self {
        NewSession {
            limits,
            ..NewSession::default()
        }
    }

    /// Under `policy`.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// With a title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
}

impl<L: EventLog> Engine<L> {
    /// Starts a session; returns its id (see [`Engine::create_session`] for
    /// a handle).
    pub(crate) fn start(&self, new: NewSession) -> Result<SessionId, EngineError> {
        self.start_with(Command::Start {
            policy: new.policy,
            limits: new.limits,
            title: new.title,
            source_id: new.source_id,
        })
    }

    /// Starts a session with a policy and the model's limits.
    pub fn start_session(
        &self,
        policy: Policy,
        limits: ModelLimits,
        title: Option<String>,
    ) -> Result<SessionId, EngineError> {
        self.start(NewSession {
            policy,
            limits,
            title,
            source_id: None,
        })
    }

    /// Starts a session under an id the caller chose (derived from a name
    /// an agent gave it, say): the append expects an empty session, so a
    /// session that already has events is refused and left as it is.
    pub fn start_session_as(&self, session: SessionId, new: NewSession) -> Result<(), EngineError> {
        self.start_as(
            session,
            Command::Start {
                policy: new.policy,
                limits: new.limits,
                title: new.title,
                source_id: new.source_id,
            },
        )
    }

    /// Runs `command` on `session` under its lock.
    pub(crate) fn command(
        &self,
        session: SessionId,
        command: Command,
    ) -> Result<Vec<Decided>, EngineError> {
        self.with(session, |state| self.run(session, state, command))
    }

    /// Records `events` that were decided elsewhere (a recording's: ids
    /// and source ids included) in one atomic append: how a recording is
    /// fed through the engine (`simulate`, the benchmarks). A live session
    /// never builds events: it sends commands. When the last one finishes
    /// a step, the overflow check runs as after [`Engine::record_step`]
    /// and its outcome is returned. Subscribers get the notices of these
    /// events too (a recorded summary or prune).
    pub fn record(
        &self,
        session: SessionId,
        events: Vec<Event>,
    ) -> Result<Option<StepOutcome>, EngineError> {
        let step = match events.last() {
            Some(Event::StepFinished { message, .. }) => Some(*message),
            None => return Ok(None),
            _ => None,
        };
        let decided = self.command(session, Command::Record(events))?;
        Ok(step.map(|message| step_outcome(message, &decided)))
    }

    /// Appends a user message with one text part. A real (non-synthetic)
    /// message also lifts a loop-guard pause.
    pub fn user_message(&self, session: SessionId, text: &str) -> Result<MessageId, EngineError> {
        let decided = self.command(
            session,
            Command::UserMessage {
                text: text.into(),
                synthetic: false,
                source_id: None,
            },
        )?;
        Ok(first_message(&decided).expect("a user message decides a message"))
    }

    /// Records one finished assistant step (its message, parts, usage and
    /// finish) in one atomic append; then checks overflow and, when the
    /// policy says so, queues an automatic compaction.
    pub fn record_step(&self, session: SessionId, step: Step) -> Result<StepOutcome, EngineError> {
        let decided = self.command(session, Command::Step(step))?;
        let message = first_message(&decided).expect("a step decides a message");
        Ok(step_outcome(message, &decided))
    }

    /// The agent is about to send a model request: under a policy that
    /// checks before requests ([`ctxlog_core::OverflowCheckAt::BeforeRequest`],
    /// Claude Code's and Codex's presets) this is where automatic
    /// compaction is queued; under the others it does nothing (they check
    /// after each step). Call it before every request of the agent loop.
    pub fn before_request(&self, session: SessionId) -> Result<RequestCheck, EngineError> {
        let decided = self.command(session, Command::BeforeRequest)?;
        Ok(RequestCheck {
            overflow: decided.iter().find_map(|d| d.overflow),
            queued: queued(&decided),
        })
    }

    /// Appends an assistant message with no parts (for streaming agents that
    /// add parts and finish the step themselves).
    pub fn assistant_message(
        &self,
        session: SessionId,
        parent: MessageId,
        model: Option<ModelRef>,
    ) -> Result<MessageId, EngineError> {
        let decided = self.command(session, Command::AssistantMessage { parent, model })?;
        Ok(first_message(&decided).expect("decides a message"))
    }

    /// Appends a part to a message.
    pub fn append_part(
        &self,
        session: SessionId,
        message: MessageId,
        body: PartBody,
    ) -> Result<PartId, EngineError> {
        let decided = self.command(session, Command::AppendPart { message, body })?;
        let part = drafted(&decided).find_map(|e| match e {
            Event::PartAppended { part, .. } => Some(*part),
            _ => None,
        });
        Ok(part.expect("decides a part"))
    }

    /// Replaces a part's content (a tool going pending → running → completed/error).
    pub fn update_part(
        &self,
        session: SessionId,
        part: PartId,
        body: PartBody,
    ) -> Result<(), EngineError> {
        self.command(
            session,
            Command::Record(vec![Event::PartUpdated { part, body }]),
        )
        .map(drop)
    }

    /// Finishes a step of a message built part by part; see [`Engine::record_step`].
    pub fn finish_step(
        &self,
        session: SessionId,
        message: MessageId,
        tokens: TokenUsage,
        reason: FinishReason,
    ) -> Result<StepOutcome, EngineError> {
        let decided = self.command(
            session,
            Command::FinishStep {
                message,
                reason,
                tokens,
            },
        )?;
        Ok(step_outcome(message, &decided))
    }

    /// The provider refused the request of assistant message `message` (one
    /// from [`Engine::assistant_message`], with no finished step) as too
    /// large: under a policy that compacts on provider overflow an automatic
    /// compaction is queued that replays the refused prompt after its summary
    /// (run it with [`Engine::run_pending`]); otherwise the error is recorded
    /// on the message. Returns the queued job, if any.
    pub fn refused(
        &self,
        session: SessionId,
        message: MessageId,
        error: &str,
    ) -> Result<Option<MessageId>, EngineError> {
        let error = error.into();
        let decided = self.command(session, Command::Refused { message, error })?;
        Ok(queued(&decided))
    }

    /// Queues a compaction by hand (`auto: false`): no continue message after it.
    pub fn request_compaction(&self, session: SessionId) -> Result<MessageId, EngineError> {
        let decided = self.command(session, Command::RequestCompaction)?;
        Ok(first_message(&decided).expect("decides a marker"))
    }

    /// Restores pruned parts (an undo recorded as its own event).
    pub fn restore(
        &self,
        session: SessionId,
        parts: Vec<PartId>,
        reason: &str,
    ) -> Result<(), EngineError> {
        let reason = reason.into();
        self.command(
            session,
            Command::Record(vec![Event::PartsRestored { parts, reason }]),
        )
        .map(drop)
    }

    /// The end of a turn: prunes when the session's policy says so; returns
    /// what was pruned.
    pub fn end_turn(&self, session: SessionId) -> Result<Option<Pruned>, EngineError> {
        let decided = self.command(session, Command::EndTurn)?;
        Ok(pruned(&decided).map(|(parts, tokens)| Pruned {
            parts: parts.to_vec(),
            tokens,
        }))
    }

    /// The exact model input at the head.
    pub fn window(&self, session: SessionId) -> Result<Window, EngineError> {
        self.with(session, |state| Ok(window(state)))
    }

    /// The estimated tokens of the model input at the head.
    pub fn window_estimate(&self, session: SessionId) -> Result<u64, EngineError> {
        self.with(session, |state| Ok(estimate_window(state)))
    }

    /// The exact model input as it was right after event `seq`.
    pub fn window_at(&self, session: SessionId, seq: Seq) -> Result<Window, EngineError> {
        Ok(window(&self.state_at(session, seq)?))
    }

    /// The session's state as it was right after event `seq`, folded from
    /// the log.
    pub fn state_at(&self, session: SessionId, seq: Seq) -> Result<SessionState, EngineError> {
        let head = self.log.head(session)?;
        if head == 0 {
            return Err(EngineError::UnknownSession(session));
        }
        if seq > head || seq == 0 {
            return Err(EngineError::NoSuchSeq { session, seq, head });
        }
        let mut state = SessionState::new();
        for e in self.log.read(session, 1)? {
            let e = e?;
            if e.seq > seq {
                break;
            }
            state.evolve(&e)?;
        }
        Ok(state)
    }

    /// The audit trail of the session, read from the log an event at a
    /// time (the session's events are not held: only the auditor's ids).
    pub fn audit(&self, session: SessionId) -> Result<Vec<AuditEntry>, EngineError> {
        if self.log.head(session)? == 0 {
            return Err(EngineError::UnknownSession(session));
        }
        let mut auditor = Auditor::default();
        let mut trail = Vec::new();
        for e in self.log.read(session, 1)? {
            trail.extend(auditor.push(&e?));
        }
        Ok(trail)
    }

    /// A read-only view of the session's state: runs `f` on it without
    /// copying it (the session's commands wait until `f` returns). For
    /// queries; every change goes through a command.
    pub fn query<T>(
        &self,
        session: SessionId,
        f: impl FnOnce(&SessionState) -> T,
    ) -> Result<T, EngineError> {
        self.with(session, |state| Ok(f(state)))
    }

    /// A copy of the session's state.
    pub fn state(&self, session: SessionId) -> Result<SessionState, EngineError> {
        self.with(session, |state| Ok(state.clone()))
    }

    /// Whether `session` has compaction jobs still to run.
    pub fn has_pending(&self, session: SessionId) -> Result<bool, EngineError> {
        self.with(session, |state| Ok(state.pending_jobs().next().is_some()))
    }

    /// Sessions of the log with compaction jobs still pending (to resubmit
    /// to workers after a restart). Reads every session's state.
    pub fn pending_sessions(&self) -> Result<Vec<SessionId>, EngineError> {
        let mut out = Vec::new();
        let sessions = self.log.sessions()?;
        // Description streams (`ctxlog_core::description_stream`) hold no
        // jobs.
        for (session, _) in sessions
            .into_iter()
            .filter(|(s, _)| !ctxlog_core::is_description_stream(*s))
        {
            if self.has_pending(session)? {
                out.push(session);
            }
        }
        Ok(out)
    }
}
