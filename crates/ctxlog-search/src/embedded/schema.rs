//! The index's schema: one document per message, per part with text and per
//! lifecycle mark; and how a document is written from a [`Change`] and read
//! back. The text is indexed with positions (phrases) and never stored: a
//! snippet is cut from the log, which keeps it.

use crate::lookup::{Stored, DOC_MESSAGE, DOC_PART};
use crate::project::{Mark, MessageFlavor, MessageItem, PartItem};
use ctxlog_core::{Envelope, MessageId, PartId, SessionId};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, STORED, STRING,
};
use tantivy::{TantivyDocument, Term};

/// The schema's version, kept in every commit: an index of another version
/// is rebuilt from the log.
pub const SCHEMA_VERSION: u32 = 3;

/// The kind (field `doc`) of a mark's document; a message's and a part's
/// are [`DOC_MESSAGE`] and [`DOC_PART`].
pub(crate) const DOC_MARK: &str = "mark";

/// The schema's fields.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    /// `message`, `part` or `mark`.
    pub doc: Field,
    pub session: Field,
    pub seq: Field,
    pub time: Field,
    pub message: Field,
    pub part: Field,
    pub role: Field,
    pub flavor: Field,
    pub kind: Field,
    pub tool: Field,
    pub call: Field,
    pub source: Field,
    /// Every id an item is recalled by: ctxlog's and the agent's.
    pub ids: Field,
    /// A mark, as text ([`crate::marks`]).
    pub mark: Field,
    /// A mark's kind: `pruned`, `restored`, `withdrawn`, `started`,
    /// `pivot` (a session's compactions are read by it).
    pub mark_kind: Field,
    /// The searched text.
    pub text: Field,
}

impl Fields {
    /// The schema and its fields.
    pub fn build() -> (Schema, Fields) {
        let mut b = Schema::builder();
        let text = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("default")
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        let fields = Fields {
            doc: b.add_text_field("doc", STRING | STORED),
            session: b.add_text_field("session", STRING | STORED),
            // Ranges over them read the fast fields: no term per value.
            seq: b.add_u64_field("seq", STORED | FAST),
            time: b.add_u64_field("time", STORED | FAST),
            message: b.add_text_field("message", STRING | STORED),
            part: b.add_text_field("part", STRING | STORED),
            role: b.add_text_field("role", STORED),
            flavor: b.add_text_field("flavor", STORED),
            kind: b.add_text_field("kind", STORED),
            tool: b.add_text_field("tool", STORED),
            call: b.add_text_field("call", STORED),
            source: b.add_text_field("source", STORED),
            ids: b.add_text_field("ids", STRING),
            mark: b.add_text_field("mark", STORED),
            mark_kind: b.add_text_field("mark_kind", STRING),
            text: b.add_text_field("text", text),
        };
        (b.build(), fields)
    }

    /// The term every document of `session` has.
    pub fn session_term(&self, session: SessionId) -> Term {
        Term::from_field_text(self.session, &session.to_string())
    }

    /// The term of the document of a message (its id is among its ids,
    /// and no other document's).
    pub fn message_key(&self, message: MessageId) -> Term {
        Term::from_field_text(self.ids, &message.to_string())
    }

    /// The term of the document of a part (what replaces it).
    pub fn part_key(&self, part: PartId) -> Term {
        Term::from_field_text(self.ids, &part.to_string())
    }

    /// A document's common fields.
    fn base(&self, doc: &str, e: &Envelope) -> TantivyDocument {
        let mut d = TantivyDocument::new();
        d.add_text(self.doc, doc);
        d.add_text(self.session, e.session.to_string());
        d.add_u64(self.seq, e.seq);
        d.add_u64(self.time, e.recorded_at);
        d
    }

    /// The document of a message.
    pub fn message_doc(&self, e: &Envelope, m: &MessageItem) -> TantivyDocument {
        let mut d = self.base(DOC_MESSAGE, e);
        d.add_text(self.message, m.message.to_string());
        d.add_text(self.ids, m.message.to_string());
        d.add_text(self.role, m.role.as_str());
        d.add_text(self.flavor, m.flavor.as_str());
        if let Some(s) = &m.source_id {
            d.add_text(self.source, s);
            d.add_text(self.ids, s);
        }
        d
    }

    /// The document of a part of message `message`.
    pub fn part_doc(&self, e: &Envelope, p: &PartItem, message: MessageId) -> TantivyDocument {
        let mut d = self.base(DOC_PART, e);
        d.add_text(self.part, p.part.to_string());
        d.add_text(self.ids, p.part.to_string());
        d.add_text(self.message, message.to_string());
        d.add_text(self.kind, p.kind);
        if let Some(t) = &p.tool {
            d.add_text(self.tool, t);
        }
        if let Some(c) = &p.call_id {
            d.add_text(self.call, c);
            d.add_text(self.ids, c);
        }
        if let Some(s) = &p.source_id {
            d.add_text(self.source, s);
            d.add_text(self.ids, s);
        }
        d.add_text(self.text, &p.text);
        d
    }

    /// The document of a mark.
    /// A prune, restore or withdrawal is found by the parts or messages it
    /// names, a compaction's marks by their kind: a hit's status reads only
    /// the marks that concern it.
    pub fn mark_doc(&self, e: &Envelope, m: &Mark) -> TantivyDocument {
        let mut d = self.base(DOC_MARK, e);
        d.add_text(self.mark_kind, m.kind());
        let field = match m {
            Mark::Withdrawn(_) => self.message,
            _ => self.part,
        };
        for id in m.names() {
            d.add_text(field, id.to_string());
        }
        d.add_text(self.mark, crate::marks::encode(m));
        d
    }
}

impl Fields {
    /// Reads a stored document.
    pub fn read(&self, d: &TantivyDocument) -> Stored {
        let text = |f: Field| d.get_first(f).and_then(|v| v.as_str()).map(str::to_owned);
        let num = |f: Field| d.get_first(f).and_then(|v| v.as_u64()).unwrap_or(0);
        Stored {
            doc: text(self.doc).unwrap_or_default(),
            session: text(self.session).unwrap_or_default(),
            seq: num(self.seq),
            time: num(self.time),
            message: text(self.message),
            part: text(self.part),
            role: text(self.role),
            flavor: text(self.flavor).map(|f| MessageFlavor::parse(&f)),
            kind: text(self.kind),
            tool: text(self.tool),
            call: text(self.call),
            source: text(self.source),
        }
    }

    /// The mark a mark's document holds, as text.
    pub fn mark_text(&self, d: &TantivyDocument) -> Option<String> {
        d.get_first(self.mark)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    }
}
