//! Some libraries a backend builds on panic on damage on disk instead of
//! returning an error (sled: a truncated or deleted `db` file panics its
//! recovery, a deleted blob file panics a read; tantivy: a zeroed segment
//! file overflows a varint). [`quietly`] runs such a call and turns its
//! panic into the panic's message, which the backend makes its error; a
//! panic hook asks [`in_guarded_call`] to stay quiet about a panic that
//! becomes an error.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

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
