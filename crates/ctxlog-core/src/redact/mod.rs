//! Redaction of secrets from text: private key blocks, cloud and service
//! tokens, JWTs, `Authorization` headers, passwords in URLs and command
//! lines, and values assigned to keys that name a secret.
//!
//! Invariant: only the secret itself is replaced, by a marker that names its
//! kind (`[REDACTED github-token]`); the text around it stays byte for byte.
//! A private key block cut off before its END line loses its key material,
//! never what follows it. A pure function: the same text always gives the
//! same result.
//!
//! Files:
//! - `pem.rs`: PEM and PGP private key blocks.
//! - `placed.rs`: Secrets known by where they stand.
//! - `tokens.rs`: Tokens known by their shape.

use std::collections::BTreeMap;

mod pem;
mod placed;
mod tokens;

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
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) kind: SecretKind,
}

/// Most passes [`redact`] makes over a text (each after the first runs only
/// when the one before found something).
const MAX_PASSES: usize = 4;

/// Returns `text` with every secret replaced by its kind's marker.
/// Redacting the result again finds nothing: a replacement can give a
/// detector the boundary it needs (a token glued to a private key's header,
/// `-----sk-…`, starts a word once the header is a marker), so the text is
/// redacted again until a pass finds nothing new.
pub fn redact(text: &str) -> Redacted {
    let mut out = redact_once(text);
    let mut found_last = out.total() > 0;
    for _ in 1..MAX_PASSES {
        if !found_last {
            break;
        }
        let again = redact_once(&out.text);
        found_last = again.total() > 0;
        out.text = again.text;
        for (kind, n) in again.found {
            *out.found.entry(kind).or_insert(0) += n;
        }
    }
    out
}

/// One pass of every detector over `text`.
fn redact_once(text: &str) -> Redacted {
    let mut spans = Vec::new();
    pem::private_keys(text, &mut spans);
    tokens::prefixed_tokens(text, &mut spans);
    placed::authorization(text, &mut spans);
    placed::url_passwords(text, &mut spans);
    placed::assigned_secrets(text, &mut spans);
    placed::command_line_passwords(text, &mut spans);
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
pub(super) fn at_boundary(text: &str, at: usize) -> bool {
    at == 0 || !word_char(text.as_bytes()[at - 1])
}

/// The end of the run of bytes from `at` that satisfy `ok`.
pub(super) fn run_end(text: &str, at: usize, ok: impl Fn(u8) -> bool) -> usize {
    let bytes = text.as_bytes();
    let mut end = at;
    while end < bytes.len() && ok(bytes[end]) {
        end += 1;
    }
    end
}

/// A token's characters: letters, digits, `_` and `-`.
pub(super) fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')
}

/// Base64 (standard and URL-safe) characters.
pub(super) fn base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_')
}
