//! Recorded text made inert for a terminal: control characters (C0, DEL,
//! C1) and the bidirectional overrides that reorder what a reader sees are
//! shown as visible symbols, so nothing a recording holds can move the
//! cursor, clear the screen, set the clipboard (OSC 52) or disguise text.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as it is.
fn active(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The visible stand-in of an active character: the Control Pictures block
/// for C0 and DEL (`␛` for ESC), U+FFFD for the rest.
fn symbol(c: char) -> char {
    match c {
        '\0'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
        '\u{7f}' => '\u{2421}',
        _ => '\u{fffd}',
    }
}

/// `text` on one line, every active character (newlines and tabs too)
/// shown as a symbol: for table cells and one-line fields.
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(active) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if active(c) { symbol(c) } else { c })
            .collect(),
    )
}

/// `text` with its lines and tabs kept and every other active character
/// shown as a symbol (a lone carriage return too: it would overwrite the
/// line): for multi-line text.
pub fn lines(text: &str) -> Cow<'_, str> {
    let keep = |c: char| c == '\n' || c == '\t';
    if !text.chars().any(|c| active(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if active(c) && !keep(c) { symbol(c) } else { c })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_become_visible_and_plain_text_is_borrowed() {
        assert!(matches!(one_line("plain 日本"), Cow::Borrowed(_)));
        assert_eq!(one_line("a\x1b]52;c;aGk=\x07b"), "a␛]52;c;aGk=␇b");
        assert_eq!(one_line("x\x1b[2Jy\nz\t"), "x␛[2Jy␊z␉");
        assert_eq!(one_line("\u{9b}31m\u{7f}\u{202e}"), "\u{fffd}31m␡\u{fffd}");
        assert_eq!(lines("a\nb\tc\rd\x1b"), "a\nb\tc␍d␛");
    }
}
