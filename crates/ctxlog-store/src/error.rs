//! What a log call can fail with, one type per operation: opening a log
//! ([`OpenError`]), appending to it ([`AppendError`]) and reading it
//! ([`ReadError`]); [`StoreError`] is any of the three, for callers that do
//! several. A backend's own error (sled's, PostgreSQL's) is a
//! [`BackendError`]: its words and where in its files, never its type, so
//! no backend type crosses the [`EventLog`](crate::EventLog) boundary.

use crate::record::RecordProblem;
use ctxlog_core::{codec::CodecError, EventId, RefusedEvent, Seq, SessionId};
use std::error::Error as StdError;
use std::fmt;
use thiserror::Error;

/// What an append expects the session's head to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Expected {
    /// The session must not exist yet.
    NoStream,
    /// The head must be exactly this seq (0 = no stream).
    Exactly(Seq),
    /// No check.
    Any,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::NoStream => f.write_str("no stream"),
            Expected::Exactly(n) => write!(f, "head {n}"),
            Expected::Any => f.write_str("any"),
        }
    }
}

/// A backend's own error, opaque: what it said (in words a user can act
/// on), where in its files when it can tell, and its error as the source.
#[derive(Debug)]
pub struct BackendError {
    message: String,
    location: Option<(String, u64)>,
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl BackendError {
    /// An error the backend describes as `message`.
    pub fn new(message: impl Into<String>) -> Self {
        BackendError {
            message: message.into(),
            location: None,
            source: None,
        }
    }

    /// [`new`](Self::new), with the backend's own error as the source.
    pub fn with_source(
        message: impl Into<String>,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        BackendError {
            source: Some(Box::new(source)),
            ..BackendError::new(message)
        }
    }

    /// The same error, located at byte `offset` of `file` (relative to the
    /// store).
    pub fn located(mut self, file: impl Into<String>, offset: u64) -> Self {
        self.location = Some((file.into(), offset));
        self
    }

    /// The file (relative to the store) and byte offset the backend named.
    pub fn location(&self) -> Option<(&str, u64)> {
        self.location.as_ref().map(|(f, o)| (f.as_str(), *o))
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for BackendError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn StdError + 'static))
    }
}

/// Why a log could not be opened.
#[derive(Debug, Error)]
pub enum OpenError {
    /// Another process holds the store and lets one process open it.
    #[error("{path}: the store is in use by {}; sled lets one process open a store at a time: run this when it has finished", .holder.as_deref().unwrap_or("another process"))]
    InUse {
        /// The store.
        path: String,
        /// The process holding it, when it can be told.
        holder: Option<String>,
    },
    /// The store belongs to another user: a store is private to its owner,
    /// and root opens it only through a process of its owner (so that no
    /// file of it becomes root's), none of which serves it now.
    #[error("{}", not_owner(.path, .owner, *.root))]
    NotOwner {
        /// The store.
        path: String,
        /// Its owner, by name and uid.
        owner: String,
        /// Whether this process runs as root.
        root: bool,
    },
    /// Another process holds the store and did not serve a reader: it did
    /// not answer in time, stopped answering, or speaks another protocol.
    #[error("{path}: the store is held by {}, which did not serve this reader ({why}); run this again, or when it has finished", .holder.as_deref().unwrap_or("another process"))]
    Unanswered {
        /// The store.
        path: String,
        /// The process holding it, when it can be told.
        holder: Option<String>,
        /// What went wrong.
        why: String,
    },
    /// A configuration that cannot work (e.g. a zero queue).
    #[error("invalid store configuration: {0}")]
    InvalidConfig(String),
    /// A file operation on the store's directory failed.
    #[error("{}: {error}{}", .path.display(), io_advice(.error))]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// Opening read the store and found it damaged.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Why an append was refused or failed; nothing of the batch is stored
/// unless the error says the outcome is unknown (a failed flush).
#[derive(Debug, Error)]
pub enum AppendError {
    /// The session's head is not what the append expected.
    #[error("wrong expected version for session {session}: expected {expected}, head is {actual}")]
    WrongExpectedVersion {
        /// The session.
        session: SessionId,
        /// What the append expected.
        expected: Expected,
        /// The actual head (0 = no stream).
        actual: Seq,
    },
    /// An event id already stored with different content.
    #[error("event {id} is already stored at session {session} seq {seq} with different content")]
    IdConflict {
        /// The event id.
        id: EventId,
        /// Where it is stored.
        session: SessionId,
        /// Its seq.
        seq: Seq,
    },
    /// A batch that mixes already-stored and new events, or repeats an id.
    #[error("batch mixes stored and new events or repeats an id (event {id})")]
    PartialDuplicate {
        /// The first offending id.
        id: EventId,
    },
    /// An empty batch.
    #[error("empty append")]
    EmptyAppend,
    /// An event could not be encoded (e.g. larger than the record limit).
    #[error("event {id} cannot be encoded: {source}")]
    Encode {
        /// The event.
        id: EventId,
        /// Why.
        source: CodecError,
    },
    /// A write or flush failed (now or earlier); the log refuses all calls.
    #[error("store poisoned by an earlier failure: {0}")]
    Poisoned(String),
    /// The log is shut down.
    #[error("store is closed")]
    Closed,
    /// Another process holds the store and does not serve it (sled lets
    /// one process open a store): it cannot be written from here.
    #[error("{path}: the store is in use by {}, which does not serve other processes: run this when it has finished", .holder.as_deref().unwrap_or("another process"))]
    InUse {
        /// The store.
        path: String,
        /// The process holding it, when it can be told.
        holder: Option<String>,
    },
    /// What the append had to read (the head, a stored event of a retried
    /// batch) could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Why a read failed.
#[derive(Debug, Error)]
pub enum ReadError {
    /// A stored record is damaged or unreadable.
    #[error("record session {session} seq {seq}: {problem}")]
    Corrupt {
        /// The session.
        session: SessionId,
        /// The seq.
        seq: Seq,
        /// What is wrong.
        problem: RecordProblem,
    },
    /// Acknowledged events of the session are missing from the log or
    /// changed (the witness vouches for them).
    #[error("session {session}: {detail}")]
    Lost {
        /// The session.
        session: SessionId,
        /// Which events, and what to do.
        detail: String,
    },
    /// A stored value that is not a ctxlog record at all (bad key, bad head).
    #[error("store damaged: {0}")]
    Damaged(String),
    /// A stored event was refused by the reducer during a replay.
    #[error(transparent)]
    Refused(#[from] RefusedEvent),
    /// A write or flush failed earlier; the log refuses all calls.
    #[error("store poisoned by an earlier failure: {0}")]
    Poisoned(String),
    /// The log is shut down.
    #[error("store is closed")]
    Closed,
    /// The process holding the store stopped serving this read.
    #[error("{path}: the store is held by {}, which did not serve this reader ({why}); run this again, or when it has finished", .holder.as_deref().unwrap_or("another process"))]
    Unanswered {
        /// The store.
        path: String,
        /// The process holding it, when it can be told.
        holder: Option<String>,
        /// What went wrong.
        why: String,
    },
    /// An error the process holding the store reported while serving the
    /// read (its message, as it would have printed it).
    #[error("{0}")]
    Served(String),
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Any log error: for callers that open, append and read.
#[derive(Debug, Error)]
pub enum StoreError {
    /// Opening failed.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// An append failed.
    #[error(transparent)]
    Append(#[from] AppendError),
    /// A read failed.
    #[error(transparent)]
    Read(#[from] ReadError),
}

impl From<BackendError> for StoreError {
    fn from(e: BackendError) -> Self {
        StoreError::Read(ReadError::Backend(e))
    }
}

impl From<RefusedEvent> for StoreError {
    fn from(e: RefusedEvent) -> Self {
        StoreError::Read(ReadError::Refused(e))
    }
}

impl StoreError {
    /// The read error this is, wherever it was met (opening and appending
    /// read too).
    pub fn as_read(&self) -> Option<&ReadError> {
        match self {
            StoreError::Read(e)
            | StoreError::Open(OpenError::Read(e))
            | StoreError::Append(AppendError::Read(e)) => Some(e),
            _ => None,
        }
    }
}

impl StoreError {
    /// The error as a read's: what a read met, however it was met. An
    /// error no read makes (a refused append, a configuration) keeps its
    /// words as a [`BackendError`].
    pub fn into_read(self) -> ReadError {
        match self {
            StoreError::Read(e)
            | StoreError::Open(OpenError::Read(e))
            | StoreError::Append(AppendError::Read(e)) => e,
            StoreError::Open(OpenError::Backend(b))
            | StoreError::Append(AppendError::Backend(b)) => ReadError::Backend(b),
            StoreError::Append(AppendError::Poisoned(why)) => ReadError::Poisoned(why),
            StoreError::Append(AppendError::Closed) => ReadError::Closed,
            StoreError::Open(OpenError::Unanswered { path, holder, why }) => {
                ReadError::Unanswered { path, holder, why }
            }
            other => ReadError::Backend(BackendError::new(other.to_string())),
        }
    }

    /// The error as an append's: a read's poisoning, closing and backend
    /// failure are the append's own, any other read error is what the
    /// append had to read; a store held elsewhere cannot be written.
    pub fn into_append(self) -> AppendError {
        match self {
            StoreError::Append(e) => e,
            StoreError::Read(e) | StoreError::Open(OpenError::Read(e)) => match e {
                ReadError::Poisoned(why) => AppendError::Poisoned(why),
                ReadError::Closed => AppendError::Closed,
                ReadError::Backend(b) => AppendError::Backend(b),
                other => AppendError::Read(other),
            },
            StoreError::Open(OpenError::InUse { path, holder }) => {
                AppendError::InUse { path, holder }
            }
            StoreError::Open(OpenError::Backend(b)) => AppendError::Backend(b),
            other => AppendError::Read(other.into_read()),
        }
    }

    /// The error as an opening's: what opening read is a read error of
    /// the opening.
    pub fn into_open(self) -> OpenError {
        match self {
            StoreError::Open(e) => e,
            StoreError::Append(AppendError::InUse { path, holder }) => {
                OpenError::InUse { path, holder }
            }
            StoreError::Read(ReadError::Unanswered { path, holder, why }) => {
                OpenError::Unanswered { path, holder, why }
            }
            StoreError::Read(ReadError::Backend(b))
            | StoreError::Append(AppendError::Backend(b)) => OpenError::Backend(b),
            other => OpenError::Read(other.into_read()),
        }
    }
}

/// Why a store of another user is not opened, and what to do.
fn not_owner(path: &str, owner: &str, root: bool) -> String {
    if root {
        format!(
            "{path}: the store belongs to {owner}: root opens it only through a process of its owner, so that every file of it stays theirs, and none serves it now; run this as its owner, or while one of the owner's ctxlog commands holds the store (`import --follow`)"
        )
    } else {
        format!(
            "{path}: the store belongs to {owner}: a store is private to the user who made it (only its owner and root can open it); name a store of your own"
        )
    }
}

/// What to do about an I/O error on a store.
fn io_advice(e: &std::io::Error) -> &'static str {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        " (a store is private to the user who made it: only its owner and root can open it)"
    } else {
        ""
    }
}

/// Implements `From` each of [`OpenError`], [`AppendError`], [`ReadError`]
/// and [`BackendError`] for an error type `$owner` with a variant that
/// holds a [`StoreError`], so `?` works on any log call:
/// `ctxlog_store::log_errors_into!(EngineError, EngineError::Store);`.
#[macro_export]
macro_rules! log_errors_into {
    ($owner:ty, $variant:path) => {
        $crate::log_errors_into!(@one $owner, $variant, $crate::OpenError);
        $crate::log_errors_into!(@one $owner, $variant, $crate::AppendError);
        $crate::log_errors_into!(@one $owner, $variant, $crate::ReadError);
        $crate::log_errors_into!(@one $owner, $variant, $crate::BackendError);
    };
    (@one $owner:ty, $variant:path, $from:ty) => {
        impl ::core::convert::From<$from> for $owner {
            fn from(e: $from) -> Self {
                $variant($crate::StoreError::from(e))
            }
        }
    };
}
