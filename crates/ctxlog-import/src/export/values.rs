//! ctxlog's values written the way OpenCode writes them: token counts,
//! costs, numbers, part times, tool states and message errors, and the
//! source fields an import kept merged over an object.

use crate::json::merge;
use crate::opencode_names::{FAILED_REF, RESTARTED_REF};
use ctxlog_core::{PruneMark, Span, TokenUsage, ToolState};
use serde_json::{json, Value};

/// A message's or step's `tokens` object.
pub(super) fn tokens_json(t: &TokenUsage) -> Value {
    let mut v = json!({
        "input": t.input,
        "output": t.output,
        "reasoning": t.reasoning,
        "cache": {"read": t.cache_read, "write": t.cache_write},
    });
    if let Some(total) = t.total {
        v["total"] = json!(total);
    }
    v
}

/// A `cost` in dollars (none recorded is 0).
pub(super) fn cost_json(micros: Option<u64>) -> Value {
    js_number(micros.unwrap_or(0) as f64 / 1_000_000.0)
}

/// `x` as JavaScript writes it: a whole number without a fraction (`0`,
/// not `0.0`).
pub(super) fn js_number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// `v` with what the source kept merged over it, if anything.
pub(super) fn with_source(mut v: Value, kept: Option<&Value>) -> Value {
    if let Some(k) = kept {
        merge(&mut v, k.clone());
    }
    v
}

/// An error as OpenCode's schema takes it: its own error names with their
/// required fields; ctxlog's compaction outcomes as an `UnknownError` with a
/// `ref`; any other name becomes an `UnknownError` whose message keeps the
/// name (`Name: message`).
pub(super) fn error_json(name: &str, message: &str) -> Value {
    match name {
        "MessageAbortedError" | "ContextOverflowError" | "ContentFilterError" => {
            json!({"name": name, "data": {"message": message}})
        }
        "MessageOutputLengthError" => json!({"name": name, "data": {}}),
        "StructuredOutputError" => {
            json!({"name": name, "data": {"message": message, "retries": 0}})
        }
        "APIError" => {
            json!({"name": name, "data": {"message": message, "isRetryable": false}})
        }
        "UnknownError" => json!({"name": name, "data": {"message": message}}),
        "CompactionFailed" => ctxlog_error_json(FAILED_REF, message),
        "CompactionRestarted" => ctxlog_error_json(RESTARTED_REF, message),
        other => {
            json!({"name": "UnknownError", "data": {"message": format!("{other}: {message}")}})
        }
    }
}

/// A ctxlog compaction outcome as an `UnknownError` whose `ref` names it, so
/// that a re-import reads the outcome back exactly.
pub(super) fn ctxlog_error_json(reference: &str, message: &str) -> Value {
    json!({"name": "UnknownError", "data": {"message": message, "ref": reference}})
}

/// A part's `time` (`start`, and `end` when known).
pub(super) fn span_json(s: &Option<Span>) -> Option<Value> {
    s.map(|s| {
        let mut t = json!({"start": s.start});
        if let Some(e) = s.end {
            t["end"] = json!(e);
        }
        t
    })
}

/// `v` as a JSON object, which OpenCode requires of a tool's input and
/// metadata: `null` is `{}`, any other non-object is `{"value": v}`.
fn as_object(v: Value) -> Value {
    match v {
        Value::Object(_) => v,
        Value::Null => json!({}),
        other => json!({ "value": other }),
    }
}

/// A tool part's `state`; a pruned output carries `time.compacted`.
pub(super) fn tool_state_json(s: &ToolState, pruned: Option<&PruneMark>) -> Value {
    let input = as_object(serde_json::to_value(s.input()).unwrap_or(Value::Null));
    match s {
        ToolState::Pending { raw, .. } => {
            json!({"status": "pending", "input": input, "raw": raw})
        }
        ToolState::Running { title, start, .. } => {
            let mut v = json!({"status": "running", "input": input, "time": {"start": start}});
            if let Some(t) = title {
                v["title"] = json!(t);
            }
            v
        }
        ToolState::Completed {
            output,
            title,
            metadata,
            start,
            end,
            attachments,
            ..
        } => {
            let mut time = json!({"start": start, "end": end});
            if let Some(mark) = pruned {
                time["compacted"] = json!(mark.at);
            }
            let mut v = json!({
                "status": "completed",
                "input": input,
                "output": output,
                "title": title.clone().unwrap_or_default(),
                "metadata": as_object(serde_json::to_value(metadata).unwrap_or(Value::Null)),
                "time": time,
            });
            if !attachments.is_empty() {
                v["attachments"] = attachments
                    .iter()
                    .map(|a| json!({"type": "file", "mime": a.mime, "filename": a.filename, "url": a.url}))
                    .collect();
            }
            v
        }
        ToolState::Error {
            error, start, end, ..
        } => {
            json!({"status": "error", "input": input, "error": error, "time": {"start": start, "end": end}})
        }
    }
}
