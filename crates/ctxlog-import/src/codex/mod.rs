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
//!   as synthetic, each with the role it was sent with. `event_msg`
//!   copies of response items are skipped; `thread_name_updated` (a thread
//!   the user named) titles the session.
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
//!
//! Files: this one holds the importer's state and reads the rollout line
//! by line; `steps` keeps the step in progress and writes it, `items` maps
//! response items (user messages, assistant text, reasoning, tool calls
//! and their outputs), `usage` the usage reports and context windows, and
//! `compaction` the `compacted` items.

mod compaction;
mod items;
mod steps;
mod usage;

use crate::build::{Builder, OpenCall};
use crate::{each_line, Format, ImportError, ImportOptions, Imported};
use ctxlog_core::{MessageId, PartBody, TokenUsage};
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

impl<'a> Importer<'a> {
    fn err(&self, m: impl Into<String>) -> ImportError {
        self.b.err(m)
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
            return self.session_meta(p, at);
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
            ("event_msg", Some("thread_name_updated")) => {
                // The name a user gave the thread (`/rename`): its title.
                let name = p.get("thread_name").and_then(Value::as_str);
                self.b.about.title = name.filter(|n| !n.trim().is_empty()).map(str::to_owned);
                Ok(())
            }
            ("event_msg", _) => Ok(()), // UI copies of response items
            ("compacted", _) => self.compacted(p, at),
            ("response_item", Some(kind)) => self.item(kind, p, at),
            ("response_item", None) => Err(self.err("field `payload.type` missing")),
            _ => Ok(()),
        }
    }

    /// `session_meta`: starts the session; a resumed rollout repeats it.
    fn session_meta(&mut self, p: &Value, at: Option<u64>) -> Result<(), ImportError> {
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
        self.b.start(id, at, None, policy)
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
