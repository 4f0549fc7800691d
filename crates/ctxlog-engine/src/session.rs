//! [`Session`]: a handle on one session of an [`Engine`] that offers every
//! command and view of it, so that an agent loop reads as what it does:
//! `user`, `step`, `before_request`, `run_pending`, `end_turn`, `window`.

use crate::commands::{NewSession, Pruned};
use crate::error::EngineError;
use crate::outcome::{JobOutcome, RequestCheck, StepOutcome};
use crate::Engine;
use ctxlog_core::window::Window;
use ctxlog_core::{
    AgentItem, AuditEntry, FinishReason, MessageId, ModelLimits, ModelRef, PartBody, PartId,
    Policy, Seq, SessionAbout, SessionId, SessionState, Step, TokenUsage,
};
use ctxlog_store::EventLog;

/// A handle on one session; cheap to copy, borrows its engine.
pub struct Session<'e, L: EventLog> {
    engine: &'e Engine<L>,
    id: SessionId,
}

impl<L: EventLog> Clone for Session<'_, L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L: EventLog> Copy for Session<'_, L> {}

impl<L: EventLog> Engine<L> {
    /// Starts a session and returns its handle.
    pub fn create_session(&self, new: NewSession) -> Result<Session<'_, L>, EngineError> {
        let id = self.start(new)?;
        Ok(Session { engine: self, id })
    }

    /// The handle of a stored session; [`EngineError::UnknownSession`] when
    /// the log has no such session.
    pub fn session(&self, id: SessionId) -> Result<Session<'_, L>, EngineError> {
        self.with(id, |_| Ok(()))?;
        Ok(Session { engine: self, id })
    }
}

impl<'e, L: EventLog> Session<'e, L> {
    /// The session's id.
    pub fn id(&self) -> SessionId {
        self.id
    }

    /// The engine it belongs to.
    pub fn engine(&self) -> &'e Engine<L> {
        self.engine
    }

    /// A user message with one text part (lifts a loop-guard pause).
    pub fn user(&self, text: &str) -> Result<MessageId, EngineError> {
        self.engine.user_message(self.id, text)
    }

    /// A finished model step; queues a compaction when it overflows.
    pub fn step(&self, step: Step) -> Result<StepOutcome, EngineError> {
        self.engine.record_step(self.id, step)
    }

    /// Runs the queued compaction jobs (call before the next model request).
    pub fn run_pending(&self) -> Result<Vec<JobOutcome>, EngineError> {
        self.engine.run_pending(self.id)
    }

    /// Compacts now, by hand.
    pub fn compact(&self) -> Result<Vec<JobOutcome>, EngineError> {
        self.engine.compact(self.id)
    }

    /// The turn ended: prune when the policy says so; what was pruned.
    pub fn end_turn(&self) -> Result<Option<Pruned>, EngineError> {
        self.engine.end_turn(self.id)
    }

    /// Restores pruned parts.
    pub fn restore(&self, parts: Vec<PartId>, reason: &str) -> Result<(), EngineError> {
        self.engine.restore(self.id, parts, reason)
    }

    /// The exact model input now.
    pub fn window(&self) -> Result<Window, EngineError> {
        self.engine.window(self.id)
    }

    /// The model input as it was right after event `seq`.
    pub fn window_at(&self, seq: Seq) -> Result<Window, EngineError> {
        self.engine.window_at(self.id, seq)
    }

    /// The estimated tokens of the model input now.
    pub fn window_estimate(&self) -> Result<u64, EngineError> {
        self.engine.window_estimate(self.id)
    }

    /// Every prune, compaction and pause, from the log.
    pub fn audit(&self) -> Result<Vec<AuditEntry>, EngineError> {
        self.engine.audit(self.id)
    }

    /// A copy of the derived state.
    pub fn state(&self) -> Result<SessionState, EngineError> {
        self.engine.state(self.id)
    }

    /// The agent is about to send a model request: under a policy that
    /// checks then, an automatic compaction is queued when it must be.
    pub fn before_request(&self) -> Result<RequestCheck, EngineError> {
        self.engine.before_request(self.id)
    }

    /// An assistant message answering `parent`, to be built part by part.
    pub fn assistant_message(
        &self,
        parent: MessageId,
        model: Option<ModelRef>,
    ) -> Result<MessageId, EngineError> {
        self.engine.assistant_message(self.id, parent, model)
    }

    /// A part appended to `message`.
    pub fn append_part(&self, message: MessageId, body: PartBody) -> Result<PartId, EngineError> {
        self.engine.append_part(self.id, message, body)
    }

    /// A part's content replaced (a tool going pending → running → done).
    pub fn update_part(&self, part: PartId, body: PartBody) -> Result<(), EngineError> {
        self.engine.update_part(self.id, part, body)
    }

    /// The step of a message built part by part finished; then the
    /// overflow check.
    pub fn finish_step(
        &self,
        message: MessageId,
        tokens: TokenUsage,
        reason: FinishReason,
    ) -> Result<StepOutcome, EngineError> {
        self.engine.finish_step(self.id, message, tokens, reason)
    }

    /// The provider refused `message`'s request as too large: a compaction
    /// queued (its marker) or the error recorded.
    pub fn refused(
        &self,
        message: MessageId,
        error: &str,
    ) -> Result<Option<MessageId>, EngineError> {
        self.engine.refused(self.id, message, error)
    }

    /// A compaction asked for by hand, queued (its marker).
    pub fn request_compaction(&self) -> Result<MessageId, EngineError> {
        self.engine.request_compaction(self.id)
    }

    /// What the session is (title, agent, directory...), for listings.
    pub fn describe(&self, about: SessionAbout) -> Result<(), EngineError> {
        self.engine.describe(self.id, about)
    }

    /// Each of `policy` and `limits` that differs from the session's,
    /// recorded as a change.
    pub fn settle(
        &self,
        policy: Option<Policy>,
        limits: Option<ModelLimits>,
    ) -> Result<(), EngineError> {
        self.engine.settle(self.id, policy, limits)
    }

    /// Items of an agent runtime, each a message (or a call's output).
    pub fn add_items(&self, items: Vec<AgentItem>) -> Result<(), EngineError> {
        self.engine.add_items(self.id, items)
    }

    /// `messages` taken back for good (they stay in the log).
    pub fn withdraw(&self, messages: Vec<MessageId>, reason: &str) -> Result<(), EngineError> {
        self.engine.withdraw(self.id, messages, reason)
    }

    /// Every message taken back; how many.
    pub fn withdraw_all(&self, reason: &str) -> Result<usize, EngineError> {
        self.engine.withdraw_all(self.id, reason)
    }

    /// The call of tool part `part` waits for its output again.
    pub fn reopen_call(&self, part: PartId, reason: &str) -> Result<(), EngineError> {
        self.engine.reopen_call(self.id, part, reason)
    }

    /// The open step ends (its usage reported, else the window's estimate).
    pub fn finish_open_step(
        &self,
        tokens: Option<TokenUsage>,
    ) -> Result<Option<StepOutcome>, EngineError> {
        self.engine.finish_open_step(self.id, tokens)
    }

    /// `f` of the state, read-only, without a copy.
    pub fn query<T>(&self, f: impl FnOnce(&SessionState) -> T) -> Result<T, EngineError> {
        self.engine.query(self.id, f)
    }

    /// The state right after event `seq`.
    pub fn state_at(&self, seq: Seq) -> Result<SessionState, EngineError> {
        self.engine.state_at(self.id, seq)
    }

    /// Whether a compaction job waits to run.
    pub fn has_pending(&self) -> Result<bool, EngineError> {
        self.engine.has_pending(self.id)
    }
}
