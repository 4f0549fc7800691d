//! Redaction of common secret shapes from summary text before it becomes a
//! pivot: private key blocks, provider API keys and tokens, bearer tokens,
//! and `key = value` credentials. The count is recorded, never the secret.

/// What a redacted secret becomes.
pub const REDACTED: &str = "[REDACTED]";

const PREFIXES: &[&str] = &[
    "sk-ant-",
    "sk-proj-",
    "sk-",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "AKIA",
    "ASIA",
    "AIza",
    "hf_",
];
const KEY_NAMES: &[&str] = &[
    "api_key",
    "apikey",
    "api-key",
    "secret",
    "password",
    "passwd",
    "token",
    "access_key",
    "secret_key",
    "client_secret",
    "auth",
];
/// Shortest run of token characters treated as a secret after a prefix.
const MIN_SECRET: usize = 16;

/// Characters that continue a word: a secret prefix must not follow one.
fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-')
}

fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '+' | '=')
}

/// Length (in bytes) of the token run starting at the start of `s`.
fn token_len(s: &str) -> usize {
    s.char_indices()
        .find(|(_, c)| !token_char(*c))
        .map_or(s.len(), |(i, _)| i)
}

/// Returns `text` with secrets replaced by [`REDACTED`], and how many were.
pub fn redact(text: &str) -> (String, u32) {
    let mut count = 0;
    let text = redact_private_keys(text, &mut count);
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    'scan: while !rest.is_empty() {
        let at_boundary = out.chars().last().is_none_or(|c| !word_char(c));
        if at_boundary {
            for p in PREFIXES {
                if let Some(after) = rest.strip_prefix(p) {
                    let n = token_len(after);
                    if n >= MIN_SECRET {
                        out.push_str(REDACTED);
                        count += 1;
                        rest = &after[n..];
                        continue 'scan;
                    }
                }
            }
            if let Some(after) = strip_prefix_ci(rest, "bearer ") {
                let n = token_len(after);
                if n >= MIN_SECRET {
                    out.push_str(&rest[..rest.len() - after.len()]);
                    out.push_str(REDACTED);
                    count += 1;
                    rest = &after[n..];
                    continue 'scan;
                }
            }
            for k in KEY_NAMES {
                if let Some(after) = strip_prefix_ci(rest, k) {
                    let sep = after
                        .char_indices()
                        .find(|(_, c)| !matches!(c, ' ' | ':' | '=' | '"' | '\''))
                        .map_or(after.len(), |(i, _)| i);
                    let assigned = after[..sep].contains([':', '=']);
                    let value = &after[sep..];
                    let n = token_len(value);
                    if assigned && n >= 8 {
                        out.push_str(&rest[..rest.len() - value.len()]);
                        out.push_str(REDACTED);
                        count += 1;
                        rest = &value[n..];
                        continue 'scan;
                    }
                }
            }
        }
        let Some(c) = rest.chars().next() else { break };
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    (out, count)
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

fn redact_private_keys(text: &str, count: &mut u32) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let header_end = match rest[start..].find("PRIVATE KEY-----") {
            Some(i) => start + i,
            None => break,
        };
        // A block cut off before its end (a truncated summary) is redacted
        // to the end of the text.
        let stop = match rest[header_end..].find("-----END ") {
            Some(end_rel) => {
                let end_marker = header_end + end_rel;
                match rest[end_marker..].find("PRIVATE KEY-----") {
                    Some(close) => end_marker + close + "PRIVATE KEY-----".len(),
                    None => rest.len(),
                }
            }
            None => rest.len(),
        };
        out.push_str(&rest[..start]);
        out.push_str("[REDACTED PRIVATE KEY]");
        *count += 1;
        rest = &rest[stop..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_common_secret_shapes_and_counts_them() {
        let cases: &[(&str, &str, u32)] = &[
            (
                "key sk-abcdefghijklmnopqrstuvwx in env",
                "key [REDACTED] in env",
                1,
            ),
            (
                "OPENAI_API_KEY=sk-proj-ABCDEFGHIJKLMNOPQRST1234",
                "OPENAI_API_KEY=[REDACTED]",
                1,
            ),
            (
                "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
                "Authorization: Bearer [REDACTED]",
                1,
            ),
            (
                "token ghp_0123456789abcdefghijABCDEFGHIJ012345 and AKIAIOSFODNN7EXAMPLE",
                "token [REDACTED] and [REDACTED]",
                2,
            ),
            ("password: hunter2hunter2", "password: [REDACTED]", 1),
            (
                "\"api_key\": \"abcd1234efgh\"",
                "\"api_key\": \"[REDACTED]\"",
                1,
            ),
            (
                "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nb",
                "a\n[REDACTED PRIVATE KEY]\nb",
                1,
            ),
            // not secrets
            (
                "the task-runner and sk-short",
                "the task-runner and sk-short",
                0,
            ),
            (
                "desk-abcdefghijklmnopqrstuvwx",
                "desk-abcdefghijklmnopqrstuvwx",
                0,
            ),
            ("the password is wrong", "the password is wrong", 0),
            ("Bearer of bad news", "Bearer of bad news", 0),
            (
                "日本語 😀 sk-abcdefghijklmnopqrstuvwx",
                "日本語 😀 [REDACTED]",
                1,
            ),
        ];
        for (input, want, n) in cases {
            let (got, count) = redact(input);
            assert_eq!(&got, want, "{input}");
            assert_eq!(count, *n, "{input}");
        }
    }
}
