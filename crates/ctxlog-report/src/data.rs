//! What the page shows of one session, derived in one fold over its
//! events: the timeline, the window right after each step (each distinct
//! rendering of a message stored once), what left the window between two
//! steps, and the summaries.

use crate::messages::{Messages, Shown};
use ctxlog_core::policy::Estimator;
use ctxlog_core::window::ToolResult;
use ctxlog_core::{
    Envelope, Event, JobStatus, Json, Message, MessageId, PartId, SessionState, SourceTarget,
    StepRow, Timeline, WindowMessage, WindowPart,
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
    /// Its timeline as the page shows it: each step's row (on a sampled
    /// page, each run's, see [`crate::fold`]), with the lifecycle events
    /// after it.
    pub timeline: Timeline,
    /// The step number (1-based) of the first step of each row's run and of
    /// the row's own step (the same on a page that shows every step).
    pub numbers: Vec<(u64, u64)>,
    /// How many steps the session has.
    pub total_steps: u64,
    /// How many lifecycle events of each kind the session has.
    pub counts: BTreeMap<String, usize>,
    /// The page's JSON for it without its steps and messages: its label,
    /// policy, limits, summaries.
    pub json: Value,
    /// Its steps (each with its window, as a change of the one before), as
    /// a JSON array's text.
    pub steps_json: String,
    /// What left the window after each step shown.
    pub removals: Vec<Removal>,
    /// The rendered messages the windows refer to, and their texts (see
    /// [`crate::messages`]).
    pub messages: Messages,
    /// Each compaction's summary (or failure), in the order requested.
    pub summaries: Vec<Value>,
    /// The title the recording gave, if any.
    pub title: Option<String>,
}

impl SessionData {
    /// [`SessionData::json`] with its `messages` and `texts` in it, as the
    /// page holds it.
    pub fn page_json(&self) -> Value {
        let mut json = self.json.clone();
        json["steps"] = serde_json::from_str(&self.steps_json).unwrap_or(Value::Null);
        json["messages"] =
            serde_json::from_str(&self.messages.messages_json()).unwrap_or(Value::Null);
        json["texts"] = serde_json::from_str(&self.messages.texts_json()).unwrap_or(Value::Null);
        json
    }

    /// How many lifecycle events of `kind` the session has.
    pub fn count(&self, kind: &str) -> usize {
        self.counts.get(kind).copied().unwrap_or(0)
    }
}

/// What left the window after a step shown, before the next (see
/// [`removed`]), in figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Removal {
    /// Messages no longer sent.
    pub messages: usize,
    /// Their estimated tokens.
    pub message_tokens: u64,
    /// Tool outputs newly cleared.
    pub cleared: usize,
    /// The tokens their clearing saved.
    pub cleared_tokens: u64,
}

/// One step's window as the page keeps it: a change of the window before
/// it (its first `keep` references, then `add`), so the page grows with
/// the steps, not with the steps times the window.
pub(crate) struct WindowChange {
    pub pivot: Option<String>,
    pub keep: usize,
    pub add: Vec<usize>,
    pub size: usize,
    /// What left the window before the next step (known at the next one).
    pub removed: Value,
}

/// One step as the page keeps it: its row, how its window changed, and
/// whether its output count is a streaming placeholder (`streamed`).
pub(crate) fn step_json(row: &StepRow, change: WindowChange, streamed: bool) -> Value {
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

/// The title the recording gave `state`'s session, if any.
pub(crate) fn title(state: &SessionState) -> Option<String> {
    state
        .about
        .as_ref()
        .and_then(|a| a.title.clone())
        .or_else(|| state.title.clone())
}

/// How many events touched each message so far: a rendering depends only
/// on the events that touched its message (parts appended, updated,
/// pruned or restored, its step or error, its job's outcome).
#[derive(Default)]
pub(crate) struct Versions {
    of: BTreeMap<MessageId, u64>,
}

impl Versions {
    /// Counts one more event touching each of `messages`.
    pub fn count(&mut self, messages: &[MessageId]) {
        for m in messages {
            *self.of.entry(*m).or_default() += 1;
        }
    }

    /// Keeps only the messages `keep` is true of.
    pub fn retain(&mut self, keep: impl Fn(&MessageId) -> bool) {
        self.of.retain(|m, _| keep(m));
    }

    /// How many events touched `m`.
    pub fn of(&self, m: MessageId) -> u64 {
        self.of.get(&m).copied().unwrap_or(0)
    }
}

/// The messages whose rendering `event` may change.
pub(crate) fn touched(event: &Event, state: &SessionState) -> Vec<MessageId> {
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
pub(crate) fn message_json(
    m: &Message,
    w: &WindowMessage,
    e: &Estimator,
    part_chars: usize,
) -> Value {
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
        "role": m.role.as_str(),
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
/// tool outputs newly cleared, with their estimated tokens; and the same
/// in figures.
pub(crate) fn removed(before: &[usize], after: &[usize], shown: &[Shown]) -> (Value, Removal) {
    let after_ids: BTreeMap<MessageId, usize> = after.iter().map(|&r| (shown[r].id, r)).collect();
    let mut gone = Vec::new();
    let mut cleared = Vec::new();
    let mut figures = Removal::default();
    for &r in before {
        let m = &shown[r];
        match after_ids.get(&m.id) {
            None => {
                figures.messages += 1;
                figures.message_tokens += m.tokens;
                gone.push(json!({
                    "message": r,
                    "tokens": m.tokens,
                }));
            }
            Some(&a) if a != r => {
                for (p, q) in m.parts.iter().zip(&shown[a].parts) {
                    let (Some(was), Some(now)) = (p.tool.as_deref(), q.tool.as_deref()) else {
                        continue;
                    };
                    if let ((call_id, tool, false), (_, _, true)) = (was, now) {
                        let tokens = p.tokens.saturating_sub(q.tokens);
                        figures.cleared += 1;
                        figures.cleared_tokens += tokens;
                        cleared.push(json!({
                            "message": r,
                            "call_id": call_id,
                            "tool": tool,
                            "tokens": tokens,
                        }));
                    }
                }
            }
            Some(_) => {}
        }
    }
    let tokens = figures.message_tokens + figures.cleared_tokens;
    (
        json!({"messages": gone, "cleared": cleared, "tokens": tokens}),
        figures,
    )
}

/// A summary as the page last saw it held.
#[derive(Debug, Clone, Default)]
pub(crate) struct SummarySeen {
    /// Its texts, joined by a line break.
    pub text: String,
    /// The output tokens its call reported (pi records nothing).
    pub output_tokens: Option<u64>,
}

/// Every compaction's summary (or failure), in the order requested; each
/// as it was last seen held (`seen`, by job).
pub(crate) fn summaries(
    state: &SessionState,
    seen: &BTreeMap<MessageId, SummarySeen>,
    e: &Estimator,
    part_chars: usize,
) -> Vec<Value> {
    let mut out = Vec::new();
    let none = SummarySeen::default();
    for j in &state.jobs {
        let SummarySeen {
            text,
            output_tokens,
        } = seen.get(&j.marker).unwrap_or(&none);
        let (status, error) = match &j.status {
            JobStatus::Completed { .. } => ("completed", None),
            JobStatus::Failed { error } => ("failed", Some(error.clone())),
            _ => ("pending", None),
        };
        let (shown_text, cut) = cut_at(text, part_chars.max(MAX_PART_CHARS / 4));
        out.push(json!({
                "job": j.marker.to_string(),
                "requested_seq": j.requested_seq,
                "auto": j.auto,
                "status": status,
                "error": error,
                "text": shown_text,
                "cut": cut,
                "tokens": e.estimate(text),
                "output_tokens": output_tokens,
        }));
    }
    out
}
