//! ctxlog-store: the event log contract.
//!
//! [`EventLog`] is the storage trait the rest of ctxlog uses. This crate
//! holds what every log shares and no backend: the trait and the rules it
//! applies, the record layout, packs, the in-memory [`MemoryLog`] (tests,
//! simulations, what-if runs), the [`Follower`], subscriptions, the
//! verification report, and (feature `testing`) the conformance suite
//! every log passes and the fault-injecting log. The durable logs are
//! adapters beside it, built on its [`backend`] module: `ctxlog_sled`
//! (the embedded default) and `ctxlog_postgres` (many processes and
//! hosts). What every log promises, and the suite checks:
//!
//! - **Atomic appends with an expected version** ([`Expected`]): a batch
//!   is all-or-nothing and contiguous; readers never see past a head.
//! - **Idempotent retries**: appending the same event ids with the same
//!   content returns the original position; different content is an error.
//! - **Durability as acknowledged**: a durable log acknowledges an append
//!   only once it is stored; after a failed write every call fails
//!   ([`AppendError::Poisoned`], [`ReadError::Poisoned`]).
//! - **Integrity**: every durable record carries a CRC32C and a digest
//!   chained from the previous record of its session ([`record`]); a
//!   verification names every problem by (session, seq) ([`VerifyReport`]).
//! - **Subscriptions** wake subscribers only after events are durable; a
//!   [`Follower`] follows any [`Followable`] log.
//!
//! A log stores events and opaque snapshot bytes; it knows nothing of a
//! session's derived state. [`SessionStates`] (implemented for every log)
//! folds one: `replay`, `load_state` from the newest usable snapshot,
//! `save_snapshot`.
//!
//! Errors are split by operation: [`OpenError`], [`AppendError`],
//! [`ReadError`] ([`StoreError`] is any of them); a backend's own error is
//! an opaque [`BackendError`], so no backend type appears in a public
//! signature. Every log fails with these, and no other.
//!
//! Files, each depending only on those above it: `record` (record layout,
//! shared by every durable log), `pack` (several records in one value),
//! `error`, `verify` (the verification report), `guard` (panics of a
//! backend's library as errors), `subscribe` (the doorbell), `log` (the
//! trait and the rules every log applies), `state` (a session's derived
//! state from any log: replay, snapshots), `follower`, `memory`, and with
//! feature `testing` `conformance` (the suite) and `faults` (a log that
//! fails on schedule).

#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "testing")]
pub mod conformance;
mod error;
#[cfg(feature = "testing")]
pub mod faults;
mod follower;
mod guard;
mod log;
mod memory;
pub mod pack;
pub mod record;
mod state;
mod subscribe;
mod verify;

pub use error::{AppendError, BackendError, Expected, OpenError, ReadError, StoreError};
pub use follower::{Followable, Follower};
/// What a log implemented outside this crate (`ctxlog_sled`,
/// `ctxlog_postgres`) builds on: the rules every log applies to an append,
/// the doorbell of subscriptions, and the guard for libraries that panic
/// on damage.
pub mod backend {
    pub use crate::guard::{in_guarded_call, quietly};
    pub use crate::log::{check_expected, repeated_id, retried_position};
    pub use crate::state::evolve_to_head;
    pub use crate::subscribe::Hub;
    pub use crate::verify::KINDS;
}
pub use log::{Appended, EventLog, NewEvent, SessionContents, Snapshot};
pub use memory::MemoryLog;
pub use state::{LoadedState, SessionStates};
pub use subscribe::{Notification, Subscription};
pub use verify::{VerifyError, VerifyReport};
