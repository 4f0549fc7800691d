//! Everything an engine call can fail with.

use ctxlog_core::{RefusedCommand, RefusedEvent, Seq, SessionId};
use ctxlog_store::StoreError;
use thiserror::Error;

/// Everything an engine call can fail with.
#[derive(Debug, Error)]
pub enum EngineError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An event would break an invariant; nothing was written.
    #[error(transparent)]
    Refused(#[from] RefusedEvent),
    /// The command cannot be carried out in this state; nothing was written.
    #[error(transparent)]
    RefusedCommand(#[from] RefusedCommand),
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
    /// The engine's configuration is invalid.
    #[error("invalid engine configuration: {0}")]
    InvalidConfig(String),
}

ctxlog_store::log_errors_into!(EngineError, EngineError::Store);

impl EngineError {
    /// Whether an append was refused because another writer moved the
    /// session's head first.
    pub fn is_version_conflict(&self) -> bool {
        matches!(
            self,
            EngineError::Store(ctxlog_store::StoreError::Append(
                ctxlog_store::AppendError::WrongExpectedVersion { .. }
            ))
        )
    }
}

impl From<ctxlog_core::Refused> for EngineError {
    fn from(r: ctxlog_core::Refused) -> Self {
        match r {
            ctxlog_core::Refused::Command(c) => EngineError::RefusedCommand(c),
            ctxlog_core::Refused::Event(e) => EngineError::Refused(e),
        }
    }
}
