//! What can go wrong while installing or driving a pinned agent.

use std::io;
use thiserror::Error;

/// Why driving an agent failed.
#[derive(Debug, Error)]
pub enum DriveError {
    /// The npm registry cannot be reached: the caller may skip.
    #[error("the npm registry cannot be reached ({0}); cannot install the pinned agent")]
    Unreachable(String),
    /// Installing failed although the registry answered.
    #[error("npm install failed: {0}")]
    Install(String),
    /// A command or the server failed.
    #[error("{what}: {detail}")]
    Failed {
        /// What was attempted.
        what: String,
        /// What went wrong.
        detail: String,
    },
    /// An I/O error.
    #[error("{0}")]
    Io(#[from] io::Error),
}

pub(crate) fn failed(what: impl Into<String>, detail: impl ToString) -> DriveError {
    DriveError::Failed {
        what: what.into(),
        detail: detail.to_string(),
    }
}
