//! One session as the index sees it when a hit is shown: its marks, its
//! compactions, and each message's place, role and status; and the body of
//! a part read back from the log.

use crate::error::SearchError;
use crate::index::SearchIndex;
use crate::marks::decode;
use crate::project::{searchable_text, MessageFlavor};
use crate::schema::{Stored, DOC_MARK, DOC_MESSAGE};
use crate::status::{Pivot, SessionMarks, Status};
use ctxlog_core::{body_from_event, MessageId, PartBody, PartId, Seq, SessionId};
use ctxlog_store::EventLog;
use std::collections::BTreeMap;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::Term;

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
    pub fn load(index: &SearchIndex, session: SessionId) -> Result<SessionView, SearchError> {
        let f = index.fields;
        let query = BooleanQuery::new(vec![
            (Occur::Must, term_query(f.session, &session.to_string())),
            (Occur::Must, term_query(f.doc, DOC_MARK)),
            (
                Occur::Must,
                Box::new(BooleanQuery::new(vec![
                    (Occur::Should, term_query(f.mark_kind, "started")),
                    (Occur::Should, term_query(f.mark_kind, "pivot")),
                ])),
            ),
        ]);
        let marks = SessionMarks::new(marks_matching(index, &query)?);
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
    pub fn message(
        &mut self,
        index: &SearchIndex,
        message: MessageId,
    ) -> Result<Option<MessageInfo>, SearchError> {
        if let Some(known) = self.messages.get(&message) {
            return Ok(known.clone());
        }
        let found = index
            .docs_with(index.fields.message_key(message), 1)?
            .into_iter()
            .find(|d| d.doc == DOC_MESSAGE)
            .map(|d| message_info(&d));
        self.messages.insert(message, found.clone());
        Ok(found)
    }

    /// The status now of an item of `message` (appended at
    /// `message_seq`), part `part` when a part: the compactions, then the
    /// prunes, restores and withdrawals that name it.
    pub fn status(
        &self,
        index: &SearchIndex,
        message: MessageId,
        message_seq: Seq,
        part: Option<PartId>,
    ) -> Result<Status, SearchError> {
        let f = index.fields;
        let mut naming: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Should, term_query(f.message, &message.to_string()))];
        if let Some(p) = part {
            naming.push((Occur::Should, term_query(f.part, &p.to_string())));
        }
        let query = BooleanQuery::new(vec![
            (Occur::Must, term_query(f.doc, DOC_MARK)),
            (Occur::Must, Box::new(BooleanQuery::new(naming))),
        ]);
        let mine = SessionMarks::new(marks_matching(index, &query)?);
        Ok(
            match self.marks.status(&self.pivots, message, message_seq, None) {
                compacted @ Status::Compacted { .. } => compacted,
                _ => mine.status(&[], message, message_seq, part),
            },
        )
    }
}

/// The marks `query` matches, with their seqs.
fn marks_matching(
    index: &SearchIndex,
    query: &dyn Query,
) -> Result<Vec<(Seq, crate::project::Mark)>, SearchError> {
    let mut marks = Vec::new();
    for d in index.all_matching(query)? {
        let mark = d
            .mark
            .as_deref()
            .and_then(decode)
            .ok_or_else(|| stale(&d, "a mark"))?;
        marks.push((d.seq, mark));
    }
    Ok(marks)
}

/// The view of `session` in `views`, loaded the first time.
pub(crate) fn view_of<'v>(
    views: &'v mut BTreeMap<SessionId, SessionView>,
    index: &SearchIndex,
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

/// A query for the documents with `text` in `field`.
pub(crate) fn term_query(field: tantivy::schema::Field, text: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, text),
        IndexRecordOption::Basic,
    ))
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
