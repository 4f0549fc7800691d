//! [`ExportError`]: why an export failed.

use ctxlog_core::RefusedEvent;
use thiserror::Error;

/// Why an export failed.
#[derive(Debug, Error)]
pub enum ExportError {
    /// The log does not replay (a damaged store).
    #[error("the log does not replay: {0}")]
    Refused(#[from] RefusedEvent),
    /// Writing failed.
    #[error("cannot write the export: {0}")]
    Io(#[from] std::io::Error),
    /// Serializing failed.
    #[error("cannot serialize the export: {0}")]
    Json(#[from] serde_json::Error),
    /// No events.
    #[error("the session has no events")]
    Empty,
    /// A sealed part's content is not where the state says.
    #[error("the log does not hold a part's content: {0}")]
    Content(#[from] ctxlog_core::ContentError),
    /// Reading the session's events failed.
    #[error("cannot read the session: {0}")]
    Read(String),
}
