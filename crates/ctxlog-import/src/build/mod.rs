//! [`Builder`]: what every importer shares. It wraps a [`Recorder`] (so each
//! event is checked by the reducer as it is read), derives ids from the
//! recording's own session id (a second import yields the same events),
//! keeps times monotonic, tracks the model's limits, counts steps and
//! distinct tool calls, and names the place in the input in every error.
//!
//! Files: this one holds the builder and what every event goes through
//! (ids, times, messages, parts, steps); `calls` tool calls waiting for
//! their result, `compaction` the compactions a recording already did,
//! `model_limits` the model in use and its limits, and `pack` the packing
//! of recorded events and the descriptions that end an import.

mod calls;
mod compaction;
pub use compaction::ImportedCompaction;
mod model_limits;
mod pack;

use crate::limits::{resolve, LimitOverrides};
use crate::{Format, ImportError, ImportOptions};
use ctxlog_core::EventPack;
use ctxlog_core::{
    Event, FinishReason, IdSource, Json, MessageId, ModelLimits, ModelRef, PartBody, PartId,
    Recorder, Role, SeededIds, SessionAbout, SessionId, SourceTarget, TimestampMs, TokenUsage,
};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// serde_json::Value → Json through the human-readable serde path.
pub(crate) fn as_json(v: &serde_json::Value) -> Json {
    serde_json::from_value(v.clone()).unwrap_or(Json::Null)
}

/// A tool call waiting for its result.
#[derive(Debug, Clone)]
pub(crate) struct OpenCall {
    pub part: PartId,
    pub tool: String,
    pub input: Json,
    pub start: TimestampMs,
}

/// Where in the input an error is.
#[derive(Debug, Clone, Default)]
pub(crate) struct Location {
    /// 1-based line (JSONL), 0 when unknown.
    pub line: u64,
    /// JSON path (`messages[3].parts[1]`), for whole-file JSON formats.
    pub path: Option<String>,
}

impl Location {
    /// `line 12`, `messages[3].parts[1]`, or `an unknown place`.
    pub fn describe(&self) -> String {
        match (self.line, &self.path) {
            (_, Some(p)) => p.clone(),
            (0, None) => "an unknown place".into(),
            (l, None) => format!("line {l}"),
        }
    }
}

/// A new message's attributes.
#[derive(Debug, Clone, Default)]
pub(crate) struct NewMessage {
    pub parent: Option<MessageId>,
    pub source: Option<String>,
    pub model: Option<ModelRef>,
    pub agent: Option<String>,
    pub synthetic: bool,
}

pub(crate) struct Builder<'a> {
    file: &'a str,
    format: Format,
    options: &'a ImportOptions,
    pub at: Location,
    r: Option<Recorder<SeededIds>>,
    /// The events recorded so far, encoded, but for those the recorder
    /// still holds (see [`Builder::pack_recorded`]).
    pack: EventPack,
    /// The time of the last event recorded.
    last_recorded_at: TimestampMs,
    source_session: Option<String>,
    /// Every tool call id used, with where it was first.
    tool_ids: BTreeMap<String, String>,
    steps: u64,
    last_at: TimestampMs,
    model: Option<String>,
    file_context: Option<u64>,
    /// The output limit the recording's agent uses for its model.
    agent_output: Option<u64>,
    limits: ModelLimits,
    /// The limits the recording implies without the overrides (see
    /// [`Builder::refresh_limits`]).
    own_limits: ModelLimits,
    warnings: Vec<String>,
    /// Each model not in the limits table, with its warning: said at the
    /// end for the models a step ran on (a model selected and never used
    /// is not worth one).
    unknown_models: BTreeMap<String, String>,
    /// The models steps ran on (as the limits were resolved for them).
    stepped_models: BTreeSet<String>,
    /// What the recording says about the session; recorded as
    /// `SessionDescribed` at the end (the model and cost default to the
    /// last model used and the steps' summed cost).
    pub about: SessionAbout,
    /// The summed cost of the steps that recorded one, micro-dollars.
    step_cost: Option<u64>,
    /// The source fields kept of each object (merged), as JSON text (a
    /// tenth of a `Value`'s size), recorded as `SourceFields` at the end: a
    /// growing recording may still add to them.
    sources: BTreeMap<(String, SourceTarget), String>,
    /// [`Builder::finish`] is recording the descriptions that end the
    /// recording: each is packed as it is recorded, with the id of its place.
    finishing: bool,
}

impl<'a> Builder<'a> {
    pub fn new(file: &'a str, format: Format, options: &'a ImportOptions) -> Self {
        Builder {
            file,
            format,
            options,
            at: Location::default(),
            r: None,
            pack: EventPack::new(),
            last_recorded_at: 0,
            source_session: None,
            tool_ids: BTreeMap::new(),
            steps: 0,
            last_at: 0,
            model: None,
            file_context: None,
            agent_output: None,
            limits: ModelLimits::default(),
            own_limits: ModelLimits::default(),
            warnings: Vec::new(),
            unknown_models: BTreeMap::new(),
            stepped_models: BTreeSet::new(),
            about: SessionAbout::default(),
            step_cost: None,
            sources: BTreeMap::new(),
            finishing: false,
        }
    }

    /// An error at the current location.
    pub fn err(&self, message: impl Into<String>) -> ImportError {
        ImportError {
            file: self.file.to_owned(),
            line: self.at.line,
            path: self.at.path.clone(),
            message: message.into(),
        }
    }

    pub fn options(&self) -> &ImportOptions {
        self.options
    }

    pub fn started(&self) -> bool {
        self.r.is_some()
    }

    /// Notes a last line still being written, left for the next import.
    pub fn unfinished_line(&mut self, line: Option<u64>) {
        if let Some(n) = line {
            self.warnings.push(format!(
                "line {n} is unfinished (no newline, not JSON yet; the agent may still be writing it): left for the next import"
            ));
        }
    }

    /// Notes the open step left for the next import, and why.
    pub fn step_waits(&mut self, why: &str) {
        self.warnings.push(format!(
            "{why}: what follows it is stored once the file has it (by any later import)"
        ));
    }

    /// The recording's own session id, once started.
    pub fn source_session(&self) -> Option<&str> {
        self.source_session.as_deref()
    }

    /// The recorder; an error (never a panic) when the session has not
    /// started yet.
    fn rec(&mut self) -> Result<&mut Recorder<SeededIds>, ImportError> {
        let Builder { r, file, at, .. } = self;
        r.as_mut().ok_or_else(|| ImportError {
            file: (*file).to_owned(),
            line: at.line,
            path: at.path.clone(),
            message: "an event before the session started".into(),
        })
    }

    /// The policy to record: the preset of the agent that wrote the
    /// recording (`claude-code`, `codex`, `pi`; for OpenCode, of the version
    /// `writer` names: 1.17.x → `opencode-1.17`, 1.18.x → `opencode-1.18`),
    /// when the options allow detection and a preset matches, else the
    /// options' policy.
    pub fn policy_for(&self, writer: Option<&str>) -> ctxlog_core::Policy {
        use ctxlog_core::Policy;
        if !self.options.detect_policy {
            return self.options.policy.clone();
        }
        let detected = match self.format {
            Format::OpenCode => writer.and_then(|w| {
                if w.starts_with("1.18.") {
                    Some(Policy::opencode_1_18())
                } else if w.starts_with("1.17.") {
                    Some(Policy::opencode_1_17())
                } else {
                    None
                }
            }),
            Format::ClaudeCode => Some(Policy::claude_code_2_1()),
            Format::Codex => Some(Policy::codex_0_169()),
            Format::Pi => Some(Policy::pi_0_73()),
        };
        detected.unwrap_or_else(|| self.options.policy.clone())
    }

    /// Starts the session once the recording's own id is known.
    pub fn start(
        &mut self,
        source: &str,
        at: TimestampMs,
        title: Option<String>,
        policy: ctxlog_core::Policy,
    ) -> Result<(), ImportError> {
        if self.r.is_some() {
            return Err(self.err("the session started twice"));
        }
        let tag = match self.options.version {
            0 => format!("ctxlog/import/{}/{source}", self.format.name()),
            v => format!("ctxlog/import/{}/{source}/version/{v}", self.format.name()),
        };
        let digest: [u8; 32] = Sha256::digest(tag.as_bytes()).into();
        let [b0, b1, b2, b3, b4, b5, b6, b7, ..] = digest;
        let seed = u64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]);
        let mut ids = SeededIds::new(seed);
        let session = SessionId(ids.next_uuid(at));
        let initial = resolve(&self.options.limits, None, None, None);
        self.limits = initial.limits.clone();
        self.own_limits = resolve(&LimitOverrides::default(), None, None, None).limits;
        let r = Recorder::start_from(
            session,
            ids,
            at,
            policy,
            initial.limits,
            title,
            Some(source.to_owned()),
        )
        .map_err(|e| self.err(format!("refused: {e}")))?;
        self.r = Some(r);
        self.last_at = at;
        self.last_recorded_at = at;
        self.source_session = Some(source.to_owned());
        Ok(())
    }

    /// A time no earlier than the previous event's (recordings are not
    /// always monotonic; the log is).
    pub fn time(&mut self, at: Option<TimestampMs>) -> TimestampMs {
        let t = at.unwrap_or(self.last_at).max(self.last_at);
        self.last_at = t;
        t
    }

    pub fn record(&mut self, at: TimestampMs, event: Event) -> Result<(), ImportError> {
        let at = self.time(Some(at));
        let kind = event.kind();
        match self.rec()?.record(at, event) {
            Ok(_) => {
                self.last_recorded_at = at;
                self.pack_recorded()
            }
            Err(e) => Err(self.err(format!("cannot record {kind}: {e}"))),
        }
    }

    /// A fresh message id, drawn at the (clamped) time of its event.
    pub fn message_id(&mut self, at: TimestampMs) -> Result<MessageId, ImportError> {
        let at = self.time(Some(at));
        Ok(self.rec()?.message_id(at))
    }

    /// A fresh part id, drawn at the (clamped) time of its event.
    pub fn part_id(&mut self, at: TimestampMs) -> Result<PartId, ImportError> {
        let at = self.time(Some(at));
        Ok(self.rec()?.part_id(at))
    }

    /// Appends a text part (no source id, no times).
    pub fn text(
        &mut self,
        at: TimestampMs,
        message: MessageId,
        text: String,
        synthetic: bool,
    ) -> Result<PartId, ImportError> {
        let body = PartBody::Text {
            text,
            synthetic,
            time: None,
        };
        self.part(at, message, body, None)
    }

    /// A JSONL line's `timestamp` (RFC 3339), when it has one.
    pub fn line_time(&self, v: &serde_json::Value) -> Result<Option<TimestampMs>, ImportError> {
        match v.get("timestamp") {
            Some(serde_json::Value::String(s)) => crate::time::parse_rfc3339_ms(s)
                .map(Some)
                .ok_or_else(|| self.err(format!("field `timestamp`: not an RFC 3339 time: {s:?}"))),
            Some(_) => Err(self.err("field `timestamp` is not a string")),
            None => Ok(None),
        }
    }

    /// The agent that decided what the recording holds: the format's name
    /// (`claude-code`, `codex`, `pi`); OpenCode's carries its version.
    pub fn decided_by(&self, version: Option<&str>) -> String {
        match version {
            Some(v) => format!("{}-{v}", self.format.name()),
            None => self.format.name().to_owned(),
        }
    }

    /// Appends a message with no parts.
    pub fn message(
        &mut self,
        at: TimestampMs,
        role: Role,
        m: NewMessage,
    ) -> Result<MessageId, ImportError> {
        let message = self.message_id(at)?;
        self.record(
            at,
            Event::MessageAppended {
                message,
                role,
                agent: m.agent,
                model: m.model,
                synthetic: m.synthetic,
                parent: m.parent,
                source_id: m.source,
            },
        )?;
        Ok(message)
    }

    /// Appends a part; a tool part's call id is counted once.
    pub fn part(
        &mut self,
        at: TimestampMs,
        message: MessageId,
        body: PartBody,
        source: Option<String>,
    ) -> Result<PartId, ImportError> {
        if let PartBody::Tool { call_id, .. } = &body {
            if let Some(first) = self.tool_ids.get(call_id) {
                return Err(self.err(format!(
                    "tool call id {call_id:?} is used twice (first at {first}): every call needs its own id"
                )));
            }
            let first = self.at.describe();
            self.tool_ids.insert(call_id.clone(), first);
        }
        let part = self.part_id(at)?;
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

    pub fn update(
        &mut self,
        at: TimestampMs,
        part: PartId,
        body: PartBody,
    ) -> Result<(), ImportError> {
        self.record(at, Event::PartUpdated { part, body })
    }

    /// Records one model call's end; the step-finish part created.
    pub fn finish_step(
        &mut self,
        at: TimestampMs,
        message: MessageId,
        reason: FinishReason,
        tokens: TokenUsage,
        cost_micros: Option<u64>,
    ) -> Result<PartId, ImportError> {
        let part = self.part_id(at)?;
        self.record(
            at,
            Event::StepFinished {
                message,
                part,
                reason,
                tokens,
                cost_micros,
            },
        )?;
        self.steps += 1;
        let model = self.options.limits.model.as_ref().or(self.model.as_ref());
        if let Some(model) = model.filter(|m| !self.stepped_models.contains(*m)) {
            self.stepped_models.insert(model.clone());
        }
        if let Some(c) = cost_micros {
            self.step_cost = Some(self.step_cost.unwrap_or(0).saturating_add(c));
        }
        Ok(part)
    }

    /// The state so far.
    pub fn state(&self) -> Option<&ctxlog_core::SessionState> {
        self.r.as_ref().map(|r| r.state())
    }
}

/// What kind of compaction a recording made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedKind {
    /// The agent decided it (not the user).
    pub auto: bool,
    /// The provider refused a request as too large first.
    pub overflow: bool,
}

impl RecordedKind {
    /// An automatic compaction on the agent's threshold.
    pub const AUTO: RecordedKind = RecordedKind {
        auto: true,
        overflow: false,
    };
}
