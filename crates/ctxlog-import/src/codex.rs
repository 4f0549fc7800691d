//! Codex CLI rollout JSONL (`session-formats.md` §3).
//!
//! - `session_meta` starts the session (its `id` is the source session id).
//! - A step is one model request: it opens at `turn_context` or at a
//!   `token_count` that follows step items, and takes the `reasoning`,
//!   assistant `message` and tool-call items after it. It closes at the next
//!   `turn_context`, user message, `token_count` after items, `turn_aborted`
//!   or `compacted`. Steps have no id: the source id is `line:N`, the first
//!   line the model produced in the step (its usage line when it produced
//!   none).
//! - Online (see the crate doc): a step's message and items are written as
//!   they are read, its usage (which comes first) with its message as
//!   `UsageReported`, its finish once a later line closes it; a step still
//!   open at the end of the file is stored as far as it is known. A tool
//!   call's output completes its part (`PartUpdated`).
//! - `token_count.info.last_token_usage` is the step's usage. Codex's
//!   `input_tokens` already includes `cached_input_tokens` and its
//!   `output_tokens` includes `reasoning_output_tokens`; they are stored the
//!   OpenCode way (input uncached, cache read apart, output without
//!   reasoning, the recorded total kept). `model_context_window` is the
//!   file's own context window and overrides the table's.
//! - `function_call`, `custom_tool_call`, `local_shell_call` pair with their
//!   `*_output` by `call_id`; the output's JSON `{"output", "metadata"}` is
//!   unwrapped. Calls never answered stay pending (interrupted).
//! - `turn_aborted` records a `MessageAbortedError` on the step it cut.
//! - A top-level `compacted` item becomes a completed compaction whose
//!   summary is `payload.message`.
//! - User messages that are wholly injected context (`<environment_context>`,
//!   `<user_instructions>`, AGENTS.md) and developer/system messages are kept
//!   as synthetic. `event_msg`
//!   copies of response items are skipped.
//!
//! Codex 0.169 (`cli_version` ≥ 0.169) writes each response's usage in a
//! `token_usage_record` right after the response's items and before its
//! tool outputs, and its `token_count` only after those outputs:
//! - a step is the items since the previous record (or turn start); its
//!   `token_usage_record.usage` ends it and is its usage; `token_count`
//!   lines never open or end a step (the one after a refused request,
//!   whose usage is all zero, is no step);
//! - the recorded `model_context_window` (in `task_started` and
//!   `token_count`) is 95 % of the configured window: the configured one
//!   is recovered (`window × 100 / 95`);
//! - a step of text only is written only once the next line that is not a
//!   report (or its task's `task_complete`) shows it is no compaction's own
//!   answer (before `compacted` it is, and it is no message); a step with
//!   a tool call is written as it is read;
//! - `compacted.replacement_history` is what Codex sends from then on: its
//!   messages (the user's recent prompts, the initial context) are
//!   recorded again, as synthetic user messages, and are the compaction's
//!   tail; its last item, the summary as a user message, is the summary
//!   (`compacted.message`), sent after them (preset `codex-0.169`);
//! - a compaction in a task started with no `turn_attribution` (a turn of
//!   its own: app-server `thread/compact/start`) is manual.

use crate::build::{as_json, Builder, NewMessage, OpenCall, RecordedKind};
use crate::strict;
use crate::{each_line, Format, ImportError, ImportOptions, Imported};
use ctxlog_core::{
    Attachment, Event, FinishReason, Json, MessageError, MessageId, ModelRef, PartBody, Role,
    TokenUsage, ToolState,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead;

/// One item of a step not written yet.
struct Item {
    body: PartBody,
    source: Option<String>,
    at: u64,
}

/// The step in progress: its message once written, and its items not yet
/// written (all of them, for a 0.169 step of text only, which may turn out
/// to be a compaction's own answer).
#[derive(Default)]
struct Step {
    usage: Option<TokenUsage>,
    /// The step's message, once its first item was written.
    message: Option<MessageId>,
    items: Vec<Item>,
    /// The step made a tool call.
    has_tool: bool,
    start: u64,
    at: u64,
    /// The line of its first item (of its usage when it has none).
    first_line: u64,
}

impl Step {
    /// Nothing of it read yet.
    fn is_empty(&self) -> bool {
        self.message.is_none() && self.items.is_empty() && self.usage.is_none()
    }
}

struct Importer<'a> {
    b: Builder<'a>,
    step: Option<Step>,
    /// Written calls still waiting for their output, by call id.
    written: BTreeMap<String, OpenCall>,
    last_user: Option<MessageId>,
    line: u64,
    /// The previous `total_token_usage`: a repeat reports no new request.
    last_total: Option<Value>,
    /// The line of every tool call made, by call id.
    call_lines: BTreeMap<String, u64>,
    /// The rollout was written by Codex 0.169 or later (see the module doc).
    since_0_169: bool,
    /// A step of text only its usage record ended, written at the next
    /// line that is not a report (dropped before `compacted`).
    held: Option<Step>,
    /// The current task was started with no `turn_attribution`: a 0.169
    /// compaction turn of its own (app-server `thread/compact/start`), so
    /// its compaction is manual.
    compaction_turn: bool,
}

const INJECTED: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
];

fn usage(u: &Value) -> Result<TokenUsage, String> {
    let n = |k: &str| Ok::<_, String>(strict::count(u, k)?.unwrap_or(0));
    let input = n("input_tokens")?;
    let cached = n("cached_input_tokens")?.min(input);
    let output = n("output_tokens")?;
    let reasoning = n("reasoning_output_tokens")?.min(output);
    Ok(TokenUsage {
        total: strict::count(u, "total_tokens")?,
        input: input - cached,
        output: output - reasoning,
        reasoning,
        cache_read: cached,
        cache_write: 0,
    })
}

impl<'a> Importer<'a> {
    fn err(&self, m: impl Into<String>) -> ImportError {
        self.b.err(m)
    }

    fn step(&mut self, at: u64) -> &mut Step {
        self.step.get_or_insert_with(|| Step {
            start: at,
            at,
            ..Step::default()
        })
    }

    /// Adds an item to the step in progress and writes what may be written
    /// of it: everything, but for a 0.169 step of text only (see
    /// [`Importer::held`]), which waits for its usage record.
    fn push_item(
        &mut self,
        at: u64,
        body: PartBody,
        source: Option<String>,
    ) -> Result<(), ImportError> {
        let line = self.line;
        let tool = matches!(body, PartBody::Tool { .. });
        let waits_for_usage = self.since_0_169;
        let s = self.step(at);
        if s.message.is_none() && s.items.is_empty() {
            s.first_line = line;
        }
        s.items.push(Item { body, source, at });
        s.at = at;
        s.has_tool |= tool;
        if !waits_for_usage || s.has_tool {
            let mut s = self.step.take().unwrap_or_default();
            let written = self.write_items(&mut s);
            self.step = Some(s);
            written?;
        }
        Ok(())
    }

    /// The call of the step in progress that has no output yet, if one
    /// has none: the step is stored as far as it is known, and its end
    /// waits for a later line (none says which item is a step's last).
    fn open_call(&self) -> Option<String> {
        let s = self.step.as_ref()?;
        let message = s.message?;
        let state = self.b.state()?;
        self.written
            .iter()
            .find(|(_, c)| state.part(c.part).is_some_and(|(m, _)| m.id == message))
            .map(|(call, _)| {
                format!(
                    "the step of line {} waits for the output of call {call:?}",
                    s.first_line.max(1)
                )
            })
    }

    /// Writes step `s`'s message, when it has none yet, and its items not
    /// written yet. A step whose usage is known before its items (before
    /// 0.169, `token_count` comes first) records it with its message.
    fn write_items(&mut self, s: &mut Step) -> Result<(), ImportError> {
        if s.message.is_none() {
            if s.items.is_empty() && s.usage.is_none() {
                return Ok(());
            }
            let model = self.b.model().map(|m| ModelRef {
                provider: "openai".into(),
                model: m.to_owned(),
            });
            let message = self.b.message(
                s.start,
                Role::Assistant,
                NewMessage {
                    parent: self.last_user,
                    source: Some(format!("line:{}", s.first_line)),
                    model,
                    ..NewMessage::default()
                },
            )?;
            s.message = Some(message);
            if let (Some(tokens), false) = (s.usage, s.items.is_empty()) {
                self.b
                    .record(s.start, Event::UsageReported { message, tokens })?;
            }
        }
        let Some(message) = s.message else {
            return Ok(());
        };
        for item in std::mem::take(&mut s.items) {
            let pending = match &item.body {
                PartBody::Tool {
                    call_id,
                    tool,
                    state: ToolState::Pending { input, .. },
                } => Some((call_id.clone(), tool.clone(), input.clone())),
                _ => None,
            };
            let part = self.b.part(item.at, message, item.body, item.source)?;
            if let Some((call, tool, input)) = pending {
                self.written.insert(
                    call,
                    OpenCall {
                        part,
                        tool,
                        input,
                        start: item.at,
                    },
                );
            }
        }
        Ok(())
    }

    /// Ends the step in progress: what is left of it written, and its
    /// finish. Returns its message, if it has one.
    fn close_step(&mut self, aborted: bool) -> Result<Option<MessageId>, ImportError> {
        let Some(s) = self.step.take() else {
            return Ok(None);
        };
        self.write_step(s, aborted)
    }

    /// Ends step `s` (see [`Importer::close_step`]).
    fn write_step(&mut self, mut s: Step, aborted: bool) -> Result<Option<MessageId>, ImportError> {
        self.write_items(&mut s)?;
        let Some(message) = s.message else {
            return Ok(None);
        };
        let reason = if aborted {
            FinishReason::Other("aborted".into())
        } else if s.has_tool {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        };
        self.b
            .finish_step(s.at, message, reason, s.usage.unwrap_or_default(), None)?;
        Ok(Some(message))
    }

    fn line(&mut self, v: &Value) -> Result<(), ImportError> {
        let ty = v
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("field `type` missing or not a string"))?;
        let at = self.b.line_time(v)?;
        let p = v
            .get("payload")
            .ok_or_else(|| self.err("field `payload` missing"))?;
        if ty == "session_meta" {
            let id = p
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .ok_or_else(|| self.err("field `payload.id` missing, empty or not a string"))?;
            if let Some(first) = self.b.source_session() {
                // A resumed rollout repeats its meta; another session's is
                // two sessions in one file.
                if first != id {
                    return Err(self.err(format!(
                        "a second `session_meta` names session {id:?}, but this file is session {first:?}"
                    )));
                }
                return Ok(());
            }
            let at = at.unwrap_or(0);
            let policy = self.b.policy_for(None);
            let text = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_owned);
            self.since_0_169 =
                text("cli_version").is_some_and(|v| crate::version_at_least(&v, (0, 169)));
            self.b.about.directory = text("cwd");
            self.b.about.agent = Some(match text("cli_version") {
                Some(v) => format!("codex-{v}"),
                None => "codex".into(),
            });
            return self.b.start(id, at, None, policy);
        }
        if !self.b.started() {
            return Err(self.err(format!(
                "a {ty:?} line before `session_meta`: not a Codex rollout"
            )));
        }
        let at = self.b.time(at);
        let pt = p.get("type").and_then(Value::as_str);
        // A compaction's `compacted` comes before its task completes: at a
        // task's end, a held step is an answer.
        let task_ends = ty == "event_msg" && pt == Some("task_complete");
        if task_ends || !matches!(ty, "event_msg" | "token_usage_record") {
            if let Some(held) = self.held.take() {
                // Before `compacted`, the compaction's own answer.
                if ty != "compacted" {
                    self.write_step(held, false)?;
                }
            }
        }
        match (ty, pt) {
            ("token_usage_record", _) => self.usage_record(p, at),
            ("event_msg", Some("task_started")) if self.since_0_169 => {
                self.compaction_turn = p.get("turn_attribution").is_none();
                self.context_window(p, at)
            }
            ("event_msg", Some("token_count")) if self.since_0_169 => {
                match p.get("info").filter(|i| !i.is_null()) {
                    Some(info) => self.context_window(info, at),
                    None => Ok(()),
                }
            }
            ("turn_context", _) => {
                self.close_step(false)?;
                if let Some(m) = p.get("model").and_then(Value::as_str) {
                    self.b.set_model(at, m)?;
                }
                self.step(at);
                Ok(())
            }
            ("event_msg", Some("token_count")) => self.token_count(p, at),
            ("event_msg", Some("turn_aborted")) => self.turn_aborted(p, at),
            ("event_msg", _) => Ok(()), // UI copies of response items
            ("compacted", _) => self.compacted(p, at),
            ("response_item", Some(kind)) => self.item(kind, p, at),
            ("response_item", None) => Err(self.err("field `payload.type` missing")),
            _ => Ok(()),
        }
    }

    /// A usage report: the step it reports on (a new one after step items).
    fn token_count(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        let Some(info) = p.get("info").filter(|i| !i.is_null()) else {
            return Ok(());
        };
        let u = info
            .get("last_token_usage")
            .ok_or_else(|| self.err("field `payload.info.last_token_usage` missing"))?;
        if !u.is_object() {
            return Err(self.err("field `payload.info.last_token_usage` is not an object"));
        }
        // A repeated report (same running total) is no new request.
        let total = info.get("total_token_usage").cloned();
        if total.is_some() && total == self.last_total {
            return Ok(());
        }
        self.last_total = total;
        if self.step.as_ref().is_some_and(|s| !s.is_empty()) {
            self.close_step(false)?;
        }
        // The window applies from this request on, not to the one closed.
        let window = strict::count(info, "model_context_window")
            .map_err(|e| self.err(format!("payload.info: {e}")))?;
        if let Some(w) = window {
            self.b.set_file_context(at, w)?;
        }
        let usage =
            usage(u).map_err(|e| self.err(format!("payload.info.last_token_usage: {e}")))?;
        let line = self.line;
        let s = self.step(at);
        s.usage = Some(usage);
        if s.message.is_none() && s.items.is_empty() {
            s.first_line = line;
        }
        Ok(())
    }

    /// A 0.169 `token_usage_record`: the usage of the items since the
    /// previous one, which it ends; a step of text only is held (see
    /// [`Importer::held`]).
    fn usage_record(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        // Only 0.169 and later write these, whatever `cli_version` says.
        self.since_0_169 = true;
        let u = p
            .get("usage")
            .filter(|u| u.is_object())
            .ok_or_else(|| self.err("field `payload.usage` missing or not an object"))?;
        let usage = usage(u).map_err(|e| self.err(format!("payload.usage: {e}")))?;
        if let Some(held) = self.held.take() {
            self.write_step(held, false)?;
        }
        let line = self.line;
        let mut s = self.step.take().unwrap_or(Step {
            start: at,
            at,
            ..Step::default()
        });
        s.usage = Some(usage);
        if s.message.is_none() && s.items.is_empty() {
            s.first_line = line;
        }
        if !s.has_tool {
            self.held = Some(s);
        } else {
            self.write_step(s, false)?;
        }
        Ok(())
    }

    /// The configured context window, from a 0.169 line's
    /// `model_context_window` (95 % of it).
    fn context_window(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        let recorded = strict::count(p, "model_context_window")
            .map_err(|e| self.err(format!("payload: {e}")))?;
        match recorded {
            Some(w) => self.b.set_file_context(at, configured_window(w)),
            None => Ok(()),
        }
    }

    fn turn_aborted(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        // Only a step the abort cut short gets the error; an abort
        // before the model answered leaves nothing to mark.
        let cut = self
            .step
            .as_ref()
            .is_some_and(|s| s.message.is_some() || !s.items.is_empty());
        let written = self.close_step(cut)?;
        if let Some(m) = written.filter(|_| cut) {
            let reason = p
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("interrupted");
            self.b.record(
                at,
                Event::MessageErrored {
                    message: m,
                    error: MessageError {
                        name: "MessageAbortedError".into(),
                        message: format!("turn aborted: {reason}"),
                    },
                },
            )?;
        }
        Ok(())
    }

    fn compacted(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        self.close_step(false)?;
        let text = p.get("message").and_then(Value::as_str).unwrap_or("");
        let source = Some(format!("line:{}", self.line));
        let tail = if self.since_0_169 {
            self.replacement_history(p, text, at)?
        } else {
            None
        };
        let kind = if self.compaction_turn {
            RecordedKind {
                auto: false,
                overflow: false,
            }
        } else {
            RecordedKind::AUTO
        };
        self.b
            .imported_compaction(at, kind, source.clone(), source, text, tail, None)
            .map(|_| ())
    }

    /// Records the messages of `compacted.replacement_history` but its last
    /// one when that is the summary (`summary`), as synthetic user
    /// messages; the first of them.
    fn replacement_history(
        &mut self,
        p: &Value,
        summary: &str,
        at: u64,
    ) -> Result<Option<MessageId>, ImportError> {
        let Some(items) = p.get("replacement_history").and_then(Value::as_array) else {
            return Ok(None);
        };
        let texts_of = |item: &Value| -> Vec<String> {
            item.get("content")
                .and_then(Value::as_array)
                .map(|c| {
                    c.iter()
                        .filter_map(|b| b.get("text").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut kept: Vec<&Value> = items
            .iter()
            .filter(|i| i.get("type").and_then(Value::as_str) == Some("message"))
            .collect();
        if kept
            .last()
            .is_some_and(|last| texts_of(last).concat() == summary)
        {
            kept.pop();
        }
        let mut first = None;
        for (i, item) in kept.into_iter().enumerate() {
            let message = self.b.message(
                at,
                Role::User,
                NewMessage {
                    source: Some(format!("line:{}#{i}", self.line)),
                    synthetic: true,
                    ..NewMessage::default()
                },
            )?;
            for t in texts_of(item) {
                self.b.text(at, message, t, true)?;
            }
            first.get_or_insert(message);
        }
        Ok(first)
    }

    /// A user-side message; `injected` marks runtime instructions
    /// (developer/system roles), which are never a real prompt.
    fn user(&mut self, p: &Value, at: u64, injected: bool) -> Result<(), ImportError> {
        self.close_step(false)?;
        let content = p
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| self.err("field `payload.content` is not an array"))?;
        let mut bodies = Vec::new();
        let mut texts = Vec::new();
        for (i, c) in content.iter().enumerate() {
            match c.get("type").and_then(Value::as_str) {
                Some("input_text") | Some("text") => {
                    let t = c.get("text").and_then(Value::as_str).ok_or_else(|| {
                        self.err(format!("field `payload.content[{i}].text` is not a string"))
                    })?;
                    texts.push(t.to_owned());
                }
                Some("input_image") => bodies.push(PartBody::File(Attachment {
                    mime: "image/*".into(),
                    filename: None,
                    url: c
                        .get("image_url")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                })),
                _ => {}
            }
        }
        let synthetic = injected
            || (!texts.is_empty()
                && texts
                    .iter()
                    .all(|t| INJECTED.iter().any(|p| t.trim_start().starts_with(p))));
        let message = self.b.message(
            at,
            Role::User,
            NewMessage {
                source: Some(format!("line:{}", self.line)),
                synthetic,
                ..NewMessage::default()
            },
        )?;
        for text in texts {
            self.b.text(at, message, text, synthetic)?;
        }
        for body in bodies {
            self.b.part(at, message, body, None)?;
        }
        if !synthetic {
            self.last_user = Some(message);
        }
        Ok(())
    }

    fn item(&mut self, kind: &str, p: &Value, at: u64) -> Result<(), ImportError> {
        match kind {
            "message" => match p.get("role").and_then(Value::as_str) {
                Some("user") => self.user(p, at, false),
                Some("developer") | Some("system") => self.user(p, at, true),
                Some("assistant") => {
                    let content = p
                        .get("content")
                        .and_then(Value::as_array)
                        .ok_or_else(|| self.err("field `payload.content` is not an array"))?;
                    for c in content {
                        if let Some(t) = c.get("text").and_then(Value::as_str) {
                            let body = PartBody::Text {
                                text: t.to_owned(),
                                synthetic: false,
                                time: None,
                            };
                            self.push_item(at, body, None)?;
                        }
                    }
                    Ok(())
                }
                _ => Err(self.err("field `payload.role` missing or unknown")),
            },
            "reasoning" => {
                let text = p
                    .get("summary")
                    .and_then(Value::as_array)
                    .map(|s| {
                        s.iter()
                            .filter_map(|x| x.get("text").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
                self.push_item(at, PartBody::Reasoning { text, time: None }, None)
            }
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let call_id = p
                    .get("call_id")
                    .and_then(Value::as_str)
                    .or_else(|| p.get("id").and_then(Value::as_str))
                    .ok_or_else(|| self.err("field `payload.call_id` missing"))?
                    .to_owned();
                if let Some(first) = self.call_lines.insert(call_id.clone(), self.line) {
                    return Err(self.err(format!(
                        "field `payload.call_id`: call {call_id:?} was already made at line {first}; every call needs its own id"
                    )));
                }
                let tool = p
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or(if kind == "local_shell_call" {
                        "local_shell"
                    } else {
                        "tool"
                    })
                    .to_owned();
                let (input, raw) = match p
                    .get("arguments")
                    .or_else(|| p.get("input"))
                    .or_else(|| p.get("action"))
                {
                    Some(Value::String(s)) => (
                        serde_json::from_str::<Value>(s)
                            .map(|v| as_json(&v))
                            .unwrap_or_else(|_| Json::String(s.clone())),
                        s.clone(),
                    ),
                    Some(v) => (as_json(v), v.to_string()),
                    None => (Json::Null, String::new()),
                };
                let body = PartBody::Tool {
                    call_id: call_id.clone(),
                    tool,
                    state: ToolState::Pending { input, raw },
                };
                self.push_item(at, body, Some(call_id))
            }
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
                self.output(p, at)
            }
            _ => Ok(()), // web_search_call and future items: not replayed
        }
    }

    fn output(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        let call_id = p
            .get("call_id")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("field `payload.call_id` missing"))?
            .to_owned();
        let (text, metadata) = match p.get("output") {
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(o)) => match o.get("output").and_then(Value::as_str) {
                    Some(output) => (
                        output.to_owned(),
                        o.get("metadata").map(as_json).unwrap_or(Json::Null),
                    ),
                    None => (s.clone(), Json::Null),
                },
                _ => (s.clone(), Json::Null),
            },
            Some(Value::Object(o)) => (
                o.get("content")
                    .or_else(|| o.get("output"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                Json::Null,
            ),
            Some(Value::Null) | None => (String::new(), Json::Null),
            Some(_) => return Err(self.err("field `payload.output` is not a string")),
        };
        // Every call is written as it is read: its output completes it.
        if !self.written.contains_key(&call_id) && self.call_lines.contains_key(&call_id) {
            return Err(self.err(format!("a second output for call {call_id:?}")));
        }
        let call = self
            .written
            .remove(&call_id)
            .ok_or_else(|| self.err(format!("tool output for unknown call {call_id:?}")))?;
        self.b
            .complete_call(at, &call_id, call, text, false, metadata)
    }
}

/// Imports a Codex rollout read from `reader`; `file` names it in errors.
pub fn import<R: BufRead>(
    reader: R,
    file: &str,
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    let mut im = Importer {
        b: Builder::new(file, Format::Codex, options),
        step: None,
        written: BTreeMap::new(),
        last_user: None,
        line: 0,
        last_total: None,
        call_lines: BTreeMap::new(),
        since_0_169: false,
        held: None,
        compaction_turn: false,
    };
    let unfinished = each_line(reader, file, options.max_line_bytes, |n, v| {
        im.line = n;
        im.b.at.line = n;
        im.line(&v)
    })?;
    im.b.unfinished_line(unfinished);
    // The step in progress is stored as far as it is known (a 0.169 step
    // of text only waits: it may be a compaction's answer); its end waits
    // for a later line.
    if let Some(why) = im.open_call() {
        im.b.step_waits(&why);
    }
    im.b.finish()
}

/// The configured context window of a 0.169 rollout's recorded one (Codex
/// records 95 % of it), rounded to the nearest token.
fn configured_window(recorded: u64) -> u64 {
    ((u128::from(recorded) * 100 + 47) / 95) as u64
}
