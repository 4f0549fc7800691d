//! What the page shows of one session, derived in one fold over its
//! events: the timeline, the window right after each step (each distinct
//! rendering of a message stored once), what left the window between two
//! steps, and the summaries.

use crate::ReportError;
use ctxlog_core::policy::Estimator;
use ctxlog_core::window::{render_message, window_order, ToolResult};
use ctxlog_core::{
    timeline_and_state, ContentError, Envelope, Event, JobStatus, Message, MessageId, PartId, Role,
    SessionState, StepRow, Timeline, WindowMessage, WindowPart,
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

/// A message's rendering is stored once per (message, version): the
/// version counts the events that touched it.
type RenderKey = (MessageId, u64);

/// Folds `events` into what the page shows.
pub fn session_data(label: &str, events: &[Envelope]) -> Result<SessionData, ReportError> {
    let mut renders: BTreeMap<RenderKey, usize> = BTreeMap::new();
    let mut messages: Vec<Value> = Vec::new();
    let mut windows: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    let mut versions = Versions::default();
    let (timeline, end) = timeline_and_state(events, |state, row: &StepRow| {
        versions.advance(events, row.seq, state);
        windows.push(window_refs(state, &versions, &mut renders, &mut messages));
    })
    .map_err(|r| ReportError::refused(label, r))?;
    versions.advance(events, end.head, &end);
    let last = window_refs(&end, &versions, &mut renders, &mut messages);
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
                "open": row.open,
                "events": row.events,
                "pivot": pivot,
                "window": window,
                "removed": removed(window, next, &messages),
            })
        })
        .collect();
    let summaries =
        summaries(&end, events, &estimator).map_err(|e| ReportError::content(label, e))?;
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
/// messages touched since they were last rendered.
fn window_refs(
    state: &SessionState,
    versions: &Versions,
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
        let key = (m.id, versions.of(m.id));
        if let Some(&r) = renders.get(&key) {
            refs.push(r);
            continue;
        }
        let Some(rendered) = render_message(state, m) else {
            continue;
        };
        let r = messages.len();
        messages.push(message_json(m, &rendered, &estimator));
        renders.insert(key, r);
        refs.push(r);
    }
    (pivot.map(|p| p.to_string()), refs)
}

/// How many events touched each message so far: a rendering depends only
/// on the events that touched its message (parts appended, updated,
/// pruned or restored, its step or error, its job's outcome).
#[derive(Default)]
struct Versions {
    /// Events folded so far (an index into the events).
    next: usize,
    of: BTreeMap<MessageId, u64>,
}

impl Versions {
    /// Counts the events up to `seq` (`state` is at or past them).
    fn advance(&mut self, events: &[Envelope], seq: u64, state: &SessionState) {
        while let Some(e) = events.get(self.next).filter(|e| e.seq <= seq) {
            self.next += 1;
            for m in touched(&e.event, state) {
                *self.of.entry(m).or_default() += 1;
            }
        }
    }

    fn of(&self, m: MessageId) -> u64 {
        self.of.get(&m).copied().unwrap_or(0)
    }
}

/// The messages whose rendering `event` may change.
fn touched(event: &Event, state: &SessionState) -> Vec<MessageId> {
    let of_part = |p: &PartId| state.part(*p).map(|(m, _)| m.id);
    let of_job = |job: &MessageId| {
        let summary = state.job(*job).and_then(|j| j.summary);
        std::iter::once(*job).chain(summary).collect()
    };
    match event {
        Event::MessageAppended { message, .. }
        | Event::PartAppended { message, .. }
        | Event::StepFinished { message, .. }
        | Event::MessageErrored { message, .. }
        | Event::CompactionRequested { message, .. } => vec![*message],
        Event::PartUpdated { part, .. } => of_part(part).into_iter().collect(),
        Event::PartsPruned { parts, .. } => parts.iter().filter_map(|p| of_part(&p.part)).collect(),
        Event::PartsRestored { parts, .. } => parts.iter().filter_map(of_part).collect(),
        Event::CompactionStarted { job, .. }
        | Event::SummaryCompleted { job, .. }
        | Event::CompactionFailed { job, .. } => of_job(job),
        // Whether a failed compaction's marker is sent is the policy's.
        Event::PolicyChanged { .. } => state.jobs.iter().map(|j| j.marker).collect(),
        _ => Vec::new(),
    }
}

/// Text cut to [`MAX_PART_CHARS`], and how many characters were left out.
fn shown(text: &str) -> (String, usize) {
    cut_at(text, MAX_PART_CHARS)
}

/// `text`'s first `max` characters, and how many were left out.
pub(crate) fn cut_at(text: &str, max: usize) -> (String, usize) {
    let total = text.chars().count();
    if total <= max {
        return (text.to_owned(), 0);
    }
    (text.chars().take(max).collect(), total - max)
}

/// One rendered message as the page's JSON.
fn message_json(m: &Message, w: &WindowMessage, e: &Estimator) -> Value {
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
fn summaries(
    state: &SessionState,
    events: &[Envelope],
    e: &Estimator,
) -> Result<Vec<Value>, ContentError> {
    let mut out = Vec::new();
    for j in &state.jobs {
        let text = match j.summary.and_then(|s| state.message(s)) {
            Some(m) => m.texts_in(events)?.join("\n"),
            None => String::new(),
        };
        let (status, error) = match &j.status {
            JobStatus::Completed { .. } => ("completed", None),
            JobStatus::Failed { error } => ("failed", Some(error.clone())),
            _ => ("pending", None),
        };
        let (shown_text, cut) = shown(&text);
        out.push(json!({
                "job": j.marker.to_string(),
                "requested_seq": j.requested_seq,
                "auto": j.auto,
                "status": status,
                "error": error,
                "text": shown_text,
                "cut": cut,
                "tokens": e.estimate(&text),
        }));
    }
    Ok(out)
}
