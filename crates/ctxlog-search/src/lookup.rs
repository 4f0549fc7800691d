//! What search and recall ask of an index, whichever engine keeps it
//! (tantivy in a sled store's directory, PostgreSQL's full-text search
//! beside a PostgreSQL log); and what catching up asks of one. Everything
//! else (statuses, paging, snippets, recalls, watermarks) is decided
//! once, above these traits.

use crate::error::SearchError;
use crate::project::{Mark, MessageFlavor, MessageItem, PartItem};
use crate::query::{Parsed, SearchRequest};
use ctxlog_core::{Envelope, MessageId, PartId, Seq, SessionId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Document kinds.
pub const DOC_MESSAGE: &str = "message";
/// A part with text.
pub const DOC_PART: &str = "part";

/// A message or a part as an index keeps it (its text is not kept: it is
/// read from the log).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stored {
    /// [`DOC_MESSAGE`] or [`DOC_PART`].
    pub doc: String,
    /// The session, as written.
    pub session: String,
    /// The seq of the event that holds it as it is now.
    pub seq: Seq,
    /// When that event was recorded, ms.
    pub time: u64,
    /// The message (a part's, or the message itself).
    pub message: Option<String>,
    /// The part.
    pub part: Option<String>,
    /// A message's role.
    pub role: Option<String>,
    /// A message's flavor.
    pub flavor: Option<MessageFlavor>,
    /// A part's kind.
    pub kind: Option<String>,
    /// A tool part's tool.
    pub tool: Option<String>,
    /// A tool part's call id.
    pub call: Option<String>,
    /// The agent's own id.
    pub source: Option<String>,
}

/// What an index has taken in, per session: the last seq indexed. A
/// session whose first event says it is not to be indexed (a kept
/// simulation) has its head here too, and no documents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watermarks {
    /// The schema the index was written with.
    pub schema: u32,
    /// Session id → last seq indexed.
    pub sessions: BTreeMap<String, Seq>,
    /// Sessions not indexed (kept simulations): what they append later is
    /// not either.
    #[serde(default)]
    pub skipped: BTreeSet<String>,
}

impl Watermarks {
    /// The last seq of `session` indexed (0: none).
    pub fn of(&self, session: SessionId) -> Seq {
        self.sessions
            .get(&session.to_string())
            .copied()
            .unwrap_or(0)
    }
}

/// An index, read.
pub trait Lookup {
    /// The parts `query` matches within the request's sessions and times,
    /// best first, at most `limit`, each with its relevance; equal scores
    /// in an order of the engine's that a larger `limit` keeps (pages are
    /// slices of one ranking).
    fn ranked(
        &self,
        query: &Parsed,
        request: &SearchRequest,
        limit: usize,
    ) -> Result<Vec<(f32, Stored)>, SearchError>;

    /// The compaction marks (started, pivot) of `session`, in log order.
    fn compaction_marks(&self, session: SessionId) -> Result<Vec<(Seq, Mark)>, SearchError>;

    /// The prunes, restores and withdrawals that name `message` or `part`,
    /// in log order.
    fn marks_naming(
        &self,
        message: MessageId,
        part: Option<PartId>,
    ) -> Result<Vec<(Seq, Mark)>, SearchError>;

    /// The message document of `message`.
    fn message(&self, message: MessageId) -> Result<Option<Stored>, SearchError>;

    /// Every message and part document `id` names (ctxlog's id, a tool
    /// call id, the agent's own), in `sessions` when given.
    fn named(&self, id: &str, sessions: Option<&[SessionId]>) -> Result<Vec<Stored>, SearchError>;

    /// The message documents of `session` appended at seqs in `from..to`,
    /// in order.
    fn messages_between(
        &self,
        session: SessionId,
        from: Seq,
        to: Seq,
    ) -> Result<Vec<Stored>, SearchError>;

    /// The part documents of `message`, in order.
    fn parts_of(&self, message: MessageId) -> Result<Vec<Stored>, SearchError>;
}

/// An index, written: what [`crate::catch_up`] asks of an engine.
pub trait Engine: Lookup {
    /// Its writer.
    type Writer<'a>: Writer
    where
        Self: 'a;

    /// What its last commit says was indexed.
    fn watermarks(&self) -> Result<Watermarks, SearchError>;

    /// Its one writer, waiting up to `wait` while another process holds
    /// it ([`SearchError::Busy`] past that).
    fn writer(&self, wait: Duration) -> Result<Self::Writer<'_>, SearchError>;

    /// Sees what other processes committed since.
    fn reload(&self) -> Result<(), SearchError>;
}

/// What is written between two commits. Nothing is seen before
/// [`Writer::commit`], which keeps the watermarks with it, atomically.
pub trait Writer {
    /// Adds a message.
    fn message(&mut self, e: &Envelope, m: &MessageItem) -> Result<(), SearchError>;

    /// Adds a part of `message`, replacing its earlier version when
    /// `replaces`.
    fn part(
        &mut self,
        e: &Envelope,
        p: &PartItem,
        message: MessageId,
        replaces: bool,
    ) -> Result<(), SearchError>;

    /// Adds a mark.
    fn mark(&mut self, e: &Envelope, m: &Mark) -> Result<(), SearchError>;

    /// The message of a part committed before.
    fn message_of(
        &mut self,
        session: SessionId,
        part: PartId,
    ) -> Result<Option<MessageId>, SearchError>;

    /// Removes everything of `session` (the store holds another history
    /// of it now).
    fn forget(&mut self, session: SessionId) -> Result<(), SearchError>;

    /// Makes what was written since the last commit seen, with `marks`.
    fn commit(&mut self, marks: &Watermarks) -> Result<(), SearchError>;

    /// Ends the writing (after a last commit).
    fn finish(self) -> Result<(), SearchError>;
}
