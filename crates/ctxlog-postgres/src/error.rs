//! PostgreSQL's errors as the store boundary's: an opaque
//! [`BackendError`] that names the server (never its password) and keeps
//! the client's error as its source.

use crate::target::Target;
use ctxlog_store::BackendError;

/// SQLSTATE of a unique violation: another writer stored the same
/// `(session, seq)` or event id first.
pub(crate) const UNIQUE_VIOLATION: &str = "23505";

/// `what` failed on `target` because of `error`.
pub(crate) fn backend(target: &Target, what: &str, error: postgres::Error) -> BackendError {
    let detail = match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None if error.is_closed() => "the connection to the server was lost".to_owned(),
        None => match std::error::Error::source(&error) {
            Some(cause) => format!("{error}: {cause}"),
            None => error.to_string(),
        },
    };
    let advice = if detail.contains("password missing") {
        ": the server asks for a password and none was given; put it in PGPASSWORD, in ~/.pgpass (mode 0600) or in the connection string"
    } else if error
        .as_db_error()
        .is_some_and(|db| db.code().code() == "28P01")
    {
        ": check the password (the connection string, PGPASSWORD, ~/.pgpass)"
    } else {
        ""
    };
    BackendError::with_source(format!("{target}: {what}: {detail}{advice}"), error)
}

/// Whether `error` is a unique violation.
pub(crate) fn is_unique_violation(error: &postgres::Error) -> bool {
    error
        .as_db_error()
        .is_some_and(|db| db.code().code() == UNIQUE_VIOLATION)
}
