//! The passage a hit shows: around the first place a phrase of the query
//! is met, when the query has one and the text holds it (so a unique line
//! searched for is the line shown), else the passage tantivy finds richest
//! in the query's words.

use tantivy::snippet::SnippetGenerator;
use tantivy::tokenizer::TextAnalyzer;

/// The longest snippet, in bytes despite its name (a phrase met is
/// shown whole).
pub const SNIPPET_CHARS: usize = 240;

/// Cuts the passages of one query.
pub(crate) struct Snippets {
    pub generator: SnippetGenerator,
    pub phrases: Vec<Vec<String>>,
    pub analyzer: TextAnalyzer,
}

/// Bytes shown before a phrase met.
const BEFORE: usize = 60;

impl Snippets {
    /// The passage of `text`, and the byte ranges of its matches.
    pub fn cut(&self, text: &str) -> (String, Vec<(usize, usize)>) {
        if let Some((start, end)) = self.first_phrase(text) {
            let from = floor(text, start.saturating_sub(BEFORE));
            let to = floor(text, (from + SNIPPET_CHARS).max(end).min(text.len()));
            return (text[from..to].to_owned(), vec![(start - from, end - from)]);
        }
        let s = self.generator.snippet(text);
        let ranges = s.highlighted().iter().map(|r| (r.start, r.end)).collect();
        (s.fragment().to_owned(), ranges)
    }

    /// The byte range of the first phrase met in `text`.
    fn first_phrase(&self, text: &str) -> Option<(usize, usize)> {
        if self.phrases.is_empty() {
            return None;
        }
        let mut analyzer = self.analyzer.clone();
        let mut stream = analyzer.token_stream(text);
        let mut tokens: Vec<(String, usize, usize)> = Vec::new();
        while stream.advance() {
            let t = stream.token();
            tokens.push((t.text.clone(), t.offset_from, t.offset_to));
        }
        let mut best: Option<(usize, usize)> = None;
        for phrase in &self.phrases {
            let at = tokens
                .windows(phrase.len())
                .find(|w| w.iter().zip(phrase).all(|((t, _, _), p)| t == p));
            if let Some(w) = at {
                let range = (w[0].1, w[w.len() - 1].2);
                if best.is_none_or(|b| range.0 < b.0) {
                    best = Some(range);
                }
            }
        }
        best
    }
}

/// The largest char boundary of `text` at or below `at`.
fn floor(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}
