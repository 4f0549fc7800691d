//! [`Doc`]: one message and its parts written as OpenCode JSON, with the
//! ids of this export and what the source kept merged over them.

use super::error::ExportError;
use super::fold::Extra;
use super::values::{
    cost_json, ctxlog_error_json, error_json, span_json, tokens_json, tool_state_json, with_source,
};
use crate::opencode_names::{finish_name, FAILED_REF, SENT_ROLE};
use ctxlog_core::window::is_continue_text;
use ctxlog_core::{
    Contents, JobStatus, Message, MessageId, ModelRef, Part, PartBody, PartId, Role, SessionState,
    Span,
};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// What every message and part of one export refers to.
pub(super) struct Doc<'a, L: Contents + ?Sized> {
    /// The model a message that records none is exported with (OpenCode
    /// requires one on every message): the session's first recorded model.
    pub(super) model: ModelRef,
    /// The session's log, where sealed parts' content is read back.
    pub(super) log: &'a L,
    pub(super) state: &'a SessionState,
    pub(super) extra: &'a Extra,
    pub(super) sid: &'a str,
    pub(super) msg_ids: &'a BTreeMap<MessageId, String>,
    pub(super) part_ids: &'a BTreeMap<PartId, String>,
}

impl<L: Contents + ?Sized> Doc<'_, L> {
    /// The OpenCode id of a message (every message has one).
    fn message_id(&self, id: MessageId) -> String {
        self.msg_ids.get(&id).cloned().unwrap_or_default()
    }

    /// A message as OpenCode exports it: `{info, parts}`.
    pub(super) fn message_json(&self, m: &Message) -> Result<Value, ExportError> {
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
    pub(super) fn info_json(&self, m: &Message) -> Value {
        let mid = self.message_id(m.id);
        let mut info = Map::new();
        info.insert("id".into(), json!(mid));
        info.insert("sessionID".into(), json!(self.sid));
        // OpenCode knows two roles: a developer or system message is the
        // user's, with the role it was sent with beside it for a re-import.
        let role = if m.role.is_input() {
            "user"
        } else {
            "assistant"
        };
        info.insert("role".into(), json!(role));
        if matches!(m.role, Role::Developer | Role::System) {
            info.insert(SENT_ROLE.into(), json!(m.role.as_str()));
        }
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
            Role::User | Role::Developer | Role::System => {
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
        let index = self.state.history_index(m.id).unwrap_or(0);
        self.state.messages[..index]
            .iter()
            .rev()
            .find(|u| u.role.is_input())
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

    /// A text part's fields: its text, whether ctxlog or the agent made it
    /// up, the continue message's marker, its time.
    fn text_fields(
        &self,
        o: &mut Map<String, Value>,
        m: &Message,
        text: &str,
        synthetic: bool,
        time: &Option<Span>,
    ) {
        o.insert("text".into(), json!(text));
        if synthetic {
            o.insert("synthetic".into(), json!(true));
        }
        if self.extra.continues.contains(&m.id) && is_continue_text(text) {
            o.insert("metadata".into(), json!({"compaction_continue": true}));
        }
        if let Some(t) = span_json(time) {
            o.insert("time".into(), t);
        }
    }

    /// A compaction marker's fields: automatic or not, overflow (OpenCode
    /// writes it on automatic markers only), where its job's tail starts.
    fn compaction_fields(
        &self,
        o: &mut Map<String, Value>,
        m: &Message,
        auto: bool,
        overflow: bool,
    ) {
        o.insert("auto".into(), json!(auto));
        if auto || overflow {
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
            } => self.text_fields(&mut o, m, text, *synthetic, time),
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
                self.compaction_fields(&mut o, m, *auto, *overflow)
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
