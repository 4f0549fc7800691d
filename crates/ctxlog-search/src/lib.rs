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
//! The embedded store's index is tantivy's, on disk in the store's
//! directory ([`SearchIndex`]); the text is indexed, never stored again: a
//! snippet and a recall are read from the log.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod catch_up;
mod error;
mod index;
mod marks;
pub mod project;
pub mod query;
mod recall;
mod schema;
mod search;
mod session_view;
mod snippet;
pub mod status;

pub use catch_up::{catch_up, CaughtUp, Keep, COMMIT_EVERY};
pub use error::SearchError;
pub use index::{bytes_under, Remade, SearchIndex, Watermarks};
pub use recall::{
    compactions, recall, replaced, Recalled, RecalledMessage, RecalledPart, Replaced, Which,
    MAX_NAMED,
};
pub use schema::SCHEMA_VERSION;
pub use search::{search, Found, Hit, SearchRequest, MAX_LIMIT, MAX_SKIP};
pub use session_view::MessageInfo;
pub use snippet::SNIPPET_CHARS;
pub use status::{Pivot, Status};
