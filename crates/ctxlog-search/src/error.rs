//! What can go wrong in search and recall.

use ctxlog_store::ReadError;
use std::path::PathBuf;

/// An error of the search index or of a query.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The index could not be made, opened or written; it is derived, so
    /// `ctxlog index --rebuild` makes it again from the log.
    #[error("the search index at {path}: {source}; it is rebuilt from the log by `ctxlog index --rebuild`")]
    Index {
        /// The index's directory.
        path: PathBuf,
        /// tantivy's error.
        #[source]
        source: tantivy::TantivyError,
    },
    /// A file of the index could not be handled.
    #[error("the search index at {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Another process is bringing the index up to date and did not finish
    /// in time.
    #[error("the search index {index} is being brought up to date by another process; try again in a moment")]
    Busy {
        /// The index (a directory, or a PostgreSQL log).
        index: String,
    },
    /// The log could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The query does not read.
    #[error("the query {query:?}: {why}")]
    Query {
        /// The query as given.
        query: String,
        /// What is wrong with it.
        why: String,
    },
    /// No item has this id.
    #[error("nothing stored has the id {0:?} (a ctxlog part or message id, a tool call id, or the agent's own message or part id)")]
    NotFound(String),
    /// The index names something the log does not hold: it is behind or
    /// damaged.
    #[error("the search index names {what} in session {session} at seq {seq}, which the log does not hold; `ctxlog index --rebuild` makes the index again")]
    Stale {
        /// The session.
        session: String,
        /// The seq.
        seq: u64,
        /// What was looked for.
        what: String,
    },
}

impl From<ctxlog_store::BackendError> for SearchError {
    fn from(e: ctxlog_store::BackendError) -> Self {
        SearchError::Read(ReadError::Backend(e))
    }
}

impl SearchError {
    /// The error of an index operation on `path`.
    pub(crate) fn index(path: &std::path::Path) -> impl FnOnce(tantivy::TantivyError) -> Self + '_ {
        move |source| SearchError::Index {
            path: path.to_owned(),
            source,
        }
    }
}
