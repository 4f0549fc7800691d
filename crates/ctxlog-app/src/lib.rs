//! ctxlog-app: the use cases every front door offers, in one place. The
//! CLI (`ctxlog-cli`) parses arguments and formats what these return;
//! Python (`python/`) converts the same values into its objects. Neither
//! holds a use case of its own.
//!
//! - [`catalog`]: storing recordings (whole, grown, versioned), resolving a
//!   session by its ctxlog id, its recording's id or a prefix, manual
//!   copies and kept simulations;
//! - [`inputs`]: what an import reads (files, directories, databases,
//!   standard input, discovered sessions), read into recordings;
//! - [`compaction`]: a stored session compacted now (a recording in its
//!   manual copy);
//! - [`copying`]: a whole store copied into another (sled and PostgreSQL,
//!   either way), checked by reading both back;
//! - [`importing`]: a recording stored as the newest version of its
//!   session, and what became of each input;
//! - [`history`]: every session's history searched and given back (the
//!   search index kept up to the log);
//! - [`hooks`]: what the agents' hooks hand ctxlog, and the capture it
//!   makes of their session at that moment;
//! - [`sessions`]: the session list, one [`sessions::SessionRow`] per
//!   session;
//! - [`views`]: a session's audit trail and its window at a step;
//! - [`pages`]: the HTML report, the Markdown transcript and OpenCode's
//!   export of sessions, redacted when asked;
//! - [`simulation`]: a stored session run again under another policy, and
//!   kept;
//! - [`dates`]: times in the user's zone, and the dates a command line
//!   accepts;
//! - [`titles`]: what a session is called in a list (the agent's title,
//!   else its first prompt);
//! - [`usage`]: tokens, steps and cost summed by day, project, model, …,
//!   priced by [`pricing`] where the recording has no cost.
//!
//! - [`logs`]: which log a store's name means (a sled directory or a
//!   PostgreSQL URL) and [`logs::AnyLog`], any of them opened.
//!
//! Everything else works over any [`ctxlog_store::EventLog`].
//!
//! Files:
//! - `search_index.rs`: Which index a store has (`Index`: tantivy's in
//!   `search/` of a sled store, or a private directory for another user's
//!   store; PostgreSQL's beside a PostgreSQL log), bringing it up to the log
//!   (`bring_up_to_date`: a search waits `CATCH_UP_WAIT` for another process,
//!   then searches what is indexed), which sessions it takes in
//!   (`is_indexed`), `index_health` (`verify`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod catalog;
pub mod compaction;
pub mod copying;
pub mod dates;
pub mod history;
pub mod hooks;
pub mod importing;
pub mod inputs;
pub mod logs;
pub mod pages;
pub mod pricing;
pub mod search_index;
pub mod sessions;
pub mod simulation;
pub mod titles;
pub mod usage;
pub mod views;
