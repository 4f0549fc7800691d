//! Claude Code transcript JSONL (`session-formats.md` §2).
//!
//! - Assistant lines are grouped by `message.id` into one step; its usage is
//!   counted once (input, cache read and cache write from the group, output
//!   the maximum seen, since early lines carry a streaming placeholder).
//!   The step's recorded `stop_reason` is kept as a source field of its
//!   message (`null` when no line had one: its output count is then the
//!   streaming placeholder, which the timeline flags).
//! - `tool_use` blocks become tool parts (pending); a later `tool_result`
//!   with the same id completes them (or marks them errored). Calls never
//!   answered stay pending, so the window shows them as interrupted.
//! - `isMeta` user lines (a local command's caveat, …) are kept, flagged
//!   synthetic: Claude Code sends them, it only hides them from the user.
//!   `attachment` lines sent as reminders are kept too (`attachments.rs`).
//!   Bookkeeping lines (`summary`, `file-history-snapshot`,
//!   `queue-operation`, `api-request`, …) are skipped.
//! - `system`/`compact_boundary` becomes a compaction request; the following
//!   `isCompactSummary` user line becomes its completed summary, whose text
//!   is what Claude Code sends as a user message. The messages
//!   `compactMetadata.preservedMessages` names (2.1: the answer before, the
//!   prompt that triggered it, mid-turn the overflowing call and its
//!   result) stay in place before the boundary and are kept verbatim after
//!   the summary: the tail starts at the first of them. An automatic
//!   boundary Claude Code 2.1+ could not have decided on its threshold
//!   (none for the model, or `preTokens` under it) followed a prompt the
//!   provider refused as too long: an overflow compaction (the refusal
//!   is not in the transcript).
//! - Source ids: user lines keep their `uuid`, steps their `message.id`.
//! - The project is the directory the session started in.
//!
//! Files:
//! - `compaction.rs`: A compaction as Claude Code records it.

mod attachments;
mod compaction;

use crate::build::{Builder, NewMessage, OpenCall};
use crate::strict;
use crate::{each_line, Format, ImportError, ImportOptions, Imported};
use ctxlog_core::{
    Event, FinishReason, Json, MessageId, ModelRef, PartBody, Role, SourceTarget, TokenUsage,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead;

struct Group {
    source: String,
    message: MessageId,
    usage: TokenUsage,
    has_tool: bool,
    stop: Option<String>,
    at: u64,
    /// The usage last recorded as `UsageReported`.
    reported: Option<TokenUsage>,
}

struct Importer<'a> {
    b: Builder<'a>,
    group: Option<Group>,
    calls: BTreeMap<String, OpenCall>,
    last_user: Option<MessageId>,
    pending_compaction: Option<MessageId>,
    last_at: u64,
    /// The `summary` lines: the title Claude Code shows for the
    /// conversation ending at `leafUuid`.
    summaries: BTreeMap<String, String>,
    /// The `uuid` of each message line, with the line it is on: a uuid
    /// is used once.
    uuids: BTreeMap<String, u64>,
    /// The message each line's `uuid` is part of.
    by_uuid: BTreeMap<String, MessageId>,
    /// The uuids the pending compaction's boundary keeps verbatim.
    preserved: Vec<String>,
    /// Reminders written after the pending compaction's boundary, sent
    /// before its summary.
    before_summary: Vec<String>,
    /// The newest line's Claude Code version is 2.1 or later.
    since_2_1: bool,
}

/// Text the runtime wrote into a user line (local command echoes, interrupt
/// notices): kept, but flagged synthetic so it is not a real prompt.
fn runtime_text(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<command-name>")
        || t.starts_with("<local-command-stdout>")
        || t.starts_with("<local-command-stderr>")
        || t.starts_with("[Request interrupted by user")
}

impl<'a> Importer<'a> {
    fn err(&self, message: impl Into<String>) -> ImportError {
        self.b.err(message)
    }

    /// The call of the step still open at the end of the input that has
    /// no result yet, if one has none. The open step itself always waits
    /// for a later line: no line says which is an answer's last.
    fn open_group_call(&self) -> Option<String> {
        let g = self.group.as_ref()?;
        let state = self.b.state()?;
        let of_group = |call: &OpenCall| {
            state
                .part(call.part)
                .is_some_and(|(m, _)| m.id == g.message)
        };
        self.calls.iter().find(|(_, c)| of_group(c)).map(|(id, _)| {
            format!(
                "the step of {} waits for the result of call {id:?}",
                g.source
            )
        })
    }

    fn finish_group(&mut self) -> Result<(), ImportError> {
        let Some(g) = self.group.take() else {
            return Ok(());
        };
        let reason = match g.stop.as_deref() {
            Some("tool_use") => FinishReason::ToolCalls,
            Some("end_turn") | Some("stop_sequence") => FinishReason::Stop,
            Some("max_tokens") => FinishReason::Length,
            Some("refusal") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.into()),
            None if g.has_tool => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        // Whether the output count is final: a line with a stop reason
        // carries the final count, the others a streaming placeholder.
        self.b.keep_source(
            Format::ClaudeCode.name(),
            SourceTarget::Message(g.message),
            serde_json::json!({ "stop_reason": g.stop }),
        );
        self.b
            .finish_step(g.at, g.message, reason, g.usage, None)
            .map(|_| ())
    }

    /// The model in use, as the provider's (Claude Code's is Anthropic's).
    fn model_ref(&self) -> Option<ModelRef> {
        self.b.model().map(|m| ModelRef {
            provider: "anthropic".into(),
            model: m.to_owned(),
        })
    }

    fn new_message(
        &mut self,
        at: u64,
        role: Role,
        parent: Option<MessageId>,
        source: Option<String>,
        model: Option<ModelRef>,
        synthetic: bool,
    ) -> Result<MessageId, ImportError> {
        self.b.message(
            at,
            role,
            NewMessage {
                parent,
                source,
                model,
                agent: None,
                synthetic,
            },
        )
    }

    fn line(&mut self, v: &Value) -> Result<(), ImportError> {
        let ty = v
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("field `type` missing or not a string"))?;
        // Unknown line types are passed over, never another agent's.
        if let Some(why) = Format::ClaudeCode.foreign_line(v) {
            return Err(self.err(why));
        }
        if let (Some(text), Some(leaf)) = (
            v.get("summary").and_then(Value::as_str),
            v.get("leafUuid").and_then(Value::as_str),
        ) {
            self.summaries.insert(leaf.to_owned(), text.to_owned());
        }
        if !matches!(ty, "user" | "assistant" | "system" | "attachment") {
            return Ok(()); // summary, file-history-snapshot, queue-operation, ...
        }
        if let Some(cwd) = v.get("cwd").and_then(Value::as_str) {
            self.b.about.directory.get_or_insert_with(|| cwd.to_owned());
        }
        if let Some(version) = v.get("version").and_then(Value::as_str) {
            self.b.about.agent = Some(format!("claude-code-{version}"));
            self.since_2_1 = crate::version_at_least(version, (2, 1));
        }
        if let Some(uuid) = v.get("uuid").and_then(Value::as_str) {
            let line = self.b.at.line;
            if let Some(first) = self.uuids.insert(uuid.to_owned(), line) {
                return Err(self.err(format!(
                    "uuid {uuid:?} was already used by line {first}: a line's uuid is used once"
                )));
            }
        }
        if v.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            return Ok(()); // an inline sub-agent's turn, not this conversation
        }
        let at = self.b.line_time(v)?.unwrap_or(self.last_at);
        self.last_at = at;
        if !self.b.started() {
            let source = v
                .get("sessionId")
                .and_then(Value::as_str)
                .ok_or_else(|| self.err("field `sessionId` missing on the first message line"))?
                .to_owned();
            let policy = self.b.policy_for(None);
            self.b.start(&source, at, None, policy)?;
        }
        match ty {
            "system" if v.get("subtype").and_then(Value::as_str) == Some("compact_boundary") => {
                self.boundary(v, at)
            }
            "system" => Ok(()),
            "user" => self.user(v, at),
            "attachment" => self.attachment(v, at),
            _ => self.assistant(v, at),
        }
    }

    fn user(&mut self, v: &Value, at: u64) -> Result<(), ImportError> {
        let meta = v.get("isMeta").and_then(Value::as_bool) == Some(true);
        let uuid = v.get("uuid").and_then(Value::as_str).map(str::to_owned);
        let content = v
            .pointer("/message/content")
            .ok_or_else(|| self.err("field `message.content` missing"))?;
        let compact_summary = v.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
        if compact_summary {
            self.finish_group()?;
            if let Some(job) = self.pending_compaction.take() {
                return self.compaction_summary(job, content, uuid, at);
            }
        }
        match content {
            Value::String(text) => {
                // A prompt ends the step in progress; a summary with no
                // boundary before it is kept, as synthetic.
                self.finish_group()?;
                let synthetic = meta || compact_summary || runtime_text(text);
                let m = self.new_message(at, Role::User, None, uuid.clone(), None, synthetic)?;
                self.b.text(at, m, text.clone(), synthetic)?;
                self.note_uuid(uuid, m);
                self.last_user = Some(m);
                Ok(())
            }
            Value::Array(blocks) => self.user_blocks(blocks, uuid, meta || compact_summary, at),
            _ => Err(self.err("field `message.content` is neither a string nor an array")),
        }
    }

    /// Notes that the line `uuid` is part of `message`.
    fn note_uuid(&mut self, uuid: Option<String>, message: MessageId) {
        if let Some(u) = uuid {
            self.by_uuid.insert(u, message);
        }
    }

    /// The earliest message (in log order) that one of `uuids` is part of.
    fn first_message_of(&self, uuids: &[String]) -> Option<MessageId> {
        let state = self.b.state()?;
        uuids
            .iter()
            .filter_map(|u| self.by_uuid.get(u))
            .filter_map(|m| Some((state.message_index(*m)?, *m)))
            .min()
            .map(|(_, m)| m)
    }

    /// A user line whose content is blocks: tool results complete their
    /// calls; its text blocks, if any, are one user message (synthetic when
    /// the runtime wrote it).
    fn user_blocks(
        &mut self,
        blocks: &[Value],
        uuid: Option<String>,
        runtime: bool,
        at: u64,
    ) -> Result<(), ImportError> {
        let mut texts = Vec::new();
        let mut answered = None;
        for (i, b) in blocks.iter().enumerate() {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_result") => answered = self.tool_result(b, i, at)?,
                Some("text") => texts.push(
                    b.get("text")
                        .and_then(Value::as_str)
                        .ok_or_else(|| {
                            self.err(format!("field `message.content[{i}].text` is not a string"))
                        })?
                        .to_owned(),
                ),
                Some(_) => {}
                None => return Err(self.err(format!("field `message.content[{i}].type` missing"))),
            }
        }
        // Tool results alone complete calls of the step in progress
        // (parallel calls can be answered between its lines).
        if !texts.is_empty() {
            self.finish_group()?;
            let synthetic = runtime || texts.iter().all(|t| runtime_text(t));
            let m = self.new_message(at, Role::User, None, uuid.clone(), None, synthetic)?;
            for text in texts {
                self.b.text(at, m, text, synthetic)?;
            }
            self.note_uuid(uuid, m);
            self.last_user = Some(m);
            return Ok(());
        }
        // A line of tool results is part of the step whose calls it answers.
        if let Some(m) = answered {
            self.note_uuid(uuid, m);
        }
        Ok(())
    }

    /// A `tool_result` block completes its call; the message of the call.
    fn tool_result(
        &mut self,
        b: &Value,
        i: usize,
        at: u64,
    ) -> Result<Option<MessageId>, ImportError> {
        let id = b
            .get("tool_use_id")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err(format!("field `message.content[{i}].tool_use_id` missing")))?;
        let call = self
            .calls
            .remove(id)
            .ok_or_else(|| self.err(format!("tool result for unknown call {id:?}")))?;
        let output = match b.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .map(|p| match p.get("type").and_then(Value::as_str) {
                    Some("text") => p
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    Some(other) => format!("[{other}]"),
                    None => String::new(),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            None | Some(Value::Null) => String::new(),
            Some(_) => {
                return Err(self.err(format!(
                    "field `message.content[{i}].content` is neither a string nor an array"
                )))
            }
        };
        let is_error = b.get("is_error").and_then(Value::as_bool) == Some(true);
        let message = self
            .b
            .state()
            .and_then(|s| s.part(call.part))
            .map(|(m, _)| m.id);
        self.b
            .complete_call(at, id, call, output, is_error, Json::Null)?;
        Ok(message)
    }

    fn assistant(&mut self, v: &Value, at: u64) -> Result<(), ImportError> {
        let msg = v
            .get("message")
            .ok_or_else(|| self.err("field `message` missing"))?;
        let source = msg
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("field `message.id` missing"))?
            .to_owned();
        let message = self.open_group(msg, source, at)?;
        let uuid = v.get("uuid").and_then(Value::as_str).map(str::to_owned);
        self.note_uuid(uuid, message);
        let blocks = msg
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| self.err("field `message.content` is not an array"))?;
        let mut has_tool = false;
        for (i, b) in blocks.iter().enumerate() {
            has_tool |= self.assistant_block(b, i, message, at)?;
        }
        self.update_group(msg, has_tool, at)
    }

    /// The step the line with `message.id` `source` belongs to: the one in
    /// progress, or a new one (the previous one finished) with its message.
    fn open_group(
        &mut self,
        msg: &Value,
        source: String,
        at: u64,
    ) -> Result<MessageId, ImportError> {
        if self.group.as_ref().is_some_and(|g| g.source != source) {
            self.finish_group()?;
        }
        if let Some(model) = msg.get("model").and_then(Value::as_str) {
            if model != "<synthetic>" {
                self.b.set_model(at, model)?;
            }
        }
        if let Some(g) = &self.group {
            return Ok(g.message);
        }
        let model = self.model_ref();
        let parent = self.last_user;
        let message = self.new_message(
            at,
            Role::Assistant,
            parent,
            Some(source.clone()),
            model,
            false,
        )?;
        self.group = Some(Group {
            source,
            message,
            usage: TokenUsage::default(),
            has_tool: false,
            stop: None,
            at,
            reported: None,
        });
        Ok(message)
    }

    /// One content block of an assistant line; returns whether it was a
    /// tool call.
    fn assistant_block(
        &mut self,
        b: &Value,
        i: usize,
        message: MessageId,
        at: u64,
    ) -> Result<bool, ImportError> {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = b
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        self.err(format!("field `message.content[{i}].text` is not a string"))
                    })?
                    .to_owned();
                self.b.text(at, message, text, false)?;
            }
            Some("thinking") => {
                let text = b
                    .get("thinking")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                self.b
                    .part(at, message, PartBody::Reasoning { text, time: None }, None)?;
            }
            Some("tool_use") => {
                self.tool_use(b, i, message, at)?;
                return Ok(true);
            }
            _ => {}
        }
        Ok(false)
    }

    /// A `tool_use` block: a pending tool part, waiting for its result.
    fn tool_use(
        &mut self,
        b: &Value,
        i: usize,
        message: MessageId,
        at: u64,
    ) -> Result<(), ImportError> {
        let id = b
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err(format!("field `message.content[{i}].id` missing")))?
            .to_owned();
        let tool = b
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err(format!("field `message.content[{i}].name` missing")))?
            .to_owned();
        let input = b.get("input").unwrap_or(&Value::Null);
        let call = self.b.pending_call(at, message, &id, tool, input)?;
        self.calls.insert(id, call);
        Ok(())
    }

    /// Folds the line's usage, stop reason and time into the step in progress.
    fn update_group(&mut self, msg: &Value, has_tool: bool, at: u64) -> Result<(), ImportError> {
        let usage = match strict::object(msg, "usage") {
            Ok(Some(u)) => Some(usage_of(u).map_err(|e| self.err(e))?),
            Ok(None) => None,
            Err(e) => return Err(self.err(format!("message: {e}"))),
        };
        let Some(g) = self.group.as_mut() else {
            return Err(self.err("an assistant line with no step in progress"));
        };
        g.has_tool |= has_tool;
        let reports_usage = usage.is_some();
        if let Some(u) = usage {
            if let Some(x) = u.input {
                g.usage.input = x;
            }
            if let Some(x) = u.cache_read {
                g.usage.cache_read = x;
            }
            if let Some(x) = u.cache_write {
                g.usage.cache_write = x;
            }
            if let Some(x) = u.output {
                g.usage.output = g.usage.output.max(x);
            }
        }
        if let Some(stop) = msg.get("stop_reason").and_then(Value::as_str) {
            g.stop = Some(stop.to_owned());
        }
        g.at = at;
        // What is known of the step is recorded as soon as it is known: its
        // end comes only with a later line (or never, for the last step of
        // a file).
        if reports_usage && g.reported != Some(g.usage) {
            g.reported = Some(g.usage);
            let (message, tokens) = (g.message, g.usage);
            self.b
                .record(at, Event::UsageReported { message, tokens })?;
        }
        Ok(())
    }
}

/// Imports a Claude Code transcript read from `reader`; `file` names it in errors.
pub fn import<R: BufRead>(
    reader: R,
    file: &str,
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    let mut im = Importer {
        b: Builder::new(file, Format::ClaudeCode, options),
        group: None,
        calls: BTreeMap::new(),
        last_user: None,
        pending_compaction: None,
        last_at: 0,
        summaries: BTreeMap::new(),
        uuids: BTreeMap::new(),
        by_uuid: BTreeMap::new(),
        preserved: Vec::new(),
        before_summary: Vec::new(),
        since_2_1: false,
    };
    let unfinished = each_line(reader, file, options.max_line_bytes, |n, v| {
        im.b.at.line = n;
        im.line(&v)
    })?;
    im.b.unfinished_line(unfinished);
    // The step open at the end is stored as far as it is known (its
    // message, parts, the usage reported); its end waits for a later line.
    if let Some(why) = im.open_group_call() {
        im.b.step_waits(&why);
    }
    // The title of the latest message that has a summary.
    im.b.about.title = im
        .summaries
        .iter()
        .filter_map(|(leaf, title)| Some((im.uuids.get(leaf)?, title)))
        .max_by_key(|(line, _)| **line)
        .map(|(_, title)| title.clone());
    im.b.finish()
}

/// The counts of one line's `usage` (each absent when not reported).
struct LineUsage {
    input: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
    output: Option<u64>,
}

fn usage_of(u: &serde_json::Map<String, Value>) -> Result<LineUsage, String> {
    let n = |k: &str| strict::count_named(u.get(k), || format!("message.usage.{k}"));
    Ok(LineUsage {
        input: n("input_tokens")?,
        cache_read: n("cache_read_input_tokens")?,
        cache_write: n("cache_creation_input_tokens")?,
        output: n("output_tokens")?,
    })
}
