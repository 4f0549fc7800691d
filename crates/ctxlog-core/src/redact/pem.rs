//! PEM and PGP private key blocks: through the END line when the body
//! reaches it, else through the last line of key material, never further.

use super::{run_end, SecretKind, Span};
/// PEM and PGP private key blocks: from the BEGIN line through the END line
/// when the body reaches it, else through the last line of key material.
pub(super) fn private_keys(text: &str, spans: &mut Vec<Span>) {
    let mut from = 0;
    while let Some(i) = text[from..].find("-----BEGIN ") {
        let start = from + i;
        from = start + "-----BEGIN ".len();
        let Some(label_len) = text[from..].find("-----") else {
            break;
        };
        let label = &text[from..from + label_len];
        if !label.contains("PRIVATE KEY")
            || !label
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ')
        {
            continue;
        }
        let header_end = from + label_len + "-----".len();
        let end = key_body_end(text, header_end, label);
        spans.push(Span {
            start,
            end,
            kind: SecretKind::PrivateKey,
        });
        from = end.max(from);
    }
}

/// Where the body of a key block that starts at `at` ends: after its END
/// line, or after the last line (or line start) of key material.
fn key_body_end(text: &str, mut at: usize, label: &str) -> usize {
    let end_line = format!("-----END {label}-----");
    let mut end = at;
    let mut first = true;
    loop {
        // A separator: a newline, an escaped one (`\n` in a JSON string), or
        // spaces (a key squashed onto one line); none before an END line.
        let (line_start, new_line) = if text[at..].starts_with("-----END ") {
            (at, true)
        } else {
            match skip_separator(text, at) {
                Some(next) => next,
                None => return end,
            }
        };
        let rest = &text[line_start..];
        if let Some(after) = rest.strip_prefix(end_line.as_str()) {
            return text.len() - after.len();
        }
        if first && header_line(rest) {
            at = line_start + line_len(rest);
            end = at;
            continue;
        }
        first = false;
        let run = run_end(text, line_start, pem_byte) - line_start;
        let run_text = &rest[..run];
        // Key material: a long run, or a line of one with a digit or `+/=`
        // (a body's last line); a word after a space, or a short word of
        // letters, is the text that follows a cut-off key.
        let material = run >= 16
            || (new_line && run >= 4 && run_text.bytes().any(|b| !b.is_ascii_alphabetic()))
            || rest[run..].starts_with("-----END ");
        if run == 0 || !material {
            return end;
        }
        at = line_start + run;
        end = at;
        // A line that goes on with something else (a truncation mark, prose)
        // ends the key material.
        if !starts_separator(&text[at..]) && !text[at..].starts_with("-----END ") {
            return end;
        }
    }
}

/// Characters of a key body (standard base64).
fn pem_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
}

/// Whether `s` starts with a line separator of a key body.
fn starts_separator(s: &str) -> bool {
    s.starts_with(['\n', '\r', ' ', '\t']) || s.starts_with("\\n") || s.starts_with("\\r")
}

/// The start of the next line (or word) after the separators at `at`, if
/// there are any, and whether they held a newline.
fn skip_separator(text: &str, mut at: usize) -> Option<(usize, bool)> {
    let start = at;
    let mut new_line = false;
    loop {
        let rest = &text[at..];
        if let Some(r) = rest
            .strip_prefix("\\r\\n")
            .or_else(|| rest.strip_prefix("\\n"))
        {
            at = text.len() - r.len();
            new_line = true;
        } else if rest.starts_with(['\n', '\r']) {
            at += 1;
            new_line = true;
        } else if rest.starts_with([' ', '\t']) {
            at += 1;
        } else {
            break;
        }
    }
    (at > start).then_some((at, new_line))
}

/// A header of a key block (`Proc-Type: 4,ENCRYPTED`, `Version: GnuPG`).
fn header_line(rest: &str) -> bool {
    ["Proc-Type:", "DEK-Info:", "Version:", "Comment:", "Hash:"]
        .iter()
        .any(|h| rest.starts_with(h))
}

/// The length of the line at the start of `rest` (to a newline, escaped or
/// not).
fn line_len(rest: &str) -> usize {
    let real = rest.find(['\n', '\r']).unwrap_or(rest.len());
    let escaped = rest.find("\\n").unwrap_or(rest.len());
    real.min(escaped)
}
