//! What a span says of the conversation's text, only when asked
//! (`--content`, the conventions' opt-in): redacted unless told otherwise,
//! each text cut at [`MAX_TEXT`] bytes, written as the conventions' message
//! JSON (a string attribute).

use ctxlog_core::redact::redact;
use serde_json::{json, Value as JsonValue};

/// The most bytes of one text a span carries; the rest is cut and said.
pub const MAX_TEXT: usize = 32 * 1024;

/// Whether and how texts go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Content {
    /// No text at all (the default): ids, names, times and counts only.
    #[default]
    Off,
    /// Texts with every secret ctxlog finds replaced by a marker.
    Redacted,
    /// Texts as recorded.
    Verbatim,
}

impl Content {
    /// Whether texts are kept at all.
    pub fn on(self) -> bool {
        self != Content::Off
    }

    /// `text` as it may go out: redacted or not, cut at [`MAX_TEXT`].
    pub fn text(self, text: &str) -> String {
        let text = match self {
            Content::Off => return String::new(),
            Content::Redacted => redact(text).text,
            Content::Verbatim => text.to_owned(),
        };
        cut(text)
    }
}

/// `text` cut at [`MAX_TEXT`] bytes (on a character boundary), saying how
/// much was left out.
fn cut(mut text: String) -> String {
    if text.len() <= MAX_TEXT {
        return text;
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let left = text.len() - end;
    text.truncate(end);
    text.push_str(&format!("…[{left} bytes cut]"));
    text
}

/// One message part of the conventions' message JSON.
pub fn text_part(kind: &str, content: String) -> JsonValue {
    json!({ "type": kind, "content": content })
}

/// A tool call part (its arguments a JSON value).
pub fn tool_call_part(id: &str, name: &str, arguments: JsonValue) -> JsonValue {
    json!({ "type": "tool_call", "id": id, "name": name, "arguments": arguments })
}

/// `[{"role": role, "parts": parts}]` as the string attribute holds it.
pub fn messages(role: &str, parts: Vec<JsonValue>) -> String {
    json!([{ "role": role, "parts": parts }]).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_redacted_and_cut() {
        let secret = "key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        assert!(!Content::Redacted.text(secret).contains("AAAAAAAA"));
        assert!(Content::Verbatim.text(secret).contains("AAAAAAAA"));
        assert_eq!(Content::Off.text(secret), "");
        let long = "é".repeat(MAX_TEXT);
        let got = Content::Verbatim.text(&long);
        assert!(got.len() < MAX_TEXT + 40 && got.ends_with("bytes cut]"));
    }
}
