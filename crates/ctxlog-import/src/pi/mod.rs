//! pi coding-agent session JSONL (`session-formats.md` §4).
//!
//! - The `session` line starts the session (its `id` is the source id) and
//!   names the first model; `model_change` switches it.
//! - Each `assistant` message is one step, with source id `line:N` (its own
//!   line). Its usage is Anthropic-style (`input` uncached, `cacheRead`,
//!   `cacheWrite`, `output`, `totalTokens`) and its cost `usage.cost.total`
//!   the step's recorded cost. `stopReason` `aborted` or
//!   `error` also records a message error. A refused request (`error`, no
//!   content, all-zero usage) is no step: its message only records the
//!   error, `ContextOverflowError` when its text is one of pi's overflow
//!   patterns ([`is_overflow_text`]).
//! - `toolCall` blocks become pending tool parts; a later `toolResult`
//!   message completes them by `toolCallId` (errored when `isError`). Calls
//!   never answered stay pending.
//! - `bashExecution` (a command the user ran with `!`) is kept as a synthetic
//!   user message: it reaches the model but is not a prompt.
//! - A `compaction` entry becomes a completed compaction whose summary is its
//!   `summary`; the tail starts at the first message at or after the entry
//!   `firstKeptEntryId` names (session version 3; pi 0.73 writes it), or at
//!   the 0-based line `firstKeptEntryIndex` (version 1). pi records no
//!   reason; it is read from what comes before ([`Reason`]): after a refused
//!   request (or an answer whose input exceeds the window) an overflow
//!   compaction, after an answer over pi's threshold an automatic one, after
//!   an answer under it (the window known) a manual one.
//! - `thinking_level_change` and unknown entries are skipped.
//!
//! Files: `compaction.rs` (a `compaction` entry and its reason).

mod compaction;

use compaction::Reason;

use crate::build::{Builder, NewMessage, OpenCall};
use crate::strict;
use crate::{each_line, Format, ImportError, ImportOptions, Imported};
use ctxlog_core::window::CONTEXT_OVERFLOW_ERROR;
use ctxlog_core::{
    Attachment, Event, FinishReason, Json, MessageError, MessageId, ModelRef, PartBody, Role,
    TokenUsage,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead;

struct Importer<'a> {
    b: Builder<'a>,
    line: u64,
    /// Calls waiting for their result, by call id.
    calls: BTreeMap<String, OpenCall>,
    /// 1-based line → message created from it (for `firstKeptEntryIndex`).
    by_line: BTreeMap<u64, MessageId>,
    /// Entry id → its 1-based line (for `firstKeptEntryId`).
    entries: BTreeMap<String, u64>,
    /// What the newest assistant message says about a compaction after it.
    last_answer: Option<Reason>,
    last_user: Option<MessageId>,
    provider: String,
    /// The `session` line, until the first entry after it starts the
    /// session (see [`Importer::begin`]).
    header: Option<Value>,
}

impl<'a> Importer<'a> {
    fn err(&self, m: impl Into<String>) -> ImportError {
        self.b.err(m)
    }

    /// Starts the session of the `session` line `header`, at its time or
    /// at `first` (the first entry's), whichever is earlier: a branched
    /// session's header is written when it branches, after the entries it
    /// copies, which keep their own times.
    fn begin(&mut self, header: &Value, first: Option<u64>) -> Result<(), ImportError> {
        let at = self.b.line_time(header)?;
        let start = match (at, first) {
            (Some(a), Some(f)) => Some(a.min(f)),
            (a, f) => a.or(f),
        };
        let id = header.get("id").and_then(Value::as_str).unwrap_or_default();
        let policy = self.b.policy_for(None);
        self.b.start(id, start.unwrap_or(0), None, policy)?;
        self.b.about.agent = Some("pi".into());
        self.b.about.directory = header.get("cwd").and_then(Value::as_str).map(str::to_owned);
        if let Some(p) = header.get("provider").and_then(Value::as_str) {
            self.provider = p.to_owned();
        }
        if let Some(m) = header.get("modelId").and_then(Value::as_str) {
            let at = self.b.time(start);
            self.b.set_model(at, m)?;
        }
        Ok(())
    }

    fn text_blocks(&self, content: &Value, field: &str) -> Result<Vec<PartBody>, ImportError> {
        match content {
            Value::String(s) => Ok(vec![PartBody::Text {
                text: s.clone(),
                synthetic: false,
                time: None,
            }]),
            Value::Array(blocks) => {
                let mut out = Vec::new();
                for (i, c) in blocks.iter().enumerate() {
                    match c.get("type").and_then(Value::as_str) {
                        Some("text") => out.push(PartBody::Text {
                            text: c
                                .get("text")
                                .and_then(Value::as_str)
                                .ok_or_else(|| {
                                    self.err(format!("field `{field}[{i}].text` is not a string"))
                                })?
                                .to_owned(),
                            synthetic: false,
                            time: None,
                        }),
                        Some("image") => out.push(PartBody::File(Attachment {
                            mime: c
                                .get("mimeType")
                                .and_then(Value::as_str)
                                .unwrap_or("image/*")
                                .to_owned(),
                            filename: None,
                            url: String::new(),
                        })),
                        _ => {}
                    }
                }
                Ok(out)
            }
            _ => Err(self.err(format!("field `{field}` is neither a string nor an array"))),
        }
    }

    fn line(&mut self, v: &Value) -> Result<(), ImportError> {
        let ty = v
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("field `type` missing or not a string"))?;
        let at = self.b.line_time(v)?;
        if ty == "session" {
            if self.b.started() || self.header.is_some() {
                return Err(self.err("a second `session` line"));
            }
            v.get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .ok_or_else(|| self.err("field `id` missing, empty or not a string"))?;
            self.header = Some(v.clone());
            return Ok(());
        }
        if let Some(id) = v.get("id").and_then(Value::as_str) {
            if let Some(first) = self.entries.insert(id.to_owned(), self.line) {
                return Err(self.err(format!(
                    "entry id {id:?} is used twice (first on line {first})"
                )));
            }
        }
        if !self.b.started() {
            let Some(header) = self.header.take() else {
                return Err(self.err(format!(
                    "a {ty:?} line before the `session` line: not a pi session"
                )));
            };
            self.begin(&header, at)?;
        }
        match ty {
            "model_change" => {
                let at = self.b.time(at);
                if let Some(p) = v.get("provider").and_then(Value::as_str) {
                    self.provider = p.to_owned();
                }
                match v.get("modelId").and_then(Value::as_str) {
                    Some(m) => self.b.set_model(at, m),
                    None => Err(self.err("field `modelId` missing or not a string")),
                }
            }
            "message" => {
                let m = v
                    .get("message")
                    .ok_or_else(|| self.err("field `message` missing"))?;
                let own =
                    strict::count(m, "timestamp").map_err(|e| self.err(format!("message: {e}")))?;
                let at = own.or(at);
                let at = self.b.time(at);
                match m.get("role").and_then(Value::as_str) {
                    Some("user") => self.user(m, at),
                    Some("assistant") => self.assistant(m, at),
                    Some("toolResult") => self.tool_result(m, at),
                    Some("bashExecution") => self.bash(m, at),
                    Some(other) => {
                        Err(self.err(format!("field `message.role`: unknown {other:?}")))
                    }
                    None => Err(self.err("field `message.role` missing")),
                }
            }
            "compaction" => {
                let at = self.b.time(at);
                self.compaction(v, at)
            }
            _ => Ok(()), // thinking_level_change, ...
        }
    }

    fn user(&mut self, m: &Value, at: u64) -> Result<(), ImportError> {
        let content = m
            .get("content")
            .ok_or_else(|| self.err("field `message.content` missing"))?;
        let bodies = self.text_blocks(content, "message.content")?;
        let message = self.b.message(
            at,
            Role::User,
            NewMessage {
                source: Some(format!("line:{}", self.line)),
                ..NewMessage::default()
            },
        )?;
        for body in bodies {
            self.b.part(at, message, body, None)?;
        }
        self.by_line.insert(self.line, message);
        self.last_user = Some(message);
        Ok(())
    }

    fn bash(&mut self, m: &Value, at: u64) -> Result<(), ImportError> {
        let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
        let text = format!("$ {}\n{}", s("command"), s("output"));
        let message = self.b.message(
            at,
            Role::User,
            NewMessage {
                source: Some(format!("line:{}", self.line)),
                synthetic: true,
                ..NewMessage::default()
            },
        )?;
        self.by_line.insert(self.line, message);
        self.b.text(at, message, text, true).map(|_| ())
    }

    fn assistant(&mut self, m: &Value, at: u64) -> Result<(), ImportError> {
        let message = self.assistant_message(m, at)?;
        let blocks = m
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| self.err("field `message.content` is not an array"))?;
        let tokens = usage(m).map_err(|e| self.err(format!("message.usage: {e}")))?;
        if is_refusal(m, blocks, &tokens) {
            return self.refused(m, message, at);
        }
        let mut has_tool = false;
        for (i, c) in blocks.iter().enumerate() {
            has_tool |= self.assistant_block(c, i, message, at)?;
        }
        self.finish_assistant(m, message, has_tool, tokens, at)
    }

    /// A request the provider refused: the message records the error and
    /// no step; an overflow makes the next compaction an overflow one.
    fn refused(&mut self, m: &Value, message: MessageId, at: u64) -> Result<(), ImportError> {
        let text = m
            .get("errorMessage")
            .and_then(Value::as_str)
            .unwrap_or("error")
            .to_owned();
        let overflow = is_overflow_text(&text);
        let name = if overflow {
            CONTEXT_OVERFLOW_ERROR
        } else {
            "APIError"
        };
        if overflow {
            self.last_answer = Some(Reason::Overflow);
        }
        self.b.record(
            at,
            Event::MessageErrored {
                message,
                error: MessageError {
                    name: name.into(),
                    message: text,
                },
            },
        )
    }

    /// The assistant message itself (its model, provider and parent).
    fn assistant_message(&mut self, m: &Value, at: u64) -> Result<MessageId, ImportError> {
        if let Some(model) = m.get("model").and_then(Value::as_str) {
            self.b.set_model(at, model)?;
        }
        if let Some(p) = m.get("provider").and_then(Value::as_str) {
            self.provider = p.to_owned();
        }
        let model = self.b.model().map(|mo| ModelRef {
            provider: self.provider.clone(),
            model: mo.to_owned(),
        });
        let message = self.b.message(
            at,
            Role::Assistant,
            NewMessage {
                parent: self.last_user,
                source: Some(format!("line:{}", self.line)),
                model,
                ..NewMessage::default()
            },
        )?;
        self.by_line.insert(self.line, message);
        Ok(message)
    }

    /// One content block of an assistant message; returns whether it was a
    /// tool call.
    fn assistant_block(
        &mut self,
        c: &Value,
        i: usize,
        message: MessageId,
        at: u64,
    ) -> Result<bool, ImportError> {
        let field = |k: &str| format!("message.content[{i}].{k}");
        match c.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = c
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| self.err(format!("field `{}` is not a string", field("text"))))?
                    .to_owned();
                self.b.text(at, message, text, false)?;
                Ok(false)
            }
            Some("thinking") => {
                let text = c
                    .get("thinking")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                self.b
                    .part(at, message, PartBody::Reasoning { text, time: None }, None)?;
                Ok(false)
            }
            Some("toolCall") => {
                self.tool_call(c, i, message, at)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// A `toolCall` block: a pending tool part, waiting for its result.
    fn tool_call(
        &mut self,
        c: &Value,
        i: usize,
        message: MessageId,
        at: u64,
    ) -> Result<(), ImportError> {
        let field = |k: &str| format!("message.content[{i}].{k}");
        let id = c
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err(format!("field `{}` missing", field("id"))))?
            .to_owned();
        let tool = c
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err(format!("field `{}` missing", field("name"))))?
            .to_owned();
        let args = c.get("arguments").unwrap_or(&Value::Null);
        let call = self.b.pending_call(at, message, &id, tool, args)?;
        self.calls.insert(id, call);
        Ok(())
    }

    /// The step's finish (reason and usage) and, for `aborted` or `error`,
    /// the message's error.
    fn finish_assistant(
        &mut self,
        m: &Value,
        message: MessageId,
        has_tool: bool,
        tokens: TokenUsage,
        at: u64,
    ) -> Result<(), ImportError> {
        let stop = m.get("stopReason").and_then(Value::as_str);
        let reason = match stop {
            Some("toolUse") => FinishReason::ToolCalls,
            Some("stop") | Some("endTurn") => FinishReason::Stop,
            Some("length") => FinishReason::Length,
            Some("error") => FinishReason::Error,
            Some(other) => FinishReason::Other(other.into()),
            None if has_tool => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        self.last_answer = Some(self.reason_after(&reason, &tokens));
        let cost = cost_micros(m).map_err(|e| self.err(format!("message.usage.cost: {e}")))?;
        self.b.finish_step(at, message, reason, tokens, cost)?;
        if !matches!(stop, Some("aborted") | Some("error")) {
            return Ok(());
        }
        let (name, text) = if stop == Some("aborted") {
            ("MessageAbortedError", "aborted")
        } else {
            ("APIError", "error")
        };
        let text = m
            .get("errorMessage")
            .and_then(Value::as_str)
            .unwrap_or(text)
            .to_owned();
        self.b.record(
            at,
            Event::MessageErrored {
                message,
                error: MessageError {
                    name: name.into(),
                    message: text,
                },
            },
        )
    }

    fn tool_result(&mut self, m: &Value, at: u64) -> Result<(), ImportError> {
        let id = m
            .get("toolCallId")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("field `message.toolCallId` missing"))?
            .to_owned();
        let call = self
            .calls
            .remove(&id)
            .ok_or_else(|| self.err(format!("tool result for unknown call {id:?}")))?;
        let content = m.get("content").cloned().unwrap_or(Value::Null);
        let output = match &content {
            Value::Null => String::new(),
            c => self
                .text_blocks(c, "message.content")?
                .into_iter()
                .filter_map(|b| match b {
                    PartBody::Text { text, .. } => Some(text),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        };
        let is_error = m.get("isError").and_then(Value::as_bool) == Some(true);
        self.b
            .complete_call(at, &id, call, output, is_error, Json::Null)
    }
}

/// Imports a pi session read from `reader`; `file` names it in errors.
pub fn import<R: BufRead>(
    reader: R,
    file: &str,
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    let mut im = Importer {
        b: Builder::new(file, Format::Pi, options),
        line: 0,
        calls: BTreeMap::new(),
        by_line: BTreeMap::new(),
        entries: BTreeMap::new(),
        last_answer: None,
        last_user: None,
        provider: "unknown".into(),
        header: None,
    };
    let unfinished = each_line(reader, file, options.max_line_bytes, |n, v| {
        im.line = n;
        im.b.at.line = n;
        im.line(&v)
    })?;
    im.b.unfinished_line(unfinished);
    // A session line alone holds no session yet: the agent may still be
    // writing its first entry (which may name the model).
    im.b.finish()
}

/// An assistant message's `usage` (absent: nothing reported).
fn usage(m: &Value) -> Result<TokenUsage, String> {
    let none = Value::Null;
    let u = match strict::object(m, "usage")? {
        Some(_) => &m["usage"],
        None => &none,
    };
    let n = |k: &str| Ok::<_, String>(strict::count(u, k)?.unwrap_or(0));
    Ok(TokenUsage {
        total: strict::count(u, "totalTokens")?,
        input: n("input")?,
        output: n("output")?,
        reasoning: 0,
        cache_read: n("cacheRead")?,
        cache_write: n("cacheWrite")?,
    })
}

/// An assistant message's recorded cost (`usage.cost.total`, dollars) in
/// micro-dollars; absent: not recorded.
fn cost_micros(m: &Value) -> Result<Option<u64>, String> {
    let cost = m.get("usage").and_then(|u| u.get("cost"));
    match cost {
        None | Some(Value::Null) => Ok(None),
        Some(c) if c.is_object() => Ok(strict::amount_value(c.get("total"), "total")?
            .map(|total| (total * 1_000_000.0).round() as u64)),
        Some(other) => Err(format!("not an object but {}", strict::describe(other))),
    }
}

/// Whether an assistant message is a request the provider refused: an
/// error with no content and nothing reported.
fn is_refusal(m: &Value, blocks: &[Value], tokens: &TokenUsage) -> bool {
    m.get("stopReason").and_then(Value::as_str) == Some("error")
        && blocks.is_empty()
        && tokens.total.unwrap_or(0) == 0
        && tokens.input == 0
        && tokens.output == 0
        && tokens.cache_read == 0
        && tokens.cache_write == 0
}

/// Whether a provider's error text is one pi 0.73 takes for a context
/// overflow (`OVERFLOW_PATTERNS` less `NON_OVERFLOW_PATTERNS` of
/// `@mariozechner/pi-ai@0.73.1`'s `utils/overflow.js`, their fixed
/// phrases, matched case-insensitively; the patterns with a number match
/// on the phrase before it).
pub fn is_overflow_text(text: &str) -> bool {
    const OVERFLOW: &[&str] = &[
        "prompt is too long",
        "request_too_large",
        "input is too long for requested model",
        "exceeds the context window",
        "maximum prompt length is ",
        "reduce the length of the messages",
        "maximum context length is ",
        "exceeds the limit of ",
        "exceeds the available context size",
        "greater than the context length",
        "context window exceeds limit",
        "exceeded model token limit",
        "maximum context length",
        "model_context_window_exceeded",
        "exceeded context length",
        "exceeded max context length",
        "context_length_exceeded",
        "context length exceeded",
        "context_length exceeded",
        "context length_exceeded",
        "too many tokens",
        "token limit exceeded",
    ];
    const NOT_OVERFLOW: &[&str] = &["rate limit", "too many requests"];
    let lower = text.to_lowercase();
    let not = NOT_OVERFLOW.iter().any(|p| lower.contains(p))
        || lower.starts_with("throttling error:")
        || lower.starts_with("service unavailable:");
    !not && OVERFLOW.iter().any(|p| lower.contains(p))
}
