//! [`Failure`]: what the sled log's own code fails with, sled's error
//! and panics included. It never leaves the sled module: at the
//! [`EventLog`](crate::EventLog) boundary and in every public method it
//! becomes the public error of the operation ([`OpenError`],
//! [`AppendError`], [`ReadError`]), sled's error a [`BackendError`].

use crate::error::{AppendError, BackendError, Expected, OpenError, ReadError, StoreError};
use crate::record::RecordProblem;
use ctxlog_core::{codec::CodecError, EventId, RefusedEvent, Seq, SessionId};
use thiserror::Error;

/// Everything the sled log's code can fail with.
#[derive(Debug, Error)]
pub(crate) enum Failure {
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
    /// The store belongs to another user (see [`OpenError::NotOwner`]).
    #[error("{}", crate::error::not_owner(.path, .owner, *.root))]
    NotOwner {
        /// The store directory.
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
    /// A public error met inside (from the shared log rules, or another
    /// log's call).
    #[error(transparent)]
    Backend(BackendError),
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
pub(crate) fn sled_location(e: &sled::Error) -> Option<(String, u64)> {
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

impl Failure {
    /// The same error again, for handing one outcome to several callers
    /// (errors that carry a source become `Damaged` with its text).
    pub(crate) fn clone_kind(&self) -> Failure {
        match self {
            Failure::WrongExpectedVersion {
                session,
                expected,
                actual,
            } => Failure::WrongExpectedVersion {
                session: *session,
                expected: *expected,
                actual: *actual,
            },
            Failure::IdConflict { id, session, seq } => Failure::IdConflict {
                id: *id,
                session: *session,
                seq: *seq,
            },
            Failure::PartialDuplicate { id } => Failure::PartialDuplicate { id: *id },
            Failure::EmptyAppend => Failure::EmptyAppend,
            Failure::Poisoned(why) => Failure::Poisoned(why.clone()),
            Failure::Closed => Failure::Closed,
            Failure::InvalidConfig(why) => Failure::InvalidConfig(why.clone()),
            other => Failure::Damaged(other.to_string()),
        }
    }
}

/// sled's error as a [`BackendError`]: its words, the file and offset when
/// sled names them, sled's error as the source.
pub(crate) fn backend(e: sled::Error) -> BackendError {
    let message = format!("sled: {}", describe_sled(&e));
    match sled_location(&e) {
        Some((file, offset)) => BackendError::with_source(message, e).located(file, offset),
        None => BackendError::with_source(message, e),
    }
}

impl Failure {
    /// The error as a read error: what a read can meet. Failures no read
    /// makes (a refused append, a configuration) keep their words.
    fn into_read(self) -> ReadError {
        match self {
            Failure::Corrupt {
                session,
                seq,
                problem,
            } => ReadError::Corrupt {
                session,
                seq,
                problem,
            },
            Failure::Lost { session, detail } => ReadError::Lost { session, detail },
            Failure::Damaged(why) => ReadError::Damaged(why),
            Failure::Refused(e) => ReadError::Refused(e),
            Failure::Poisoned(why) => ReadError::Poisoned(why),
            Failure::Closed => ReadError::Closed,
            Failure::Unanswered { path, holder, why } => {
                ReadError::Unanswered { path, holder, why }
            }
            Failure::Served(message) => ReadError::Served(message),
            Failure::Sled(e) => ReadError::Backend(backend(e)),
            Failure::Backend(e) => ReadError::Backend(e),
            other => ReadError::Backend(BackendError::new(other.to_string())),
        }
    }
}

impl From<Failure> for ReadError {
    fn from(f: Failure) -> Self {
        f.into_read()
    }
}

impl From<Failure> for AppendError {
    fn from(f: Failure) -> Self {
        match f {
            Failure::WrongExpectedVersion {
                session,
                expected,
                actual,
            } => AppendError::WrongExpectedVersion {
                session,
                expected,
                actual,
            },
            Failure::IdConflict { id, session, seq } => {
                AppendError::IdConflict { id, session, seq }
            }
            Failure::PartialDuplicate { id } => AppendError::PartialDuplicate { id },
            Failure::EmptyAppend => AppendError::EmptyAppend,
            Failure::Encode { id, source } => AppendError::Encode { id, source },
            Failure::Poisoned(why) => AppendError::Poisoned(why),
            Failure::Closed => AppendError::Closed,
            Failure::InUse { path, holder } => AppendError::InUse { path, holder },
            Failure::Sled(e) => AppendError::Backend(backend(e)),
            Failure::Backend(e) => AppendError::Backend(e),
            other => AppendError::Read(other.into_read()),
        }
    }
}

impl From<Failure> for OpenError {
    fn from(f: Failure) -> Self {
        match f {
            Failure::InUse { path, holder } => OpenError::InUse { path, holder },
            Failure::NotOwner { path, owner, root } => OpenError::NotOwner { path, owner, root },
            Failure::Unanswered { path, holder, why } => {
                OpenError::Unanswered { path, holder, why }
            }
            Failure::InvalidConfig(why) => OpenError::InvalidConfig(why),
            Failure::Io { path, error } => OpenError::Io { path, error },
            Failure::Sled(e) => OpenError::Backend(backend(e)),
            Failure::SledPanicked { .. } => OpenError::Backend(BackendError::new(f.to_string())),
            Failure::Backend(e) => OpenError::Backend(e),
            other => OpenError::Read(other.into_read()),
        }
    }
}

impl From<Failure> for StoreError {
    fn from(f: Failure) -> Self {
        match f {
            Failure::WrongExpectedVersion { .. }
            | Failure::IdConflict { .. }
            | Failure::PartialDuplicate { .. }
            | Failure::EmptyAppend
            | Failure::Encode { .. } => StoreError::Append(f.into()),
            Failure::InUse { .. }
            | Failure::NotOwner { .. }
            | Failure::InvalidConfig(_)
            | Failure::Io { .. } => StoreError::Open(f.into()),
            other => StoreError::Read(other.into_read()),
        }
    }
}

impl From<ReadError> for Failure {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Corrupt {
                session,
                seq,
                problem,
            } => Failure::Corrupt {
                session,
                seq,
                problem,
            },
            ReadError::Lost { session, detail } => Failure::Lost { session, detail },
            ReadError::Damaged(why) => Failure::Damaged(why),
            ReadError::Refused(e) => Failure::Refused(e),
            ReadError::Poisoned(why) => Failure::Poisoned(why),
            ReadError::Closed => Failure::Closed,
            ReadError::Unanswered { path, holder, why } => {
                Failure::Unanswered { path, holder, why }
            }
            ReadError::Served(message) => Failure::Served(message),
            ReadError::Backend(e) => Failure::Backend(e),
        }
    }
}

impl From<AppendError> for Failure {
    fn from(e: AppendError) -> Self {
        match e {
            AppendError::WrongExpectedVersion {
                session,
                expected,
                actual,
            } => Failure::WrongExpectedVersion {
                session,
                expected,
                actual,
            },
            AppendError::IdConflict { id, session, seq } => {
                Failure::IdConflict { id, session, seq }
            }
            AppendError::PartialDuplicate { id } => Failure::PartialDuplicate { id },
            AppendError::EmptyAppend => Failure::EmptyAppend,
            AppendError::Encode { id, source } => Failure::Encode { id, source },
            AppendError::Poisoned(why) => Failure::Poisoned(why),
            AppendError::Closed => Failure::Closed,
            AppendError::InUse { path, holder } => Failure::InUse { path, holder },
            AppendError::Read(e) => e.into(),
            AppendError::Backend(e) => Failure::Backend(e),
        }
    }
}

impl From<OpenError> for Failure {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::InUse { path, holder } => Failure::InUse { path, holder },
            OpenError::NotOwner { path, owner, root } => Failure::NotOwner { path, owner, root },
            OpenError::Unanswered { path, holder, why } => {
                Failure::Unanswered { path, holder, why }
            }
            OpenError::InvalidConfig(why) => Failure::InvalidConfig(why),
            OpenError::Io { path, error } => Failure::Io { path, error },
            OpenError::Read(e) => e.into(),
            OpenError::Backend(e) => Failure::Backend(e),
        }
    }
}
