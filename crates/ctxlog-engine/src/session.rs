//! [`Session`]: a handle on one session of an [`Engine`], so that an agent
//! loop reads as what it does: `user`, `step`, `run_pending`, `end_turn`,
//! `window`.

use crate::commands::{NewSession, Pruned};
use crate::error::EngineError;
use crate::outcome::{JobOutcome, StepOutcome};
use crate::Engine;
use ctxlog_core::window::Window;
use ctxlog_core::{AuditEntry, MessageId, PartId, Seq, SessionId, SessionState, Step};
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
}
