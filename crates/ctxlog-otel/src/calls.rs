//! Model calls as `chat` spans: each step of an assistant message (from
//! its start to its `StepFinished`) and each summarizer call of a
//! compaction (from its start to its summary or failure), under the turn.
//! Also what a compaction or a prune says beyond its audit line.

use crate::content::{messages, text_part, tool_call_part};
use crate::ids::{span_of, Role};
use crate::lifecycle::MAX_IDS;
use crate::model::{ns, Attribute, Kind, Span, Value};
use crate::semconv::{
    finish_reason, provider_name, usage, COMPACTED, CONVERSATION, ERROR_TYPE, FINISH_REASONS, JOB,
    OPEN, OPERATION, OUTPUT_MESSAGES, PROVIDER, REQUEST_MODEL, SEQ,
};
use crate::tools::Tools;
use crate::turn::{Context, Turn};
use ctxlog_core::{
    CompactionTrigger, Envelope, Event, FinishReason, MessageId, ModelRef, PartBody,
    Role as MessageRole, Seq, StepTokens, TokenUsage,
};
use serde_json::Value as JsonValue;
use std::collections::BTreeMap;

/// An assistant message's step in progress.
#[derive(Debug, Default)]
struct Step {
    model: Option<ModelRef>,
    /// Start, ms: the message's, the step's start part's, or the previous
    /// step's end.
    start: u64,
    /// Its output parts (with `--content` only).
    parts: Vec<JsonValue>,
    /// The usage reported before its end: time and seq.
    reported: Option<(TokenUsage, u64, Seq)>,
    /// The error its message ended with: name and text.
    error: Option<(String, String)>,
    /// How many steps of its message finished before it: with the
    /// message, the key of its span (the same open or finished).
    ordinal: u64,
}

/// A compaction's summarizer call, once started.
#[derive(Debug)]
struct Summary {
    /// The summary message.
    message: MessageId,
    model: Option<ModelRef>,
    /// Start, ms.
    start: u64,
    /// The first message kept after the summary.
    tail: Option<MessageId>,
    /// Its text (with `--content` only).
    text: Vec<String>,
}

/// A compaction in flight.
#[derive(Debug, Default)]
struct Job {
    trigger: &'static str,
    auto: bool,
    tokens_before: u64,
    summary: Option<Summary>,
}

/// The model calls of a session.
#[derive(Debug, Default)]
pub struct Calls {
    steps: BTreeMap<MessageId, Step>,
    jobs: BTreeMap<MessageId, Job>,
    /// Each summary message's job.
    summary_of: BTreeMap<MessageId, MessageId>,
    /// The job the last event ended (its span event is described next).
    ended: Option<(MessageId, Job)>,
    /// The last call's input tokens: what the context held.
    last_context: u64,
}

impl Calls {
    /// Folds `e`; the span of a call it ends.
    pub fn push(&mut self, e: &Envelope, turn: &mut Turn, ctx: &Context) -> Option<Span> {
        let at = e.recorded_at;
        match &e.event {
            Event::MessageAppended {
                message,
                role: MessageRole::Assistant,
                model,
                ..
            } => {
                let step = Step {
                    model: model.clone(),
                    start: at,
                    ..Step::default()
                };
                self.steps.insert(*message, step);
            }
            Event::MessageAppended {
                message,
                role: MessageRole::User,
                synthetic: false,
                ..
            } => {
                turn.user = Some(*message);
                // A person spoke: the steps before, but those whose usage
                // was reported and whose end was not, are over.
                self.steps.retain(|_, s| s.reported.is_some());
            }
            Event::PartAppended { message, body, .. } => self.part(message, body, at, turn, ctx),
            Event::UsageReported { message, tokens } => {
                let step = self.steps.entry(*message).or_insert_with(|| Step {
                    start: at,
                    ..Step::default()
                });
                step.reported = Some((*tokens, at, e.seq));
            }
            Event::MessageErrored { message, error } => {
                if let Some(step) = self.steps.get_mut(message) {
                    step.error = Some((error.name.clone(), error.message.clone()));
                }
            }
            Event::StepFinished {
                message,
                reason,
                tokens,
                ..
            } => return Some(self.step_finished(e, *message, reason, tokens, turn, ctx)),
            _ => return self.compaction(e, turn, ctx),
        }
        None
    }

    /// The span of the step of `message` that `e` ends.
    fn step_finished(
        &mut self,
        e: &Envelope,
        message: MessageId,
        reason: &FinishReason,
        tokens: &TokenUsage,
        turn: &mut Turn,
        ctx: &Context,
    ) -> Span {
        let at = e.recorded_at;
        let step = self.steps.entry(message).or_insert_with(|| Step {
            start: at,
            ..Step::default()
        });
        let id = step_span(ctx, &message, step.ordinal);
        let call = Call {
            model: step.model.clone(),
            start: step.start,
            end: at,
            seq: e.seq,
            reason: Some(reason),
            tokens,
            parts: std::mem::take(&mut step.parts),
            error: step.error.take(),
            open: false,
        };
        step.start = at;
        step.reported = None;
        step.ordinal += 1;
        self.call_span(id, call, None, turn, ctx)
    }

    /// Folds a compaction's event; the span of a summarizer call it ends.
    fn compaction(&mut self, e: &Envelope, turn: &mut Turn, ctx: &Context) -> Option<Span> {
        match &e.event {
            Event::CompactionRequested {
                message,
                auto,
                trigger,
                ..
            } => {
                let job = Job {
                    trigger: trigger_name(trigger),
                    auto: *auto,
                    tokens_before: tokens_before(trigger).unwrap_or(self.last_context),
                    summary: None,
                };
                self.jobs.insert(*message, job);
                None
            }
            Event::CompactionStarted {
                job,
                summary_message,
                model,
                tail_start,
                ..
            } => {
                let summary = Summary {
                    message: *summary_message,
                    model: model.clone(),
                    start: e.recorded_at,
                    tail: *tail_start,
                    text: Vec::new(),
                };
                self.jobs.entry(*job).or_default().summary = Some(summary);
                self.summary_of.insert(*summary_message, *job);
                None
            }
            Event::SummaryCompleted {
                job,
                part,
                reason,
                tokens,
                ..
            } => self.summary_ended(*job, e, Some((*part, reason, tokens)), turn, ctx),
            Event::CompactionFailed { job, error } => {
                let span = self.summary_ended(*job, e, None, turn, ctx);
                span.map(|mut s| {
                    s.error = Some(if ctx.content.on() {
                        ctx.content.text(error)
                    } else {
                        "the summary call failed".into()
                    });
                    s.attributes
                        .push((ERROR_TYPE, Value::Str("compaction_failed".into())));
                    s
                })
            }
            _ => None,
        }
    }

    /// A part appended to `message`: a step's start, or content kept.
    fn part(
        &mut self,
        message: &MessageId,
        body: &PartBody,
        at: u64,
        turn: &mut Turn,
        ctx: &Context,
    ) {
        if let (Some(step), PartBody::StepStart { .. }) = (self.steps.get_mut(message), body) {
            step.start = at;
            return;
        }
        if !ctx.content.on() {
            return;
        }
        let text = |t: &str| ctx.content.text(t);
        if let Some(step) = self.steps.get_mut(message) {
            match body {
                PartBody::Text { text: t, .. } => step.parts.push(text_part("text", text(t))),
                PartBody::Reasoning { text: t, .. } => {
                    step.parts.push(text_part("reasoning", text(t)))
                }
                PartBody::Tool {
                    call_id,
                    tool,
                    state,
                } => {
                    let arguments = serde_json::from_str(&text(&state.input().to_json_string()))
                        .unwrap_or(JsonValue::Null);
                    step.parts.push(tool_call_part(call_id, tool, arguments));
                }
                _ => {}
            }
        } else if let PartBody::Text { text: t, .. } = body {
            if let Some(job) = self
                .summary_of
                .get(message)
                .and_then(|j| self.jobs.get_mut(j))
            {
                if let Some(summary) = job.summary.as_mut() {
                    summary.text.push(text(t));
                }
            } else if turn.user == Some(*message) {
                turn.prompt.push(t.clone());
            }
        }
    }

    /// The summarizer call of `job` ended (`done`: its step-finish part,
    /// reason and usage; `None`: it failed); its span when it had started.
    fn summary_ended(
        &mut self,
        job: MessageId,
        e: &Envelope,
        done: Option<(ctxlog_core::PartId, &FinishReason, &TokenUsage)>,
        turn: &mut Turn,
        ctx: &Context,
    ) -> Option<Span> {
        let mut ended = self.jobs.remove(&job).unwrap_or_default();
        let summary = ended.summary.take();
        let span = summary.map(|mut summary| {
            let message = summary.message;
            self.summary_of.remove(&message);
            let id = match done {
                Some((part, ..)) => span_of(&ctx.trace, Role::Chat, part.as_bytes()),
                None => span_of(&ctx.trace, Role::Chat, message.as_bytes()),
            };
            let parts = std::mem::take(&mut summary.text)
                .into_iter()
                .map(|t| text_part("compaction", t))
                .collect();
            let none = TokenUsage::default();
            let call = Call {
                model: summary.model.take(),
                start: summary.start,
                end: e.recorded_at,
                seq: e.seq,
                reason: done.map(|d| d.1),
                tokens: done.map_or(&none, |d| d.2),
                parts,
                error: None,
                open: false,
            };
            ended.summary = Some(summary);
            self.call_span(id, call, Some(job), turn, ctx)
        });
        self.ended = Some((job, ended));
        span
    }

    /// What the span event of `event`'s audit line says beyond the line.
    pub fn describe(&mut self, event: &Event, tools: &Tools) -> Vec<Attribute> {
        match event {
            Event::CompactionRequested {
                message, overflow, ..
            } => {
                let job = self.jobs.get(message);
                vec![
                    (JOB, Value::Str(message.to_string())),
                    (
                        "ctxlog.compaction.trigger",
                        Value::Str(job.map_or("", |j| j.trigger).into()),
                    ),
                    (
                        "ctxlog.compaction.auto",
                        Value::Bool(job.is_some_and(|j| j.auto)),
                    ),
                    ("ctxlog.compaction.overflow", Value::Bool(*overflow)),
                    (
                        "ctxlog.compaction.tokens_before",
                        Value::count(job.map_or(0, |j| j.tokens_before)),
                    ),
                ]
            }
            Event::SummaryCompleted { job, .. } | Event::CompactionFailed { job, .. } => {
                let mut out = vec![(JOB, Value::Str(job.to_string()))];
                if let Some((_, ended)) = self.ended.take().filter(|(j, _)| j == job) {
                    out.push((
                        "ctxlog.compaction.trigger",
                        Value::Str(ended.trigger.into()),
                    ));
                    out.push((
                        "ctxlog.compaction.tokens_before",
                        Value::count(ended.tokens_before),
                    ));
                    if let Some(Summary { message, tail, .. }) = ended.summary {
                        out.push((
                            "ctxlog.compaction.summary_id",
                            Value::Str(message.to_string()),
                        ));
                        if let Some(tail) = tail {
                            out.push((
                                "ctxlog.compaction.tail_start",
                                Value::Str(tail.to_string()),
                            ));
                        }
                    }
                }
                out
            }
            Event::PartsPruned {
                parts,
                total_tokens,
                ..
            } => {
                let calls: Vec<String> = parts
                    .iter()
                    .filter_map(|p| tools.call_id(&p.part).map(str::to_owned))
                    .take(MAX_IDS)
                    .collect();
                vec![
                    ("ctxlog.prune.parts", Value::count(parts.len() as u64)),
                    ("ctxlog.prune.tokens", Value::count(*total_tokens)),
                    ("ctxlog.prune.call_ids", Value::Strs(calls)),
                ]
            }
            _ => Vec::new(),
        }
    }

    /// Whether a call whose end is not recorded holds usage (a span
    /// [`Calls::finish`] makes).
    pub fn has_open(&self) -> bool {
        self.steps.values().any(|s| s.reported.is_some())
    }

    /// The spans of steps whose end is not recorded but whose usage is
    /// (counted as `ctxlog usage` counts them), marked open.
    pub fn finish(&mut self, turn: &mut Turn, ctx: &Context) -> Vec<Span> {
        let steps = std::mem::take(&mut self.steps);
        let mut out = Vec::new();
        for (message, step) in steps {
            let Some((tokens, at, seq)) = step.reported else {
                continue;
            };
            let call = Call {
                model: step.model,
                start: step.start,
                end: at,
                seq,
                reason: None,
                tokens: &tokens,
                parts: step.parts,
                error: step.error,
                open: true,
            };
            let id = step_span(ctx, &message, step.ordinal);
            out.push(self.call_span(id, call, None, turn, ctx));
        }
        out
    }

    /// The `chat` span of `call`, counted in `turn`.
    fn call_span(
        &mut self,
        id: crate::model::SpanId,
        call: Call,
        job: Option<MessageId>,
        turn: &mut Turn,
        ctx: &Context,
    ) -> Span {
        let t = StepTokens::of(call.tokens);
        let input = t
            .input
            .saturating_add(t.cache_read)
            .saturating_add(t.cache_write);
        let model = call.model.as_ref().map(|m| m.model.as_str());
        turn.add_call(model, input, t.output.saturating_add(t.reasoning));
        self.last_context = input;
        chat_span(id, call, job, turn.id, ctx)
    }
}

/// One model call, ready to become a span.
struct Call<'a> {
    model: Option<ModelRef>,
    start: u64,
    end: u64,
    seq: Seq,
    reason: Option<&'a FinishReason>,
    tokens: &'a TokenUsage,
    parts: Vec<JsonValue>,
    error: Option<(String, String)>,
    open: bool,
}

/// The `chat` span of `call` (a summarizer's names its `job`).
fn chat_span(
    id: crate::model::SpanId,
    call: Call,
    job: Option<MessageId>,
    parent: crate::model::SpanId,
    ctx: &Context,
) -> Span {
    let mut attributes: Vec<Attribute> = vec![(OPERATION, Value::Str("chat".into()))];
    if let Some(m) = &call.model {
        attributes.push((PROVIDER, Value::Str(provider_name(&m.provider))));
        attributes.push((REQUEST_MODEL, Value::Str(m.model.clone())));
    }
    attributes.push((CONVERSATION, Value::Str(ctx.who.conversation.clone())));
    if let Some(reason) = call.reason {
        attributes.push((FINISH_REASONS, Value::Strs(vec![finish_reason(reason)])));
    }
    attributes.extend(usage(call.tokens));
    if ctx.compacted {
        attributes.push((COMPACTED, Value::Bool(true)));
    }
    if let Some(job) = job {
        attributes.push((JOB, Value::Str(job.to_string())));
    }
    if !call.parts.is_empty() {
        attributes.push((
            OUTPUT_MESSAGES,
            Value::Str(messages("assistant", call.parts)),
        ));
    }
    if call.open {
        attributes.push((OPEN, Value::Bool(true)));
    }
    let mut error = None;
    if let Some((name, text)) = call.error {
        attributes.push((ERROR_TYPE, Value::Str(name.clone())));
        error = Some(if ctx.content.on() {
            ctx.content.text(&text)
        } else {
            name
        });
    } else if call.reason == Some(&FinishReason::Error) {
        attributes.push((ERROR_TYPE, Value::Str("error".into())));
        error = Some("the call ended in an error".into());
    }
    attributes.push((SEQ, Value::count(call.seq)));
    let name = match &call.model {
        Some(m) => format!("chat {}", m.model),
        None => "chat".to_owned(),
    };
    Span {
        trace: ctx.trace,
        id,
        parent: Some(parent),
        name,
        kind: Kind::Client,
        start_ns: ns(call.start),
        end_ns: ns(call.end.max(call.start)),
        attributes,
        events: Vec::new(),
        error,
    }
}

/// The span of the `ordinal`th step of `message`: the same whether the
/// step is sent open (its usage reported, its end not yet) or finished.
fn step_span(ctx: &Context, message: &MessageId, ordinal: u64) -> crate::model::SpanId {
    let mut key = *message.as_bytes();
    for (k, o) in key[8..].iter_mut().zip(ordinal.to_be_bytes()) {
        *k ^= o;
    }
    span_of(&ctx.trace, Role::Chat, &key)
}

/// A trigger's name, as `ctxlog.compaction.trigger` says it.
fn trigger_name(trigger: &CompactionTrigger) -> &'static str {
    match trigger {
        CompactionTrigger::Overflow { .. } => "overflow",
        CompactionTrigger::ProviderOverflow { .. } => "provider_overflow",
        CompactionTrigger::Manual => "manual",
        CompactionTrigger::Imported => "imported",
        CompactionTrigger::Recorded { .. } => "recorded",
    }
}

/// The context's tokens before a compaction, when its trigger says.
fn tokens_before(trigger: &CompactionTrigger) -> Option<u64> {
    match trigger {
        CompactionTrigger::Overflow { check, .. } => Some(check.count),
        CompactionTrigger::Recorded { tokens_before, .. } => *tokens_before,
        _ => None,
    }
}
