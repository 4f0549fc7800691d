//! Secrets known by where they stand: after `Authorization: Basic|Bearer`,
//! in a URL's userinfo, assigned to a key that names a secret, or given on
//! a command line.

use super::{at_boundary, base64_byte, is_secret_key, run_end, token_byte, SecretKind, Span};
// ---- Authorization headers ----

/// The credential after `Basic ` or `Bearer ` in an `Authorization` header
/// (or after `Bearer ` anywhere, when it looks like a token: 16 characters
/// or more with a digit).
pub(super) fn authorization(text: &str, spans: &mut Vec<Span>) {
    let lower = text.to_ascii_lowercase();
    for scheme in ["basic ", "bearer ", "token "] {
        let mut from = 0;
        while let Some(i) = lower[from..].find(scheme) {
            let at = from + i;
            from = at + scheme.len();
            if !at_boundary(text, at) {
                continue;
            }
            let value_start = run_end(text, from, |b| b == b' ');
            let value_end = run_end(text, value_start, |b| {
                base64_byte(b) || matches!(b, b'.' | b'~')
            });
            let value = &text[value_start..value_end];
            // An `Authorization` header name earlier on the same line, at
            // most 256 bytes back (bytes: no char boundary to respect).
            let back = &lower.as_bytes()[at.saturating_sub(256)..at];
            let line = back
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(back, |n| &back[n + 1..]);
            let in_header = line.windows(13).any(|w| w == b"authorization");
            let looks_like_token = scheme == "bearer "
                && value.len() >= 16
                && value.bytes().any(|b| b.is_ascii_digit());
            if value.len() >= 8 && (in_header || looks_like_token) && !placeholder(value) {
                spans.push(Span {
                    start: value_start,
                    end: value_end,
                    kind: SecretKind::Authorization,
                });
            }
        }
    }
}

// ---- URLs ----

/// The password of `scheme://user:password@host`.
pub(super) fn url_passwords(text: &str, spans: &mut Vec<Span>) {
    let mut from = 0;
    while let Some(i) = text[from..].find("://") {
        let after = from + i + 3;
        from = after;
        let authority_end = run_end(text, after, |b| {
            !b.is_ascii_whitespace() && !matches!(b, b'/' | b'"' | b'\'' | b'`' | b'<' | b'>')
        });
        let authority = &text[after..authority_end];
        let Some(at_sign) = authority.rfind('@') else {
            continue;
        };
        let userinfo = &authority[..at_sign];
        let Some(colon) = userinfo.find(':') else {
            continue;
        };
        let password = &userinfo[colon + 1..];
        if password.is_empty() || placeholder(password) {
            continue;
        }
        spans.push(Span {
            start: after + colon + 1,
            end: after + at_sign,
            kind: SecretKind::UrlPassword,
        });
    }
}

// ---- assigned secrets ----

/// Values assigned to keys that name a secret: `KEY=value`, `key: value`,
/// `"key": "value"`, `key => 'value'`, `--password=value`; in a URL query,
/// an Azure `sig=`.
pub(super) fn assigned_secrets(text: &str, spans: &mut Vec<Span>) {
    let bytes = text.as_bytes();
    for (sep, _) in text.match_indices([':', '=']) {
        // `==`, `!=`, `:=`, `<=`, `>=` compare or declare; `::` is a path.
        let prev = sep.checked_sub(1).map(|i| bytes[i]);
        let next = bytes.get(sep + 1).copied();
        if matches!(prev, Some(b'=' | b'!' | b'<' | b'>' | b':'))
            || matches!(next, Some(b'=' | b':'))
            || (bytes[sep] == b':' && next == Some(b'/'))
        {
            continue;
        }
        let Some((key, key_start)) = key_before(text, sep) else {
            continue;
        };
        let query_sig = key == "sig"
            && key_start
                .checked_sub(1)
                .is_some_and(|i| matches!(bytes[i], b'&' | b'?'));
        if !query_sig && !is_secret_key(key) {
            continue;
        }
        let mut value_start = sep + 1;
        if next == Some(b'>') {
            value_start += 1; // `=>`
        }
        let spaced = text[value_start..].starts_with([' ', '\t']);
        value_start = run_end(text, value_start, |b| b == b' ' || b == b'\t');
        let Some((start, end, quoted)) = value_at(text, value_start) else {
            continue;
        };
        let value = &text[start..end];
        let kind = if query_sig {
            SecretKind::AzureKey
        } else {
            SecretKind::AssignedSecret
        };
        // After `key: ` in prose, an unquoted plain word is not a secret.
        let prose = bytes[sep] == b':' && spaced && !quoted;
        if credential_like(text, value, end, quoted, prose) {
            spans.push(Span { start, end, kind });
        }
    }
}

/// The key that ends just before `sep` (skipping a closing quote and
/// spaces), and where it starts.
fn key_before(text: &str, sep: usize) -> Option<(&str, usize)> {
    let bytes = text.as_bytes();
    let mut end = sep;
    while end > 0 && bytes[end - 1] == b' ' {
        end -= 1;
    }
    if end > 0 && matches!(bytes[end - 1], b'"' | b'\'') {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && (token_byte(bytes[start - 1]) || bytes[start - 1] == b'.') {
        start -= 1;
    }
    let key = text[start..end].trim_start_matches('-');
    (!key.is_empty()).then_some((key, end - key.len()))
}

/// The value starting at `at`: a quoted string (without its quotes) or a
/// run up to a space or delimiter. Returns its range and whether it was
/// quoted.
fn value_at(text: &str, at: usize) -> Option<(usize, usize, bool)> {
    let bytes = text.as_bytes();
    let first = *bytes.get(at)?;
    if matches!(first, b'"' | b'\'' | b'`') {
        let mut i = at + 1;
        while i < bytes.len() && bytes[i] != first && bytes[i] != b'\n' {
            i += if bytes[i] == b'\\' { 2 } else { 1 };
        }
        let end = i.min(bytes.len());
        return (end > at + 1).then_some((at + 1, end, true));
    }
    let end = run_end(text, at, |b| {
        !b.is_ascii_whitespace()
            && !matches!(
                b,
                b',' | b';'
                    | b'&'
                    | b')'
                    | b'('
                    | b'}'
                    | b'{'
                    | b']'
                    | b'['
                    | b'"'
                    | b'\''
                    | b'<'
                    | b'>'
                    | b'`'
            )
    });
    // A sentence's full stop is not part of the value.
    let end = if end > at + 1 && bytes[end - 1] == b'.' {
        end - 1
    } else {
        end
    };
    (end > at).then_some((at, end, false))
}

/// Whether `value` (ending at `end` in `text`) looks like a credential
/// rather than a placeholder, a type, a number or code.
fn credential_like(text: &str, value: &str, end: usize, quoted: bool, prose: bool) -> bool {
    if value.chars().count() < 4 || placeholder(value) {
        return false;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    if !quoted {
        // Code: a call, an index, a generic type, a dotted path.
        if text[end..].starts_with(['(', '[', '<']) {
            return false;
        }
        let identifier = |s: &str| {
            s.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        };
        if value.contains('.') && value.split('.').all(identifier) {
            return false;
        }
        // An expression that starts with a keyword (`await getKey(…)`,
        // `new Source(…)`): its first word is the value's end.
        if EXPRESSION_KEYWORDS.contains(&value) {
            return false;
        }
    }
    if prose {
        let has_digit = value.bytes().any(|b| b.is_ascii_digit());
        let has_symbol = value.bytes().any(|b| !b.is_ascii_alphanumeric());
        let mixed = value.bytes().any(|b| b.is_ascii_uppercase())
            && value.bytes().any(|b| b.is_ascii_lowercase());
        return has_digit || has_symbol || mixed || value.len() >= 16;
    }
    true
}

/// Words that start an expression in code, never a credential's value.
const EXPRESSION_KEYWORDS: &[&str] = &[
    "await", "new", "yield", "typeof", "async", "function", "lambda", "require", "import", "move",
    "sizeof", "clone", "static",
];

/// How a template reference opens: two opening braces (Jinja, Handlebars,
/// Go templates), written as escapes.
const TEMPLATE_OPENING: &str = "\x7b\x7b";

/// A value that stands for a secret without being one: an environment or
/// template reference, a mask, an earlier redaction, a type or a schema
/// word.
fn placeholder(value: &str) -> bool {
    is_reference_or_mask(value) || is_schema_word(&value.to_ascii_lowercase())
}

/// An environment or template reference, a mask or an earlier redaction.
fn is_reference_or_mask(value: &str) -> bool {
    value.starts_with('$')
        || value.starts_with(TEMPLATE_OPENING)
        || value.starts_with("%(")
        || value.starts_with("process.env")
        || value.starts_with("os.environ")
        || value.starts_with("[REDACTED")
        || value.starts_with("<")
        || value
            .chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '-' | '#' | '•'))
}

/// A type or schema word, which names a secret's slot rather than fills it
/// (`lower`: the value in lower case).
fn is_schema_word(lower: &str) -> bool {
    matches!(
        lower,
        "null"
            | "none"
            | "nil"
            | "true"
            | "false"
            | "undefined"
            | "string"
            | "str"
            | "&str"
            | "bool"
            | "number"
            | "option"
            | "optional"
            | "required"
            | "secretstr"
            | "redacted"
            | "hidden"
            | "env"
            | "password"
            | "secret"
            | "token"
    )
}

// ---- command lines ----

/// Passwords given on a command line: `-p<password>` after a MySQL or
/// MariaDB client, `sshpass -p <password>`, `curl -u user:<password>`.
pub(super) fn command_line_passwords(text: &str, spans: &mut Vec<Span>) {
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let words = line_words(line);
        for (i, &(at, word)) in words.iter().enumerate() {
            let program = |names: &[&str]| {
                words[..i].iter().any(|(_, w)| {
                    let base = w.rsplit('/').next().unwrap_or(w);
                    names.contains(&base)
                })
            };
            let value = if let Some(pw) = word.strip_prefix("-p").filter(|p| !p.is_empty()) {
                program(&[
                    "mysql",
                    "mariadb",
                    "mysqldump",
                    "mysqladmin",
                    "mysqlimport",
                    "mysqlcheck",
                    "mysqlshow",
                ])
                .then_some((at + 2, pw))
            } else if matches!(word, "-p") && program(&["sshpass"]) {
                words.get(i + 1).map(|&(a, w)| (a, w))
            } else if matches!(word, "-u" | "--user") && program(&["curl"]) {
                words.get(i + 1).and_then(|&(a, w)| {
                    let colon = w.find(':')?;
                    Some((a + colon + 1, &w[colon + 1..]))
                })
            } else {
                None
            };
            if let Some((at, quoted)) = value {
                // The quotes around the value are not the secret: every
                // one trimmed from its start moves it on (`-p""é`).
                let quote = |c| c == '"' || c == '\'';
                let at = at + (quoted.len() - quoted.trim_start_matches(quote).len());
                let pw = quoted.trim_matches(quote);
                if !pw.is_empty() && !placeholder(pw) {
                    spans.push(Span {
                        start: line_start + at,
                        end: line_start + at + pw.len(),
                        kind: SecretKind::CommandLinePassword,
                    });
                }
            }
        }
        line_start += line.len();
    }
}

/// The whitespace-separated words of a line with their offsets.
fn line_words(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, &line[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &line[s..]));
    }
    out
}
