//! Reading the embedded index ([`Lookup`] on tantivy).

use super::query::{build, term_query};
use super::schema::DOC_MARK;
use super::SearchIndex;
use crate::error::SearchError;
use crate::lookup::{Lookup, Stored, DOC_MESSAGE, DOC_PART};
use crate::marks::decode;
use crate::project::Mark;
use crate::query::{Parsed, SearchRequest};
use ctxlog_core::{MessageId, PartId, Seq, SessionId};
use std::ops::Bound;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, RangeQuery};
use tantivy::Term;

impl Lookup for SearchIndex {
    fn ranked(
        &self,
        query: &Parsed,
        request: &SearchRequest,
        limit: usize,
    ) -> Result<Vec<(f32, Stored)>, SearchError> {
        let query = build(&self.fields, query, request)?;
        let top = TopDocs::with_limit(limit.max(1)).order_by_score();
        let mut scores = Vec::new();
        let docs = self.search_and_read(&query, &top, |found| {
            let (s, addresses): (Vec<f32>, Vec<_>) = found.into_iter().unzip();
            scores = s;
            addresses
        })?;
        Ok(scores
            .into_iter()
            .zip(docs.iter().map(|d| self.fields.read(d)))
            .collect())
    }

    fn compaction_marks(&self, session: SessionId) -> Result<Vec<(Seq, Mark)>, SearchError> {
        let f = self.fields;
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
        self.marks_matching(&query)
    }

    fn marks_naming(
        &self,
        message: MessageId,
        part: Option<PartId>,
    ) -> Result<Vec<(Seq, Mark)>, SearchError> {
        let f = self.fields;
        let mut naming: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Should, term_query(f.message, &message.to_string()))];
        if let Some(p) = part {
            naming.push((Occur::Should, term_query(f.part, &p.to_string())));
        }
        let query = BooleanQuery::new(vec![
            (Occur::Must, term_query(f.doc, DOC_MARK)),
            (Occur::Must, Box::new(BooleanQuery::new(naming))),
        ]);
        self.marks_matching(&query)
    }

    fn message(&self, message: MessageId) -> Result<Option<Stored>, SearchError> {
        Ok(self
            .docs_with(self.fields.message_key(message), 1)?
            .iter()
            .map(|d| self.fields.read(d))
            .find(|d| d.doc == DOC_MESSAGE))
    }

    fn named(&self, id: &str, sessions: Option<&[SessionId]>) -> Result<Vec<Stored>, SearchError> {
        let f = self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, term_query(f.ids, id))];
        if let Some(ss) = sessions {
            let any = ss
                .iter()
                .map(|s| (Occur::Should, term_query(f.session, &s.to_string())))
                .collect();
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(any))));
        }
        self.stored_matching(&BooleanQuery::new(clauses))
    }

    fn messages_between(
        &self,
        session: SessionId,
        from: Seq,
        to: Seq,
    ) -> Result<Vec<Stored>, SearchError> {
        let f = self.fields;
        let range = RangeQuery::new(
            Bound::Included(Term::from_field_u64(f.seq, from)),
            Bound::Excluded(Term::from_field_u64(f.seq, to)),
        );
        let query = BooleanQuery::new(vec![
            (Occur::Must, term_query(f.session, &session.to_string())),
            (Occur::Must, term_query(f.doc, DOC_MESSAGE)),
            (Occur::Must, Box::new(range) as Box<dyn Query>),
        ]);
        let mut docs = self.stored_matching(&query)?;
        docs.sort_by_key(|d| d.seq);
        Ok(docs)
    }

    fn parts_of(&self, message: MessageId) -> Result<Vec<Stored>, SearchError> {
        let f = self.fields;
        let query = BooleanQuery::new(vec![
            (Occur::Must, term_query(f.message, &message.to_string())),
            (Occur::Must, term_query(f.doc, DOC_PART)),
        ]);
        let mut docs = self.stored_matching(&query)?;
        docs.sort_by_key(|d| d.seq);
        Ok(docs)
    }
}

impl SearchIndex {
    /// Every message and part document `query` matches.
    fn stored_matching(&self, query: &dyn Query) -> Result<Vec<Stored>, SearchError> {
        Ok(self
            .all_matching(query)?
            .iter()
            .map(|d| self.fields.read(d))
            .collect())
    }

    /// The marks `query` matches, with their seqs, in log order.
    fn marks_matching(&self, query: &dyn Query) -> Result<Vec<(Seq, Mark)>, SearchError> {
        let mut marks = Vec::new();
        for d in self.all_matching(query)? {
            let stored = self.fields.read(&d);
            let mark = self
                .fields
                .mark_text(&d)
                .as_deref()
                .and_then(decode)
                .ok_or_else(|| SearchError::Stale {
                    session: stored.session.clone(),
                    seq: stored.seq,
                    what: "a mark".to_owned(),
                })?;
            marks.push((stored.seq, mark));
        }
        marks.sort_by_key(|(seq, _)| *seq);
        Ok(marks)
    }
}
