//! sled's errors in the contract's words. The sled log's code fails with
//! the contract's [`StoreError`] (the public error of each operation, one
//! set for every log); sled's own error becomes a [`BackendError`] that
//! names the file and offset sled names and keeps sled's error as its
//! source ([`backend`]), and a panic of sled's on damaged files one that
//! says what to do ([`panicked`]). At each public method the error becomes
//! that operation's (`StoreError::into_read`, `into_append`, `into_open`).

use ctxlog_store::{AppendError, BackendError, OpenError, ReadError, StoreError};
use std::path::Path;

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

/// A sled error in words, with the file and offset when sled names them.
pub(crate) fn describe_sled(e: &sled::Error) -> String {
    match (e, sled_location(e)) {
        (_, Some((file, offset))) => {
            format!("corrupted data in its file `{file}` at byte {offset}")
        }
        (sled::Error::Corruption { .. }, None) => "corrupted data in its files".into(),
        (other, None) => other.to_string(),
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

/// sled's error as a [`StoreError`] (a read's: every sled call reads).
pub(crate) fn from_sled(e: sled::Error) -> StoreError {
    StoreError::Read(ReadError::Backend(backend(e)))
}

/// The sled error behind `e`, when sled failed (not a record or a rule).
pub(crate) fn sled_cause(e: &StoreError) -> Option<&sled::Error> {
    let backend = match e {
        StoreError::Read(ReadError::Backend(b))
        | StoreError::Append(AppendError::Backend(b))
        | StoreError::Open(OpenError::Backend(b)) => b,
        _ => return None,
    };
    std::error::Error::source(backend)?.downcast_ref::<sled::Error>()
}

/// sled panicked on the store's files at `path` while doing `what`
/// (damage it does not survive).
pub(crate) fn panicked(path: &Path, what: &str, message: &str) -> StoreError {
    let advice = if what.starts_with("opening") {
        "sled cannot open them, so nothing can be read through it: restore the store from a copy"
    } else {
        "`ctxlog verify` and `ctxlog salvage` read what they still can"
    };
    StoreError::Read(ReadError::Backend(BackendError::new(format!(
        "{}: sled failed while {what} ({message}): its files are damaged; {advice}",
        path.display()
    ))))
}

/// `e` for the second of two callers waiting on one outcome: the refusals
/// and states a caller acts on keep their kind, the rest become
/// [`ReadError::Damaged`] with their words.
pub(crate) fn clone_kind(e: &StoreError) -> StoreError {
    use AppendError as A;
    match e {
        StoreError::Append(A::WrongExpectedVersion {
            session,
            expected,
            actual,
        }) => StoreError::Append(A::WrongExpectedVersion {
            session: *session,
            expected: *expected,
            actual: *actual,
        }),
        StoreError::Append(A::IdConflict { id, session, seq }) => {
            StoreError::Append(A::IdConflict {
                id: *id,
                session: *session,
                seq: *seq,
            })
        }
        StoreError::Append(A::PartialDuplicate { id }) => {
            StoreError::Append(A::PartialDuplicate { id: *id })
        }
        StoreError::Append(A::EmptyAppend) => StoreError::Append(A::EmptyAppend),
        StoreError::Read(ReadError::Poisoned(why)) | StoreError::Append(A::Poisoned(why)) => {
            StoreError::Read(ReadError::Poisoned(why.clone()))
        }
        StoreError::Read(ReadError::Closed) | StoreError::Append(A::Closed) => {
            StoreError::Read(ReadError::Closed)
        }
        StoreError::Open(OpenError::InvalidConfig(why)) => {
            StoreError::Open(OpenError::InvalidConfig(why.clone()))
        }
        other => StoreError::Read(ReadError::Damaged(other.to_string())),
    }
}

/// [`ReadError::Damaged`] as a [`StoreError`]: a stored value that is not
/// a ctxlog record at all.
pub(crate) fn damaged(why: impl Into<String>) -> StoreError {
    StoreError::Read(ReadError::Damaged(why.into()))
}
