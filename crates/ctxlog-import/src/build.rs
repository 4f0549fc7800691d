//! [`Builder`]: what every importer shares. It wraps a [`Recorder`] (so each
//! event is checked by the reducer as it is read), derives ids from the
//! recording's own session id (a second import yields the same events),
//! keeps times monotonic, tracks the model's limits, counts steps and
//! distinct tool calls, and names the place in the input in every error.

use crate::limits::{resolve, LimitOverrides, Resolved};
use crate::{Format, ImportError, ImportOptions, Imported};
use ctxlog_core::decide::queued;
use ctxlog_core::EventPack;
use ctxlog_core::{
    description_event_id, Command, Event, FinishReason, IdSource, Json, LoopGuard, MessageId,
    ModelLimits, ModelRef, PartBody, PartId, RecordedCompaction, Recorder, Role, SeededIds,
    SessionAbout, SessionId, SourceTarget, TimestampMs, TokenUsage, ToolState,
};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// serde_json::Value → Json through the human-readable serde path.
pub(crate) fn as_json(v: &serde_json::Value) -> Json {
    serde_json::from_value(v.clone()).unwrap_or(Json::Null)
}

/// How many events the recorder holds before they move into the pack.
const HELD_EVENTS: usize = 256;

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
    limits: ModelLimits,
    /// The limits the recording implies without the overrides (see
    /// [`Builder::refresh_limits`]).
    own_limits: ModelLimits,
    warnings: Vec<String>,
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
            limits: ModelLimits::default(),
            own_limits: ModelLimits::default(),
            warnings: Vec::new(),
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
        let initial = resolve(&self.options.limits, None, None);
        self.limits = initial.limits.clone();
        self.own_limits = resolve(&LimitOverrides::default(), None, None).limits;
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

    /// Moves the recorder's events into the pack once it holds
    /// [`HELD_EVENTS`], all but the descriptions after the last event that
    /// is not one: those may end the recording, and [`Builder::finish`]
    /// gives those the ids of their places. While finishing, every event is
    /// such a description and is packed at once.
    fn pack_recorded(&mut self) -> Result<(), ImportError> {
        let held = self.r.as_ref().map_or(0, |r| r.events().len());
        if self.finishing {
            self.pack_first(held)
        } else if held >= HELD_EVENTS {
            self.pack_recorded_through_last_happened()
        } else {
            Ok(())
        }
    }

    /// Packs the held events up to the last that is not a description.
    fn pack_recorded_through_last_happened(&mut self) -> Result<(), ImportError> {
        let through = self
            .r
            .as_ref()
            .and_then(|r| r.events().iter().rposition(|e| !e.event.is_description()));
        match through {
            Some(last) => self.pack_first(last + 1),
            None => Ok(()),
        }
    }

    /// Moves the first `count` held events into the pack (while finishing,
    /// with the ids of their places).
    fn pack_first(&mut self, count: usize) -> Result<(), ImportError> {
        let Some(r) = self.r.as_mut() else {
            return Ok(());
        };
        let mut refused = None;
        for mut e in r.take_events(count) {
            if self.finishing {
                debug_assert!(
                    e.event.is_description(),
                    "only descriptions end a recording"
                );
                e.id = description_event_id(e.session, e.seq);
            }
            if refused.is_none() {
                if let Err(error) = self.pack.push(&e) {
                    refused = Some((e.seq, error));
                }
            }
        }
        match refused {
            None => Ok(()),
            Some((seq, e)) => Err(self.err(format!("event {seq} cannot be stored: {e}"))),
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

    /// Appends a tool call that waits for its result (a pending tool part
    /// whose source id is the call id); returns what [`Builder::complete_call`]
    /// needs later.
    pub fn pending_call(
        &mut self,
        at: TimestampMs,
        message: MessageId,
        call_id: &str,
        tool: String,
        arguments: &serde_json::Value,
    ) -> Result<OpenCall, ImportError> {
        let input = as_json(arguments);
        let body = PartBody::Tool {
            call_id: call_id.to_owned(),
            tool: tool.clone(),
            state: ToolState::Pending {
                input: input.clone(),
                raw: arguments.to_string(),
            },
        };
        let part = self.part(at, message, body, Some(call_id.to_owned()))?;
        Ok(OpenCall {
            part,
            tool,
            input,
            start: at,
        })
    }

    /// Completes (or errors) a waiting tool call with its result.
    pub fn complete_call(
        &mut self,
        at: TimestampMs,
        call_id: &str,
        call: OpenCall,
        output: String,
        is_error: bool,
        metadata: Json,
    ) -> Result<(), ImportError> {
        let state = if is_error {
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
                metadata,
                start: call.start,
                end: at,
                attachments: Vec::new(),
            }
        };
        self.update(
            at,
            call.part,
            PartBody::Tool {
                call_id: call_id.to_owned(),
                tool: call.tool,
                state,
            },
        )
    }

    /// The agent that decided what the recording holds: the format's name
    /// (`claude-code`, `codex`, `pi`); OpenCode's carries its version.
    pub fn decided_by(&self, version: Option<&str>) -> String {
        match version {
            Some(v) => format!("{}-{v}", self.format.name()),
            None => self.format.name().to_owned(),
        }
    }

    /// A compaction the recording already did: marker, summary message with
    /// its text, completed (written by `ctxlog_core::decide`, as every
    /// lifecycle event is, labelled with the agent that decided it).
    /// `tail` is the first message kept verbatim; `tokens_before` the
    /// context's tokens before it, as the agent recorded them.
    #[allow(clippy::too_many_arguments)]
    pub fn imported_compaction(
        &mut self,
        at: TimestampMs,
        kind: RecordedKind,
        source: Option<String>,
        summary_source: Option<String>,
        text: &str,
        tail: Option<MessageId>,
        tokens_before: Option<u64>,
    ) -> Result<MessageId, ImportError> {
        let at = self.time(Some(at));
        let command = Command::RecordCompaction(RecordedCompaction {
            auto: kind.auto,
            overflow: kind.overflow,
            text: text.to_owned(),
            tail_start: tail,
            marker_source: source,
            summary_source,
            decided_by: self.decided_by(None),
            tokens_before,
        });
        let decided = match self.rec()?.run(at, command, LoopGuard::default()) {
            Ok(decided) => decided,
            Err(e) => return Err(self.err(format!("cannot record the compaction: {e}"))),
        };
        if let Some(last) = self.rec()?.events().last() {
            self.last_recorded_at = last.recorded_at;
        }
        self.pack_recorded()?;
        queued(&decided).ok_or_else(|| self.err("the compaction decided no marker"))
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
        if let Some(c) = cost_micros {
            self.step_cost = Some(self.step_cost.unwrap_or(0).saturating_add(c));
        }
        Ok(part)
    }

    /// The model in use from now on; records `LimitsChanged` when its
    /// limits differ from the current ones.
    pub fn set_model(&mut self, at: TimestampMs, model: &str) -> Result<(), ImportError> {
        if self.model.as_deref() == Some(model) {
            return Ok(());
        }
        self.model = Some(model.to_owned());
        self.refresh_limits(at)
    }

    /// The context window the recording itself states (Codex does).
    pub fn set_file_context(&mut self, at: TimestampMs, context: u64) -> Result<(), ImportError> {
        if self.file_context == Some(context) {
            return Ok(());
        }
        self.file_context = Some(context);
        self.refresh_limits(at)
    }

    /// Records `LimitsChanged` when the recording's own limits (the table's
    /// for its model, its file's context) change: whether one is recorded
    /// never depends on the overrides, only the limits it carries do, so
    /// the same recording gives the same events (and ids) under any
    /// `--context`, `--output` or `--model`.
    fn refresh_limits(&mut self, at: TimestampMs) -> Result<(), ImportError> {
        let own = resolve(
            &LimitOverrides::default(),
            self.model.as_deref(),
            self.file_context,
        )
        .limits;
        let Resolved { limits, unknown } = resolve(
            &self.options.limits,
            self.model.as_deref(),
            self.file_context,
        );
        if let Some(model) = unknown {
            let w = format!(
                "model {model:?} is not in the limits table: assuming {} context, {} output \
                 (override with --context/--output/--input-limit)",
                limits.context,
                limits.output.unwrap_or(0)
            );
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
        if own != self.own_limits {
            self.own_limits = own;
            self.limits = limits.clone();
            self.record(at, Event::LimitsChanged { limits })?;
        }
        Ok(())
    }

    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The state so far.
    pub fn state(&self) -> Option<&ctxlog_core::SessionState> {
        self.r.as_ref().map(|r| r.state())
    }

    /// Keeps `fields` of `target` that ctxlog does not model, in `format`'s
    /// terms (merged over what was kept of it before).
    pub fn keep_source(&mut self, format: &str, target: SourceTarget, fields: serde_json::Value) {
        let slot = self.sources.entry((format.to_owned(), target)).or_default();
        // JSON text round-trips a `Value` exactly (floats included:
        // serde_json's `float_roundtrip`).
        let mut merged = serde_json::from_str(slot).unwrap_or(serde_json::Value::Null);
        crate::export::merge(&mut merged, fields);
        *slot = merged.to_string();
    }

    pub fn finish(mut self) -> Result<Imported, ImportError> {
        if self.started() {
            // At the last event's time, not the last line's: a later import
            // of the grown file appends what happened after that event
            // behind these, and the log's times never go backwards.
            let at = self.last_recorded_at;
            self.last_at = at;
            // Everything before the descriptions that end the recording
            // goes into the pack; those are packed as they are recorded.
            self.pack_recorded_through_last_happened()?;
            self.finishing = true;
            self.pack_recorded()?;
            for ((format, target), fields) in std::mem::take(&mut self.sources) {
                let fields = serde_json::from_str(&fields)
                    .map_or(Json::Null, |fields: serde_json::Value| as_json(&fields));
                self.record(
                    at,
                    Event::SourceFields {
                        format,
                        target,
                        fields,
                    },
                )?;
            }
            let mut about = std::mem::take(&mut self.about);
            about.model = about.model.or_else(|| self.model.clone());
            about.cost_usd = about
                .cost_usd
                .or(self.step_cost.map(|c| c as f64 / 1_000_000.0));
            if about != SessionAbout::default() {
                self.record(at, Event::SessionDescribed { about })?;
            }
        }
        let Some(r) = self.r else {
            return Err(ImportError {
                file: self.file.to_owned(),
                line: 0,
                path: None,
                message: crate::NO_SESSION.into(),
            });
        };
        let (session, messages) = (r.session(), r.state().messages.len() as u64);
        // A step whose end is not recorded yet counts too: it is a model
        // call, with the usage it reported (the timeline's open row).
        let open = r
            .state()
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant && m.finish.is_none() && m.tokens.is_some())
            .count() as u64;
        debug_assert!(r.events().is_empty(), "every event was packed");
        let events = self.pack;
        Ok(Imported {
            session,
            format: self.format,
            source_session: self.source_session,
            messages,
            tool_calls: self.tool_ids.len() as u64,
            steps: self.steps + open,
            warnings: self.warnings,
            events,
        })
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
