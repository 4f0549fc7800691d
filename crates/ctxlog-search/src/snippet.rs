//! The passage a hit shows: around the first place a phrase of the query
//! is met, when the query has one and the text holds it (so a unique line
//! searched for is the line shown), else the passage that holds the most
//! of the query's words. The same for every engine: the text is split as
//! it was indexed ([`crate::tokens`]).

use crate::query::Parsed;
use crate::tokens::{tokens, Token};
use std::collections::BTreeSet;

/// The longest snippet, in bytes despite its name (a phrase met is
/// shown whole).
pub const SNIPPET_CHARS: usize = 240;

/// Bytes shown before the first match.
const BEFORE: usize = 60;

/// Cuts the passages of one query.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snippets {
    words: BTreeSet<String>,
    prefixes: Vec<String>,
    phrases: Vec<Vec<String>>,
}

impl Snippets {
    /// The snippets of the words `query` looks for.
    pub fn of(query: &Parsed) -> Snippets {
        let mut s = Snippets::default();
        for c in query.wanted() {
            let (last, rest) = c.words.split_last().expect("a clause has a word");
            s.words.extend(rest.iter().cloned());
            if c.prefix {
                s.prefixes.push(last.clone());
            } else {
                s.words.insert(last.clone());
            }
            if c.words.len() > 1 && !c.prefix {
                s.phrases.push(c.words.clone());
            }
        }
        s
    }

    /// The passage of `text`, and the byte ranges of its matches.
    pub fn cut(&self, text: &str) -> (String, Vec<(usize, usize)>) {
        let tokens = tokens(text);
        let matched: Vec<&Token> = tokens.iter().filter(|t| self.matches(&t.text)).collect();
        let (from, to) = match self.first_phrase(&tokens) {
            Some((start, end)) => {
                let from = floor(text, start.saturating_sub(BEFORE));
                (from, floor(text, (from + SNIPPET_CHARS).max(end)))
            }
            None => {
                let start = richest(&matched).map_or(0, |t| t.from);
                let from = floor(text, start.saturating_sub(BEFORE));
                (from, floor(text, from + SNIPPET_CHARS))
            }
        };
        let highlights = matched
            .iter()
            .filter(|t| t.from >= from && t.to <= to)
            .map(|t| (t.from - from, t.to - from))
            .collect();
        (text[from..to].to_owned(), highlights)
    }

    fn matches(&self, word: &str) -> bool {
        self.words.contains(word) || self.prefixes.iter().any(|p| word.starts_with(p.as_str()))
    }

    /// The byte range of the first phrase met.
    fn first_phrase(&self, tokens: &[Token]) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        for phrase in &self.phrases {
            let at = tokens
                .windows(phrase.len())
                .find(|w| w.iter().zip(phrase).all(|(t, p)| t.text == *p));
            if let Some(w) = at {
                let range = (w[0].from, w[w.len() - 1].to);
                if best.is_none_or(|b| range.0 < b.0) {
                    best = Some(range);
                }
            }
        }
        best
    }
}

/// The match that begins the passage holding the most matches (the first
/// such).
fn richest<'t>(matched: &[&'t Token]) -> Option<&'t Token> {
    let mut best: Option<(usize, &Token)> = None;
    let mut end = 0;
    for (i, t) in matched.iter().enumerate() {
        end = end.max(i);
        while end + 1 < matched.len() && matched[end + 1].to <= t.from + SNIPPET_CHARS {
            end += 1;
        }
        let count = end + 1 - i;
        if best.is_none_or(|(c, _)| count > c) {
            best = Some((count, t));
        }
    }
    best.map(|(_, t)| t)
}

/// The largest char boundary of `text` at or below `at` (a byte budget
/// cut without splitting a character).
pub fn floor(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::parse;

    #[test]
    fn a_phrase_met_is_shown_whole_and_words_are_highlighted() {
        let text = format!(
            "{} the row count was 42 {}",
            "x ".repeat(200),
            "y ".repeat(200)
        );
        let (snippet, marks) = Snippets::of(&parse("\"row count\"").unwrap()).cut(&text);
        assert!(snippet.contains("the row count was 42"), "{snippet}");
        assert_eq!(
            marks
                .iter()
                .map(|&(a, b)| &snippet[a..b])
                .collect::<Vec<_>>(),
            ["row", "count"]
        );
        let (snippet, marks) = Snippets::of(&parse("coun*").unwrap()).cut(&text);
        assert_eq!(&snippet[marks[0].0..marks[0].1], "count");
        // No word met: the text's start.
        let (snippet, marks) =
            Snippets::of(&parse("absent").unwrap()).cut("é".repeat(300).as_str());
        assert!(marks.is_empty() && snippet.len() <= SNIPPET_CHARS);
    }
}
