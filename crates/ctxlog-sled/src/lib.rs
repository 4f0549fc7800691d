//! ctxlog-sled: the embedded default log, on sled 0.34.7. [`SledStore`]
//! implements the contract's [`EventLog`](ctxlog_store::EventLog) and
//! passes its conformance suite; it fails with the contract's errors
//! only (sled's own error is a [`BackendError`](ctxlog_store::BackendError)
//! naming the file and offset), so no sled type leaves this crate. What it
//! adds to the contract's promises:
//!
//! - **One committer, group commit**: one writer thread checks the head
//!   and writes the events, their event-id index entries and then the
//!   session head, in that order; concurrent appends share one flush.
//!   What a crash leaves past a head is removed at the next open.
//! - **Durability** ([`Durability::Durable`], the default): an append is
//!   acknowledged only after sled has flushed it (fsync), and survives a
//!   crash or a kill of the process. Power loss is **not** promised: sled
//!   0.34 does not guarantee it. [`Durability::Buffered`] acknowledges
//!   before the flush.
//! - **No silent loss**: a witness file beside sled's records the durable
//!   heads after every flush; a head sled lost is reported as
//!   `ReadError::Lost`. sled's panics on damaged files become errors
//!   naming what to do; [`salvage`] copies what is intact.
//! - **Many processes, one holder**: sled lets one process open a store,
//!   so an open store serves other processes over a socket beside it:
//!   reads up to each session's durable head, and appends made by its own
//!   writer with the same guarantees; [`SharedStore`] goes through the
//!   holder when there is one, else opens the store (and serves the
//!   others), and goes on with the next holder when one lets go. A
//!   process that held a store waits for its readers before it exits
//!   ([`wait_for_readers`]) and steps aside for a writer
//!   ([`yield_to_writer`]).
//! - **Private**: a store's files are its owner's ([`private`]).
//!
//! Files, each depending only on those above it: `errors` (sled's errors
//! in the contract's words), `config`, `guard` (sled's panics as errors),
//! `trees` (the sled trees and heads; values hold records alone or packed:
//! `ctxlog_store::pack`), `index` (the event-id index), `snapshot`,
//! `verify` (the walk behind [`SledStore::verify`]), `witness` (what was
//! acknowledged, beside sled), `append` (one append's writes), `repair`
//! (what a crash left past a head), `shared`, `ticket`, `fixture` (the
//! unit tests' own), `group` (what the leader does with a group), `writer` (the committer
//! and the flusher thread),
//! `wire` (how other processes talk to the holder), `os`, `pace`, `serve`
//! (answers other processes), `store` (the handle), `remote` (asks the
//! holder), `shared_store` (the store whoever holds it), `salvage`;
//! `private` keeps the files to their owner, `faults` (feature `testing`)
//! lets the fault-injecting log run over a sled store.

// Unsafe code only in `os.rs` (one `getsockopt`, one `setpriority`),
// which allows it.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub(crate) mod append;
pub(crate) mod config;
pub(crate) mod errors;
#[cfg(feature = "testing")]
mod faults;
#[cfg(test)]
pub(crate) mod fixture;
pub(crate) mod group;
pub(crate) mod guard;
pub(crate) mod index;
pub(crate) mod os;
pub(crate) mod pace;
pub mod private;
pub(crate) mod remote;
pub(crate) mod repair;
pub(crate) mod salvage;
pub(crate) mod serve;
pub(crate) mod shared;
pub(crate) mod shared_store;
pub(crate) mod snapshot;
pub(crate) mod store;
pub(crate) mod ticket;
pub(crate) mod trees;
pub(crate) mod verify;
pub(crate) mod wire;
pub mod witness;
pub(crate) mod writer;

pub use config::{Durability, StoreConfig, DEFAULT_CACHE_BYTES};
pub use remote::RemoteLog;
pub use salvage::{salvage, SalvageReport, Unsaved};
pub use serve::{wait_for_readers, yield_to_writer};
pub use shared::StoreStats;
pub use shared_store::SharedStore;
pub use store::SledStore;
