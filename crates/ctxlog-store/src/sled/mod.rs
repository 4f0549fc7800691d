//! The sled log: [`SledStore`] and everything around it (the writer
//! thread, the witness, verification, serving readers over a socket,
//! salvage). sled's types and errors stay inside this module: what leaves
//! it is the [`EventLog`](crate::EventLog) trait, the public errors of
//! `crate::error`, and the handles below.
//!
//! Modules, each depending only on those above it: `failure` (sled's own
//! errors), `config`, `guard` (sled's panics as errors), `trees` (the
//! sled trees and heads; values hold records alone or packed:
//! `crate::pack`), `index` (the event-id index), `snapshot`, `verify`, `witness` (what was
//! acknowledged, beside sled), `append` (one append's writes), `repair`
//! (what a crash left past a head), `shared`, `ticket`, `fixture` (the
//! unit tests' own), `writer` (the committer and the flusher thread),
//! `wire` (how other processes talk to the holder), `os`, `pace`, `serve` (answers other
//! processes), `store` (the handle), `remote` (asks the holder),
//! `shared_store` (the store whoever holds it),
//! `salvage`; `private` keeps the files to their owner.

pub(crate) mod append;
pub(crate) mod config;
pub(crate) mod failure;
#[cfg(test)]
pub(crate) mod fixture;
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
