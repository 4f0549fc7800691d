//! Store errors.

use crate::record::RecordProblem;
use ctxlog_core::{codec::CodecError, EventId, RefusedEvent, Seq, SessionId};
use thiserror::Error;

/// What an append expects the session's head to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// The session must not exist yet.
    NoStream,
    /// The head must be exactly this seq (0 = no stream).
    Exactly(Seq),
    /// No check.
    Any,
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::NoStream => f.write_str("no stream"),
            Expected::Exactly(n) => write!(f, "head {n}"),
            Expected::Any => f.write_str("any"),
        }
    }
}

/// Everything a store call can fail with.
#[derive(Debug, Error)]
pub enum StoreError {
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
    /// changed: the witness vouches for them (see `witness.rs`).
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
    /// An event could not be encoded (e.g. larger than the record limit).
    #[error("event {id} cannot be encoded: {source}")]
    Encode {
        /// The event.
        id: EventId,
        /// Why.
        source: CodecError,
    },
    /// A stored event was refused by the reducer during a replay.
    #[error(transparent)]
    Refused(#[from] RefusedEvent),
    /// A write or flush failed (now or earlier); the store refuses all calls.
    #[error("store poisoned by an earlier failure: {0}")]
    Poisoned(String),
    /// The store is shut down.
    #[error("store is closed")]
    Closed,
    /// A [`StoreConfig`](crate::StoreConfig) that cannot work (e.g. a zero queue).
    #[error("invalid store configuration: {0}")]
    InvalidConfig(String),
    /// Another process holds the store (sled lets one process open it).
    #[error("{path}: the store is in use by {}; sled lets one process open a store at a time: run this when it has finished", .holder.as_deref().unwrap_or("another process"))]
    InUse {
        /// The store directory.
        path: String,
        /// The process holding it, when it can be told.
        holder: Option<String>,
    },
    /// Another process holds the store and did not serve a reader: it did
    /// not answer in time, stopped answering, or speaks another protocol.
    #[error("{path}: the store is held by {}, which did not serve this reader ({why}); run this again, or when it has finished", .holder.as_deref().unwrap_or("another process"))]
    Unanswered {
        /// The store directory.
        path: String,
        /// The process holding it, when it can be told.
        holder: Option<String>,
        /// What went wrong.
        why: String,
    },
    /// An error the process holding the store reported while serving a
    /// read (its message, as it would have printed it).
    #[error("{0}")]
    Served(String),
    /// sled panicked on the store's files (damage it does not survive).
    #[error(
        "{path}: sled failed while {what} ({message}): its files are damaged; {}",
        panic_advice(what)
    )]
    SledPanicked {
        /// The store directory.
        path: String,
        /// What the store was doing.
        what: &'static str,
        /// sled's panic message.
        message: String,
    },
    /// An error from sled.
    #[error("sled: {}", describe_sled(.0))]
    Sled(#[from] sled::Error),
    /// A file operation on the store's directory failed.
    #[error("{}: {error}{}", .path.display(), io_advice(.error))]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// What failed.
        error: std::io::Error,
    },
}

/// What to do about an I/O error on a store.
fn io_advice(e: &std::io::Error) -> &'static str {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        " (a store is private to the user who made it: only its owner and root can open it)"
    } else {
        ""
    }
}

/// Where in the store's files sled found corrupted data: the file (relative
/// to the store) and the offset.
pub fn sled_location(e: &sled::Error) -> Option<(String, u64)> {
    match e {
        sled::Error::Corruption {
            at: Some(sled::DiskPtr::Inline(offset)),
            ..
        } => Some(("db".into(), *offset)),
        sled::Error::Corruption {
            at: Some(sled::DiskPtr::Blob(offset, blob)),
            ..
        } => Some((format!("blobs/{blob}, referenced from db"), *offset)),
        _ => None,
    }
}

/// What to do after sled panicked while doing `what`.
fn panic_advice(what: &str) -> &'static str {
    if what.starts_with("opening") {
        "sled cannot open them, so nothing can be read through it: restore the store from a copy"
    } else {
        "`ctxlog verify` and `ctxlog salvage` read what they still can"
    }
}

/// A sled error in words, with the file and offset when sled names them.
fn describe_sled(e: &sled::Error) -> String {
    match (e, sled_location(e)) {
        (_, Some((file, offset))) => {
            format!("corrupted data in its file `{file}` at byte {offset}")
        }
        (sled::Error::Corruption { .. }, None) => "corrupted data in its files".into(),
        (other, None) => other.to_string(),
    }
}

impl StoreError {
    /// The same error again, for handing one outcome to several callers
    /// (errors that carry a source become `Damaged` with its text).
    pub(crate) fn clone_kind(&self) -> StoreError {
        match self {
            StoreError::WrongExpectedVersion {
                session,
                expected,
                actual,
            } => StoreError::WrongExpectedVersion {
                session: *session,
                expected: *expected,
                actual: *actual,
            },
            StoreError::IdConflict { id, session, seq } => StoreError::IdConflict {
                id: *id,
                session: *session,
                seq: *seq,
            },
            StoreError::PartialDuplicate { id } => StoreError::PartialDuplicate { id: *id },
            StoreError::EmptyAppend => StoreError::EmptyAppend,
            StoreError::Poisoned(why) => StoreError::Poisoned(why.clone()),
            StoreError::Closed => StoreError::Closed,
            StoreError::InvalidConfig(why) => StoreError::InvalidConfig(why.clone()),
            other => StoreError::Damaged(other.to_string()),
        }
    }
}
