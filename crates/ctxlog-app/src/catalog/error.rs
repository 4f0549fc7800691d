//! Why a catalog operation failed: [`CatalogError`].

use ctxlog_core::SessionId;
use ctxlog_store::{AppendError, StoreError};
use thiserror::Error;

ctxlog_store::log_errors_into!(CatalogError, CatalogError::Store);

/// Why a catalog operation failed.
#[derive(Debug, Error)]
pub enum CatalogError {
    /// The log failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored session is not a prefix of the recording.
    #[error(
        "session {session} is already stored with different events (from event {at} on: \
         a different file with the same session id, an edited or branched file, or a \
         store an older ctxlog wrote while the agent was still writing the file); nothing \
         was written. To store this file as the session's new version, keeping the stored \
         one readable, import it with --replace"
    )]
    Diverged {
        /// The session.
        session: SessionId,
        /// The first seq that differs.
        at: u64,
    },
    /// An event of the recording did not decode.
    #[error("an imported event did not decode: {0}")]
    Unreadable(String),
    /// A prefix shorter than a prefix may be, which names no session whole.
    #[error("no session {text:?}: a prefix names a session from {min} characters on (`ctxlog sessions` lists them)")]
    TooShort {
        /// What was given.
        text: String,
        /// The shortest prefix taken.
        min: usize,
    },
    /// Neither a ctxlog id nor a recording's id of a stored session.
    #[error("no session {0:?} (neither a ctxlog id nor a source session id)")]
    NotFound(String),
    /// A version of a recording that a newer one replaced: work on it goes
    /// to the newer one.
    #[error(
        "session {session} is an older version of its recording, replaced by {by}: \
         work on {by} (the recording's own id names it)"
    )]
    Replaced {
        /// The older version.
        session: SessionId,
        /// The version that replaced it.
        by: SessionId,
    },
    /// A recording's id (or a prefix) that names several stored sessions.
    #[error("{text:?} names {} sessions ({}); use a longer prefix or a ctxlog id", sessions.len(), list(sessions))]
    Ambiguous {
        /// What was asked for.
        text: String,
        /// The sessions it names.
        sessions: Vec<SessionId>,
    },
}

impl CatalogError {
    /// Whether an append found the session or its description stream
    /// moved on since it was read (another process stored part of the
    /// same recording meanwhile): storing again from what is stored now
    /// converges.
    pub fn is_race(&self) -> bool {
        matches!(
            self,
            CatalogError::Store(StoreError::Append(
                AppendError::WrongExpectedVersion { .. }
                    | AppendError::PartialDuplicate { .. }
                    | AppendError::IdConflict { .. }
            ))
        )
    }
}

fn list(sessions: &[SessionId]) -> String {
    sessions
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
