//! Writing the embedded index ([`Engine`] on tantivy): one writer at a
//! time across processes (tantivy's lock), the watermarks in each
//! commit's payload.

use super::SearchIndex;
use crate::error::SearchError;
use crate::lookup::{Engine, Watermarks, Writer, DOC_PART};
use crate::project::{Mark, MessageItem, PartItem};
use ctxlog_core::{Envelope, MessageId, PartId, SessionId};
use std::time::Duration;
use tantivy::IndexWriter;

/// The embedded index's writer.
pub struct EmbeddedWriter<'a> {
    index: &'a SearchIndex,
    writer: IndexWriter,
}

impl Engine for SearchIndex {
    type Writer<'a> = EmbeddedWriter<'a>;

    fn watermarks(&self) -> Result<Watermarks, SearchError> {
        SearchIndex::watermarks(self)
    }

    fn writer(&self, wait: Duration) -> Result<EmbeddedWriter<'_>, SearchError> {
        Ok(EmbeddedWriter {
            index: self,
            writer: self.tantivy_writer(wait)?,
        })
    }

    fn reload(&self) -> Result<(), SearchError> {
        SearchIndex::reload(self)
    }
}

impl EmbeddedWriter<'_> {
    fn add(&mut self, doc: tantivy::TantivyDocument) -> Result<(), SearchError> {
        self.writer
            .add_document(doc)
            .map(|_| ())
            .map_err(SearchError::index(self.index.dir()))
    }
}

impl Writer for EmbeddedWriter<'_> {
    fn message(&mut self, e: &Envelope, m: &MessageItem) -> Result<(), SearchError> {
        let doc = self.index.fields.message_doc(e, m);
        self.add(doc)
    }

    fn part(
        &mut self,
        e: &Envelope,
        p: &PartItem,
        message: MessageId,
        replaces: bool,
    ) -> Result<(), SearchError> {
        let f = self.index.fields;
        if replaces {
            self.writer.delete_term(f.part_key(p.part));
        }
        self.add(f.part_doc(e, p, message))
    }

    fn mark(&mut self, e: &Envelope, m: &Mark) -> Result<(), SearchError> {
        let doc = self.index.fields.mark_doc(e, m);
        self.add(doc)
    }

    fn message_of(
        &mut self,
        _session: SessionId,
        part: PartId,
    ) -> Result<Option<MessageId>, SearchError> {
        let f = self.index.fields;
        Ok(self
            .index
            .docs_with(f.part_key(part), 1)?
            .iter()
            .map(|d| f.read(d))
            .filter(|d| d.doc == DOC_PART)
            .find_map(|d| d.message?.parse::<uuid::Uuid>().ok().map(MessageId)))
    }

    fn forget(&mut self, session: SessionId) -> Result<(), SearchError> {
        self.writer
            .delete_term(self.index.fields.session_term(session));
        Ok(())
    }

    fn commit(&mut self, marks: &Watermarks) -> Result<(), SearchError> {
        self.index.commit(&mut self.writer, marks)
    }

    fn finish(self) -> Result<(), SearchError> {
        let dir = self.index.dir();
        super::guarded(dir, || {
            self.writer
                .wait_merging_threads()
                .map_err(SearchError::index(dir))
        })?;
        self.index.keep_private()
    }
}
