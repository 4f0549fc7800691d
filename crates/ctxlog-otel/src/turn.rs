//! A turn: from a person's message to the next, as one `invoke_agent`
//! span whose children are the turn's model and tool calls and whose
//! events are what the lifecycle did meanwhile (compactions, prunes).

use crate::content::{messages, text_part, Content};
use crate::model::{ns, Attribute, Kind, Span, SpanEvent, SpanId, TraceId, Value};
use crate::semconv::{
    AGENT_NAME, AGENT_VERSION, CONVERSATION, INPUT_MESSAGES, INPUT_TOKENS, OPERATION,
    OUTPUT_TOKENS, REQUEST_MODEL, SEQ, SESSION,
};
use ctxlog_core::{MessageId, Seq};
use std::collections::BTreeSet;

/// Who the spans are about: the same for every span of a session.
#[derive(Debug, Clone, Default)]
pub struct Speaker {
    /// The ctxlog session.
    pub session: String,
    /// `gen_ai.conversation.id`: the recording's own session id, else
    /// ctxlog's.
    pub conversation: String,
    /// The agent without its version (`claude-code`, `opencode`, ...).
    pub agent: Option<String>,
    /// Its version, when recorded.
    pub version: Option<String>,
}

/// What every span of a session shares.
#[derive(Debug)]
pub struct Context<'a> {
    /// The session's trace.
    pub trace: TraceId,
    /// Who speaks.
    pub who: &'a Speaker,
    /// Whether texts go out.
    pub content: Content,
    /// A compaction completed before: the call's context is a compacted
    /// view.
    pub compacted: bool,
}

/// A turn being folded.
#[derive(Debug)]
pub struct Turn {
    /// Its span.
    pub id: SpanId,
    /// Start, ms.
    pub start: u64,
    /// The last event's time so far, ms.
    pub end: u64,
    /// The last event's seq so far.
    pub seq: Seq,
    /// The models its calls used.
    pub models: BTreeSet<String>,
    /// Its calls' input tokens (as the conventions count them).
    pub input_tokens: u64,
    /// Its calls' output tokens.
    pub output_tokens: u64,
    /// Its span events so far.
    pub events: Vec<SpanEvent>,
    /// The index in `events` of a completed compaction that waits for the
    /// next call's input tokens (the context after it).
    pub awaiting_after: Option<usize>,
    /// The person's message that began it (`None`: the events before a
    /// session's first message, or after a turn ended early).
    pub user: Option<MessageId>,
    /// The person's message texts (with `--content` only).
    pub prompt: Vec<String>,
}

impl Turn {
    /// A turn starting at `at`.
    pub fn new(id: SpanId, at: u64, seq: Seq) -> Turn {
        Turn {
            id,
            start: at,
            end: at,
            seq,
            models: BTreeSet::new(),
            input_tokens: 0,
            output_tokens: 0,
            events: Vec::new(),
            awaiting_after: None,
            user: None,
            prompt: Vec::new(),
        }
    }

    /// Notes that the turn lasted at least until `at`, event `seq`.
    pub fn reach(&mut self, at: u64, seq: Seq) {
        self.end = self.end.max(at);
        self.seq = seq;
    }

    /// Adds a call's model and tokens to the turn's.
    pub fn add_call(&mut self, model: Option<&str>, input: u64, output: u64) {
        if let Some(m) = model {
            if !self.models.contains(m) {
                self.models.insert(m.to_owned());
            }
        }
        self.input_tokens = self.input_tokens.saturating_add(input);
        self.output_tokens = self.output_tokens.saturating_add(output);
        if let Some(i) = self.awaiting_after.take() {
            if let Some(e) = self.events.get_mut(i) {
                e.attributes
                    .push(("ctxlog.compaction.tokens_after", Value::count(input)));
            }
        }
    }

    /// The turn's `invoke_agent` span.
    pub fn into_span(self, trace: TraceId, who: &Speaker, content: Content) -> Span {
        let name = match &who.agent {
            Some(agent) => format!("invoke_agent {agent}"),
            None => "invoke_agent".to_owned(),
        };
        let mut attributes: Vec<Attribute> = vec![(OPERATION, Value::Str("invoke_agent".into()))];
        if let Some(agent) = &who.agent {
            attributes.push((AGENT_NAME, Value::Str(agent.clone())));
        }
        if let Some(version) = &who.version {
            attributes.push((AGENT_VERSION, Value::Str(version.clone())));
        }
        attributes.push((CONVERSATION, Value::Str(who.conversation.clone())));
        if self.models.len() == 1 {
            let model = self.models.iter().next().cloned().unwrap_or_default();
            attributes.push((REQUEST_MODEL, Value::Str(model)));
        }
        attributes.push((INPUT_TOKENS, Value::count(self.input_tokens)));
        attributes.push((OUTPUT_TOKENS, Value::count(self.output_tokens)));
        if content.on() && !self.prompt.is_empty() {
            let parts = self
                .prompt
                .iter()
                .map(|t| text_part("text", content.text(t)))
                .collect();
            attributes.push((INPUT_MESSAGES, Value::Str(messages("user", parts))));
        }
        attributes.push((SESSION, Value::Str(who.session.clone())));
        attributes.push((SEQ, Value::count(self.seq)));
        Span {
            trace,
            id: self.id,
            parent: None,
            name,
            kind: Kind::Internal,
            start_ns: ns(self.start),
            end_ns: ns(self.end.max(self.start)),
            attributes,
            events: self.events,
            error: None,
        }
    }
}
