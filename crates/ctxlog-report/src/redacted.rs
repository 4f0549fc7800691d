//! A session's events with every secret in them redacted: what
//! `export --format markdown --redact` and `report --redact` render. The
//! log is never changed; this is a copy for one rendering.

use crate::ReportError;
use ctxlog_core::redact::{is_secret_key, redact, SecretKind};
use ctxlog_core::Envelope;
use serde_json::Value;
use std::collections::BTreeMap;

/// Secrets replaced, by kind.
pub type RedactionCounts = BTreeMap<SecretKind, u32>;

/// `events` with every string in them redacted ([`redact`]), and a string
/// whose key names a secret (`{"password": "…"}` in a tool's input)
/// replaced whole. The same string becomes the same text wherever it is,
/// so ids stay consistent.
pub fn redacted_events(
    events: &[Envelope],
) -> Result<(Vec<Envelope>, RedactionCounts), ReportError> {
    let mut counts = RedactionCounts::new();
    let mut out = Vec::with_capacity(events.len());
    for e in events {
        out.push(redacted_event(e, &mut counts)?);
    }
    Ok((out, counts))
}

/// One event redacted as [`redacted_events`] does, its secrets counted
/// into `counts`.
pub fn redacted_event(e: &Envelope, counts: &mut RedactionCounts) -> Result<Envelope, ReportError> {
    let mut value = serde_json::to_value(e).map_err(|err| ReportError::redaction(e.seq, &err))?;
    redact_value(&mut value, None, counts);
    serde_json::from_value(value).map_err(|err| ReportError::redaction(e.seq, &err))
}

fn redact_value(value: &mut Value, key: Option<&str>, counts: &mut RedactionCounts) {
    match value {
        Value::String(s) => {
            if key.is_some_and(is_secret_key)
                && s.chars().count() >= 4
                && !s.starts_with("[REDACTED")
            {
                *s = SecretKind::AssignedSecret.marker();
                *counts.entry(SecretKind::AssignedSecret).or_insert(0) += 1;
                return;
            }
            let r = redact(s);
            if r.total() > 0 {
                for (kind, n) in r.found {
                    *counts.entry(kind).or_insert(0) += n;
                }
                *s = r.text;
            }
        }
        Value::Array(items) => {
            for item in items {
                redact_value(item, None, counts);
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                redact_value(v, Some(k), counts);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}
