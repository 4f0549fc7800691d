//! What the page shows of one session, derived in one fold over its
//! events: the timeline, the window right after each step (each distinct
//! rendering of a message stored once), what left the window between two
//! steps, and the summaries.

use ctxlog_core::policy::Estimator;
use ctxlog_core::window::{render_message, window_order, ToolResult};
use ctxlog_core::{
    timeline_with, Envelope, JobStatus, Message, PartBody, RefusedEvent, Role, SessionState,
    StepRow, Timeline, ToolState, WindowMessage, WindowPart,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The longest text of one part the page holds; longer ones are cut, with
/// their size said (`ctxlog window --at SEQ` prints them whole).
pub const MAX_PART_CHARS: usize = 20_000;

/// One session as the page shows it.
pub struct SessionData {
    /// Its timeline (the chart's points and the step table).
    pub timeline: Timeline,
    /// The page's JSON for it: steps with their windows, the messages they
    /// refer to, the summaries.
    pub json: Value,
    /// The title the recording gave, if any.
    pub title: Option<String>,
}

/// A message's rendering is stored once per (message, fingerprint).
type RenderKey = (usize, u64);

/// Folds `events` into what the page shows.
pub fn session_data(label: &str, events: &[Envelope]) -> Result<SessionData, RefusedEvent> {
    let mut renders: BTreeMap<RenderKey, usize> = BTreeMap::new();
    let mut messages: Vec<Value> = Vec::new();
    let mut windows: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    let timeline = timeline_with(events, |state, _row: &StepRow| {
        windows.push(window_refs(state, &mut renders, &mut messages));
    })?;
    let end = SessionState::replay(events)?;
    let last = window_refs(&end, &mut renders, &mut messages);
    let estimator = end.policy.estimator;
    let steps: Vec<Value> = timeline
        .steps
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let (pivot, window) = &windows[i];
            let next = windows.get(i + 1).map_or(&last.1, |w| &w.1);
            json!({
                "seq": row.seq,
                "time": row.time,
                "tokens": row.tokens,
                "total": row.tokens.total,
                "count": row.count,
                "usable": row.usable,
                "threshold": row.threshold,
                "percent": row.percent,
                "window_estimate": row.window_estimate,
                "events": row.events,
                "pivot": pivot,
                "window": window,
                "removed": removed(window, next, &messages),
            })
        })
        .collect();
    let summaries = summaries(&end, &estimator);
    let json = json!({
        "label": label,
        "session": end.session.map(|s| s.to_string()),
        "source": end.source_id,
        "title": title(&end),
        "policy": end.policy,
        "limits": end.limits,
        "steps": steps,
        "messages": messages,
        "summaries": summaries,
    });
    Ok(SessionData {
        title: title(&end),
        timeline,
        json,
    })
}

fn title(state: &SessionState) -> Option<String> {
    state
        .about
        .as_ref()
        .and_then(|a| a.title.clone())
        .or_else(|| state.title.clone())
}

/// The window at `state` as references into `messages`, rendering only
/// messages whose fingerprint is new.
fn window_refs(
    state: &SessionState,
    renders: &mut BTreeMap<RenderKey, usize>,
    messages: &mut Vec<Value>,
) -> (Option<String>, Vec<usize>) {
    let (pivot, order) = window_order(state);
    let estimator = state.policy.estimator;
    let mut refs = Vec::with_capacity(order.len());
    for i in order {
        let Some(m) = state.messages.get(i) else {
            continue;
        };
        let key = (i, fingerprint(m));
        if let Some(&r) = renders.get(&key) {
            refs.push(r);
            continue;
        }
        let Some(rendered) = render_message(state, m) else {
            continue;
        };
        let r = messages.len();
        messages.push(message_json(m, &rendered, &estimator, pivot == Some(m.id)));
        renders.insert(key, r);
        refs.push(r);
    }
    (pivot.map(|p| p.to_string()), refs)
}

/// What a rendering depends on, cheaply: each part's kind, state, size and
/// prune mark, the message's error and finish. Equal fingerprints of one
/// message render equally within a session.
fn fingerprint(m: &Message) -> u64 {
    let mut h = Fnv::default();
    h.add(m.parts.len() as u64);
    h.add(u64::from(m.error.is_some()));
    h.add(u64::from(m.finish.is_some()));
    for p in &m.parts {
        h.add(u64::from(p.pruned.is_some()));
        match &p.body {
            PartBody::Text { text, .. } | PartBody::Reasoning { text, .. } => {
                h.add(1);
                h.add(text.len() as u64);
            }
            PartBody::Tool { state, .. } => {
                let (tag, len) = match state {
                    ToolState::Pending { .. } => (2, 0),
                    ToolState::Running { .. } => (3, 0),
                    ToolState::Completed { output, .. } => (4, output.len()),
                    ToolState::Error { error, .. } => (5, error.len()),
                };
                h.add(tag);
                h.add(len as u64);
            }
            _ => h.add(6),
        }
    }
    h.0
}

/// FNV-1a over u64 words: deterministic, no hash-map order involved.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn add(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Text cut to [`MAX_PART_CHARS`], and how many characters were left out.
fn shown(text: &str) -> (String, usize) {
    let total = text.chars().count();
    if total <= MAX_PART_CHARS {
        return (text.to_owned(), 0);
    }
    (
        text.chars().take(MAX_PART_CHARS).collect(),
        total - MAX_PART_CHARS,
    )
}

/// One rendered message as the page's JSON.
fn message_json(m: &Message, w: &WindowMessage, e: &Estimator, pivot: bool) -> Value {
    let parts: Vec<Value> = w
        .parts
        .iter()
        .map(|p| {
            let tokens = p.estimate(e);
            match p {
                WindowPart::Text(t) | WindowPart::Reasoning(t) => {
                    let (text, cut) = shown(t);
                    let kind = if matches!(p, WindowPart::Text(_)) {
                        "text"
                    } else {
                        "reasoning"
                    };
                    json!({"type": kind, "text": text, "cut": cut, "tokens": tokens})
                }
                WindowPart::File(a) => json!({
                    "type": "file", "text": a.filename.clone().unwrap_or_else(|| a.mime.clone()),
                    "cut": 0, "tokens": tokens,
                }),
                WindowPart::Tool {
                    call_id,
                    tool,
                    input,
                    result,
                } => {
                    let (out, error) = match result {
                        ToolResult::Output { text, .. } => (text.as_str(), false),
                        ToolResult::Error(t) => (t.as_str(), true),
                    };
                    let (text, cut) = shown(out);
                    let (input, _) = shown(&input.to_json_string());
                    json!({
                        "type": "tool", "call_id": call_id, "tool": tool, "input": input,
                        "text": text, "cut": cut, "error": error,
                        "cleared": out == ctxlog_core::window::PRUNED_PLACEHOLDER,
                        "tokens": tokens,
                    })
                }
            }
        })
        .collect();
    let tokens: u64 = w.parts.iter().map(|p| p.estimate(e)).sum();
    json!({
        "id": m.id.to_string(),
        "source_id": m.source_id,
        "role": match m.role { Role::User => "user", Role::Assistant => "assistant" },
        "summary": m.summary,
        "marker": m.marker,
        "synthetic": m.synthetic,
        "pivot": pivot,
        "tokens": tokens,
        "parts": parts,
    })
}

/// What left the window between two steps: messages no longer sent, and
/// tool outputs newly cleared, with their estimated tokens.
fn removed(before: &[usize], after: &[usize], messages: &[Value]) -> Value {
    let id = |r: usize| messages[r]["id"].as_str().unwrap_or_default().to_owned();
    let after_ids: BTreeMap<String, usize> = after.iter().map(|&r| (id(r), r)).collect();
    let mut gone = Vec::new();
    let mut cleared = Vec::new();
    for &r in before {
        let m = &messages[r];
        match after_ids.get(&id(r)) {
            None => gone.push(json!({
                "message": r,
                "tokens": m["tokens"],
            })),
            Some(&a) if a != r => {
                let was = m["parts"].as_array().cloned().unwrap_or_default();
                let now = messages[a]["parts"].as_array().cloned().unwrap_or_default();
                for (p, q) in was.iter().zip(&now) {
                    if p["type"] == "tool" && p["cleared"] == false && q["cleared"] == true {
                        cleared.push(json!({
                            "message": r,
                            "call_id": p["call_id"],
                            "tool": p["tool"],
                            "tokens": p["tokens"].as_u64().unwrap_or(0)
                                .saturating_sub(q["tokens"].as_u64().unwrap_or(0)),
                        }));
                    }
                }
            }
            Some(_) => {}
        }
    }
    let tokens: u64 = gone
        .iter()
        .chain(&cleared)
        .map(|v| v["tokens"].as_u64().unwrap_or(0))
        .sum();
    json!({"messages": gone, "cleared": cleared, "tokens": tokens})
}

/// Every compaction's summary (or failure), in the order requested.
fn summaries(state: &SessionState, e: &Estimator) -> Vec<Value> {
    state
        .jobs
        .iter()
        .map(|j| {
            let text: String = j
                .summary
                .and_then(|s| state.message(s))
                .map(|m| {
                    m.parts
                        .iter()
                        .filter_map(|p| match &p.body {
                            PartBody::Text { text, .. } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            let (status, error) = match &j.status {
                JobStatus::Completed { .. } => ("completed", None),
                JobStatus::Failed { error } => ("failed", Some(error.clone())),
                _ => ("pending", None),
            };
            let (shown_text, cut) = shown(&text);
            json!({
                "job": j.marker.to_string(),
                "requested_seq": j.requested_seq,
                "auto": j.auto,
                "status": status,
                "error": error,
                "text": shown_text,
                "cut": cut,
                "tokens": e.estimate(&text),
            })
        })
        .collect()
}
