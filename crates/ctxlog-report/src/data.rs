//! What the page shows of one session, derived in one fold over its
//! events: the timeline, the window right after each step (each distinct
//! rendering of a message stored once), what left the window between two
//! steps, and the summaries.

use crate::ReportError;
use ctxlog_core::policy::Estimator;
use ctxlog_core::window::{render_message, window_order, ToolResult};
use ctxlog_core::{
    timeline_and_state, ContentError, Envelope, Event, JobStatus, Json, Message, MessageId, PartId,
    Role, SessionState, SourceTarget, StepRow, Timeline, WindowMessage, WindowPart,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::collections::BTreeSet;

/// The longest text of one part the page holds; longer ones are cut, with
/// their size said (`ctxlog window --at SEQ` prints them whole).
pub const MAX_PART_CHARS: usize = 20_000;
/// The shortest a part's text is cut to however long the session: a page
/// of many steps shows each part's beginning.
pub const MIN_PART_CHARS: usize = 200;

/// How long a part's text may be on a page that holds at most
/// `budget_chars` of `events`' texts: the budget shared by the events that
/// can add a text, within [`MIN_PART_CHARS`] and [`MAX_PART_CHARS`]. So a
/// page grows with the number of steps, not with what the tools printed.
pub fn part_chars(events: &[Envelope], budget_chars: usize) -> usize {
    let texts = events
        .iter()
        .filter(|e| {
            matches!(
                e.event,
                Event::PartAppended { .. }
                    | Event::PartUpdated { .. }
                    | Event::SummaryCompleted { .. }
            )
        })
        .count()
        .max(1);
    (budget_chars / texts).clamp(MIN_PART_CHARS, MAX_PART_CHARS)
}

/// The steps whose recorded output count is Claude Code's streaming
/// placeholder, not the final count: those whose message's source field
/// `stop_reason` is `null` in `descriptions` (a session's description
/// stream, or a session's events followed by them). No line of such a step had a
/// stop reason, and only such a line carries the final count.
pub fn streamed_outputs(descriptions: &[Envelope]) -> BTreeSet<MessageId> {
    let mut streamed = BTreeSet::new();
    for e in descriptions {
        if let Event::SourceFields {
            format,
            target: SourceTarget::Message(m),
            fields,
        } = &e.event
        {
            match fields.get("stop_reason") {
                Some(Json::Null) if format == "claude-code" => {
                    streamed.insert(*m);
                }
                Some(_) => {
                    streamed.remove(m);
                }
                None => {}
            }
        }
    }
    streamed
}

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

/// One step's window as the page keeps it: a change of the window before
/// it (its first `keep` references, then `add`), so the page grows with
/// the steps, not with the steps times the window.
struct WindowChange {
    pivot: Option<String>,
    keep: usize,
    add: Vec<usize>,
    size: usize,
    /// What left the window before the next step (known at the next one).
    removed: Value,
}

/// Folds `events` into what the page shows, each part's text cut at
/// `part_chars` (see [`part_chars`]). Only the last step's window is held
/// while folding.
pub fn session_data(
    label: &str,
    events: &[Envelope],
    part_chars: usize,
) -> Result<SessionData, ReportError> {
    let mut renders: BTreeMap<RenderKey, usize> = BTreeMap::new();
    let mut messages: Vec<Value> = Vec::new();
    let mut changes: Vec<WindowChange> = Vec::new();
    let mut previous: Vec<usize> = Vec::new();
    let mut versions = Versions::default();
    let mut step_window = |state: &SessionState, seq: u64, changes: &mut Vec<WindowChange>| {
        versions.advance(events, seq, state);
        let (pivot, window) =
            window_refs(state, &versions, &mut renders, &mut messages, part_chars);
        if let Some(last) = changes.last_mut() {
            last.removed = removed(&previous, &window, &messages);
        }
        let keep = previous
            .iter()
            .zip(&window)
            .take_while(|(a, b)| a == b)
            .count();
        let change = WindowChange {
            pivot,
            keep,
            add: window[keep..].to_vec(),
            size: window.len(),
            removed: Value::Null,
        };
        previous = window;
        change
    };
    let (timeline, end) = timeline_and_state(events, |state, row: &StepRow| {
        let change = step_window(state, row.seq, &mut changes);
        changes.push(change);
    })
    .map_err(|r| ReportError::refused(label, r))?;
    // The session as it ends: what left the window after the last step.
    let _ = step_window(&end, end.head, &mut changes);
    let estimator = end.policy.estimator;
    let streamed = streamed_outputs(events);
    let steps: Vec<Value> = timeline
        .steps
        .iter()
        .zip(changes)
        .map(|(row, change)| step_json(row, change, streamed.contains(&row.message)))
        .collect();
    let summaries = summaries(&end, events, &estimator, part_chars)
        .map_err(|e| ReportError::content(label, e))?;
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

/// One step as the page keeps it: its row, how its window changed, and
/// whether its output count is a streaming placeholder (`streamed`).
fn step_json(row: &StepRow, change: WindowChange, streamed: bool) -> Value {
    let t = &row.tokens;
    let mut step = json!({
        "seq": row.seq,
        "time": row.time,
        // input, output, reasoning, cache read, cache write, and
        // whether the total was recorded (1) or computed (0).
        "tokens": [t.input, t.output, t.reasoning, t.cache_read, t.cache_write, u8::from(t.total_reported)],
        "total": t.total,
        "count": row.count,
        "usable": row.usable,
        "threshold": row.threshold,
        "percent": row.percent,
        "window_estimate": row.window_estimate,
        "events": row.events,
        "pivot": change.pivot,
        "keep": change.keep,
        "add": change.add,
        "size": change.size,
    });
    if !is_empty_removal(&change.removed) {
        step["removed"] = change.removed;
    }
    // Flags only where set: a long page is mostly steps.
    let flags = [
        ("open", row.open),
        ("no_usage", row.no_usage),
        ("output_streamed", streamed),
    ];
    for (name, set) in flags {
        if set {
            step[name] = json!(true);
        }
    }
    if let Some(e) = &row.error {
        step["error"] = json!(e);
    }
    step
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
    part_chars: usize,
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
        messages.push(message_json(m, &rendered, &estimator, part_chars));
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

/// The page's form of a session's messages and their texts: each message
/// an array `[id, source_id, role ("u" or "a"), flags (1 summary, 2
/// marker, 4 synthetic), tokens, parts]`, each part `[kind ("t" text, "r"
/// reasoning, "f" file, "x" tool), text, cut, tokens]` and, for a tool,
/// `call_id, tool, input, error, cleared` after them, where `text` and
/// `input` are indexes into the texts, each distinct text held once (a
/// message rendered again after a prune or a tool's result repeats most
/// of its parts). Keys repeated on every part would make a page of many
/// steps half keys.
pub fn compact_messages(messages: Vec<Value>) -> (Value, Value) {
    let mut texts: Vec<Value> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut text_of = |v: &Value| -> usize {
        let text = v.as_str().unwrap_or_default();
        if let Some(&i) = index.get(text) {
            return i;
        }
        texts.push(json!(text));
        index.insert(text.to_owned(), texts.len() - 1);
        texts.len() - 1
    };
    let mut part = |p: &Value| {
        let kind = match p["type"].as_str() {
            Some("text") => "t",
            Some("reasoning") => "r",
            Some("file") => "f",
            _ => "x",
        };
        let mut out = vec![
            json!(kind),
            json!(text_of(&p["text"])),
            p["cut"].clone(),
            p["tokens"].clone(),
        ];
        if kind == "x" {
            out.extend([
                p["call_id"].clone(),
                p["tool"].clone(),
                json!(text_of(&p["input"])),
                json!(u8::from(p["error"] == true)),
                json!(u8::from(p["cleared"] == true)),
            ]);
        }
        Value::Array(out)
    };
    let messages = messages
        .into_iter()
        .map(|m| {
            let flags = u8::from(m["summary"] == true)
                | u8::from(m["marker"] == true) << 1
                | u8::from(m["synthetic"] == true) << 2;
            let parts: Vec<Value> = m["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(&mut part)
                .collect();
            json!([
                m["id"],
                m["source_id"],
                if m["role"] == "user" { "u" } else { "a" },
                flags,
                m["tokens"],
                parts
            ])
        })
        .collect();
    (Value::Array(messages), Value::Array(texts))
}

/// The window of each step of a page's session JSON, as the page's script
/// rebuilds them from the steps' changes (`keep`, `add`).
pub fn windows(session: &Value) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut window: Vec<usize> = Vec::new();
    for step in session["steps"].as_array().into_iter().flatten() {
        let keep = step["keep"].as_u64().unwrap_or(0) as usize;
        window.truncate(keep);
        window.extend(
            step["add"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_u64().map(|r| r as usize)),
        );
        out.push(window.clone());
    }
    out
}

/// `text`'s first `max` characters, and how many were left out.
pub(crate) fn cut_at(text: &str, max: usize) -> (String, usize) {
    let total = text.chars().count();
    if total <= max {
        return (text.to_owned(), 0);
    }
    (text.chars().take(max).collect(), total - max)
}

/// One rendered message as the page's JSON, each part's text cut at
/// `part_chars`.
fn message_json(m: &Message, w: &WindowMessage, e: &Estimator, part_chars: usize) -> Value {
    let shown = |text: &str| cut_at(text, part_chars);
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

/// Whether `removed` (see [`removed`]) holds nothing: the page leaves it
/// out.
fn is_empty_removal(removed: &Value) -> bool {
    let none = |k: &str| removed[k].as_array().is_none_or(Vec::is_empty);
    none("messages") && none("cleared")
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
    part_chars: usize,
) -> Result<Vec<Value>, ContentError> {
    let mut out = Vec::new();
    for j in &state.jobs {
        let summary = j.summary.and_then(|s| state.history_message(s));
        let text = match summary {
            Some(m) => m.texts_in(events)?.join("\n"),
            None => String::new(),
        };
        // What the summarizer's call reported (pi records nothing).
        let output_tokens = summary
            .and_then(|m| m.tokens.as_deref())
            .filter(|t| **t != ctxlog_core::TokenUsage::default())
            .map(|t| t.output);
        let (status, error) = match &j.status {
            JobStatus::Completed { .. } => ("completed", None),
            JobStatus::Failed { error } => ("failed", Some(error.clone())),
            _ => ("pending", None),
        };
        let (shown_text, cut) = cut_at(&text, part_chars.max(MAX_PART_CHARS / 4));
        out.push(json!({
                "job": j.marker.to_string(),
                "requested_seq": j.requested_seq,
                "auto": j.auto,
                "status": status,
                "error": error,
                "text": shown_text,
                "cut": cut,
                "tokens": e.estimate(&text),
                "output_tokens": output_tokens,
        }));
    }
    Ok(out)
}
