//! Tokens known by their shape: vendor prefixes, AWS key ids, Google
//! OAuth tokens, SendGrid keys, JWTs, Azure client secrets, Slack webhooks.

use super::{at_boundary, run_end, token_byte, SecretKind, Span};
/// Token formats known by their prefix: the prefix, the kind, and the
/// fewest token characters after it. Longer prefixes come before the
/// shorter ones they start with (`sk-ant-` before `sk-`).
#[rustfmt::skip]
const PREFIXES: &[(&str, SecretKind, usize)] = &[
    ("sk-ant-", SecretKind::AnthropicKey, 20),
    ("sk-proj-", SecretKind::OpenaiKey, 20),
    ("sk-svcacct-", SecretKind::OpenaiKey, 20),
    ("sk-admin-", SecretKind::OpenaiKey, 20),
    ("sk-", SecretKind::OpenaiKey, 20),
    ("sk_live_", SecretKind::StripeKey, 16),
    ("sk_test_", SecretKind::StripeKey, 16),
    ("rk_live_", SecretKind::StripeKey, 16),
    ("rk_test_", SecretKind::StripeKey, 16),
    ("whsec_", SecretKind::StripeKey, 24),
    ("github_pat_", SecretKind::GithubToken, 30),
    ("ghp_", SecretKind::GithubToken, 30),
    ("gho_", SecretKind::GithubToken, 30),
    ("ghs_", SecretKind::GithubToken, 30),
    ("ghu_", SecretKind::GithubToken, 30),
    ("ghr_", SecretKind::GithubToken, 30),
    ("glpat-", SecretKind::GitlabToken, 20),
    ("gldt-", SecretKind::GitlabToken, 20),
    ("glrt-", SecretKind::GitlabToken, 20),
    ("glptt-", SecretKind::GitlabToken, 20),
    ("xoxb-", SecretKind::SlackToken, 16),
    ("xoxp-", SecretKind::SlackToken, 16),
    ("xoxa-", SecretKind::SlackToken, 16),
    ("xoxe-", SecretKind::SlackToken, 16),
    ("xoxr-", SecretKind::SlackToken, 16),
    ("xoxs-", SecretKind::SlackToken, 16),
    ("xapp-", SecretKind::SlackToken, 16),
    ("npm_", SecretKind::NpmToken, 30),
    ("pypi-", SecretKind::PypiToken, 40),
    ("hf_", SecretKind::HuggingfaceToken, 30),
    ("AIza", SecretKind::GcpKey, 30),
    ("dop_v1_", SecretKind::VendorToken, 40),
    ("doo_v1_", SecretKind::VendorToken, 40),
    ("shpat_", SecretKind::VendorToken, 30),
    ("shpss_", SecretKind::VendorToken, 30),
];

/// Tokens known by their shape: vendor prefixes, AWS key ids, Google OAuth
/// tokens, SendGrid keys, JWTs, Azure client secrets, Slack webhooks.
pub(super) fn prefixed_tokens(text: &str, spans: &mut Vec<Span>) {
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
    for &(prefix, kind, min) in PREFIXES {
        if let Some(after) = rest.strip_prefix(prefix) {
            let n = run_end(after, 0, token_byte);
            if n >= min {
                return span(prefix.len() + n, kind);
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
