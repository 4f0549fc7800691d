//! How text is split into the words searched: runs of letters and digits,
//! lowercased, words longer than [`MAX_WORD`] bytes dropped (tantivy's
//! `default` tokenizer). Every engine and every snippet splits the same
//! way, so `ctxlog-marker-7f3a` is the phrase of its three words
//! everywhere.

use tantivy::tokenizer::{LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer};

/// The longest word indexed, in bytes.
pub const MAX_WORD: usize = 40;

/// A word of a text, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The word, lowercased.
    pub text: String,
    /// Its first byte in the text.
    pub from: usize,
    /// The byte past its last.
    pub to: usize,
}

/// The analyzer every index and snippet uses.
pub(crate) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(MAX_WORD))
        .filter(LowerCaser)
        .build()
}

/// The words of `text`, in order.
pub fn tokens(text: &str) -> Vec<Token> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        let t = stream.token();
        out.push(Token {
            text: t.text.clone(),
            from: t.offset_from,
            to: t.offset_to,
        });
    }
    out
}

/// The words of `text` alone.
pub fn words(text: &str) -> Vec<String> {
    tokens(text).into_iter().map(|t| t.text).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_splits_into_lowercased_runs_of_letters_and_digits() {
        assert_eq!(
            words("Ran ctxlog-marker-7F3a: ÉTÉ ok"),
            ["ran", "ctxlog", "marker", "7f3a", "été", "ok"]
        );
        assert_eq!(words(&"x".repeat(MAX_WORD + 1)), Vec::<String>::new());
        let t = tokens("ab  cd");
        assert_eq!((t[1].from, t[1].to), (4, 6));
    }
}
