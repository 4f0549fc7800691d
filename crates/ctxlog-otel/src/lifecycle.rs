//! What the lifecycle did (each line of ctxlog's audit: prunes,
//! compactions and their attempts, summaries, failures, pauses, continues)
//! as `ctxlog.<kind>` events of the turn's span. The conventions have no
//! span or event for these.

use crate::content::Content;
use crate::model::{ns, Attribute, SpanEvent, Value};
use crate::semconv::SEQ;
use crate::turn::Turn;
use ctxlog_core::redact::redact;
use ctxlog_core::{AuditEntry, Envelope};

/// The most events a turn's span carries (OpenTelemetry SDKs keep 128 by
/// default, and backends cap them): a turn that reaches it is sent, and
/// what follows goes in a turn span of its own.
pub const MAX_EVENTS: usize = 128;

/// The most ids a span event names (a prune of thousands of parts says
/// how many in `ctxlog.prune.parts`).
pub const MAX_IDS: usize = 100;

/// Adds the audit line `line` of `e` to `turn` as a span event, with
/// `extra` attributes (its words redacted unless `content` is verbatim);
/// a completed summary's event waits for the next
/// call's input tokens (the context after it).
pub fn add_event(
    turn: &mut Turn,
    e: &Envelope,
    line: AuditEntry,
    extra: Vec<Attribute>,
    content: Content,
) {
    // The audit's words can quote what a recording holds (a provider's
    // error text): secrets are replaced unless texts go out verbatim.
    let what = match content {
        Content::Verbatim => line.what,
        _ => redact(&line.what).text,
    };
    let mut attributes: Vec<Attribute> = vec![
        (SEQ, Value::count(e.seq)),
        ("ctxlog.what", Value::Str(what)),
        ("ctxlog.policy", Value::Str(line.policy)),
    ];
    if let Some(tokens) = line.tokens {
        attributes.push(("ctxlog.tokens", Value::count(tokens)));
    }
    let mut ids = line.ids;
    ids.truncate(MAX_IDS);
    attributes.push(("ctxlog.ids", Value::Strs(ids)));
    attributes.extend(extra);
    if line.kind == "summary_completed" {
        turn.awaiting_after = Some(turn.events.len());
    }
    turn.events.push(SpanEvent {
        name: format!("ctxlog.{}", line.kind),
        time_ns: ns(e.recorded_at),
        attributes,
    });
}
