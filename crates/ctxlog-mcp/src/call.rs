//! What a tool call asks for, and how it fails.

/// A tool's failure, told to the agent as the tool's error text.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// The store could not be opened.
    #[error("the store {store} cannot be opened: {why}")]
    Store {
        /// The store.
        store: String,
        /// Why.
        why: String,
    },
    /// Search or recall failed.
    #[error(transparent)]
    Search(#[from] ctxlog_search::SearchError),
    /// The log could not be read.
    #[error(transparent)]
    Read(#[from] ctxlog_store::ReadError),
    /// The arguments do not make sense.
    #[error("{0}")]
    Arguments(String),
}

/// Where a search looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The agent's current session.
    Session,
    /// Every session recorded in the project directory.
    Project,
    /// Every session of the store.
    All,
}
