//! What people ask for: the sessions and times searched, and the query
//! itself, read as a search engine they know reads it: words (all
//! must be there), `"a phrase"`, `prefix*`, `-excluded`, and `OR` between
//! alternatives. Words are split and lowercased as the text was when
//! indexed, so `ctxlog-marker-7f3a` is the phrase of its three words.
//! Nothing else is special: field names, brackets or regexes in a query
//! are words, never a way to reach other fields or other sessions.

use crate::error::SearchError;
use crate::tokens::words;
use ctxlog_core::SessionId;

/// What to look for, and where.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    /// The query, as typed (this module).
    pub query: String,
    /// Only in these sessions (`None`: every session indexed).
    pub sessions: Option<Vec<SessionId>>,
    /// Only items recorded at or after this time, ms.
    pub since: Option<u64>,
    /// Only items recorded before this time, ms.
    pub until: Option<u64>,
    /// Only what the model no longer sees whole: pruned, compacted away,
    /// withdrawn.
    pub dropped: bool,
    /// Hits to return (at most [`crate::MAX_LIMIT`]).
    pub limit: usize,
    /// Hits to pass over first (a cursor: the hits returned before; at
    /// most [`crate::MAX_SKIP`]).
    pub skip: usize,
}

/// A query, read: alternatives (`OR`), each a list of clauses that must
/// all hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The alternatives; an item matches when one of them holds.
    pub groups: Vec<Vec<Clause>>,
}

/// A word or a phrase looked for, or excluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    /// Its words, as the index splits them (more than one: a phrase).
    pub words: Vec<String>,
    /// Whether the last word is a prefix (`word*`).
    pub prefix: bool,
    /// Whether it must not be there (`-word`).
    pub not: bool,
}

impl Parsed {
    /// The clauses looked for (not excluded), in every alternative.
    pub fn wanted(&self) -> impl Iterator<Item = &Clause> {
        self.groups.iter().flatten().filter(|c| !c.not)
    }
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

/// Reads `query`.
pub fn parse(query: &str) -> Result<Parsed, SearchError> {
    let bad = |why: &str| SearchError::Query {
        query: query.to_owned(),
        why: why.to_owned(),
    };
    let pieces = pieces(query).map_err(|why| bad(&why))?;
    let mut groups = Vec::new();
    for group in pieces.split(|p| *p == Piece::Or) {
        let mut clauses = Vec::new();
        for piece in group {
            let (text, prefix, not) = match piece {
                Piece::Word { text, prefix, not } | Piece::Phrase { text, prefix, not } => {
                    (text, *prefix, *not)
                }
                Piece::Or => continue,
            };
            let words = words(text);
            if !words.is_empty() {
                clauses.push(Clause { words, prefix, not });
            }
        }
        if clauses.is_empty() {
            continue;
        }
        if clauses.iter().all(|c| c.not) {
            return Err(bad("it only excludes; give at least one word to look for"));
        }
        groups.push(clauses);
    }
    if groups.is_empty() {
        return Err(bad("it has no word to look for"));
    }
    Ok(Parsed { groups })
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

    #[test]
    fn a_query_is_split_as_the_text_was() {
        let p = parse("Ctxlog-Marker-7f3a tab* OR -x y").unwrap();
        let clause = |w: &[&str], prefix, not| Clause {
            words: w.iter().map(|s| s.to_string()).collect(),
            prefix,
            not,
        };
        assert_eq!(
            p.groups,
            vec![
                vec![
                    clause(&["ctxlog", "marker", "7f3a"], false, false),
                    clause(&["tab"], true, false)
                ],
                vec![clause(&["x"], false, true), clause(&["y"], false, false)],
            ]
        );
        assert!(parse("-only").is_err());
        assert!(parse(" ... ").is_err());
    }
}
