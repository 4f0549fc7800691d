//! OpenCode `opencode export` JSON (`session-formats.md` §1,
//! `opencode-behavior.md` §2.3).
//!
//! Streaming: the top-level object is read with a serde visitor that takes
//! one message (`{info, parts}`) at a time, so only one message's tree is in
//! memory. `info` may come before or after `messages`.
//!
//! - A user message with a `compaction` part is a compaction marker
//!   (`CompactionRequested`, `auto` and `overflow` kept; `tail_start_id`
//!   becomes the job's tail start).
//! - An assistant message with `summary: true` whose `parentID` is a marker
//!   is that job's summary: `CompactionStarted`, its text and reasoning
//!   parts, then `SummaryCompleted` when it has a `finish` and no `error`,
//!   `CompactionFailed` when it has an `error`; with neither it stays
//!   running (interrupted), as in OpenCode.
//! - Other assistant messages: their parts in order; each `step-finish`
//!   becomes `StepFinished` (a message with a `finish` but no step-finish
//!   part gets one from its `info.tokens`); `error` becomes `MessageErrored`.
//! - Tool parts keep their state (`pending`, `running`, `completed`,
//!   `error`). A completed part with `state.time.compacted` was pruned:
//!   `PartsPruned` events (policy `imported`, one per distinct time) are
//!   placed before the first later message created after that time.
//! - `file` parts become attachments; `patch`, `agent`, `subtask`, `retry`,
//!   `snapshot` and any other type are kept verbatim (`PartBody::Other`).
//! - A user message whose text parts are all `synthetic` (the continue
//!   message) is synthetic. Source ids are OpenCode's message, part and call
//!   ids; errors name the JSON path (`messages[3].parts[1].state`).

use crate::build::{as_json, Builder, NewMessage};
use crate::export::{FAILED_REF, RESTARTED_REF};
use crate::strict;
use crate::{Bounded, Format, ImportError, ImportOptions, Imported};
use ctxlog_core::{
    Attachment, CompactionTrigger, Event, FinishReason, MessageError, MessageId, ModelRef,
    PartBody, PartId, PrunedPart, Role, SourceTarget, Span, TokenUsage, ToolState,
};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::io::BufRead;

/// An OpenCode finish reason.
pub fn finish_from(s: &str) -> FinishReason {
    match s {
        "stop" => FinishReason::Stop,
        "tool-calls" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content-filter" => FinishReason::ContentFilter,
        "error" => FinishReason::Error,
        other => FinishReason::Other(other.into()),
    }
}

/// OpenCode's name for a finish reason.
pub fn finish_name(f: &FinishReason) -> String {
    match f {
        FinishReason::Stop => "stop".into(),
        FinishReason::ToolCalls => "tool-calls".into(),
        FinishReason::Length => "length".into(),
        FinishReason::ContentFilter => "content-filter".into(),
        FinishReason::Error => "error".into(),
        FinishReason::Other(o) => o.clone(),
    }
}

/// Reads OpenCode's `tokens` object; a count of the wrong type is an error
/// naming it (`tokens.cache.read must be …`).
pub fn tokens_from(v: &Value) -> Result<TokenUsage, String> {
    if !v.is_object() {
        return Err(format!(
            "`tokens` must be an object, not {}",
            strict::describe(v)
        ));
    }
    let count =
        |p: &str| strict::count_value(v.pointer(p), &format!("tokens{}", p.replace('/', ".")));
    let n = |p: &str| count(p).map(Option::unwrap_or_default);
    Ok(TokenUsage {
        total: count("/total")?,
        input: n("/input")?,
        output: n("/output")?,
        reasoning: n("/reasoning")?,
        cache_read: n("/cache/read")?,
        cache_write: n("/cache/write")?,
    })
}

/// A recorded cost in dollars as micro-dollars.
fn cost_micros(v: Option<&Value>) -> Result<Option<u64>, String> {
    Ok(strict::amount_value(v, "cost")?.map(|c| (c * 1_000_000.0).round() as u64))
}

/// What ctxlog models of a user message's `info` (see [`unmodelled`]).
const USER_INFO: &[&str] = &[
    "id",
    "sessionID",
    "role",
    "time.created",
    "agent",
    "model.providerID",
    "model.modelID",
];
/// What ctxlog models of an assistant message's `info`.
const ASSISTANT_INFO: &[&str] = &[
    "id",
    "sessionID",
    "role",
    "time.created",
    "agent",
    "modelID",
    "providerID",
    "parentID",
    "summary",
];
/// What ctxlog models of every part (its id only where it keeps the source
/// id: parts written by `StepFinished`, `SummaryCompleted` and
/// `CompactionRequested` get ids of their own, so theirs is kept here).
const PART: &[&str] = &["sessionID", "messageID", "type"];

/// What ctxlog models of a part of `kind`, besides [`PART`] and its id.
fn part_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "text" => &["text", "synthetic", "time.start", "time.end"],
        "reasoning" => &["text", "time.start", "time.end"],
        "file" => &["mime", "filename", "url"],
        "step-start" => &["snapshot"],
        "step-finish" => &["reason", "tokens", "cost"],
        "compaction" => &["auto", "overflow", "tail_start_id"],
        "tool" => &[
            "tool",
            "callID",
            "state.status",
            "state.input",
            "state.output",
            "state.title",
            "state.metadata",
            "state.time.start",
            "state.time.end",
            "state.time.compacted",
            "state.attachments",
            "state.error",
            "state.raw",
        ],
        _ => &[],
    }
}

/// `v` without the `modelled` paths (`a.b` is key `b` of object `a`) and
/// without the objects that left empty: the fields ctxlog does not model,
/// `None` when there are none.
fn unmodelled(v: &Value, modelled: &[&str]) -> Option<Value> {
    let mut rest = v.clone();
    for path in modelled {
        remove_path(&mut rest, path);
    }
    match &rest {
        Value::Object(m) if !m.is_empty() => Some(rest),
        _ => None,
    }
}

fn remove_path(v: &mut Value, path: &str) {
    let Value::Object(m) = v else {
        return;
    };
    match path.split_once('.') {
        None => {
            m.remove(path);
        }
        Some((head, rest)) => {
            if let Some(child) = m.get_mut(head) {
                remove_path(child, rest);
                if child.as_object().is_some_and(Map::is_empty) {
                    m.remove(head);
                }
            }
        }
    }
}

struct Marker {
    tail: Option<MessageId>,
}

struct Importer<'a> {
    b: Builder<'a>,
    info: Option<Value>,
    /// OpenCode message id → ctxlog message id.
    ids: BTreeMap<String, MessageId>,
    /// Every message id read, with where it was.
    message_paths: BTreeMap<String, String>,
    /// Every part id read, with where it was.
    part_paths: BTreeMap<String, String>,
    /// Whether the export had its `messages` array.
    has_messages: bool,
    /// The summed `cost` of the assistant messages (OpenCode's session
    /// total is that sum), micro-dollars.
    message_cost: Option<u64>,
    /// Bytes read since the last message (see [`Bounded`]).
    message_bytes: Option<std::rc::Rc<std::cell::Cell<u64>>>,
    /// Marker (job) → what its compaction part said.
    markers: BTreeMap<MessageId, Marker>,
    /// Pruned parts waiting to be placed: (time, part, tokens).
    prunes: Vec<(u64, PartId, u64)>,
    failed: Option<ImportError>,
}

fn str_at<'v>(o: &'v Value, k: &str) -> Option<&'v str> {
    o.get(k).and_then(Value::as_str)
}

impl<'a> Importer<'a> {
    fn err(&self, path: String, m: impl Into<String>) -> ImportError {
        let mut e = self.b.err(m);
        e.path = Some(path);
        e
    }

    /// The count or time at `pointer` of `v` (the object at `path`).
    fn count(&self, v: &Value, pointer: &str, path: &str) -> Result<Option<u64>, ImportError> {
        strict::count_at(v, pointer).map_err(|e| self.err(path.to_owned(), e))
    }

    /// The `tokens` and `cost` of `v` (the object at `path`).
    fn usage(&self, v: &Value, path: &str) -> Result<(TokenUsage, Option<u64>), ImportError> {
        let tokens = match v.get("tokens") {
            None | Some(Value::Null) => TokenUsage::default(),
            Some(t) => tokens_from(t).map_err(|e| self.err(path.to_owned(), e))?,
        };
        let cost = cost_micros(v.get("cost")).map_err(|e| self.err(path.to_owned(), e))?;
        Ok((tokens, cost))
    }

    fn start(&mut self, fallback: Option<&str>, at: u64) -> Result<(), ImportError> {
        if self.b.started() {
            return Ok(());
        }
        let info = self.info.clone();
        let id = info
            .as_ref()
            .and_then(|i| str_at(i, "id"))
            .or(fallback)
            .ok_or_else(|| self.err("info.id".into(), "missing: no session id"))?
            .to_owned();
        let created = match &info {
            Some(i) => self.count(i, "/time/created", "info")?,
            None => None,
        }
        .unwrap_or(at);
        // The title is a description (OpenCode generates it after the first
        // prompt): it is recorded with the others, never in `SessionStarted`,
        // whose bytes must not change as the session grows.
        let version = info.as_ref().and_then(|i| str_at(i, "version"));
        let policy = self.b.policy_for(version);
        self.b.start(&id, created, None, policy)
    }

    /// Keeps the fields of `source` that ctxlog does not model besides
    /// `modelled` (a [`Event::SourceFields`] for `target`), if there are any.
    fn keep_source(
        &mut self,
        _at: u64,
        target: SourceTarget,
        source: &Value,
        modelled: &[&str],
    ) -> Result<(), ImportError> {
        if let Some(fields) = unmodelled(source, modelled) {
            self.b.keep_source("opencode", target, fields);
        }
        Ok(())
    }

    /// Keeps what ctxlog does not model of part `p` (besides `fields`),
    /// created as `part`; `kept_id` when the part's event carries the source
    /// id.
    fn keep_part(
        &mut self,
        at: u64,
        part: PartId,
        p: &Value,
        fields: &[&str],
        kept_id: bool,
    ) -> Result<(), ImportError> {
        let mut modelled: Vec<&str> = PART.to_vec();
        modelled.extend_from_slice(fields);
        if kept_id {
            modelled.push("id");
        }
        self.keep_source(at, SourceTarget::Part(part), p, &modelled)
    }

    /// Places the prune marks whose time has come before a message created at `at`.
    fn flush_prunes(&mut self, before: Option<u64>) -> Result<(), ImportError> {
        let mut due: Vec<(u64, PartId, u64)> = Vec::new();
        self.prunes.retain(|p| {
            let is_due = before.is_none_or(|t| p.0 < t);
            if is_due {
                due.push(*p);
            }
            !is_due
        });
        due.sort_by_key(|p| p.0);
        let mut i = 0;
        while i < due.len() {
            let t = due[i].0;
            let group: Vec<_> = due[i..].iter().take_while(|p| p.0 == t).copied().collect();
            i += group.len();
            let parts: Vec<PrunedPart> = group
                .iter()
                .map(|&(_, part, tokens)| PrunedPart { part, tokens })
                .collect();
            let total_tokens = parts.iter().map(|p| p.tokens).sum();
            self.b.record(
                t,
                Event::PartsPruned {
                    parts,
                    total_tokens,
                    policy: "imported".into(),
                },
            )?;
        }
        Ok(())
    }

    /// [`Importer::message`], its error kept for the caller and turned into
    /// a deserializer error that stops the read.
    fn message_or_fail<E: serde::de::Error>(&mut self, index: usize, v: Value) -> Result<(), E> {
        self.b.at.path = Some(format!("messages[{index}]"));
        self.message(index, v).map_err(|e| {
            self.failed = Some(e);
            E::custom("import failed")
        })
    }

    fn message(&mut self, index: usize, v: Value) -> Result<(), ImportError> {
        let path = format!("messages[{index}]");
        let info = v
            .get("info")
            .filter(|i| i.is_object())
            .ok_or_else(|| self.err(format!("{path}.info"), "missing or not an object"))?;
        let id = str_at(info, "id")
            .ok_or_else(|| self.err(format!("{path}.info.id"), "missing or not a string"))?
            .to_owned();
        if let Some(first) = self.message_paths.insert(id.clone(), path.clone()) {
            return Err(self.err(
                format!("{path}.info.id"),
                format!("message id {id:?} is used twice (first at {first}): every message needs its own id"),
            ));
        }
        if let Some(parts) = v.get("parts").and_then(Value::as_array) {
            for (i, p) in parts.iter().enumerate() {
                let Some(part) = str_at(p, "id") else {
                    continue;
                };
                let here = format!("{path}.parts[{i}]");
                if let Some(first) = self.part_paths.insert(part.to_owned(), here.clone()) {
                    return Err(self.err(
                        format!("{here}.id"),
                        format!("part id {part:?} is used twice (first at {first}): every part needs its own id"),
                    ));
                }
            }
        }
        let created = self
            .count(info, "/time/created", &format!("{path}.info"))?
            .ok_or_else(|| self.err(format!("{path}.info.time.created"), "missing"))?;
        self.start(str_at(info, "sessionID"), created)?;
        self.flush_prunes(Some(created))?;
        let parts = match v.get("parts") {
            Some(Value::Array(p)) => p.as_slice(),
            None | Some(Value::Null) => &[],
            Some(_) => return Err(self.err(format!("{path}.parts"), "not an array")),
        };
        let at = created;
        match str_at(info, "role") {
            Some("user") => self.user(&path, info, id, parts, at),
            Some("assistant") => self.assistant(&path, info, id, parts, at),
            Some(r) => Err(self.err(format!("{path}.info.role"), format!("unknown role {r:?}"))),
            None => Err(self.err(format!("{path}.info.role"), "missing")),
        }
    }

    fn user_model(info: &Value) -> Option<ModelRef> {
        let m = info.get("model")?;
        Some(ModelRef {
            provider: str_at(m, "providerID").unwrap_or("").to_owned(),
            model: str_at(m, "modelID")?.to_owned(),
        })
    }

    fn user(
        &mut self,
        path: &str,
        info: &Value,
        id: String,
        parts: &[Value],
        at: u64,
    ) -> Result<(), ImportError> {
        let agent = str_at(info, "agent").map(str::to_owned);
        let model = Self::user_model(info);
        if let Some((pi, c)) = parts
            .iter()
            .enumerate()
            .find(|(_, p)| str_at(p, "type") == Some("compaction"))
        {
            let message = self.b.message_id(at)?;
            let part = self.b.part_id(at)?;
            let version = self.info.as_ref().and_then(|i| str_at(i, "version"));
            let decided_by = self.b.decided_by(version);
            let tail = match str_at(c, "tail_start_id") {
                Some(t) => Some(*self.ids.get(t).ok_or_else(|| {
                    self.err(
                        format!("{path}.parts[{pi}].tail_start_id"),
                        format!("names no earlier message: {t:?}"),
                    )
                })?),
                None => None,
            };
            self.b.record(
                at,
                Event::CompactionRequested {
                    message,
                    part,
                    auto: c.get("auto").and_then(Value::as_bool).unwrap_or(false),
                    overflow: c.get("overflow").and_then(Value::as_bool).unwrap_or(false),
                    trigger: CompactionTrigger::Recorded {
                        agent: decided_by,
                        tokens_before: None,
                    },
                    agent,
                    model,
                    source_id: Some(id.clone()),
                },
            )?;
            self.ids.insert(id, message);
            self.markers.insert(message, Marker { tail });
            self.keep_source(at, SourceTarget::Message(message), info, USER_INFO)?;
            return self.keep_part(at, part, c, part_fields("compaction"), false);
        }
        let texts: Vec<&Value> = parts
            .iter()
            .filter(|p| str_at(p, "type") == Some("text"))
            .collect();
        let synthetic = !texts.is_empty()
            && texts
                .iter()
                .all(|p| p.get("synthetic").and_then(Value::as_bool) == Some(true));
        let message = self.b.message(
            at,
            Role::User,
            NewMessage {
                parent: None,
                source: Some(id.clone()),
                model,
                agent,
                synthetic,
            },
        )?;
        self.ids.insert(id, message);
        self.keep_source(at, SourceTarget::Message(message), info, USER_INFO)?;
        self.parts(path, message, parts, at, false, None)
            .map(|_| ())
    }

    fn assistant(
        &mut self,
        path: &str,
        info: &Value,
        id: String,
        parts: &[Value],
        at: u64,
    ) -> Result<(), ImportError> {
        // The message's own totals, checked even where its step-finish
        // parts carry the figures ctxlog keeps.
        let (info_tokens, info_cost) = self.usage(info, &format!("{path}.info"))?;
        if let Some(c) = info_cost {
            self.message_cost = Some(self.message_cost.unwrap_or(0).saturating_add(c));
        }
        let model = str_at(info, "modelID").map(|m| ModelRef {
            provider: str_at(info, "providerID").unwrap_or("").to_owned(),
            model: m.to_owned(),
        });
        let agent = str_at(info, "agent")
            .or_else(|| str_at(info, "mode"))
            .map(str::to_owned);
        let parent = str_at(info, "parentID").and_then(|p| self.ids.get(p).copied());
        let finish = str_at(info, "finish").map(finish_from);
        let error = info
            .get("error")
            .filter(|e| !e.is_null())
            .map(|e| MessageError {
                // ctxlog's own compaction outcomes travel as an
                // `UnknownError` whose `ref` names them (see `export`).
                name: match e.pointer("/data/ref").and_then(Value::as_str) {
                    Some(FAILED_REF) => "CompactionFailed",
                    Some(RESTARTED_REF) => "CompactionRestarted",
                    _ => str_at(e, "name").unwrap_or("UnknownError"),
                }
                .to_owned(),
                message: e
                    .pointer("/data/message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            });
        let completed = self.count(info, "/time/completed", &format!("{path}.info"))?;
        let job = parent.filter(|p| {
            self.markers.contains_key(p)
                && self
                    .b
                    .state()
                    .and_then(|s| s.job(*p))
                    .is_some_and(|j| j.status.is_pending())
        });
        if info.get("summary").and_then(Value::as_bool) == Some(true) {
            if let Some(job) = job {
                return self.summary(path, info, id, parts, at, job, model, agent, finish, error);
            }
        }
        if let Some(m) = model.as_ref() {
            self.b.set_model(at, &m.model)?;
        }
        let message = self.b.message(
            at,
            Role::Assistant,
            NewMessage {
                parent,
                source: Some(id.clone()),
                model,
                agent,
                synthetic: false,
            },
        )?;
        self.ids.insert(id, message);
        self.keep_source(at, SourceTarget::Message(message), info, ASSISTANT_INFO)?;
        let stepped = self.parts(path, message, parts, at, false, completed)?;
        if !stepped {
            if let Some(reason) = finish {
                let t = completed.unwrap_or(at);
                self.b
                    .finish_step(t, message, reason, info_tokens, info_cost)?;
            }
        }
        if let Some(error) = error {
            self.b.record(
                completed.unwrap_or(at),
                Event::MessageErrored { message, error },
            )?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn summary(
        &mut self,
        path: &str,
        info: &Value,
        id: String,
        parts: &[Value],
        at: u64,
        job: MessageId,
        model: Option<ModelRef>,
        agent: Option<String>,
        finish: Option<FinishReason>,
        error: Option<MessageError>,
    ) -> Result<(), ImportError> {
        let summary_message = self.b.message_id(at)?;
        let tail_start = self.markers.get(&job).and_then(|m| m.tail);
        self.b.record(
            at,
            Event::CompactionStarted {
                job,
                summary_message,
                agent,
                model,
                prompt: None,
                tail_start,
                source_id: Some(id.clone()),
            },
        )?;
        self.ids.insert(id, summary_message);
        self.keep_source(
            at,
            SourceTarget::Message(summary_message),
            info,
            ASSISTANT_INFO,
        )?;
        self.parts(path, summary_message, parts, at, true, None)?;
        let completed = self
            .count(info, "/time/completed", &format!("{path}.info"))?
            .unwrap_or(at);
        let fail = |b: &mut Builder, error: String| {
            b.record(completed, Event::CompactionFailed { job, error })
        };
        match error {
            // A superseded attempt (ctxlog's own export): the job goes on.
            Some(e) if e.name == "CompactionRestarted" => return Ok(()),
            // ctxlog's own failed job: its error text as it was.
            Some(e) if e.name == "CompactionFailed" => return fail(&mut self.b, e.message),
            Some(e) => return fail(&mut self.b, format!("{}: {}", e.name, e.message)),
            None => {}
        }
        let Some(reason) = finish else {
            return Ok(()); // interrupted: the job stays running, as in OpenCode
        };
        let has_text = self
            .b
            .state()
            .and_then(|s| s.message(summary_message))
            .is_some_and(|m| m.parts.iter().any(ctxlog_core::Part::is_nonblank_text));
        if reason == FinishReason::Error || !has_text {
            return fail(
                &mut self.b,
                format!(
                    "the summary finished ({}) without {}",
                    finish_name(&reason),
                    if has_text { "success" } else { "text" }
                ),
            );
        }
        let step_finish = parts
            .iter()
            .rev()
            .find(|p| str_at(p, "type") == Some("step-finish"));
        let tokens = match step_finish.filter(|p| p.get("tokens").is_some()) {
            Some(p) => self.usage(p, &format!("{path}.parts"))?.0,
            None => self.usage(info, &format!("{path}.info"))?.0,
        };
        let part = self.b.part_id(completed)?;
        self.b.record(
            completed,
            Event::SummaryCompleted {
                job,
                part,
                reason,
                tokens,
                redactions: 0,
            },
        )?;
        match step_finish {
            // `SummaryCompleted` keeps no cost.
            Some(p) => self.keep_part(completed, part, p, &["reason", "tokens"], false),
            None => Ok(()),
        }
    }

    /// Appends `parts`; returns whether a step-finish was among them. A
    /// step-finish ends at its `time.end` (ctxlog's own exports write one),
    /// else the last one at the message's `completed` time, else at `at`.
    fn parts(
        &mut self,
        path: &str,
        message: MessageId,
        parts: &[Value],
        at: u64,
        summary: bool,
        completed: Option<u64>,
    ) -> Result<bool, ImportError> {
        let last_step = parts
            .iter()
            .rposition(|p| str_at(p, "type") == Some("step-finish"));
        let mut stepped = false;
        for (i, p) in parts.iter().enumerate() {
            let ppath = format!("{path}.parts[{i}]");
            if !p.is_object() {
                return Err(self.err(ppath, "not an object"));
            }
            let kind = str_at(p, "type")
                .ok_or_else(|| self.err(format!("{ppath}.type"), "missing or not a string"))?;
            let source = str_at(p, "id").map(str::to_owned);
            if !summary
                && matches!(kind, "tool" | "reasoning" | "step-start" | "step-finish")
                && self
                    .b
                    .state()
                    .and_then(|s| s.message(message))
                    .is_some_and(|m| m.role == Role::User)
            {
                continue; // OpenCode never puts these on user messages
            }
            let span = match self.count(p, "/time/start", &ppath)? {
                Some(start) => Some(Span {
                    start,
                    end: self.count(p, "/time/end", &ppath)?,
                }),
                None => None,
            };
            let body = match kind {
                "text" => PartBody::Text {
                    text: str_at(p, "text")
                        .ok_or_else(|| self.err(format!("{ppath}.text"), "not a string"))?
                        .to_owned(),
                    synthetic: p.get("synthetic").and_then(Value::as_bool) == Some(true),
                    time: span,
                },
                "reasoning" => PartBody::Reasoning {
                    text: str_at(p, "text").unwrap_or("").to_owned(),
                    time: span,
                },
                "step-finish" => {
                    if summary {
                        continue; // becomes SummaryCompleted's part
                    }
                    let t = self
                        .count(p, "/time/end", &ppath)?
                        .or(completed.filter(|_| last_step == Some(i)))
                        .unwrap_or(at);
                    let reason = str_at(p, "reason")
                        .map(finish_from)
                        .unwrap_or(FinishReason::Stop);
                    let (tokens, cost) = self.usage(p, &ppath)?;
                    let part = self.b.finish_step(t, message, reason, tokens, cost)?;
                    self.keep_part(t, part, p, part_fields(kind), false)?;
                    stepped = true;
                    continue;
                }
                "step-start" => PartBody::StepStart {
                    snapshot: str_at(p, "snapshot").map(str::to_owned),
                },
                // A summary holds only its step start, text and reasoning.
                _ if summary => continue,
                "file" => PartBody::File(Attachment {
                    mime: str_at(p, "mime")
                        .unwrap_or("application/octet-stream")
                        .to_owned(),
                    filename: str_at(p, "filename").map(str::to_owned),
                    url: str_at(p, "url").unwrap_or("").to_owned(),
                }),
                "tool" => {
                    let (body, compacted) = self.tool(&ppath, p, at)?;
                    let kept_id = source.is_some();
                    let part = self.b.part(at, message, body.clone(), source)?;
                    self.keep_part(at, part, p, part_fields(kind), kept_id)?;
                    if let (
                        Some(t),
                        PartBody::Tool {
                            state: ToolState::Completed { output, .. },
                            ..
                        },
                    ) = (compacted, &body)
                    {
                        let tokens = self.b.options().policy.estimate(output);
                        self.prunes.push((t, part, tokens));
                    }
                    continue;
                }
                "compaction" => {
                    return Err(self.err(
                        format!("{ppath}.type"),
                        "a compaction part outside a user marker message",
                    ))
                }
                other => {
                    let mut data: Map<String, Value> = p.as_object().cloned().unwrap_or_default();
                    for k in ["id", "sessionID", "messageID", "type"] {
                        data.remove(k);
                    }
                    PartBody::Other {
                        kind: other.to_owned(),
                        data: as_json(&Value::Object(data)),
                    }
                }
            };
            // An unmodelled kind keeps all its fields in its body already.
            let keep = (!matches!(body, PartBody::Other { .. })).then_some(source.is_some());
            let part = self.b.part(at, message, body, source)?;
            if let Some(kept_id) = keep {
                self.keep_part(at, part, p, part_fields(kind), kept_id)?;
            }
        }
        Ok(stepped)
    }

    fn tool(&self, path: &str, p: &Value, at: u64) -> Result<(PartBody, Option<u64>), ImportError> {
        let tool = str_at(p, "tool")
            .ok_or_else(|| self.err(format!("{path}.tool"), "missing or not a string"))?
            .to_owned();
        let call_id = str_at(p, "callID")
            .ok_or_else(|| self.err(format!("{path}.callID"), "missing or not a string"))?
            .to_owned();
        let s = p
            .get("state")
            .filter(|s| s.is_object())
            .ok_or_else(|| self.err(format!("{path}.state"), "missing or not an object"))?;
        let input = as_json(s.get("input").unwrap_or(&Value::Null));
        let spath = format!("{path}.state");
        let time = |k: &str| self.count(s, &format!("/time/{k}"), &spath);
        let status = str_at(s, "status")
            .ok_or_else(|| self.err(format!("{path}.state.status"), "missing or not a string"))?;
        let title = str_at(s, "title").map(str::to_owned);
        let state = match status {
            "pending" => ToolState::Pending {
                input,
                raw: str_at(s, "raw").unwrap_or("").to_owned(),
            },
            "running" => ToolState::Running {
                input,
                title,
                start: time("start")?.unwrap_or(at),
            },
            "completed" => ToolState::Completed {
                input,
                output: match s.get("output") {
                    Some(Value::String(o)) => o.clone(),
                    None | Some(Value::Null) => String::new(),
                    Some(_) => return Err(self.err(format!("{path}.state.output"), "not a string")),
                },
                title,
                metadata: as_json(s.get("metadata").unwrap_or(&Value::Null)),
                start: time("start")?.unwrap_or(at),
                end: time("end")?.unwrap_or(at),
                attachments: s
                    .get("attachments")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .map(|f| Attachment {
                                mime: str_at(f, "mime").unwrap_or("").to_owned(),
                                filename: str_at(f, "filename").map(str::to_owned),
                                url: str_at(f, "url").unwrap_or("").to_owned(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            },
            "error" => ToolState::Error {
                input,
                error: str_at(s, "error").unwrap_or("").to_owned(),
                start: time("start")?.unwrap_or(at),
                end: time("end")?.unwrap_or(at),
            },
            other => {
                return Err(self.err(
                    format!("{path}.state.status"),
                    format!("unknown status {other:?}"),
                ))
            }
        };
        let compacted = if status == "completed" {
            time("compacted")?
        } else {
            None
        };
        Ok((
            PartBody::Tool {
                call_id,
                tool,
                state,
            },
            compacted,
        ))
    }
}

struct Top<'i, 'a>(&'i mut Importer<'a>);
struct Messages<'i, 'a>(&'i mut Importer<'a>);

impl<'de> DeserializeSeed<'de> for Top<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OpenCode export object {info, messages}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "info" => {
                    let info: Value = map.next_value()?;
                    if !info.is_object() {
                        return Err(serde::de::Error::custom("`info` is not an object"));
                    }
                    self.0.info = Some(info);
                }
                "messages" if self.0.has_messages => {
                    return Err(serde::de::Error::custom("a second `messages` key"));
                }
                "messages" => {
                    self.0.has_messages = true;
                    map.next_value_seed(Messages(&mut *self.0))?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Messages<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Messages<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of messages")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        // Each message is imported once the next one is read: the last one
        // of a session OpenCode is still writing may not be finished.
        let mut held: Option<(usize, Value)> = None;
        loop {
            self.0.b.at.path = Some(format!("messages[{i}]"));
            let Some(v) = seq.next_element::<Value>()? else {
                break;
            };
            // The limit holds per message, not for the whole export.
            if let Some(used) = &self.0.message_bytes {
                used.set(0);
            }
            if let Some((n, m)) = held.replace((i, v)) {
                self.0.message_or_fail(n, m)?;
            }
            i += 1;
        }
        if let Some((n, m)) = held {
            match still_written(&m) {
                Some(why) => self.0.b.step_waits(&format!("messages[{n}] {why}")),
                None => self.0.message_or_fail(n, m)?,
            }
        }
        self.0.b.at.path = None;
        Ok(())
    }
}

/// Why the last message of a session OpenCode may still be writing is not
/// finished: a user message with nothing after it yet (OpenCode writes a
/// message's row before its parts, a compaction marker's part included, and
/// starts the reply only once they are written), an assistant message
/// without `time.completed`, or one with a tool call that has no result yet.
fn still_written(message: &Value) -> Option<&'static str> {
    if message.pointer("/info/role").and_then(Value::as_str) != Some("assistant") {
        return Some("has nothing after it yet (its parts may still be written)");
    }
    if message.pointer("/info/time/completed").is_none() {
        return Some("is not completed yet");
    }
    let open_call = message
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|p| {
            p.get("type").and_then(Value::as_str) == Some("tool")
                && matches!(
                    p.pointer("/state/status").and_then(Value::as_str),
                    Some("pending" | "running")
                )
        });
    open_call.then_some("has a tool call without its result")
}

/// Imports an OpenCode export read from `reader`; `file` names it in errors.
pub fn import<R: BufRead>(
    reader: R,
    file: &str,
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    let mut im = Importer {
        b: Builder::new(file, Format::OpenCode, options),
        info: None,
        ids: BTreeMap::new(),
        message_paths: BTreeMap::new(),
        part_paths: BTreeMap::new(),
        has_messages: false,
        message_cost: None,
        message_bytes: None,
        markers: BTreeMap::new(),
        prunes: Vec::new(),
        failed: None,
    };
    // A byte-order mark before the document is not part of it.
    let mut reader = reader;
    if reader
        .fill_buf()
        .is_ok_and(|head| head.starts_with(b"\xef\xbb\xbf"))
    {
        reader.consume(3);
    }
    let (reader, used) = Bounded::new(reader, options.max_line_bytes);
    im.message_bytes = Some(used);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let parsed = Top(&mut im).deserialize(&mut de).and_then(|()| de.end());
    if let Some(e) = im.failed.take() {
        return Err(e);
    }
    if let Err(e) = parsed {
        let mut err = im.b.err(format!("not a valid OpenCode export: {e}"));
        err.line = e.line() as u64;
        return Err(err);
    }
    im.b.at.path = None;
    if !im.has_messages {
        return Err(im.err(
            "messages".into(),
            "missing: an OpenCode export has a `messages` array (an empty session has `[]`)",
        ));
    }
    if im.info.is_none() {
        return Err(im.err(
            "info".into(),
            "missing: an OpenCode export has an `info` object (the session's id, title, \
             directory and version); nothing was imported",
        ));
    }
    if !im.b.started() {
        // An export with no messages: the session still exists.
        im.start(None, 0)?;
    }
    im.flush_prunes(None)?;
    if let Some(info) = im.info.take() {
        let at = im.b.time(None);
        let text = |k: &str| str_at(&info, k).map(str::to_owned);
        im.b.about.title = text("title");
        im.b.about.directory = text("directory");
        im.b.about.agent = Some(match text("version") {
            Some(v) => format!("opencode-{v}"),
            None => "opencode".into(),
        });
        if let (Some(provider), Some(model)) = (
            info.pointer("/model/providerID").and_then(Value::as_str),
            info.pointer("/model/id").and_then(Value::as_str),
        ) {
            im.b.about.model = Some(format!("{provider}/{model}"));
        }
        im.b.about.cost_usd = strict::amount_value(info.get("cost"), "cost")
            .map_err(|e| im.err("info.cost".into(), e))?
            .or(im.message_cost.map(|c| c as f64 / 1_000_000.0));
        im.keep_source(
            at,
            SourceTarget::Session,
            &info,
            &["id", "title", "time.created"],
        )?;
    }
    im.b.finish()
}
