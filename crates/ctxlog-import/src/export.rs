//! A session written back as an OpenCode export (`opencode export` JSON),
//! markers, summaries and pruned marks included, so OpenCode's own tools
//! (and [`crate::opencode`]) can read it.
//!
//! Ids: OpenCode orders messages and parts by id, so every id is
//! OpenCode-shaped: the prefix, 12 hex digits of `ms × 4096 + counter`
//! (ascending; `ses_` ids descend) and 14 base62 characters. A session that
//! came from OpenCode keeps its own ids; any other id (a part ctxlog created,
//! a session from another agent) is generated from the times, ascending after
//! every kept id, with a suffix derived from the session id, so exporting the
//! same state twice gives the same bytes. Written message by message.
//!
//! What an import from OpenCode kept of the fields ctxlog does not model
//! (`Event::SourceFields`: paths, snapshots, the ids of the parts ctxlog
//! writes itself, the session's slug and project, ...) is merged over the
//! objects written here, so an OpenCode session exports as it came.

use crate::opencode::finish_name;
use ctxlog_core::window::is_continue_text;
use ctxlog_core::{
    Contents, Envelope, Event, JobStatus, Message, MessageId, ModelRef, Part, PartBody, PartId,
    PruneMark, RefusedEvent, Role, SessionId, SessionState, SourceTarget, Span, TimestampMs,
    TokenUsage, ToolState,
};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use thiserror::Error;

/// Why an export failed.
#[derive(Debug, Error)]
pub enum ExportError {
    /// The log does not replay (a damaged store).
    #[error("the log does not replay: {0}")]
    Refused(#[from] RefusedEvent),
    /// Writing failed.
    #[error("cannot write the export: {0}")]
    Io(#[from] std::io::Error),
    /// Serializing failed.
    #[error("cannot serialize the export: {0}")]
    Json(#[from] serde_json::Error),
    /// No events.
    #[error("the session has no events")]
    Empty,
    /// A sealed part's content is not where the state says.
    #[error("the log does not hold a part's content: {0}")]
    Content(#[from] ctxlog_core::ContentError),
    /// Reading the session's events failed.
    #[error("cannot read the session: {0}")]
    Read(String),
}

/// OpenCode-shaped ids, ascending in the order they are asked for.
struct Ids {
    salt: String,
    keep: bool,
    last: u64,
}

const MASK48: u64 = 0xFFFF_FFFF_FFFF;

impl Ids {
    fn suffix(&self, v: u64) -> String {
        use sha2::{Digest, Sha256};
        const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let h = Sha256::digest(format!("{}/{v}", self.salt).as_bytes());
        h.iter()
            .take(14)
            .map(|b| B62[*b as usize % 62] as char)
            .collect()
    }

    /// The 12 hex digits of an OpenCode id, when `id` is one.
    fn parse(id: &str, prefix: &str) -> Option<u64> {
        let rest = id.strip_prefix(prefix)?;
        let hex = rest.get(..12)?;
        u64::from_str_radix(hex, 16).ok()
    }

    /// `source` when kept, else a new id at time `ms`.
    fn id(&mut self, prefix: &str, source: Option<&str>, ms: TimestampMs) -> String {
        if let Some(s) = source.filter(|_| self.keep) {
            if let Some(v) = Self::parse(s, prefix) {
                self.last = self.last.max(v);
                return s.to_owned();
            }
        }
        let v = (ms.saturating_mul(4096) & MASK48).max(self.last + 1) & MASK48;
        self.last = v;
        format!("{prefix}{v:012x}{}", self.suffix(v))
    }

    fn session(&self, started: TimestampMs) -> String {
        let v = !(started.saturating_mul(4096)) & MASK48;
        format!("ses_{v:012x}{}", self.suffix(v))
    }
}

fn tokens_json(t: &TokenUsage) -> Value {
    let mut v = json!({
        "input": t.input,
        "output": t.output,
        "reasoning": t.reasoning,
        "cache": {"read": t.cache_read, "write": t.cache_write},
    });
    if let Some(total) = t.total {
        v["total"] = json!(total);
    }
    v
}

fn cost_json(micros: Option<u64>) -> Value {
    js_number(micros.unwrap_or(0) as f64 / 1_000_000.0)
}

/// `x` as JavaScript writes it: a whole number without a fraction (`0`,
/// not `0.0`).
fn js_number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// Per-message facts the state does not keep: step finish times and costs,
/// and which messages continue an automatic compaction.
#[derive(Default)]
struct Extra {
    completed: BTreeMap<MessageId, TimestampMs>,
    step_cost: BTreeMap<PartId, (Option<u64>, TimestampMs)>,
    /// Synthetic user messages appended right after an automatic summary
    /// (their continue text is marked `compaction_continue`, as OpenCode does).
    continues: BTreeSet<MessageId>,
    /// The OpenCode fields an import kept that ctxlog does not model.
    source: Source,
}

/// The OpenCode fields of the session, its messages and parts that ctxlog
/// does not model, as an import kept them (`Event::SourceFields`).
#[derive(Default)]
struct Source {
    session: Option<Value>,
    messages: BTreeMap<MessageId, Value>,
    parts: BTreeMap<PartId, Value>,
}

impl Source {
    /// Keeps `fields` of `target`: the session's replace what an earlier
    /// import kept (each is the whole of its `info` then), a message's or
    /// part's complete what was kept before.
    fn keep(&mut self, target: SourceTarget, fields: Value) {
        let slot = match target {
            SourceTarget::Session => self.session.insert(Value::Null),
            SourceTarget::Message(m) => self.messages.entry(m).or_insert(Value::Null),
            SourceTarget::Part(p) => self.parts.entry(p).or_insert(Value::Null),
        };
        merge(slot, fields);
    }

    /// The source id a part without one of its own was kept with.
    fn part_id(&self, part: PartId) -> Option<&str> {
        self.parts.get(&part)?.get("id")?.as_str()
    }
}

/// Merges `over` into `into`: objects key by key, any other value replacing.
pub(crate) fn merge(into: &mut Value, over: Value) {
    match (into, over) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

/// `v` with what the source kept merged over it, if anything.
fn with_source(mut v: Value, kept: Option<&Value>) -> Value {
    if let Some(k) = kept {
        merge(&mut v, k.clone());
    }
    v
}

/// Writes the session whose events are `events` (seq 1 onwards) to `out`.
pub fn opencode<W: Write>(events: &[Envelope], out: W) -> Result<(), ExportError> {
    opencode_streamed(events.iter().map(Ok), events, out).map(|_| ())
}

/// Writes a session to `out` reading its events once, in order (seq 1
/// onwards), and each sealed part's content back from `contents` (the
/// session's log, e.g. `ctxlog_store::SessionContents`): memory holds the
/// session's state, never all of its events. Returns the number of events
/// read.
pub fn opencode_streamed<B, L, W>(
    events: impl IntoIterator<Item = Result<B, ExportError>>,
    contents: &L,
    mut out: W,
) -> Result<u64, ExportError>
where
    B: std::borrow::Borrow<Envelope>,
    L: Contents + ?Sized,
    W: Write,
{
    let (state, extra, updated) = fold(events)?;
    let session = state.session.ok_or(ExportError::Empty)?;
    let (sid, msg_ids, part_ids) = assign_ids(&state, session, &extra.source);
    let slug: String = sid.chars().skip(4).take(8).collect();
    let about = state.about.as_ref();
    let info = json!({
        "id": sid,
        "slug": format!("ctxlog-{slug}"),
        "projectID": "global",
        "directory": about.and_then(|a| a.directory.clone()).unwrap_or_default(),
        "title": state.title.clone().unwrap_or_default(),
        "version": concat!("ctxlog-", env!("CARGO_PKG_VERSION")),
        "time": {"created": state.started_at, "updated": updated},
    });
    let model = state
        .messages
        .iter()
        .find_map(|m| m.model.as_deref().cloned())
        .unwrap_or_else(|| ModelRef {
            provider: UNKNOWN.into(),
            model: UNKNOWN.into(),
        });
    let doc = Doc {
        model,
        log: contents,
        state: &state,
        extra: &extra,
        sid: &sid,
        msg_ids: &msg_ids,
        part_ids: &part_ids,
    };
    // OpenCode's session totals: the sums over its assistant messages.
    let mut totals = Totals::default();
    for m in state.messages.iter().filter(|m| m.role == Role::Assistant) {
        totals.add(&doc.info_json(m));
    }
    // The recording's own total, when it gave one.
    if let Some(cost) = about.and_then(|a| a.cost_usd) {
        totals.cost = cost;
    }
    let info = totals.written_into(info, extra.source.session.as_ref());
    out.write_all(b"{\"info\":")?;
    serde_json::to_writer(&mut out, &info)?;
    out.write_all(b",\"messages\":[")?;
    for (i, m) in state.messages.iter().enumerate() {
        if i > 0 {
            out.write_all(b",\n")?;
        } else {
            out.write_all(b"\n")?;
        }
        serde_json::to_writer(&mut out, &doc.message_json(m)?)?;
    }
    out.write_all(b"\n]}\n")?;
    out.flush()?;
    Ok(state.head)
}

/// The session's `cost` and `tokens` as OpenCode keeps them: the sums over
/// its assistant messages.
#[derive(Default)]
struct Totals {
    cost: f64,
    tokens: [u64; 5],
}

/// The token fields OpenCode sums, as paths in a `tokens` object.
const TOKEN_FIELDS: [&str; 5] = [
    "/input",
    "/output",
    "/reasoning",
    "/cache/read",
    "/cache/write",
];

impl Totals {
    /// Adds an exported assistant message's `info`.
    fn add(&mut self, info: &Value) {
        self.cost += info["cost"].as_f64().unwrap_or(0.0);
        for (sum, path) in self.tokens.iter_mut().zip(TOKEN_FIELDS) {
            *sum += info["tokens"]
                .pointer(path)
                .and_then(Value::as_u64)
                .unwrap_or(0);
        }
    }

    /// The session's `info` with the totals, and what the source kept of it
    /// (its own totals among them) over both.
    fn written_into(&self, info: Value, kept: Option<&Value>) -> Value {
        let [input, output, reasoning, read, write] = self.tokens;
        let totals = json!({
            "cost": js_number(self.cost),
            "tokens": {
                "input": input,
                "output": output,
                "reasoning": reasoning,
                "cache": {"read": read, "write": write},
            },
        });
        let mut merged = info;
        merge(&mut merged, totals);
        with_source(merged, kept)
    }
}

/// Replays the events: the state, the facts it does not keep, and the time
/// of the last event that is not a description (when a description was
/// stored depends on when the recording was imported, not on the session).
fn fold<B: std::borrow::Borrow<Envelope>>(
    events: impl IntoIterator<Item = Result<B, ExportError>>,
) -> Result<(SessionState, Extra, TimestampMs), ExportError> {
    let mut state = SessionState::new();
    let mut extra = Extra::default();
    let mut updated = 0;
    let mut after_auto_summary = false;
    for e in events {
        let e = e?;
        let e = e.borrow();
        state.evolve(e)?;
        if !e.event.is_description() {
            updated = e.recorded_at;
        }
        if let Event::MessageAppended {
            message,
            role,
            synthetic,
            ..
        } = &e.event
        {
            if std::mem::take(&mut after_auto_summary) && *role == Role::User && *synthetic {
                extra.continues.insert(*message);
            }
        }
        match &e.event {
            Event::StepFinished {
                message,
                part,
                cost_micros,
                ..
            } => {
                extra.completed.insert(*message, e.recorded_at);
                extra.step_cost.insert(*part, (*cost_micros, e.recorded_at));
            }
            Event::SummaryCompleted { job, part, .. } => {
                if let Some(s) = state.job(*job).and_then(|j| j.summary) {
                    extra.completed.insert(s, e.recorded_at);
                }
                after_auto_summary = state.job(*job).is_some_and(|j| j.auto);
                extra.step_cost.insert(*part, (None, e.recorded_at));
            }
            Event::CompactionFailed { job, .. } => {
                if let Some(s) = state.job(*job).and_then(|j| j.summary) {
                    extra.completed.insert(s, e.recorded_at);
                }
            }
            Event::SourceFields {
                format,
                target,
                fields,
            } if format == "opencode" => {
                if let Ok(v) = serde_json::to_value(fields) {
                    extra.source.keep(*target, v);
                }
            }
            _ => {}
        }
    }
    Ok((state, extra, updated))
}

/// The export's session id, then every message id and every part id.
fn assign_ids(
    state: &SessionState,
    session: SessionId,
    source: &Source,
) -> (
    String,
    BTreeMap<MessageId, String>,
    BTreeMap<PartId, String>,
) {
    let from_opencode = state
        .source_id
        .as_deref()
        .is_some_and(|s| s.starts_with("ses_"));
    let mut ids = Ids {
        salt: state
            .source_id
            .clone()
            .unwrap_or_else(|| session.to_string()),
        keep: from_opencode,
        last: 0,
    };
    let sid = match &state.source_id {
        Some(s) if from_opencode => s.clone(),
        _ => ids.session(state.started_at),
    };
    // Every other id's suffix derives from the exported session id, which a
    // re-import keeps: exporting the re-imported session gives the same ids.
    ids.salt = sid.clone();
    // Message ids first (parents and tails refer to them), then part ids in
    // the same order, so both ascend in export order.
    let msg_ids: BTreeMap<MessageId, String> = state
        .messages
        .iter()
        .map(|m| (m.id, ids.id("msg_", m.source_id.as_deref(), m.created_at)))
        .collect();
    let mut part_ids: BTreeMap<PartId, String> = BTreeMap::new();
    for m in &state.messages {
        for p in &m.parts {
            let kept = p.source_id.as_deref().or_else(|| source.part_id(p.id));
            part_ids.insert(p.id, ids.id("prt_", kept, m.created_at));
        }
    }
    (sid, msg_ids, part_ids)
}

/// What every message and part of one export refers to.
struct Doc<'a, L: Contents + ?Sized> {
    /// The model a message that records none is exported with (OpenCode
    /// requires one on every message): the session's first recorded model.
    model: ModelRef,
    /// The session's log, where sealed parts' content is read back.
    log: &'a L,
    state: &'a SessionState,
    extra: &'a Extra,
    sid: &'a str,
    msg_ids: &'a BTreeMap<MessageId, String>,
    part_ids: &'a BTreeMap<PartId, String>,
}

impl<L: Contents + ?Sized> Doc<'_, L> {
    /// The OpenCode id of a message (every message has one).
    fn message_id(&self, id: MessageId) -> String {
        self.msg_ids.get(&id).cloned().unwrap_or_default()
    }

    fn message_json(&self, m: &Message) -> Result<Value, ExportError> {
        let mid = self.message_id(m.id);
        let mut parts = Vec::with_capacity(m.parts.len());
        for p in &m.parts {
            let kept = self.extra.source.parts.get(&p.id);
            let mut part = with_source(self.part_json(&mid, m, p)?, kept);
            // The ids of this export, whatever the source said.
            part["id"] = json!(self.part_ids.get(&p.id).cloned().unwrap_or_default());
            part["sessionID"] = json!(self.sid);
            part["messageID"] = json!(mid);
            parts.push(part);
        }
        Ok(json!({"info": self.info_json(m), "parts": parts}))
    }

    /// A message's `info`, with what the source kept of it.
    fn info_json(&self, m: &Message) -> Value {
        let mid = self.message_id(m.id);
        let mut info = Map::new();
        info.insert("id".into(), json!(mid));
        info.insert("sessionID".into(), json!(self.sid));
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        info.insert("role".into(), json!(role));
        let mut time = json!({"created": m.created_at});
        if let Some(t) = self.extra.completed.get(&m.id) {
            time["completed"] = json!(t);
        }
        info.insert("time".into(), time);
        // OpenCode's import requires an agent and a model on every message.
        info.insert(
            "agent".into(),
            json!(m.agent.as_deref().unwrap_or(DEFAULT_AGENT)),
        );
        match m.role {
            Role::User => {
                let model = m.model.as_deref().unwrap_or(&self.model);
                info.insert(
                    "model".into(),
                    json!({"providerID": model.provider, "modelID": model.model}),
                );
            }
            Role::Assistant => self.assistant_info(m, &mut info),
        }
        with_source(Value::Object(info), self.extra.source.messages.get(&m.id))
    }

    /// The parent OpenCode requires on every assistant message: the
    /// recorded one, else the nearest earlier user message, else the
    /// message itself (an assistant message that opens a session).
    fn parent_id(&self, m: &Message) -> String {
        if let Some(p) = m.parent.and_then(|p| self.msg_ids.get(&p)) {
            return p.clone();
        }
        let index = self.state.message_index(m.id).unwrap_or(0);
        self.state.messages[..index]
            .iter()
            .rev()
            .find(|u| u.role == Role::User)
            .map(|u| self.message_id(u.id))
            .unwrap_or_else(|| self.message_id(m.id))
    }

    /// The assistant-only fields of a message's `info`; every field
    /// OpenCode's import requires is present, with a neutral value when the
    /// recording had none (`path` empty, `tokens` zero).
    fn assistant_info(&self, m: &Message, info: &mut Map<String, Value>) {
        let model = m.model.as_deref().unwrap_or(&self.model);
        info.insert("modelID".into(), json!(model.model));
        info.insert("providerID".into(), json!(model.provider));
        info.insert(
            "mode".into(),
            json!(m.agent.as_deref().unwrap_or(DEFAULT_AGENT)),
        );
        info.insert("parentID".into(), json!(self.parent_id(m)));
        info.insert("path".into(), json!({"cwd": "", "root": ""}));
        if m.summary {
            info.insert("summary".into(), json!(true));
        }
        if let Some(f) = &m.finish {
            info.insert("finish".into(), json!(finish_name(f)));
        }
        info.insert(
            "tokens".into(),
            tokens_json(&m.tokens.as_deref().copied().unwrap_or_default()),
        );
        let cost: u64 = m
            .parts
            .iter()
            .filter_map(|p| self.extra.step_cost.get(&p.id).and_then(|c| c.0))
            .sum();
        info.insert("cost".into(), cost_json(Some(cost)));
        let failed = if m.summary {
            m.parent
                .and_then(|j| self.state.job(j))
                .filter(|j| j.summary == Some(m.id) || !j.status.is_pending())
                .and_then(|j| match &j.status {
                    JobStatus::Failed { error } => Some(error.clone()),
                    _ => None,
                })
        } else {
            None
        };
        if let Some(e) = &m.error {
            info.insert("error".into(), error_json(&e.name, &e.message));
        } else if let Some(error) = failed {
            info.insert("error".into(), ctxlog_error_json(FAILED_REF, &error));
        }
    }

    fn part_json(&self, mid: &str, m: &Message, p: &Part) -> Result<Value, ExportError> {
        let body = p.body_in(self.log)?;
        let pid = self.part_ids.get(&p.id).cloned().unwrap_or_default();
        let mut o = Map::new();
        o.insert("id".into(), json!(pid));
        o.insert("sessionID".into(), json!(self.sid));
        o.insert("messageID".into(), json!(mid));
        o.insert("type".into(), json!(body.kind()));
        match &*body {
            PartBody::Text {
                text,
                synthetic,
                time,
            } => {
                o.insert("text".into(), json!(text));
                if *synthetic {
                    o.insert("synthetic".into(), json!(true));
                }
                if self.extra.continues.contains(&m.id) && is_continue_text(text) {
                    o.insert("metadata".into(), json!({"compaction_continue": true}));
                }
                if let Some(t) = span_json(time) {
                    o.insert("time".into(), t);
                }
            }
            PartBody::Reasoning { text, time } => {
                o.insert("text".into(), json!(text));
                // OpenCode requires a reasoning part's time.
                let time = time.or(Some(Span {
                    start: m.created_at,
                    end: None,
                }));
                if let Some(t) = span_json(&time) {
                    o.insert("time".into(), t);
                }
            }
            PartBody::Tool {
                call_id,
                tool,
                state,
            } => {
                o.insert("tool".into(), json!(tool));
                o.insert("callID".into(), json!(call_id));
                o.insert("state".into(), tool_state_json(state, p.pruned.as_deref()));
            }
            PartBody::File(a) => {
                o.insert("mime".into(), json!(a.mime));
                if let Some(f) = &a.filename {
                    o.insert("filename".into(), json!(f));
                }
                o.insert("url".into(), json!(a.url));
            }
            PartBody::StepStart { snapshot } => {
                if let Some(s) = snapshot {
                    o.insert("snapshot".into(), json!(s));
                }
            }
            PartBody::StepFinish {
                reason,
                tokens,
                cost_micros,
            } => {
                o.insert("reason".into(), json!(finish_name(reason)));
                o.insert("tokens".into(), tokens_json(tokens));
                o.insert("cost".into(), cost_json(*cost_micros));
                if let Some((_, at)) = self.extra.step_cost.get(&p.id) {
                    o.insert("time".into(), json!({"end": at}));
                }
            }
            PartBody::Compaction { auto, overflow } => {
                o.insert("auto".into(), json!(auto));
                // OpenCode writes `overflow` on automatic markers only.
                if *auto || *overflow {
                    o.insert("overflow".into(), json!(overflow));
                }
                if let Some(t) = self
                    .state
                    .job(m.id)
                    .and_then(|j| j.tail_start)
                    .and_then(|t| self.msg_ids.get(&t))
                {
                    o.insert("tail_start_id".into(), json!(t));
                }
            }
            PartBody::Other { kind, data } => {
                o.insert("type".into(), json!(kind));
                if let Ok(Value::Object(d)) = serde_json::to_value(data) {
                    for (k, v) in d {
                        o.entry(k).or_insert(v);
                    }
                }
            }
        }
        Ok(Value::Object(o))
    }
}

/// The agent a message that records none is exported with.
const DEFAULT_AGENT: &str = "build";
/// The provider and model ids of a session that records no model.
const UNKNOWN: &str = "unknown";
/// `error.data.ref` of a compaction job ctxlog recorded as failed.
pub(crate) const FAILED_REF: &str = "ctxlog:CompactionFailed";
/// `error.data.ref` of a summary attempt a restarted job superseded.
pub(crate) const RESTARTED_REF: &str = "ctxlog:CompactionRestarted";

/// An error as OpenCode's schema takes it: its own error names with their
/// required fields; ctxlog's compaction outcomes as an `UnknownError` with a
/// `ref`; any other name becomes an `UnknownError` whose message keeps the
/// name (`Name: message`).
fn error_json(name: &str, message: &str) -> Value {
    match name {
        "MessageAbortedError" | "ContextOverflowError" | "ContentFilterError" => {
            json!({"name": name, "data": {"message": message}})
        }
        "MessageOutputLengthError" => json!({"name": name, "data": {}}),
        "StructuredOutputError" => {
            json!({"name": name, "data": {"message": message, "retries": 0}})
        }
        "APIError" => {
            json!({"name": name, "data": {"message": message, "isRetryable": false}})
        }
        "UnknownError" => json!({"name": name, "data": {"message": message}}),
        "CompactionFailed" => ctxlog_error_json(FAILED_REF, message),
        "CompactionRestarted" => ctxlog_error_json(RESTARTED_REF, message),
        other => {
            json!({"name": "UnknownError", "data": {"message": format!("{other}: {message}")}})
        }
    }
}

/// A ctxlog compaction outcome as an `UnknownError` whose `ref` names it, so
/// that a re-import reads the outcome back exactly.
fn ctxlog_error_json(reference: &str, message: &str) -> Value {
    json!({"name": "UnknownError", "data": {"message": message, "ref": reference}})
}

/// A part's `time` (`start`, and `end` when known).
fn span_json(s: &Option<Span>) -> Option<Value> {
    s.map(|s| {
        let mut t = json!({"start": s.start});
        if let Some(e) = s.end {
            t["end"] = json!(e);
        }
        t
    })
}

/// A tool part's `state`; a pruned output carries `time.compacted`.
/// `v` as a JSON object, which OpenCode requires of a tool's input and
/// metadata: `null` is `{}`, any other non-object is `{"value": v}`.
fn as_object(v: Value) -> Value {
    match v {
        Value::Object(_) => v,
        Value::Null => json!({}),
        other => json!({ "value": other }),
    }
}

fn tool_state_json(s: &ToolState, pruned: Option<&PruneMark>) -> Value {
    let input = as_object(serde_json::to_value(s.input()).unwrap_or(Value::Null));
    match s {
        ToolState::Pending { raw, .. } => {
            json!({"status": "pending", "input": input, "raw": raw})
        }
        ToolState::Running { title, start, .. } => {
            let mut v = json!({"status": "running", "input": input, "time": {"start": start}});
            if let Some(t) = title {
                v["title"] = json!(t);
            }
            v
        }
        ToolState::Completed {
            output,
            title,
            metadata,
            start,
            end,
            attachments,
            ..
        } => {
            let mut time = json!({"start": start, "end": end});
            if let Some(mark) = pruned {
                time["compacted"] = json!(mark.at);
            }
            let mut v = json!({
                "status": "completed",
                "input": input,
                "output": output,
                "title": title.clone().unwrap_or_default(),
                "metadata": as_object(serde_json::to_value(metadata).unwrap_or(Value::Null)),
                "time": time,
            });
            if !attachments.is_empty() {
                v["attachments"] = attachments
                    .iter()
                    .map(|a| json!({"type": "file", "mime": a.mime, "filename": a.filename, "url": a.url}))
                    .collect();
            }
            v
        }
        ToolState::Error {
            error, start, end, ..
        } => {
            json!({"status": "error", "input": input, "error": error, "time": {"start": start, "end": end}})
        }
    }
}
