//! ctxlog-search: every session's history, searchable, with what pruning
//! and compaction did to each hit.
//!
//! The index is a projection of the log, like the window: derived, made
//! again from the log at any time, never the truth. [`project`] says what
//! each event puts in it (pure); [`catch_up`] brings it up to a log,
//! committing what it indexed of each session with the index (its
//! [`Watermarks`]), so a kill costs at most the events since the last
//! commit and the next catch-up goes on from there; [`search`] runs a
//! query ([`query`]: words, phrases, prefixes, exclusions, `OR`) and
//! [`recall`] gives an item back whole. What became of an item (still in
//! the window, pruned at seq N, compacted away at seq N, withdrawn) is
//! worked out when it is shown, from its session's marks ([`status`]), so
//! it is always the status now.
//!
//! An index is any engine that answers [`Lookup`] and [`Engine`]: the
//! embedded store's is tantivy's, on disk in the store's directory
//! ([`SearchIndex`]); a PostgreSQL log's is PostgreSQL's own full-text
//! search (`ctxlog-postgres`). Both split text the same way ([`tokens`]);
//! neither stores it again: a snippet and a recall are read from the log.
//!
//! Files:
//! - `embedded/`: The embedded store's index, tantivy's, on disk.
//! - `error.rs`: What can go wrong in search and recall.
//! - `lookup.rs`: What search and recall ask of an index, whichever engine
//!   keeps it (tantivy in a sled store's directory, PostgreSQL's full-text
//!   search beside a PostgreSQL log); and what catching up asks of one.
//! - `marks.rs`: A mark as the index stores it.
//! - `session_view.rs`: One session as the index sees it when a hit is shown.
//! - `snippet.rs`: The passage a hit shows.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod catch_up;
mod embedded;
mod error;
pub mod lookup;
pub mod marks;
pub mod project;
pub mod query;
mod recall;
mod search;
mod session_view;
mod snippet;
pub mod status;
pub mod tokens;

pub use catch_up::{catch_up, CaughtUp, Keep, COMMIT_EVERY};
pub use embedded::schema::SCHEMA_VERSION;
pub use embedded::{bytes_under, EmbeddedWriter, Remade, SearchIndex};
pub use error::SearchError;
pub use lookup::{Engine, Lookup, Stored, Watermarks, Writer};
pub use query::SearchRequest;
pub use recall::{
    compactions, recall, replaced, Recalled, RecalledMessage, RecalledPart, Replaced, Which,
    MAX_NAMED,
};
pub use search::{search, Found, Hit, MAX_LIMIT, MAX_SKIP};
pub use session_view::MessageInfo;
pub use snippet::{floor as char_floor, SNIPPET_CHARS};
pub use status::{Pivot, Status};
