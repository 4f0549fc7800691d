//! ctxlog-store: the durable event log.
//!
//! [`EventLog`] is the storage trait the rest of ctxlog uses; [`SledStore`] is
//! its implementation on sled 0.34.7. What it promises:
//!
//! - **Atomic appends with an expected version** ([`Expected`]): the check and
//!   the write of the events, the session head and the event-id index are one
//!   sled transaction. A batch is all-or-nothing and contiguous.
//! - **Idempotent retries**: appending the same event ids with the same content
//!   returns the original position; different content is an error.
//! - **Durability** ([`Durability::Durable`], the default): an append is
//!   acknowledged only after sled has flushed it (fsync). Concurrent appends
//!   share one flush (group commit). An acknowledged event survives a crash or
//!   a kill of the process. Power loss is **not** promised: sled 0.34 does not
//!   guarantee it. [`Durability::Buffered`] acknowledges before the flush.
//! - **Poisoning**: after a failed flush every call fails with
//!   [`StoreError::Poisoned`]; nothing carries on as if it were durable.
//! - **Integrity**: every record carries a CRC32C and a digest chained from
//!   the previous record of its session; reads check the CRC, [`SledStore::verify`]
//!   checks everything and names the first bad (session, seq).
//! - **Subscriptions** wake subscribers only after events are durable.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
pub mod record;
mod store;
mod subscribe;

pub use error::{Expected, StoreError};
pub use store::{
    Appended, Durability, EventLog, LoadedState, NewEvent, SledStore, StoreConfig, StoreStats,
    VerifyError, VerifyReport,
};
pub use subscribe::{Follower, Notification, Subscription};
