//! The search index of a PostgreSQL log, in PostgreSQL's own full-text
//! search: the same projection as the embedded store's tantivy index
//! (`ctxlog_search::project`), in tables beside the events (`schema.rs`,
//! migration 3), so every host that opens the log sees the same results.
//!
//! - Items (a message; a part with text) are rows of
//!   `ctxlog_search_items`; a part's words are `tsvector`s of
//!   `ctxlog_search_words` (GIN), split by ctxlog's tokenizer ([`words`]);
//!   marks are rows of `ctxlog_search_marks`, found by the ids they name.
//! - What was indexed of each session is `ctxlog_search_heads`, written in
//!   the same transaction as what it describes: a catch-up killed midway
//!   leaves its last commit, and the next goes on from it.
//! - One catch-up at a time per schema: a session-level advisory lock,
//!   waited for up to the caller's limit.
//!
//! Files:
//! - `batch.rs`: Rows waiting to be written, sent a few thousand at a time in
//!   one statement per table (`unnest` of column arrays) instead of a round
//!   trip each.
//! - `read.rs`: Reading the index (`Lookup` on PostgreSQL).
//! - `write.rs`: Writing the index (`Engine` on PostgreSQL).

mod batch;
mod read;
mod words;
mod write;

use crate::error::backend;
use crate::inner::Inner;
use ctxlog_search::SearchError;
use ctxlog_store::ReadError;
use std::sync::Arc;

pub use write::PgWriter;

/// The search index of a PostgreSQL log.
#[derive(Clone)]
pub struct PgSearch {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for PgSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgSearch({})", self.inner.pool.target())
    }
}

impl PgSearch {
    pub(crate) fn new(inner: Arc<Inner>) -> PgSearch {
        PgSearch { inner }
    }

    /// The error of `what`, failed on this log's server.
    fn failed<'a>(&'a self, what: &'a str) -> impl Fn(postgres::Error) -> SearchError + 'a {
        move |e| {
            SearchError::Read(ReadError::Backend(backend(
                self.inner.pool.target(),
                what,
                e,
            )))
        }
    }

    /// Removes everything indexed, so the next catch-up indexes the whole
    /// log again (`ctxlog index --rebuild`): as the writer, waiting up to
    /// `wait` for one at work (whose commits would otherwise describe
    /// rows removed under it).
    pub fn clear(&self, wait: std::time::Duration) -> Result<(), SearchError> {
        let mut writer = ctxlog_search::Engine::writer(self, wait)?;
        writer.clear_all()?;
        ctxlog_search::Writer::finish(writer)
    }

    /// The bytes the index's tables and their indexes take.
    pub fn disk_bytes(&self) -> Result<u64, SearchError> {
        let total: i64 = self.inner.pool.with(|c| {
            c.query_one(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE c.relkind = 'r' AND n.nspname = current_schema()
                   AND c.relname LIKE 'ctxlog\\_search\\_%'",
                &[],
            )
            .map(|r| r.get(0))
            .map_err(self.failed("cannot measure the search index"))
        })?;
        Ok(u64::try_from(total).unwrap_or(0))
    }
}

/// An item's columns, in the order [`read::stored`] reads them.
const ITEM_COLUMNS: &str = "doc, session::text, seq, time, message::text, part::text, role, \
                            flavor, kind, tool, call, source";

/// A seq, time or count as a `bigint` (saturating: none reaches it).
fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
