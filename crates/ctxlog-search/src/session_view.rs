//! One session as the index sees it when a hit is shown: its marks, its
//! compactions, and each message's place, role and status; and the body of
//! a part read back from the log.

use crate::error::SearchError;
use crate::lookup::{Lookup, Stored};
use crate::project::{searchable_text, MessageFlavor};
use crate::status::{Pivot, SessionMarks, Status};
use ctxlog_core::{body_from_event, MessageId, PartBody, PartId, Seq, SessionId};
use ctxlog_store::EventLog;
use std::collections::BTreeMap;

/// A message, as the index has it.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageInfo {
    /// The seq it was appended at.
    pub seq: Seq,
    /// `user` or `assistant`.
    pub role: String,
    /// What it is beyond its role.
    pub flavor: MessageFlavor,
    /// The agent's own id for it.
    pub source_id: Option<String>,
}

impl MessageInfo {
    /// Who wrote an item of this message: `summary` for a compaction's
    /// summary, else its role.
    pub fn author(&self) -> String {
        match self.flavor {
            MessageFlavor::Summary => "summary".to_owned(),
            _ => self.role.clone(),
        }
    }
}

/// Who wrote an item of the message `info` describes (`unknown` when the
/// index has no such message).
pub(crate) fn author_of(info: Option<&MessageInfo>) -> String {
    info.map_or_else(|| "unknown".to_owned(), MessageInfo::author)
}

/// One session's marks, its compactions, and the messages looked up so far.
pub(crate) struct SessionView {
    pub marks: SessionMarks,
    pub pivots: Vec<Pivot>,
    messages: BTreeMap<MessageId, Option<MessageInfo>>,
}

impl SessionView {
    /// Loads the compactions of `session` (their start and pivot marks)
    /// and the messages they start the window at.
    pub fn load<I: Lookup + ?Sized>(
        index: &I,
        session: SessionId,
    ) -> Result<SessionView, SearchError> {
        let marks = SessionMarks::new(index.compaction_marks(session)?);
        let mut view = SessionView {
            marks,
            pivots: Vec::new(),
            messages: BTreeMap::new(),
        };
        let starts = view.marks.pivots(|_| None);
        for p in &starts {
            view.message(index, p.start)?;
        }
        view.pivots = view
            .marks
            .pivots(|m| view.messages.get(&m).cloned().flatten().map(|i| i.seq));
        Ok(view)
    }

    /// What the index has of `message` (looked up once).
    pub fn message<I: Lookup + ?Sized>(
        &mut self,
        index: &I,
        message: MessageId,
    ) -> Result<Option<MessageInfo>, SearchError> {
        if let Some(known) = self.messages.get(&message) {
            return Ok(known.clone());
        }
        let found = index.message(message)?.map(|d| message_info(&d));
        self.messages.insert(message, found.clone());
        Ok(found)
    }

    /// The status now of an item of `message` (appended at
    /// `message_seq`), part `part` when a part: the compactions, then the
    /// prunes, restores and withdrawals that name it.
    pub fn status<I: Lookup + ?Sized>(
        &self,
        index: &I,
        message: MessageId,
        message_seq: Seq,
        part: Option<PartId>,
    ) -> Result<Status, SearchError> {
        let mine = SessionMarks::new(index.marks_naming(message, part)?);
        Ok(
            match self.marks.status(&self.pivots, message, message_seq, None) {
                compacted @ Status::Compacted { .. } => compacted,
                _ => mine.status(&[], message, message_seq, part),
            },
        )
    }
}

/// The view of `session` in `views`, loaded the first time.
pub(crate) fn view_of<'v, I: Lookup + ?Sized>(
    views: &'v mut BTreeMap<SessionId, SessionView>,
    index: &I,
    session: SessionId,
) -> Result<&'v mut SessionView, SearchError> {
    Ok(match views.entry(session) {
        std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::btree_map::Entry::Vacant(e) => {
            e.insert(SessionView::load(index, session)?)
        }
    })
}

/// A message document, read.
pub(crate) fn message_info(d: &Stored) -> MessageInfo {
    MessageInfo {
        seq: d.seq,
        role: d.role.clone().unwrap_or_default(),
        flavor: d.flavor.unwrap_or(MessageFlavor::Plain),
        source_id: d.source.clone(),
    }
}

/// A UUID written in the index.
pub(crate) fn parse_id(s: &str) -> Option<uuid::Uuid> {
    uuid::Uuid::parse_str(s).ok()
}

/// The error of a document that names what does not read.
pub(crate) fn stale(d: &Stored, what: &str) -> SearchError {
    SearchError::Stale {
        session: d.session.clone(),
        seq: d.seq,
        what: what.to_owned(),
    }
}

/// The body of `part` as the event at `seq` of `session` holds it.
pub(crate) fn body_at<L: EventLog + ?Sized>(
    log: &L,
    session: SessionId,
    seq: Seq,
    part: PartId,
) -> Result<PartBody, SearchError> {
    let stale = || SearchError::Stale {
        session: session.to_string(),
        seq,
        what: format!("part {part}"),
    };
    let e = log.read(session, seq)?.next().ok_or_else(stale)??;
    if e.seq != seq {
        return Err(stale());
    }
    body_from_event(&e.event, part).ok_or_else(stale)
}

/// The searchable text of a body (empty when it has none).
pub(crate) fn text_of(body: &PartBody) -> String {
    searchable_text(body).unwrap_or_default()
}
