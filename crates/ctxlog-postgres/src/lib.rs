//! ctxlog-postgres: ctxlog's event log on PostgreSQL, for everything
//! beyond one process (several worker processes, several hosts, a CI farm
//! writing into one place). sled stays the embedded default.
//!
//! [`PgLog`] implements `ctxlog_store::EventLog` and `Followable` with the
//! same promises as the sled store, checked by the same conformance suite:
//!
//! - **Expected versions**: an append locks its session's head row, checks
//!   the expected head and inserts at head+1…; `(session, seq)` is the
//!   primary key, so a second writer can never store a duplicate or leave
//!   a gap; a conflict is `AppendError::WrongExpectedVersion`.
//! - **Idempotent ids**: event ids are unique; a retried batch with the
//!   same ids and content returns its original position and writes
//!   nothing; the same id with other content is refused.
//! - **The same records**: each row keeps the record exactly as the sled
//!   store does (`ctxlog_store::record`: header, envelope, chain, CRC32C),
//!   so `verify` means the same thing and a session copied between
//!   backends has the same digest.
//! - **Durable when acknowledged**: an append is acknowledged when its
//!   transaction commits (the server's `synchronous_commit` decides what
//!   commit means; its default waits for the WAL flush). A connection lost
//!   during the commit is an error that says the outcome is unknown; a
//!   retry with the same ids is safe.
//! - **Subscriptions**: per session (`ctxlog_store::Follower`), or every
//!   session in one order ([`Tail`], read below the oldest running
//!   transaction so that no event is ever passed over). `LISTEN`/`NOTIFY`
//!   only wakes subscribers; what is new is read from the tables, and every
//!   reconnection re-reads every head, so a lost notification loses
//!   nothing.
//! - **Snapshots** are a cache keyed by session and reducer version, tied
//!   to the log by the chain of their head record.
//! - **Migrations** are versioned (`ctxlog_schema`) and applied on open
//!   (see [`schema`]); nothing here assumes ctxlog is the database's only
//!   client.
//!
//! The client is the synchronous `postgres` crate (a small tokio runtime
//! inside), which fits the synchronous engine; connections are pooled per
//! handle and re-made after a server restart. Connection strings are shown
//! without their passwords ([`Target`]).
//!
//! Files:
//! - `append.rs`: The slow path: one transaction that takes the session's
//!   lock and head row, answers retries of stored ids
//!   (`ctxlog_store::backend::retried_position`), checks the expected
//!   version, inserts, moves the head.
//! - `conninfo.rs`: A connection string read as libpq reads it.
//! - `shown.rs`: A connection string as shown: its passwords as `***`.
//! - `error.rs`: The client's errors as `BackendError`s naming the server.
//! - `fast.rs`: The usual append in one round trip: records encoded from the
//!   head this process last saw (`Inner::known`), one call of
//!   `ctxlog_append`; a head that moved comes back with the call.
//! - `inner.rs`: What every handle of one log shares.
//! - `listen.rs`: Waking subscribers when other processes append.
//! - `log.rs`: `PgLog`: reads by page (512 rows), heads, snapshots (a cache
//!   tied by the chain of their head record, kept as bytes); an append takes
//!   the fast path, else the slow one.
//! - `notify.rs`: Waking the log's listeners in other processes.
//! - `pool.rs`: Connections.
//! - `search/`: `PgSearch`: the search index in PostgreSQL's full-text search
//!   (migration 3): items, their words as `tsvector` literals made by
//!   ctxlog's tokenizer in chunks of 16,000 words (`words.rs`), marks,
//!   watermarks; a clause per chunk query so words far apart in one output
//!   match together; the writer one per schema (a session advisory lock), one
//!   transaction per commit, rows sent 2,000 at a time (`batch.rs`, flushed
//!   before any read, delete or commit).
//! - `tail.rs`: `Tail`: every session's events in `(transaction id,
//!   position)` order, read below the oldest running transaction.
//! - `target.rs`: Where a log is.
//! - `tls.rs`: TLS as libpq's `sslmode` means it, on rustls.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod append;
pub mod conninfo;
mod error;
mod fast;
mod inner;
mod listen;
mod log;
mod notify;
mod pool;
pub mod schema;
mod search;
mod shown;
mod tail;
mod target;
mod tls;
mod verify;

pub use log::{PgLog, PgOptions};
pub use search::{PgSearch, PgWriter};
pub use tail::{Position, Tail};
pub use target::{is_postgres_target, without_password, Target};
pub use tls::SslMode;
