//! Giving one item back whole: a part or a message by ctxlog's id or the
//! agent's own (a tool call id, a message id), and everything one
//! compaction replaced, with the summary that replaced it. The index says
//! where; the content is read from the log, as it was recorded.

use crate::error::SearchError;
use crate::lookup::{Lookup, Stored, DOC_MESSAGE, DOC_PART};
use crate::session_view::{
    author_of, body_at, message_info, parse_id, stale, view_of, SessionView,
};
use crate::status::{Pivot, Status};
use ctxlog_core::{MessageId, PartBody, PartId, Seq, SessionId};
use ctxlog_store::EventLog;
use serde::Serialize;
use std::collections::BTreeMap;

/// The most items one id may name (a tool call id is the provider's, and
/// two recordings may share it).
pub const MAX_NAMED: usize = 16;

/// A part, whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecalledPart {
    /// The session.
    pub session: SessionId,
    /// The seq of the event holding it as it is now.
    pub seq: Seq,
    /// When that event was recorded, ms.
    pub time: u64,
    /// The part.
    pub part: PartId,
    /// Its message.
    pub message: MessageId,
    /// `user`, `assistant` or `summary`.
    pub author: String,
    /// The tool's name, for a tool part.
    pub tool: Option<String>,
    /// The provider's call id, for a tool part.
    pub call_id: Option<String>,
    /// What became of it.
    pub status: Status,
    /// Its content, as recorded.
    pub body: PartBody,
}

/// A message, whole: its parts with text, in log order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecalledMessage {
    /// The session.
    pub session: SessionId,
    /// The seq it was appended at.
    pub seq: Seq,
    /// The message.
    pub message: MessageId,
    /// `user`, `assistant` or `summary`.
    pub author: String,
    /// The agent's own id for it.
    pub source_id: Option<String>,
    /// What became of it.
    pub status: Status,
    /// Its parts with text.
    pub parts: Vec<RecalledPart>,
}

/// What an id names.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "item", rename_all = "snake_case")]
pub enum Recalled {
    /// A part.
    Part(Box<RecalledPart>),
    /// A message.
    Message(RecalledMessage),
}

/// What one compaction replaced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replaced {
    /// The session.
    pub session: SessionId,
    /// The compaction: where its summary completed, and where the window
    /// starts since.
    pub pivot: Pivot,
    /// Which compaction of the session it is, from 1.
    pub number: usize,
    /// The messages it took out of the window, in order.
    pub messages: Vec<RecalledMessage>,
    /// The summary that replaced them.
    pub summary: Option<RecalledMessage>,
}

/// Which compaction of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// The one whose events include this seq (its marker, its start, its
    /// summary's completion: any seq a hit or an audit shows for it).
    At(Seq),
    /// The n-th from the last (1: the last).
    FromLast(usize),
}

/// The items `id` names (newest first), in `sessions` when given.
pub fn recall<I: Lookup + ?Sized, L: EventLog + ?Sized>(
    index: &I,
    log: &L,
    id: &str,
    sessions: Option<&[SessionId]>,
) -> Result<Vec<Recalled>, SearchError> {
    // Every item with the id (ids are few per item), newest first.
    let mut docs = index.named(id.trim(), sessions)?;
    docs.sort_by(|a, b| b.time.cmp(&a.time).then(b.seq.cmp(&a.seq)));
    docs.truncate(MAX_NAMED);
    let mut views = BTreeMap::new();
    let mut out = Vec::new();
    for d in &docs {
        let session = SessionId(parse_id(&d.session).ok_or_else(|| stale(d, "a session"))?);
        let view = view_of(&mut views, index, session)?;
        out.push(match d.doc.as_str() {
            DOC_PART => Recalled::Part(Box::new(part_of(index, log, view, session, d)?)),
            DOC_MESSAGE => Recalled::Message(message_of(index, log, view, session, d)?),
            _ => continue,
        });
    }
    if out.is_empty() {
        return Err(SearchError::NotFound(id.to_owned()));
    }
    Ok(out)
}

/// The completed compactions of `session`, in order.
pub fn compactions<I: Lookup + ?Sized>(
    index: &I,
    session: SessionId,
) -> Result<Vec<Pivot>, SearchError> {
    Ok(SessionView::load(index, session)?.pivots)
}

/// What compaction `which` of `session` replaced; `None` when the session
/// has no such compaction.
pub fn replaced<I: Lookup + ?Sized, L: EventLog + ?Sized>(
    index: &I,
    log: &L,
    session: SessionId,
    which: Which,
) -> Result<Option<Replaced>, SearchError> {
    let mut view = SessionView::load(index, session)?;
    let pivots = view.pivots.clone();
    let mut marker_seqs = Vec::new();
    for p in &pivots {
        marker_seqs.push(view.message(index, p.job)?.map_or(p.at, |m| m.seq));
    }
    let chosen = match which {
        Which::FromLast(n) => pivots.len().checked_sub(n.max(1)),
        Which::At(seq) => (0..pivots.len()).find(|&i| marker_seqs[i] <= seq && seq <= pivots[i].at),
    };
    let Some(i) = chosen else { return Ok(None) };
    let pivot = pivots[i];
    let unknown_start = |p: &Pivot| SearchError::Stale {
        session: session.to_string(),
        seq: p.at,
        what: format!("the message compaction {} starts the window at", i + 1),
    };
    let from = match i {
        0 => 0,
        _ => pivots[i - 1]
            .start_seq
            .ok_or_else(|| unknown_start(&pivots[i - 1]))?,
    };
    let to = pivot.start_seq.ok_or_else(|| unknown_start(&pivot))?;
    let mut messages = Vec::new();
    for d in index.messages_between(session, from, to)? {
        messages.push(message_of(index, log, &mut view, session, &d)?);
    }
    let summary = match pivot.summary {
        Some(s) => index
            .message(s)?
            .map(|d| message_of(index, log, &mut view, session, &d))
            .transpose()?,
        None => None,
    };
    Ok(Some(Replaced {
        session,
        pivot,
        number: i + 1,
        messages,
        summary,
    }))
}

/// A part document, whole.
fn part_of<I: Lookup + ?Sized, L: EventLog + ?Sized>(
    index: &I,
    log: &L,
    view: &mut SessionView,
    session: SessionId,
    d: &Stored,
) -> Result<RecalledPart, SearchError> {
    let part = PartId(
        d.part
            .as_deref()
            .and_then(parse_id)
            .ok_or_else(|| stale(d, "a part"))?,
    );
    let message = MessageId(
        d.message
            .as_deref()
            .and_then(parse_id)
            .ok_or_else(|| stale(d, "a part's message"))?,
    );
    let info = view.message(index, message)?;
    let message_seq = info.as_ref().map_or(d.seq, |i| i.seq);
    Ok(RecalledPart {
        session,
        seq: d.seq,
        time: d.time,
        part,
        message,
        author: author_of(info.as_ref()),
        tool: d.tool.clone(),
        call_id: d.call.clone(),
        status: view.status(index, message, message_seq, Some(part))?,
        body: body_at(log, session, d.seq, part)?,
    })
}

/// A message document, whole, with its parts.
fn message_of<I: Lookup + ?Sized, L: EventLog + ?Sized>(
    index: &I,
    log: &L,
    view: &mut SessionView,
    session: SessionId,
    d: &Stored,
) -> Result<RecalledMessage, SearchError> {
    let message = MessageId(
        d.message
            .as_deref()
            .and_then(parse_id)
            .ok_or_else(|| stale(d, "a message"))?,
    );
    let part_docs = index.parts_of(message)?;
    let mut parts = Vec::new();
    for p in &part_docs {
        parts.push(part_of(index, log, view, session, p)?);
    }
    let info = message_info(d);
    Ok(RecalledMessage {
        session,
        seq: d.seq,
        message,
        author: info.author(),
        source_id: info.source_id.clone(),
        status: view.status(index, message, d.seq, None)?,
        parts,
    })
}
