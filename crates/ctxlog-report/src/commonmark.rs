//! Recorded strings written into CommonMark as literal text: whatever a
//! recording holds renders as the characters it is, never as an element,
//! an attribute, a link or an entity. Every recorded string of the
//! transcript goes through one of these functions.

use ctxlog_core::printable;
use std::fmt::Write;

/// ASCII punctuation that can open or close markup within a line: code,
/// emphasis, links and images (`!` and `(` mean nothing without `[`), raw
/// HTML and autolinks, entities, strikethrough, table cells, a heading's
/// closing `#`s. CommonMark lets a backslash escape any of them.
fn needs_escape(c: char) -> bool {
    matches!(
        c,
        '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '~' | '|' | '#'
    )
}

/// One line of literal text (no block structure of its own: it continues
/// a line the transcript started).
fn escape_into(out: &mut String, line: &str) {
    for c in line.chars() {
        if needs_escape(c) {
            out.push('\\');
        }
        out.push(c);
    }
}

/// `text` as literal inline text on one line (newlines and control
/// characters shown as symbols): for titles, names, versions, errors.
pub fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    escape_into(&mut out, &printable::one_line(text));
    out
}

/// `text` as literal paragraphs: its lines kept (hard line breaks), blank
/// lines between paragraphs, indentation kept as no-break spaces (never an
/// indented code block), and whatever could start a block (a heading, a
/// list, a quote, a fence, a thematic break, an HTML block, a setext
/// underline) escaped. Each output line is prefixed with `prefix` (`"> "`
/// inside a quote).
pub fn literal(text: &str, prefix: &str) -> String {
    let text = printable::lines(text.trim_end());
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim_end();
        if line.is_empty() {
            out.push_str(prefix.trim_end());
            out.push('\n');
            continue;
        }
        out.push_str(prefix);
        let body = line.trim_start_matches([' ', '\t']);
        for c in line[..line.len() - body.len()].chars() {
            out.push_str(if c == '\t' {
                "\u{a0}\u{a0}\u{a0}\u{a0}"
            } else {
                "\u{a0}"
            });
        }
        // A list marker, a setext underline or a thematic break starts
        // with one of these; an ordered list with digits then `.` or `)`.
        let mut chars = body.char_indices();
        if let Some((_, first)) = chars.next() {
            if matches!(first, '-' | '+' | '=' | '.') {
                out.push('\\');
            }
        }
        let digits = body.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && body[digits..].starts_with(['.', ')']) {
            out.push_str(&body[..digits]);
            out.push('\\');
            escape_into(&mut out, &body[digits..]);
        } else {
            escape_into(&mut out, body);
        }
        // The line ends; a hard break keeps the next one on its own line.
        let next_blank = lines.get(i + 1).is_none_or(|l| l.trim().is_empty());
        if !next_blank {
            out.push('\\');
        }
        out.push('\n');
    }
    out
}

/// An inline code span that no backtick run inside can close, on one line.
pub fn code_span(text: &str) -> String {
    let text = printable::one_line(text);
    let ticks = "`".repeat(longest_run(&text, '`') + 1);
    format!("{ticks} {text} {ticks}")
}

/// A fenced block that no backtick run inside can close.
pub fn fenced(text: &str) -> String {
    let text = printable::lines(text);
    let fence = "`".repeat(longest_run(&text, '`').max(2) + 1);
    let mut out = String::with_capacity(text.len() + 2 * fence.len() + 4);
    let _ = writeln!(out, "{fence}\n{}\n{fence}", text.trim_end_matches('\n'));
    out
}

fn longest_run(text: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in text.chars() {
        run = if ch == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_text_cannot_open_markup() {
        assert_eq!(
            inline("a <img src=x> `b`\nc"),
            "a \\<img src=x\\> \\`b\\`␊c"
        );
        assert_eq!(
            literal("# t\n- x\n1. y\n\n    ```\n===", ""),
            "\\# t\\\n\\- x\\\n1\\. y\n\n\u{a0}\u{a0}\u{a0}\u{a0}\\`\\`\\`\\\n\\===\n"
        );
        assert_eq!(literal("a\nb", "> "), "> a\\\n> b\n");
        assert_eq!(fenced("a"), "```\na\n```\n");
        assert_eq!(fenced("x ```` y"), "`````\nx ```` y\n`````\n");
        assert_eq!(code_span("a`b"), "`` a`b ``");
    }
}
