//! [`Session`]: a handle on one session of an [`Engine`], the one way to
//! run a session's commands and read its views, so that an agent loop
//! reads as what it does: `user`, `step`, `before_request`, `run_pending`,
//! `end_turn`, `window`. The commands themselves are in `commands.rs` and
//! `items.rs`; the job runner in `jobs.rs`.

use crate::commands::NewSession;
use crate::error::EngineError;
use crate::outcome::JobOutcome;
use crate::Engine;
use ctxlog_core::SessionId;
use ctxlog_store::EventLog;

/// A handle on one session; cheap to copy, borrows its engine.
pub struct Session<'e, L: EventLog> {
    pub(crate) engine: &'e Engine<L>,
    pub(crate) id: SessionId,
}

impl<L: EventLog> Clone for Session<'_, L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L: EventLog> Copy for Session<'_, L> {}

impl<L: EventLog> std::fmt::Debug for Session<'_, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Session").field(&self.id).finish()
    }
}

impl<L: EventLog> Engine<L> {
    /// Starts a session (under the id `new.id` when given) and returns its
    /// handle.
    pub fn create_session(&self, new: NewSession) -> Result<Session<'_, L>, EngineError> {
        let id = self.start(new)?;
        Ok(Session { engine: self, id })
    }

    /// The handle of a stored session; [`EngineError::UnknownSession`] when
    /// the log has no such session. Nothing is loaded until a command or a
    /// view at the head needs the session's state (a view of the past, the
    /// audit, reads the log).
    pub fn session(&self, id: SessionId) -> Result<Session<'_, L>, EngineError> {
        if !self.holds(id)? {
            return Err(EngineError::UnknownSession(id));
        }
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

    /// Runs every pending compaction job, oldest first (jobs left running
    /// by a crash run again; completed jobs never run twice). Call it
    /// before the next model request.
    pub fn run_pending(&self) -> Result<Vec<JobOutcome>, EngineError> {
        self.engine.run_pending(self.id)
    }

    /// Compacts now by hand: queues a manual compaction and runs every
    /// pending job (no continue message after a manual compaction).
    pub fn compact(&self) -> Result<Vec<JobOutcome>, EngineError> {
        self.request_compaction()?;
        self.run_pending()
    }

    /// Whether a compaction job waits to run.
    pub fn has_pending(&self) -> Result<bool, EngineError> {
        self.engine.has_pending(self.id)
    }
}
