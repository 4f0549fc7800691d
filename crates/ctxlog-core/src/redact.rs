//! Redaction of secrets from text: private key blocks, cloud and service
//! tokens, JWTs, `Authorization` headers, passwords in URLs and command
//! lines, and values assigned to keys that name a secret.
//!
//! Invariant: only the secret itself is replaced, by a marker that names its
//! kind (`[REDACTED github-token]`); the text around it stays byte for byte.
//! A private key block cut off before its END line loses its key material,
//! never what follows it. A pure function: the same text always gives the
//! same result.

use std::collections::BTreeMap;

/// What kind of secret a redaction replaced. The name is part of the marker
/// written in its place, so it never changes once released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SecretKind {
    /// A PEM or PGP private key block (or what is left of one).
    PrivateKey,
    /// An AWS access key id (`AKIA…`, `ASIA…`).
    AwsAccessKey,
    /// A Google Cloud API key (`AIza…`) or OAuth access token (`ya29.…`).
    GcpKey,
    /// An Azure client secret (`…8Q~…`) or shared access signature.
    AzureKey,
    /// A GitHub token (`ghp_`, `gho_`, `ghs_`, `ghu_`, `ghr_`, `github_pat_`).
    GithubToken,
    /// A GitLab token (`glpat-`, `gldt-`, `glrt-`, `glptt-`).
    GitlabToken,
    /// A Slack token (`xoxb-`, `xoxp-`, …, `xapp-`) or webhook URL.
    SlackToken,
    /// A Stripe secret or restricted key or webhook secret.
    StripeKey,
    /// An npm access token (`npm_`).
    NpmToken,
    /// A PyPI upload token (`pypi-`).
    PypiToken,
    /// An OpenAI API key (`sk-`, `sk-proj-`, …).
    OpenaiKey,
    /// An Anthropic API key (`sk-ant-`).
    AnthropicKey,
    /// A Hugging Face token (`hf_`).
    HuggingfaceToken,
    /// Another vendor's prefixed token (SendGrid, DigitalOcean, Shopify).
    VendorToken,
    /// A JSON Web Token (`eyJ….eyJ….…`).
    Jwt,
    /// The credential of an `Authorization: Basic|Bearer` header.
    Authorization,
    /// The password of a URL (`scheme://user:password@host`).
    UrlPassword,
    /// A value assigned to a key that names a secret (`DB_PASSWORD=…`,
    /// `"api_key": "…"`).
    AssignedSecret,
    /// A password given on a command line (`mysql -pPASSWORD`, `curl -u
    /// user:password`, `sshpass -p …`).
    CommandLinePassword,
}

impl SecretKind {
    /// Every kind, in order.
    pub const ALL: [SecretKind; 19] = [
        SecretKind::PrivateKey,
        SecretKind::AwsAccessKey,
        SecretKind::GcpKey,
        SecretKind::AzureKey,
        SecretKind::GithubToken,
        SecretKind::GitlabToken,
        SecretKind::SlackToken,
        SecretKind::StripeKey,
        SecretKind::NpmToken,
        SecretKind::PypiToken,
        SecretKind::OpenaiKey,
        SecretKind::AnthropicKey,
        SecretKind::HuggingfaceToken,
        SecretKind::VendorToken,
        SecretKind::Jwt,
        SecretKind::Authorization,
        SecretKind::UrlPassword,
        SecretKind::AssignedSecret,
        SecretKind::CommandLinePassword,
    ];

    /// The kind's name, as written in its marker.
    pub fn name(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "private-key",
            SecretKind::AwsAccessKey => "aws-access-key",
            SecretKind::GcpKey => "gcp-key",
            SecretKind::AzureKey => "azure-key",
            SecretKind::GithubToken => "github-token",
            SecretKind::GitlabToken => "gitlab-token",
            SecretKind::SlackToken => "slack-token",
            SecretKind::StripeKey => "stripe-key",
            SecretKind::NpmToken => "npm-token",
            SecretKind::PypiToken => "pypi-token",
            SecretKind::OpenaiKey => "openai-key",
            SecretKind::AnthropicKey => "anthropic-key",
            SecretKind::HuggingfaceToken => "huggingface-token",
            SecretKind::VendorToken => "vendor-token",
            SecretKind::Jwt => "jwt",
            SecretKind::Authorization => "authorization",
            SecretKind::UrlPassword => "url-password",
            SecretKind::AssignedSecret => "assigned-secret",
            SecretKind::CommandLinePassword => "command-line-password",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<SecretKind> {
        SecretKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The marker that replaces a secret of this kind.
    pub fn marker(self) -> String {
        format!("{MARKER_OPEN}{}]", self.name())
    }
}

/// How every marker begins.
pub const MARKER_OPEN: &str = "[REDACTED ";

/// The marker of redactions made before markers named their kind.
pub const LEGACY_MARKER: &str = "[REDACTED]";

/// A redacted text and what was taken out of it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Redacted {
    /// The text with every secret replaced by its kind's marker.
    pub text: String,
    /// How many secrets of each kind were replaced.
    pub found: BTreeMap<SecretKind, u32>,
}

impl Redacted {
    /// How many secrets were replaced in all.
    pub fn total(&self) -> u32 {
        self.found.values().sum()
    }
}

/// One secret found: its byte range and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
    kind: SecretKind,
}

/// Returns `text` with every secret replaced by its kind's marker.
pub fn redact(text: &str) -> Redacted {
    let mut spans = Vec::new();
    private_keys(text, &mut spans);
    prefixed_tokens(text, &mut spans);
    authorization(text, &mut spans);
    url_passwords(text, &mut spans);
    assigned_secrets(text, &mut spans);
    command_line_passwords(text, &mut spans);
    // Earliest first; of two starting together, the longer. A span inside
    // one already taken is dropped.
    spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let mut out = Redacted {
        text: String::with_capacity(text.len()),
        found: BTreeMap::new(),
    };
    let mut at = 0;
    for s in spans {
        if s.start < at || s.end <= s.start {
            continue;
        }
        out.text.push_str(&text[at..s.start]);
        out.text.push_str(&s.kind.marker());
        *out.found.entry(s.kind).or_insert(0) += 1;
        at = s.end;
    }
    out.text.push_str(&text[at..]);
    out
}

/// Counts the markers in `text` by kind name (a legacy `[REDACTED]` counts
/// as `secret`): what an audit can say of a redacted summary.
pub fn count_markers(text: &str) -> BTreeMap<&'static str, u32> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while let Some(i) = rest.find("[REDACTED") {
        rest = &rest[i + "[REDACTED".len()..];
        let name = if rest.starts_with(']') {
            Some("secret")
        } else if let Some(after) = rest.strip_prefix(' ') {
            after
                .find(']')
                .and_then(|end| SecretKind::from_name(&after[..end]))
                .map(SecretKind::name)
        } else {
            None
        };
        if let Some(name) = name {
            *out.entry(name).or_insert(0) += 1;
        }
    }
    out
}

/// Whether `key` (a JSON object key, an environment variable, a header or
/// option name) names a secret: a segment containing `password`, `passwd`
/// or `passphrase`; `secret` or `token` as the last segment or before
/// `key`/`access`; a key of an API, a private, access, account or signing
/// key; `credentials`. Segments are split at `_`, `-`, `.`, spaces and
/// lower-to-upper case changes, so `DB_PASSWORD`, `apiKey`, `X-Api-Key`,
/// `client_secret` and `_authToken` all count, while `max_tokens`,
/// `token_count` and `secret_name` do not.
pub fn is_secret_key(key: &str) -> bool {
    let segments = key_segments(key);
    let n = segments.len();
    segments.iter().enumerate().any(|(i, s)| {
        let next = segments.get(i + 1).map(String::as_str);
        let last = i + 1 == n;
        s.contains("password")
            || s.contains("passwd")
            || s.contains("passphrase")
            || matches!(
                s.as_str(),
                "apikey" | "privatekey" | "accesskey" | "secretkey" | "accountkey" | "credentials"
            )
            || ((s == "secret" || s == "token" || s == "authtoken")
                && (last || matches!(next, Some("key" | "access"))))
            || (matches!(
                s.as_str(),
                "api" | "private" | "access" | "account" | "signing" | "encryption" | "master"
            ) && next == Some("key")
                && i + 2 >= n)
            || (s.ends_with("secret") && last)
            || (s == "sharedaccesskey")
    })
}

/// The lowercase segments of a key name.
fn key_segments(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if matches!(c, '_' | '-' | '.' | ' ' | '/' | ':') {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        current.push(c.to_ascii_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Characters that continue a word: a secret's prefix must not follow one.
fn word_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')
}

/// Whether a token may start at `at` (start of text or after a non-word
/// character).
fn at_boundary(text: &str, at: usize) -> bool {
    at == 0 || !word_char(text.as_bytes()[at - 1])
}

/// The end of the run of bytes from `at` that satisfy `ok`.
fn run_end(text: &str, at: usize, ok: impl Fn(u8) -> bool) -> usize {
    let bytes = text.as_bytes();
    let mut end = at;
    while end < bytes.len() && ok(bytes[end]) {
        end += 1;
    }
    end
}

/// A token's characters: letters, digits, `_` and `-`.
fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')
}

/// Base64 (standard and URL-safe) characters.
fn base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_')
}

// ---- private keys ----

/// PEM and PGP private key blocks: from the BEGIN line through the END line
/// when the body reaches it, else through the last line of key material.
fn private_keys(text: &str, spans: &mut Vec<Span>) {
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

// ---- prefixed tokens ----

/// A token format known by its prefix.
struct Prefix {
    prefix: &'static str,
    kind: SecretKind,
    /// Fewest token characters after the prefix.
    min: usize,
}

const PREFIXES: &[Prefix] = &[
    Prefix {
        prefix: "sk-ant-",
        kind: SecretKind::AnthropicKey,
        min: 20,
    },
    Prefix {
        prefix: "sk-proj-",
        kind: SecretKind::OpenaiKey,
        min: 20,
    },
    Prefix {
        prefix: "sk-svcacct-",
        kind: SecretKind::OpenaiKey,
        min: 20,
    },
    Prefix {
        prefix: "sk-admin-",
        kind: SecretKind::OpenaiKey,
        min: 20,
    },
    Prefix {
        prefix: "sk-",
        kind: SecretKind::OpenaiKey,
        min: 20,
    },
    Prefix {
        prefix: "sk_live_",
        kind: SecretKind::StripeKey,
        min: 16,
    },
    Prefix {
        prefix: "sk_test_",
        kind: SecretKind::StripeKey,
        min: 16,
    },
    Prefix {
        prefix: "rk_live_",
        kind: SecretKind::StripeKey,
        min: 16,
    },
    Prefix {
        prefix: "rk_test_",
        kind: SecretKind::StripeKey,
        min: 16,
    },
    Prefix {
        prefix: "whsec_",
        kind: SecretKind::StripeKey,
        min: 24,
    },
    Prefix {
        prefix: "github_pat_",
        kind: SecretKind::GithubToken,
        min: 30,
    },
    Prefix {
        prefix: "ghp_",
        kind: SecretKind::GithubToken,
        min: 30,
    },
    Prefix {
        prefix: "gho_",
        kind: SecretKind::GithubToken,
        min: 30,
    },
    Prefix {
        prefix: "ghs_",
        kind: SecretKind::GithubToken,
        min: 30,
    },
    Prefix {
        prefix: "ghu_",
        kind: SecretKind::GithubToken,
        min: 30,
    },
    Prefix {
        prefix: "ghr_",
        kind: SecretKind::GithubToken,
        min: 30,
    },
    Prefix {
        prefix: "glpat-",
        kind: SecretKind::GitlabToken,
        min: 20,
    },
    Prefix {
        prefix: "gldt-",
        kind: SecretKind::GitlabToken,
        min: 20,
    },
    Prefix {
        prefix: "glrt-",
        kind: SecretKind::GitlabToken,
        min: 20,
    },
    Prefix {
        prefix: "glptt-",
        kind: SecretKind::GitlabToken,
        min: 20,
    },
    Prefix {
        prefix: "xoxb-",
        kind: SecretKind::SlackToken,
        min: 16,
    },
    Prefix {
        prefix: "xoxp-",
        kind: SecretKind::SlackToken,
        min: 16,
    },
    Prefix {
        prefix: "xoxa-",
        kind: SecretKind::SlackToken,
        min: 16,
    },
    Prefix {
        prefix: "xoxe-",
        kind: SecretKind::SlackToken,
        min: 16,
    },
    Prefix {
        prefix: "xoxr-",
        kind: SecretKind::SlackToken,
        min: 16,
    },
    Prefix {
        prefix: "xoxs-",
        kind: SecretKind::SlackToken,
        min: 16,
    },
    Prefix {
        prefix: "xapp-",
        kind: SecretKind::SlackToken,
        min: 16,
    },
    Prefix {
        prefix: "npm_",
        kind: SecretKind::NpmToken,
        min: 30,
    },
    Prefix {
        prefix: "pypi-",
        kind: SecretKind::PypiToken,
        min: 40,
    },
    Prefix {
        prefix: "hf_",
        kind: SecretKind::HuggingfaceToken,
        min: 30,
    },
    Prefix {
        prefix: "AIza",
        kind: SecretKind::GcpKey,
        min: 30,
    },
    Prefix {
        prefix: "dop_v1_",
        kind: SecretKind::VendorToken,
        min: 40,
    },
    Prefix {
        prefix: "doo_v1_",
        kind: SecretKind::VendorToken,
        min: 40,
    },
    Prefix {
        prefix: "shpat_",
        kind: SecretKind::VendorToken,
        min: 30,
    },
    Prefix {
        prefix: "shpss_",
        kind: SecretKind::VendorToken,
        min: 30,
    },
];

/// Tokens known by their shape: vendor prefixes, AWS key ids, Google OAuth
/// tokens, SendGrid keys, JWTs, Azure client secrets, Slack webhooks.
fn prefixed_tokens(text: &str, spans: &mut Vec<Span>) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if !at_boundary(text, at) || !bytes[at].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        if let Some(span) = token_at(text, at) {
            at = span.end;
            spans.push(span);
        } else {
            // Skip the rest of this word: prefixes match only at its start.
            at = run_end(text, at, token_byte).max(at + 1);
        }
    }
}

/// The shaped token starting at `at`, if one does.
fn token_at(text: &str, at: usize) -> Option<Span> {
    let rest = &text[at..];
    let span = |len: usize, kind| {
        Some(Span {
            start: at,
            end: at + len,
            kind,
        })
    };
    if let Some(len) = jwt_len(rest) {
        return span(len, SecretKind::Jwt);
    }
    for p in PREFIXES {
        if let Some(after) = rest.strip_prefix(p.prefix) {
            let n = run_end(after, 0, token_byte);
            if n >= p.min {
                return span(p.prefix.len() + n, p.kind);
            }
        }
    }
    for id in ["AKIA", "ASIA", "ABIA", "ACCA", "AROA", "AIDA"] {
        if let Some(after) = rest.strip_prefix(id) {
            let n = run_end(after, 0, |b| b.is_ascii_uppercase() || b.is_ascii_digit());
            if n == 16 && !after.as_bytes().get(n).copied().is_some_and(token_byte) {
                return span(4 + n, SecretKind::AwsAccessKey);
            }
        }
    }
    if let Some(after) = rest.strip_prefix("ya29.") {
        let n = run_end(after, 0, |b| token_byte(b) || b == b'.');
        if n >= 20 {
            return span(5 + n, SecretKind::GcpKey);
        }
    }
    if let Some(after) = rest.strip_prefix("SG.") {
        let n = run_end(after, 0, |b| token_byte(b) || b == b'.');
        if n >= 40 && after[..n].contains('.') {
            return span(3 + n, SecretKind::VendorToken);
        }
    }
    if rest.starts_with("hooks.slack.com/services/") {
        let n = run_end(rest, 0, |b| token_byte(b) || b == b'.' || b == b'/');
        if n > "hooks.slack.com/services/".len() + 20 {
            return span(n, SecretKind::SlackToken);
        }
    }
    // Azure AD client secrets: three characters, a digit, `Q~`, then 31–34.
    let n = run_end(rest, 0, |b| token_byte(b) || b == b'~' || b == b'.');
    let b = rest.as_bytes();
    if (37..=40).contains(&n) && b[3].is_ascii_digit() && &rest[4..6] == "Q~" {
        return span(n, SecretKind::AzureKey);
    }
    None
}

/// The length of the JWT at the start of `s`: three base64url parts, the
/// first two JSON objects (`eyJ`).
fn jwt_len(s: &str) -> Option<usize> {
    let part = |from: usize| {
        run_end(s, from, |b| {
            b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
        })
    };
    if !s.starts_with("eyJ") {
        return None;
    }
    let header = part(0);
    if header < 10 || s.as_bytes().get(header) != Some(&b'.') || !s[header + 1..].starts_with("eyJ")
    {
        return None;
    }
    let payload = part(header + 1);
    if payload - header - 1 < 10 || s.as_bytes().get(payload) != Some(&b'.') {
        return None;
    }
    let signature = part(payload + 1);
    Some(signature)
}

// ---- Authorization headers ----

/// The credential after `Basic ` or `Bearer ` in an `Authorization` header
/// (or after `Bearer ` anywhere, when it looks like a token: 16 characters
/// or more with a digit).
fn authorization(text: &str, spans: &mut Vec<Span>) {
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
fn url_passwords(text: &str, spans: &mut Vec<Span>) {
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
fn assigned_secrets(text: &str, spans: &mut Vec<Span>) {
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

/// A value that stands for a secret without being one: an environment or
/// template reference, a mask, an earlier redaction, a type or a schema
/// word.
fn placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value.starts_with('$')
        || value.starts_with("{{")
        || value.starts_with("%(")
        || value.starts_with("process.env")
        || value.starts_with("os.environ")
        || value.starts_with("[REDACTED")
        || value.starts_with("<")
        || value
            .chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '-' | '#' | '•'))
        || matches!(
            lower.as_str(),
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
fn command_line_passwords(text: &str, spans: &mut Vec<Span>) {
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
            if let Some((at, pw)) = value {
                let pw = pw.trim_matches(|c| c == '"' || c == '\'');
                let at = at + usize::from(text[line_start + at..].starts_with(['"', '\'']));
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
