//! How a command fails: its kind, its exit code, its name in the JSON
//! envelope.

/// A failure, with the exit code it maps to.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error("{0}")]
    BadInput(String),
    #[error("{0}")]
    Failed(String),
    /// The failure is already in the command's output.
    #[error("{0} problem(s) found")]
    Reported(usize),
    /// Inputs refused, already named in the command's output (bad input:
    /// exit 2).
    #[error("{0} input(s) refused; nothing of them was written")]
    Refused(usize),
}

impl CliError {
    pub(crate) fn code(&self) -> u8 {
        match self {
            CliError::BadInput(_) | CliError::Refused(_) => 2,
            CliError::Failed(_) | CliError::Reported(_) => 1,
        }
    }

    /// The error's kind in the JSON envelope.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            CliError::BadInput(_) => "bad_input",
            CliError::Failed(_) => "failed",
            CliError::Reported(_) => "reported",
            CliError::Refused(_) => "refused",
        }
    }
}
