//! ctxlog-store: the durable event log.
//!
//! [`EventLog`] is the storage trait the rest of ctxlog uses; [`SledStore`] is
//! its durable implementation on sled 0.34.7, [`MemoryLog`] an in-memory one
//! for tests, simulations and what-if runs. What the sled store promises:
//!
//! - **Atomic appends with an expected version** ([`Expected`]): one
//!   committer checks the head and writes the events, their event-id index
//!   entries and then the session head, in that order; readers stop at the
//!   head, and what a crash leaves past one is removed at the next open. A
//!   batch is all-or-nothing and contiguous.
//! - **Idempotent retries**: appending the same event ids with the same content
//!   returns the original position; different content is an error.
//! - **Durability** ([`Durability::Durable`], the default): an append is
//!   acknowledged only after sled has flushed it (fsync). Concurrent appends
//!   share one flush (group commit). An acknowledged event survives a crash or
//!   a kill of the process. Power loss is **not** promised: sled 0.34 does not
//!   guarantee it. [`Durability::Buffered`] acknowledges before the flush.
//! - **Poisoning**: after a failed flush every call fails with
//!   [`AppendError::Poisoned`] or [`ReadError::Poisoned`]; nothing carries on as if it were durable.
//! - **Integrity**: every record carries a CRC32C and a digest chained from
//!   the previous record of its session; reads check the CRC, [`SledStore::verify`]
//!   checks everything and locates every problem.
//! - **No silent loss**: a witness file beside sled's records the durable
//!   heads after every flush; a head sled lost is reported as
//!   [`ReadError::Lost`] (see `sled/witness.rs`). sled's errors and panics
//!   become a [`BackendError`] naming the file and offset; [`salvage`]
//!   copies what is intact.
//! - **Many processes, one holder**: sled lets one process open a store,
//!   so an open store serves other processes over a socket beside it:
//!   reads up to each session's durable head, and appends made by its own
//!   writer with the same guarantees; [`SharedStore`] goes through the
//!   holder when there is one, else opens the store (and serves the
//!   others), and goes on with the next holder when one lets go.
//! - **Subscriptions** wake subscribers only after events are durable; a
//!   [`Follower`] follows any [`Followable`] log.
//!
//! Errors are split by operation: [`OpenError`], [`AppendError`],
//! [`ReadError`] ([`StoreError`] is any of them); a backend's own error is
//! an opaque [`BackendError`], so no sled type appears in a public
//! signature.
//!
//! Modules, each depending only on those above it: `record` (record
//! layout, shared by every durable log), `error`, `subscribe` (the
//! doorbell), `log` (the trait and the rules every log applies),
//! `follower`, `memory`, and `sled` (the sled log, see its module doc).

// Unsafe code only in `sled/os.rs` (one `getsockopt`, one `setpriority`),
// which allows it.
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "testing")]
pub mod conformance;
mod error;
#[cfg(feature = "testing")]
pub mod faults;
mod follower;
mod log;
mod memory;
pub mod pack;
pub mod record;
mod sled;
mod subscribe;

pub use error::{AppendError, BackendError, Expected, OpenError, ReadError, StoreError};
pub use follower::{Followable, Follower};
/// What a log implemented outside this crate (the PostgreSQL log) shares
/// with the ones inside: the rules every log applies to an append, and the
/// doorbell of subscriptions.
pub mod backend {
    pub use crate::log::{check_expected, evolve_to_head, repeated_id, retried_position};
    pub use crate::subscribe::Hub;
}
pub use log::{Appended, EventLog, LoadedState, NewEvent, SessionContents};
pub use memory::MemoryLog;
pub use sled::config::{Durability, StoreConfig, DEFAULT_CACHE_BYTES};
pub use sled::guard::{in_guarded_call, quietly};
pub use sled::remote::RemoteLog;
pub use sled::salvage::{salvage, SalvageReport, Unsaved};
pub use sled::serve::{wait_for_readers, yield_to_writer};
pub use sled::shared::StoreStats;
pub use sled::shared_store::SharedStore;
pub use sled::store::SledStore;
pub use sled::verify::{VerifyError, VerifyReport};
pub use sled::{private, witness};
pub use subscribe::{Notification, Subscription};
