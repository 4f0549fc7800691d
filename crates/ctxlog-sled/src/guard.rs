//! sled panics on some damage on disk (a truncated or deleted `db` file
//! panics its recovery in `segment.rs`, a deleted blob file panics a
//! read). [`guarded`] runs a sled call under the contract's
//! [`quietly`] and makes such a panic a [`BackendError`] named by the
//! store and what was being done.

use crate::errors::panicked;
use ctxlog_store::backend::quietly;
use ctxlog_store::StoreError;
use std::path::Path;

/// Runs `f`; a panic in it becomes a [`StoreError`] about the store at
/// `path`, doing `what` (see [`panicked`]).
pub(crate) fn guarded<T>(
    path: &Path,
    what: &'static str,
    f: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    quietly(f).unwrap_or_else(|message| Err(panicked(path, what, &message)))
}
