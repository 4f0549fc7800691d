//! Some libraries panic on damage on disk instead of returning an error
//! (sled: a truncated or deleted `db` file panics its recovery in
//! `segment.rs`, a deleted blob file panics a read; tantivy: a zeroed
//! segment file overflows a varint). [`quietly`] runs such a call and turns
//! its panic into the panic's message; [`guarded`] makes that message
//! [`Failure::SledPanicked`], named by the store and what was being done.
//! A panic hook asks [`in_guarded_call`] to stay quiet about a panic that
//! becomes an error.

use crate::sled::failure::Failure;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether this thread is inside a call whose panic becomes an error
/// ([`quietly`]).
pub fn in_guarded_call() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

/// Runs `f`; a panic in it is returned as its message instead of unwinding
/// further, and a panic hook that asks [`in_guarded_call`] prints nothing
/// for it.
pub fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    DEPTH.with(|d| d.set(d.get() + 1));
    let r = catch_unwind(AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get() - 1));
    r.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into())
    })
}

/// Runs `f`; a panic in it becomes [`Failure::SledPanicked`] about the
/// store at `path`, doing `what`.
pub(crate) fn guarded<T>(
    path: &Path,
    what: &'static str,
    f: impl FnOnce() -> Result<T, Failure>,
) -> Result<T, Failure> {
    quietly(f).unwrap_or_else(|message| {
        Err(Failure::SledPanicked {
            path: path.display().to_string(),
            what,
            message,
        })
    })
}
