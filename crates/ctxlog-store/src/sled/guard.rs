//! sled panics on some damage (a truncated or deleted `db` file panics its
//! recovery in `segment.rs`; a deleted blob file panics a read):
//! [`guarded`] runs a call into sled and turns such a panic into
//! [`Failure::SledPanicked`], named by the store and what was being done.
//! A panic hook can ask [`in_guarded_call`] to stay quiet about a panic that
//! becomes an error.

use crate::sled::failure::Failure;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether this thread is inside a guarded call into sled: a panic here
/// becomes an error.
pub fn in_guarded_call() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

/// Runs `f`; a panic in it becomes [`Failure::SledPanicked`] about the
/// store at `path`, doing `what`.
pub(crate) fn guarded<T>(
    path: &Path,
    what: &'static str,
    f: impl FnOnce() -> Result<T, Failure>,
) -> Result<T, Failure> {
    DEPTH.with(|d| d.set(d.get() + 1));
    let r = catch_unwind(AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get() - 1));
    r.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        Err(Failure::SledPanicked {
            path: path.display().to_string(),
            what,
            message,
        })
    })
}
