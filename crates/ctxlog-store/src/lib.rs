//! ctxlog-store: the durable event log.
//!
//! [`EventLog`] is the storage trait the rest of ctxlog uses; [`SledStore`] is
//! its durable implementation on sled 0.34.7, [`MemoryLog`] an in-memory one
//! for tests, simulations and what-if runs. What the sled store promises:
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
//!   checks everything and locates every problem.
//! - **No silent loss**: a witness file beside sled's records the durable
//!   heads after every flush; a head sled lost is reported as
//!   [`StoreError::Lost`] (see `witness.rs`). sled's panics become
//!   [`StoreError::SledPanicked`]; [`salvage`] copies what is intact.
//! - **Readers while a writer runs**: sled lets one process open a store,
//!   so an open store serves other processes' reads over a socket beside
//!   it, up to each session's durable head; [`Reader`] reads through the
//!   holder when there is one, else opens the store.
//! - **Subscriptions** wake subscribers only after events are durable; a
//!   [`Follower`] follows any [`Followable`] log.
//!
//! Modules, each depending only on those above it: `record` (record layout),
//! `error`, `subscribe` (the doorbell), `log` (the trait), `follower`,
//! `memory`, `config`, `guard` (sled's panics as errors), `trees` (the sled
//! trees and heads), `snapshot`, `verify`, `witness` (what was
//! acknowledged, beside sled), `writer` (the writer thread), `wire` (how
//! readers talk to the holder), `serve` (answers other processes),
//! `sled_store` (the handle), `remote` (asks the holder), `salvage`.

// Unsafe code only in `os.rs` (one `getsockopt`), which allows it.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod error;
mod follower;
mod guard;
mod log;
mod memory;
mod os;
mod pace;
pub mod private;
pub mod record;
mod remote;
mod salvage;
mod serve;
mod sled_store;
mod snapshot;
mod subscribe;
mod trees;
mod verify;
mod wire;
pub mod witness;
mod writer;

pub use config::{Durability, StoreConfig, DEFAULT_CACHE_BYTES};
pub use error::{Expected, StoreError};
pub use follower::{Followable, Follower};
pub use guard::in_guarded_call;
pub use log::{Appended, EventLog, LoadedState, NewEvent, SessionContents};
pub use memory::MemoryLog;
pub use remote::{Reader, RemoteLog};
pub use salvage::{salvage, SalvageReport, Unsaved};
pub use serve::{wait_for_readers, yield_to_writer};
pub use sled_store::SledStore;
pub use subscribe::{Notification, Subscription};
pub use verify::{VerifyError, VerifyReport};
pub use writer::StoreStats;
