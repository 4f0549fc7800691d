//! Text and queries as PostgreSQL's full-text search takes them, split by
//! ctxlog's own tokenizer ([`ctxlog_search::tokens`]) so that both engines
//! find the same words: a text becomes `tsvector` literals (one per chunk
//! of [`CHUNK_WORDS`] words, since a `tsvector` keeps positions only up to
//! 16,383), a query clause a `tsquery` literal.

use ctxlog_search::query::Clause;
use ctxlog_search::tokens::words;
use std::collections::BTreeMap;

/// Words per chunk (positions 1..=this, below PostgreSQL's 16,383).
pub(crate) const CHUNK_WORDS: usize = 16_000;

/// Words two chunks share, so that a phrase of up to this many words
/// across a chunk's end is met whole in the next.
pub(crate) const CHUNK_OVERLAP: usize = 64;

/// Positions a `tsvector` keeps per word.
const POSITIONS_PER_WORD: usize = 256;

/// The `tsvector` literals of `text`, one per chunk (none: no word).
pub(crate) fn vectors(text: &str) -> Vec<String> {
    let all = words(text);
    let mut out = Vec::new();
    let mut start = 0;
    while start < all.len() {
        let end = (start + CHUNK_WORDS).min(all.len());
        out.push(vector(&all[start..end]));
        if end == all.len() {
            break;
        }
        start = end - CHUNK_OVERLAP;
    }
    out
}

/// The `tsvector` literal of `words` at positions 1, 2, …
fn vector(words: &[String]) -> String {
    let mut positions: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, w) in words.iter().enumerate() {
        let at = positions.entry(w).or_default();
        if at.len() < POSITIONS_PER_WORD {
            at.push(i + 1);
        }
    }
    let mut out = String::new();
    for (word, at) in positions {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&quoted(word));
        out.push(':');
        let list: Vec<String> = at.iter().map(usize::to_string).collect();
        out.push_str(&list.join(","));
    }
    out
}

/// The `tsquery` literal of one clause (its words in a row; the last a
/// prefix when asked), negated for an excluded clause.
pub(crate) fn clause_query(c: &Clause) -> String {
    let mut terms: Vec<String> = c.words.iter().map(|w| quoted(w)).collect();
    if c.prefix {
        if let Some(last) = terms.last_mut() {
            last.push_str(":*");
        }
    }
    let phrase = terms.join(" <-> ");
    if c.not {
        format!("!({phrase})")
    } else {
        phrase
    }
}

/// A word quoted for a `tsvector` or `tsquery` literal.
fn quoted(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 2);
    out.push('\'');
    for ch in word.chars() {
        if ch == '\'' || ch == '\\' {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_becomes_chunks_of_positioned_words() {
        assert_eq!(vectors("b a B"), ["'a':2 'b':1,3"]);
        assert!(vectors(" -- ").is_empty());
        let long: String = (0..CHUNK_WORDS + 10).map(|i| format!("w{i} ")).collect();
        let chunks = vectors(&long);
        assert_eq!(chunks.len(), 2);
        // The second chunk starts CHUNK_OVERLAP words before the first ends.
        let first_of_second = CHUNK_WORDS - CHUNK_OVERLAP;
        assert!(chunks[1].contains(&format!("'w{first_of_second}':1")));
    }

    #[test]
    fn a_clause_becomes_a_phrase_query() {
        let c = |w: &[&str], prefix, not| Clause {
            words: w.iter().map(|s| s.to_string()).collect(),
            prefix,
            not,
        };
        assert_eq!(
            clause_query(&c(&["row", "co"], true, false)),
            "'row' <-> 'co':*"
        );
        assert_eq!(clause_query(&c(&["x"], false, true)), "!('x')");
        assert_eq!(quoted("it's"), r"'it\'s'");
    }
}
