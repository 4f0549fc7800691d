//! What people type, as a search engine they know reads it: words (all
//! must be there), `"a phrase"`, `prefix*`, `-excluded`, and `OR` between
//! alternatives. Words are split and lowercased as the text was when
//! indexed, so `ctxlog-marker-7f3a` is the phrase of its three words.
//! Nothing else is special: field names, brackets or regexes in a query
//! are words, never a way to reach other fields or other sessions.

use crate::error::SearchError;
use std::collections::BTreeMap;
use tantivy::query::{
    BooleanQuery, Occur, PhrasePrefixQuery, PhraseQuery, Query, RegexQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Searcher, Term};

/// The most terms of a prefix a snippet highlights (all of them match).
pub const PREFIX_TERMS: usize = 128;

/// A parsed query: what tantivy runs, and the words a snippet highlights.
pub(crate) struct Parsed {
    pub query: Box<dyn Query>,
    pub highlight: BTreeMap<String, f32>,
    /// The phrases looked for (words of more than one token), as tokens.
    pub phrases: Vec<Vec<String>>,
}

/// One piece of a query, as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Word {
        text: String,
        prefix: bool,
        not: bool,
    },
    Phrase {
        text: String,
        prefix: bool,
        not: bool,
    },
    Or,
}

/// Splits `query` into its pieces.
fn pieces(query: &str) -> Result<Vec<Piece>, String> {
    let mut out = Vec::new();
    let mut chars = query.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let not = c == '-';
        if not {
            chars.next();
        }
        if chars.peek() == Some(&'"') {
            chars.next();
            let mut text = String::new();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some(c) => text.push(c),
                    None => return Err("a quote is not closed".into()),
                }
            }
            let prefix = chars.peek() == Some(&'*');
            if prefix {
                chars.next();
            }
            out.push(Piece::Phrase { text, prefix, not });
            continue;
        }
        let mut text = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || c == '"' {
                break;
            }
            text.push(c);
            chars.next();
        }
        if text == "OR" && !not {
            out.push(Piece::Or);
            continue;
        }
        let prefix = text.ends_with('*');
        let text = text.trim_end_matches('*').to_owned();
        if !text.is_empty() {
            out.push(Piece::Word { text, prefix, not });
        }
    }
    Ok(out)
}

/// Parses `query` over `field`, whose text `analyzer` split when indexed.
pub(crate) fn parse(
    query: &str,
    searcher: &Searcher,
    field: Field,
    analyzer: &TextAnalyzer,
) -> Result<Parsed, SearchError> {
    let bad = |why: &str| SearchError::Query {
        query: query.to_owned(),
        why: why.to_owned(),
    };
    let pieces = pieces(query).map_err(|why| bad(&why))?;
    let mut highlight = BTreeMap::new();
    let mut phrases = Vec::new();
    let mut alternatives: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for group in pieces.split(|p| *p == Piece::Or) {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        let mut positive = false;
        for piece in group {
            let (text, prefix, not) = match piece {
                Piece::Word { text, prefix, not } | Piece::Phrase { text, prefix, not } => {
                    (text, *prefix, *not)
                }
                Piece::Or => continue,
            };
            let tokens = tokens(analyzer, text);
            if tokens.is_empty() {
                continue;
            }
            if !not {
                positive = true;
                for t in &tokens {
                    highlight.insert(t.clone(), 1.0);
                }
                if tokens.len() > 1 {
                    phrases.push(tokens.clone());
                }
            }
            let q = piece_query(searcher, field, &tokens, prefix, &mut highlight, not)?;
            clauses.push((if not { Occur::MustNot } else { Occur::Must }, q));
        }
        if clauses.is_empty() {
            continue;
        }
        if !positive {
            return Err(bad("it only excludes; give at least one word to look for"));
        }
        alternatives.push((Occur::Should, Box::new(BooleanQuery::new(clauses))));
    }
    if alternatives.is_empty() {
        return Err(bad("it has no word to look for"));
    }
    Ok(Parsed {
        query: Box::new(BooleanQuery::new(alternatives)),
        highlight,
        phrases,
    })
}

/// The tokens of `text`, as the index has them.
fn tokens(analyzer: &TextAnalyzer, text: &str) -> Vec<String> {
    let mut analyzer = analyzer.clone();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

/// The query of one word or phrase.
fn piece_query(
    searcher: &Searcher,
    field: Field,
    tokens: &[String],
    prefix: bool,
    highlight: &mut BTreeMap<String, f32>,
    not: bool,
) -> Result<Box<dyn Query>, SearchError> {
    let term = |t: &str| Term::from_field_text(field, t);
    Ok(match (tokens, prefix) {
        ([one], false) => Box::new(TermQuery::new(term(one), IndexRecordOption::WithFreqs)),
        ([one], true) => {
            // Every term with the prefix matches (an automaton over the
            // term dictionary); the first [`PREFIX_TERMS`] are highlighted.
            if !not {
                for t in expand_prefix(searcher, field, one)? {
                    highlight.insert(t, 1.0);
                }
            }
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

/// The first [`PREFIX_TERMS`] indexed terms that start with `prefix`, in
/// order.
fn expand_prefix(
    searcher: &Searcher,
    field: Field,
    prefix: &str,
) -> Result<Vec<String>, SearchError> {
    let index_error = |e: tantivy::TantivyError| SearchError::Query {
        query: format!("{prefix}*"),
        why: e.to_string(),
    };
    let mut found = std::collections::BTreeSet::new();
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(field).map_err(index_error)?;
        let mut stream = inverted
            .terms()
            .range()
            .ge(prefix.as_bytes())
            .into_stream()
            .map_err(|e| index_error(e.into()))?;
        let mut here = 0;
        while stream.advance() && here < PREFIX_TERMS {
            let Ok(key) = std::str::from_utf8(stream.key()) else {
                continue;
            };
            if !key.starts_with(prefix) {
                break;
            }
            found.insert(key.to_owned());
            here += 1;
        }
    }
    Ok(found.into_iter().take(PREFIX_TERMS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, prefix: bool, not: bool) -> Piece {
        Piece::Word {
            text: text.into(),
            prefix,
            not,
        }
    }

    #[test]
    fn a_query_reads_as_words_phrases_prefixes_exclusions_and_alternatives() {
        assert_eq!(
            pieces(r#"migration "row count"* -draft table* OR rollback"#).unwrap(),
            vec![
                word("migration", false, false),
                Piece::Phrase {
                    text: "row count".into(),
                    prefix: true,
                    not: false
                },
                word("draft", false, true),
                word("table", true, false),
                Piece::Or,
                word("rollback", false, false),
            ]
        );
        assert_eq!(
            pieces(r#"say "unclosed"#),
            Err("a quote is not closed".into())
        );
        // Field syntax is a word like any other.
        assert_eq!(
            pieces("session:abc").unwrap(),
            vec![word("session:abc", false, false)]
        );
    }
}
