//! A session's commands and views ([`Session`]): each command is a
//! [`Command`] decided and committed by the engine, with what the caller
//! needs read back from the decisions.

use crate::engine::Ran;
use crate::error::EngineError;
use crate::outcome::{RequestCheck, StepOutcome};
use crate::{Engine, Session};
use ctxlog_core::decide::{drafted, first_message, pruned, queued};
use ctxlog_core::window::{estimate_window, window, Window};
use ctxlog_core::{
    AuditEntry, Auditor, Command, Event, FinishReason, MessageId, ModelLimits, ModelRef, PartBody,
    PartId, Policy, PrunedPart, Seq, SessionId, SessionState, Step, TokenUsage,
};
use ctxlog_store::EventLog;

/// The step outcome of a run that finished the step of `message`.
pub(crate) fn step_outcome(message: MessageId, ran: &Ran) -> StepOutcome {
    StepOutcome {
        message,
        overflow: ran.overflow,
        queued: queued(&ran.decided),
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
    /// The session's id when the caller chose it (derived from a name an
    /// agent gave it, say); a fresh id when `None`. A session that already
    /// has events is refused and left as it is.
    pub id: Option<SessionId>,
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

    /// Under the id `id` (see [`NewSession::id`]).
    pub fn id(mut self, id: SessionId) -> Self {
        self.id = Some(id);
        self
    }
}

impl<L: EventLog> Engine<L> {
    /// Starts a session: under `new.id`, or a fresh id; returns its id.
    pub(crate) fn start(&self, new: NewSession) -> Result<SessionId, EngineError> {
        let session = new.id.unwrap_or_else(|| SessionId(self.uuid()));
        let command = Command::Start {
            policy: new.policy,
            limits: new.limits,
            title: new.title,
            source_id: new.source_id,
        };
        self.start_as(session, command)?;
        Ok(session)
    }

    /// Runs `command` on `session` under its lock.
    pub(crate) fn command(&self, session: SessionId, command: Command) -> Result<Ran, EngineError> {
        self.with(session, |state| self.run(session, state, command))
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

    /// Whether `session` has compaction jobs still to run.
    pub(crate) fn has_pending(&self, session: SessionId) -> Result<bool, EngineError> {
        self.with(session, |state| Ok(state.pending_jobs().next().is_some()))
    }
}

impl<L: EventLog> Session<'_, L> {
    /// Runs `command` on this session under its lock.
    pub(crate) fn command(&self, command: Command) -> Result<Ran, EngineError> {
        self.engine.command(self.id, command)
    }

    /// Records `events` that were decided elsewhere (a recording's: ids
    /// and source ids included) in one atomic append: how a recording is
    /// fed through the engine (`simulate`, the benchmarks). A live session
    /// never builds events: it sends commands. When the last one finishes
    /// a step, the overflow check runs as after [`Session::step`]
    /// and its outcome is returned. Subscribers get the notices of these
    /// events too (a recorded summary or prune).
    pub fn record(&self, events: Vec<Event>) -> Result<Option<StepOutcome>, EngineError> {
        let step = match events.last() {
            Some(Event::StepFinished { message, .. }) => Some(*message),
            None => return Ok(None),
            _ => None,
        };
        let ran = self.command(Command::Record(events))?;
        Ok(step.map(|message| step_outcome(message, &ran)))
    }

    /// Appends a user message with one text part. A real (non-synthetic)
    /// message also lifts a loop-guard pause.
    pub fn user(&self, text: &str) -> Result<MessageId, EngineError> {
        let decided = self
            .command(Command::UserMessage {
                text: text.into(),
                synthetic: false,
                source_id: None,
            })?
            .decided;
        Ok(first_message(&decided).expect("a user message decides a message"))
    }

    /// Records one finished assistant step (its message, parts, usage and
    /// finish) in one atomic append; then checks overflow and, when the
    /// policy says so, queues an automatic compaction.
    pub fn step(&self, step: Step) -> Result<StepOutcome, EngineError> {
        let ran = self.command(Command::Step(step))?;
        let message = first_message(&ran.decided).expect("a step decides a message");
        Ok(step_outcome(message, &ran))
    }

    /// The agent is about to send a model request: under a policy that
    /// checks before requests ([`ctxlog_core::OverflowCheckAt::BeforeRequest`],
    /// Claude Code's and Codex's presets) this is where automatic
    /// compaction is queued; under the others it does nothing (they check
    /// after each step). Call it before every request of the agent loop.
    pub fn before_request(&self) -> Result<RequestCheck, EngineError> {
        let ran = self.command(Command::BeforeRequest)?;
        Ok(RequestCheck {
            overflow: ran.overflow,
            queued: queued(&ran.decided),
        })
    }

    /// Appends an assistant message with no parts (for streaming agents that
    /// add parts and finish the step themselves).
    pub fn assistant_message(
        &self,
        parent: MessageId,
        model: Option<ModelRef>,
    ) -> Result<MessageId, EngineError> {
        let decided = self
            .command(Command::AssistantMessage { parent, model })?
            .decided;
        Ok(first_message(&decided).expect("decides a message"))
    }

    /// Appends a part to a message.
    pub fn append_part(&self, message: MessageId, body: PartBody) -> Result<PartId, EngineError> {
        let decided = self.command(Command::AppendPart { message, body })?.decided;
        let part = drafted(&decided).find_map(|e| match e {
            Event::PartAppended { part, .. } => Some(*part),
            _ => None,
        });
        Ok(part.expect("decides a part"))
    }

    /// Replaces a part's content (a tool going pending → running → completed/error).
    pub fn update_part(&self, part: PartId, body: PartBody) -> Result<(), EngineError> {
        self.command(Command::Record(vec![Event::PartUpdated { part, body }]))
            .map(drop)
    }

    /// Finishes a step of a message built part by part; see [`Session::step`].
    pub fn finish_step(
        &self,
        message: MessageId,
        tokens: TokenUsage,
        reason: FinishReason,
    ) -> Result<StepOutcome, EngineError> {
        let ran = self.command(Command::FinishStep {
            message,
            reason,
            tokens,
        })?;
        Ok(step_outcome(message, &ran))
    }

    /// The provider refused the request of assistant message `message` (one
    /// from [`Session::assistant_message`], with no finished step) as too
    /// large: under a policy that compacts on provider overflow an automatic
    /// compaction is queued that replays the refused prompt after its summary
    /// (run it with [`Session::run_pending`]); otherwise the error is recorded
    /// on the message. Returns the queued job, if any.
    pub fn refused(
        &self,
        message: MessageId,
        error: &str,
    ) -> Result<Option<MessageId>, EngineError> {
        let error = error.into();
        let decided = self.command(Command::Refused { message, error })?.decided;
        Ok(queued(&decided))
    }

    /// Queues a compaction by hand (`auto: false`): no continue message after it.
    pub fn request_compaction(&self) -> Result<MessageId, EngineError> {
        let decided = self.command(Command::RequestCompaction)?.decided;
        Ok(first_message(&decided).expect("decides a marker"))
    }

    /// Restores pruned parts (an undo recorded as its own event).
    pub fn restore(&self, parts: Vec<PartId>, reason: &str) -> Result<(), EngineError> {
        let reason = reason.into();
        self.command(Command::Record(vec![Event::PartsRestored {
            parts,
            reason,
        }]))
        .map(drop)
    }

    /// The end of a turn: prunes when the session's policy says so; returns
    /// what was pruned.
    pub fn end_turn(&self) -> Result<Option<Pruned>, EngineError> {
        let decided = self.command(Command::EndTurn)?.decided;
        Ok(pruned(&decided).map(|(parts, tokens)| Pruned {
            parts: parts.to_vec(),
            tokens,
        }))
    }

    /// The exact model input at the head.
    pub fn window(&self) -> Result<Window, EngineError> {
        self.engine.with(self.id, |state| Ok(window(state)))
    }

    /// The estimated tokens of the model input at the head.
    pub fn window_estimate(&self) -> Result<u64, EngineError> {
        self.engine
            .with(self.id, |state| Ok(estimate_window(state)))
    }

    /// The exact model input as it was right after event `seq`.
    pub fn window_at(&self, seq: Seq) -> Result<Window, EngineError> {
        Ok(window(&self.state_at(seq)?))
    }

    /// The session's state as it was right after event `seq`, folded from
    /// the log.
    pub fn state_at(&self, seq: Seq) -> Result<SessionState, EngineError> {
        let session = self.id;
        let head = self.engine.log.head(session)?;
        if head == 0 {
            return Err(EngineError::UnknownSession(session));
        }
        if seq > head || seq == 0 {
            return Err(EngineError::NoSuchSeq { session, seq, head });
        }
        let mut state = SessionState::new();
        for e in self.engine.log.read(session, 1)? {
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
    pub fn audit(&self) -> Result<Vec<AuditEntry>, EngineError> {
        let session = self.id;
        if self.engine.log.head(session)? == 0 {
            return Err(EngineError::UnknownSession(session));
        }
        let mut auditor = Auditor::default();
        let mut trail = Vec::new();
        for e in self.engine.log.read(session, 1)? {
            trail.extend(auditor.push(&e?));
        }
        Ok(trail)
    }

    /// A read-only view of the session's state: runs `f` on it without
    /// copying it (the session's commands wait until `f` returns). For
    /// queries; every change goes through a command.
    pub fn query<T>(&self, f: impl FnOnce(&SessionState) -> T) -> Result<T, EngineError> {
        self.engine.with(self.id, |state| Ok(f(state)))
    }

    /// A copy of the session's state.
    pub fn state(&self) -> Result<SessionState, EngineError> {
        self.engine.with(self.id, |state| Ok(state.clone()))
    }
}
