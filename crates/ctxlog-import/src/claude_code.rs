//! Claude Code transcript JSONL (`session-formats.md` §2).
//!
//! - Assistant lines are grouped by `message.id` into one step; its usage is
//!   counted once (input, cache read and cache write from the group, output
//!   the maximum seen, since early lines carry a streaming placeholder).
//! - `tool_use` blocks become tool parts (pending); a later `tool_result`
//!   with the same id completes them (or marks them errored). Calls never
//!   answered stay pending, so the window shows them as interrupted.
//! - `isMeta` user lines and bookkeeping lines (`summary`,
//!   `file-history-snapshot`, `queue-operation`, ...) are skipped.
//! - `system`/`compact_boundary` becomes a compaction request; the following
//!   `isCompactSummary` user line becomes its completed summary.
//! - Source ids: user lines keep their `uuid`, steps their `message.id`.

use crate::limits::limits_for;
use crate::time::parse_rfc3339_ms;
use crate::{Format, ImportError, ImportOptions, Imported};
use ctxlog_core::{
    CompactionTrigger, Event, FinishReason, IdSource, Json, MessageId, ModelLimits, ModelRef,
    PartBody, PartId, Recorder, Role, SeededIds, SessionId, TokenUsage, ToolState,
};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;

struct Group {
    source: String,
    message: MessageId,
    usage: TokenUsage,
    has_tool: bool,
    stop: Option<String>,
    at: u64,
}

struct Call {
    part: PartId,
    tool: String,
    input: Json,
    start: u64,
}

struct Importer<'a> {
    file: &'a str,
    line: u64,
    options: &'a ImportOptions,
    r: Option<Recorder<SeededIds>>,
    source_session: Option<String>,
    group: Option<Group>,
    calls: BTreeMap<String, Call>,
    tool_ids: BTreeSet<String>,
    last_user: Option<MessageId>,
    model: Option<String>,
    pending_compaction: Option<MessageId>,
    steps: u64,
    last_at: u64,
}

fn as_json(v: &Value) -> Json {
    // serde_json::Value -> Json through the human-readable serde path.
    serde_json::from_value(v.clone()).unwrap_or(Json::Null)
}

impl<'a> Importer<'a> {
    fn err(&self, message: impl Into<String>) -> ImportError {
        ImportError {
            file: self.file.to_owned(),
            line: self.line,
            message: message.into(),
        }
    }

    fn rec(&mut self) -> &mut Recorder<SeededIds> {
        self.r.as_mut().expect("started before the first event")
    }

    fn record(&mut self, at: u64, event: Event) -> Result<(), ImportError> {
        let line = self.line;
        let file = self.file.to_owned();
        self.rec()
            .record(at, event)
            .map(|_| ())
            .map_err(|e| ImportError {
                file,
                line,
                message: format!("refused: {e}"),
            })
    }

    /// Starts the session once the source session id is known: ids are
    /// derived from it, so importing the same recording twice gives the same
    /// events (the store then deduplicates).
    fn start(&mut self, source: &str, at: u64) -> Result<(), ImportError> {
        let digest = Sha256::digest(format!("ctxlog/import/claude-code/{source}").as_bytes());
        let seed = u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"));
        let mut ids = SeededIds::new(seed);
        let session = SessionId(ids.next_uuid(at));
        let limits = self.options.limits.clone().unwrap_or_default();
        let r = Recorder::start_from(
            session,
            ids,
            at,
            self.options.policy.clone(),
            limits,
            Some(source.to_owned()),
        )
        .map_err(|e| self.err(format!("refused: {e}")))?;
        self.r = Some(r);
        self.source_session = Some(source.to_owned());
        Ok(())
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
        let part = self.rec().part_id(g.at);
        self.record(
            g.at,
            Event::StepFinished {
                message: g.message,
                part,
                reason,
                tokens: g.usage,
                cost_micros: None,
            },
        )?;
        self.steps += 1;
        Ok(())
    }

    fn new_message(
        &mut self,
        at: u64,
        role: Role,
        parent: Option<MessageId>,
        source: Option<String>,
        model: Option<ModelRef>,
    ) -> Result<MessageId, ImportError> {
        let message = self.rec().message_id(at);
        self.record(
            at,
            Event::MessageAppended {
                message,
                role,
                agent: None,
                model,
                synthetic: false,
                parent,
                source_id: source,
            },
        )?;
        Ok(message)
    }

    fn part(
        &mut self,
        at: u64,
        message: MessageId,
        body: PartBody,
        source: Option<String>,
    ) -> Result<PartId, ImportError> {
        let part = self.rec().part_id(at);
        self.record(
            at,
            Event::PartAppended {
                message,
                part,
                body,
                source_id: source,
            },
        )?;
        Ok(part)
    }

    fn line(&mut self, v: &Value) -> Result<(), ImportError> {
        let ty = v
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("field `type` missing or not a string"))?;
        if !matches!(ty, "user" | "assistant" | "system") {
            return Ok(()); // summary, file-history-snapshot, queue-operation, ...
        }
        let at = match v.get("timestamp") {
            Some(Value::String(s)) => parse_rfc3339_ms(s).ok_or_else(|| {
                self.err(format!("field `timestamp`: not an RFC 3339 time: {s:?}"))
            })?,
            Some(_) => return Err(self.err("field `timestamp` is not a string")),
            None => self.last_at,
        };
        self.last_at = at;
        if self.r.is_none() {
            let source = v
                .get("sessionId")
                .and_then(Value::as_str)
                .ok_or_else(|| self.err("field `sessionId` missing on the first message line"))?
                .to_owned();
            self.start(&source, at)?;
        }
        match ty {
            "system" => {
                if v.get("subtype").and_then(Value::as_str) == Some("compact_boundary") {
                    self.finish_group()?;
                    let auto = v
                        .pointer("/compactMetadata/trigger")
                        .and_then(Value::as_str)
                        != Some("manual");
                    let message = self.rec().message_id(at);
                    let part = self.rec().part_id(at);
                    self.record(
                        at,
                        Event::CompactionRequested {
                            message,
                            part,
                            auto,
                            overflow: false,
                            trigger: CompactionTrigger::Imported,
                            agent: None,
                            model: None,
                            source_id: v.get("uuid").and_then(Value::as_str).map(str::to_owned),
                        },
                    )?;
                    self.pending_compaction = Some(message);
                }
                Ok(())
            }
            "user" => self.user(v, at),
            _ => self.assistant(v, at),
        }
    }

    fn user(&mut self, v: &Value, at: u64) -> Result<(), ImportError> {
        if v.get("isMeta").and_then(Value::as_bool) == Some(true) {
            return Ok(());
        }
        self.finish_group()?;
        let uuid = v.get("uuid").and_then(Value::as_str).map(str::to_owned);
        let content = v
            .pointer("/message/content")
            .ok_or_else(|| self.err("field `message.content` missing"))?;
        if v.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
            if let Some(job) = self.pending_compaction.take() {
                let text = match content {
                    Value::String(s) => s.clone(),
                    Value::Array(blocks) => blocks
                        .iter()
                        .filter_map(|b| b.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => {
                        return Err(
                            self.err("field `message.content` is neither a string nor an array")
                        )
                    }
                };
                let summary_message = self.rec().message_id(at);
                self.record(
                    at,
                    Event::CompactionStarted {
                        job,
                        summary_message,
                        agent: Some("compaction".into()),
                        model: None,
                        prompt: None,
                        tail_start: None,
                        source_id: uuid,
                    },
                )?;
                self.part(
                    at,
                    summary_message,
                    PartBody::Text {
                        text,
                        synthetic: false,
                        time: None,
                    },
                    None,
                )?;
                let part = self.rec().part_id(at);
                return self.record(
                    at,
                    Event::SummaryCompleted {
                        job,
                        part,
                        reason: FinishReason::Stop,
                        tokens: TokenUsage::default(),
                        redactions: 0,
                    },
                );
            }
        }
        match content {
            Value::String(text) => {
                let m = self.new_message(at, Role::User, None, uuid, None)?;
                self.part(
                    at,
                    m,
                    PartBody::Text {
                        text: text.clone(),
                        synthetic: false,
                        time: None,
                    },
                    None,
                )?;
                self.last_user = Some(m);
                Ok(())
            }
            Value::Array(blocks) => {
                let mut texts = Vec::new();
                for (i, b) in blocks.iter().enumerate() {
                    match b.get("type").and_then(Value::as_str) {
                        Some("tool_result") => self.tool_result(b, i, at)?,
                        Some("text") => texts.push(
                            b.get("text")
                                .and_then(Value::as_str)
                                .ok_or_else(|| {
                                    self.err(format!(
                                        "field `message.content[{i}].text` is not a string"
                                    ))
                                })?
                                .to_owned(),
                        ),
                        Some(_) => {}
                        None => {
                            return Err(
                                self.err(format!("field `message.content[{i}].type` missing"))
                            )
                        }
                    }
                }
                if !texts.is_empty() {
                    let m = self.new_message(at, Role::User, None, uuid, None)?;
                    for text in texts {
                        self.part(
                            at,
                            m,
                            PartBody::Text {
                                text,
                                synthetic: false,
                                time: None,
                            },
                            None,
                        )?;
                    }
                    self.last_user = Some(m);
                }
                Ok(())
            }
            _ => Err(self.err("field `message.content` is neither a string nor an array")),
        }
    }

    fn tool_result(&mut self, b: &Value, i: usize, at: u64) -> Result<(), ImportError> {
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
        let state = if b.get("is_error").and_then(Value::as_bool) == Some(true) {
            ToolState::Error {
                input: call.input,
                error: output,
                start: call.start,
                end: at,
            }
        } else {
            ToolState::Completed {
                input: call.input,
                output,
                title: None,
                metadata: Json::Null,
                start: call.start,
                end: at,
                attachments: Vec::new(),
            }
        };
        self.record(
            at,
            Event::PartUpdated {
                part: call.part,
                body: PartBody::Tool {
                    call_id: id.to_owned(),
                    tool: call.tool,
                    state,
                },
            },
        )
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
        if self.group.as_ref().is_some_and(|g| g.source != source) {
            self.finish_group()?;
        }
        if let Some(model) = msg.get("model").and_then(Value::as_str) {
            if self.model.as_deref() != Some(model) && model != "<synthetic>" {
                self.model = Some(model.to_owned());
                if self.options.limits.is_none() {
                    let limits = limits_for(model).unwrap_or(ModelLimits {
                        context: 200_000,
                        input: None,
                        output: Some(32_000),
                    });
                    self.record(at, Event::LimitsChanged { limits })?;
                }
            }
        }
        if self.group.is_none() {
            let model = self.model.clone().map(|m| ModelRef {
                provider: "anthropic".into(),
                model: m,
            });
            let parent = self.last_user;
            let message =
                self.new_message(at, Role::Assistant, parent, Some(source.clone()), model)?;
            self.group = Some(Group {
                source: source.clone(),
                message,
                usage: TokenUsage::default(),
                has_tool: false,
                stop: None,
                at,
            });
        }
        let message = self.group.as_ref().expect("group").message;
        let blocks = msg
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| self.err("field `message.content` is not an array"))?;
        for (i, b) in blocks.iter().enumerate() {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let text = b
                        .get("text")
                        .and_then(Value::as_str)
                        .ok_or_else(|| {
                            self.err(format!("field `message.content[{i}].text` is not a string"))
                        })?
                        .to_owned();
                    self.part(
                        at,
                        message,
                        PartBody::Text {
                            text,
                            synthetic: false,
                            time: None,
                        },
                        None,
                    )?;
                }
                Some("thinking") => {
                    let text = b
                        .get("thinking")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    self.part(at, message, PartBody::Reasoning { text, time: None }, None)?;
                }
                Some("tool_use") => {
                    let id = b
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| {
                            self.err(format!("field `message.content[{i}].id` missing"))
                        })?
                        .to_owned();
                    let tool = b
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| {
                            self.err(format!("field `message.content[{i}].name` missing"))
                        })?
                        .to_owned();
                    let raw = b.get("input").cloned().unwrap_or(Value::Null);
                    let input = as_json(&raw);
                    let part = self.part(
                        at,
                        message,
                        PartBody::Tool {
                            call_id: id.clone(),
                            tool: tool.clone(),
                            state: ToolState::Pending {
                                input: input.clone(),
                                raw: raw.to_string(),
                            },
                        },
                        Some(id.clone()),
                    )?;
                    self.tool_ids.insert(id.clone());
                    self.calls.insert(
                        id,
                        Call {
                            part,
                            tool,
                            input,
                            start: at,
                        },
                    );
                    self.group.as_mut().expect("group").has_tool = true;
                }
                _ => {}
            }
        }
        let g = self.group.as_mut().expect("group");
        if let Some(u) = msg.get("usage") {
            let n = |k: &str| u.get(k).and_then(Value::as_u64);
            if let Some(x) = n("input_tokens") {
                g.usage.input = x;
            }
            if let Some(x) = n("cache_read_input_tokens") {
                g.usage.cache_read = x;
            }
            if let Some(x) = n("cache_creation_input_tokens") {
                g.usage.cache_write = x;
            }
            if let Some(x) = n("output_tokens") {
                g.usage.output = g.usage.output.max(x);
            }
        }
        if let Some(stop) = msg.get("stop_reason").and_then(Value::as_str) {
            g.stop = Some(stop.to_owned());
        }
        g.at = at;
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
        file,
        line: 0,
        options,
        r: None,
        source_session: None,
        group: None,
        calls: BTreeMap::new(),
        tool_ids: BTreeSet::new(),
        last_user: None,
        model: None,
        pending_compaction: None,
        steps: 0,
        last_at: 0,
    };
    for (i, line) in reader.lines().enumerate() {
        im.line = i as u64 + 1;
        let line = line.map_err(|e| im.err(format!("cannot read the line: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line).map_err(|e| im.err(format!("not JSON: {e}")))?;
        im.line(&v)?;
    }
    im.finish_group()?;
    let Some(r) = im.r.take() else {
        return Err(ImportError {
            file: file.to_owned(),
            line: 0,
            message: "no user or assistant line: nothing to import".into(),
        });
    };
    let messages = r.state().messages.len() as u64;
    Ok(Imported {
        session: r.session(),
        format: Format::ClaudeCode,
        source_session: im.source_session,
        messages,
        tool_calls: im.tool_ids.len() as u64,
        steps: im.steps,
        events: r.into_events(),
    })
}
