//! A read query ([`crate::query::Parsed`]) as tantivy runs it, limited to
//! a request's sessions and times.

use super::schema::Fields;
use crate::error::SearchError;
use crate::query::{Clause, Parsed, SearchRequest};
use std::ops::Bound;
use tantivy::query::{
    BooleanQuery, Occur, PhrasePrefixQuery, PhraseQuery, Query, RangeQuery, RegexQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;

/// tantivy's query for `parsed` within `request`'s sessions and times.
/// Only parts have text, and every query needs a word of it: no clause
/// for the kind (one over every part would be intersected with every
/// query).
pub(crate) fn build(
    f: &Fields,
    parsed: &Parsed,
    request: &SearchRequest,
) -> Result<BooleanQuery, SearchError> {
    let mut alternatives: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for group in &parsed.groups {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for c in group {
            let occur = if c.not { Occur::MustNot } else { Occur::Must };
            clauses.push((occur, clause_query(f.text, c)?));
        }
        alternatives.push((Occur::Should, Box::new(BooleanQuery::new(clauses))));
    }
    let mut clauses: Vec<(Occur, Box<dyn Query>)> =
        vec![(Occur::Must, Box::new(BooleanQuery::new(alternatives)))];
    if let Some(sessions) = &request.sessions {
        let any: Vec<(Occur, Box<dyn Query>)> = sessions
            .iter()
            .map(|s| (Occur::Should, term_query(f.session, &s.to_string())))
            .collect();
        clauses.push((Occur::Must, Box::new(BooleanQuery::new(any))));
    }
    if request.since.is_some() || request.until.is_some() {
        let lower = request.since.map_or(Bound::Unbounded, |t| {
            Bound::Included(Term::from_field_u64(f.time, t))
        });
        let upper = request.until.map_or(Bound::Unbounded, |t| {
            Bound::Excluded(Term::from_field_u64(f.time, t))
        });
        clauses.push((Occur::Must, Box::new(RangeQuery::new(lower, upper))));
    }
    Ok(BooleanQuery::new(clauses))
}

/// The query of one word or phrase.
fn clause_query(field: Field, c: &Clause) -> Result<Box<dyn Query>, SearchError> {
    let term = |t: &str| Term::from_field_text(field, t);
    Ok(match (c.words.as_slice(), c.prefix) {
        ([one], false) => Box::new(TermQuery::new(term(one), IndexRecordOption::WithFreqs)),
        // Every term with the prefix matches (an automaton over the term
        // dictionary).
        ([one], true) => {
            let pattern: String = one
                .chars()
                .flat_map(|c| {
                    let escape = !c.is_alphanumeric();
                    escape.then_some('\\').into_iter().chain(std::iter::once(c))
                })
                .chain(".*".chars())
                .collect();
            Box::new(
                RegexQuery::from_pattern(&pattern, field).map_err(|e| SearchError::Query {
                    query: format!("{one}*"),
                    why: e.to_string(),
                })?,
            )
        }
        (many, false) => Box::new(PhraseQuery::new(many.iter().map(|t| term(t)).collect())),
        (many, true) => Box::new(PhrasePrefixQuery::new(
            many.iter().map(|t| term(t)).collect(),
        )),
    })
}

/// A query for the documents with `text` in `field`.
pub(crate) fn term_query(field: Field, text: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, text),
        IndexRecordOption::Basic,
    ))
}
