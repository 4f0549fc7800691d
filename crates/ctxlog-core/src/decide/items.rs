//! The decisions of a session an agent runtime keeps item by item (the
//! OpenAI Agents SDK's session protocol): which message each item becomes,
//! which call an output completes, what is withdrawn or taken back, which
//! step a turn's end finishes. The runtime's binding only classifies its
//! items ([`AgentItem`]); everything else is decided here.

use super::drafter::Drafter;
#[cfg(doc)]
use super::Command;
use crate::error::Violation;
use crate::event::{Event, FinishReason, PartBody, Role, SourceTarget, ToolState};
use crate::ids::{MessageId, PartId};
use crate::json::Json;
use crate::policy::{ModelLimits, Policy, TokenUsage};
use crate::state::SessionState;
use crate::window::{estimate_window, sent_order};
use std::collections::BTreeMap;

/// What an item is to ctxlog; the binding classifies its runtime's items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// An input message (`user`, `system` or `developer` role): a user
    /// message, a turn.
    Input,
    /// An assistant output message.
    Assistant,
    /// A reasoning item.
    Reasoning,
    /// A function or custom tool call: a tool part waiting for its output.
    Call,
    /// The output of a call: completes the call's tool part, which a prune
    /// may clear later.
    Output,
    /// Any other item (hosted tool calls, references, ...): kept and given
    /// back, never measured.
    Other,
}

/// One item to record, classified, with what to keep of it as the runtime
/// wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentItem {
    /// What it is.
    pub kind: ItemKind,
    /// The text the model reads of it; for a call, its arguments; for an
    /// output, the output.
    pub text: String,
    /// A call's arguments, parsed (a string when they are not JSON).
    pub arguments: Json,
    /// A call's or an output's call id.
    pub call_id: Option<String>,
    /// A call's tool name; the type name of an `Other` item.
    pub name: Option<String>,
    /// The source format of the fields kept with it.
    pub format: String,
    /// The fields kept with it (on its message, or on the part an output
    /// completes).
    pub fields: Json,
    /// For an output that completes its call: the fields kept instead
    /// (the item without its output, which the part holds).
    pub fields_completing: Option<Json>,
}

/// A call waiting for its output: its part, tool and arguments.
type Waiting = (PartId, String, Json);

impl Drafter<'_, '_> {
    /// [`Command::AddItems`]: each item a message of its own, but an output
    /// whose call waits, which completes the call's tool part.
    pub(super) fn add_items(&mut self, state: &SessionState, items: Vec<AgentItem>) {
        let mut parent = last_input(state);
        let mut waiting = waiting_calls(state);
        for item in items {
            let call = (item.kind == ItemKind::Output)
                .then(|| item.call_id.as_ref().and_then(|c| waiting.remove(c)))
                .flatten();
            if let Some(call) = call {
                self.complete_call(item, call);
                continue;
            }
            let message = self.message();
            let part = self.part();
            if let (ItemKind::Call, Some(c)) = (item.kind, &item.call_id) {
                let tool = item.name.clone().unwrap_or_default();
                waiting.insert(c.clone(), (part, tool, item.arguments.clone()));
            }
            let kind = item.kind;
            self.item_message(item, message, part, parent);
            if kind == ItemKind::Input {
                parent = Some(message);
            }
        }
    }

    /// The events of `item` as a new message with one part.
    fn item_message(
        &mut self,
        item: AgentItem,
        message: MessageId,
        part: PartId,
        parent: Option<MessageId>,
    ) {
        let role = match item.kind {
            ItemKind::Input => Role::User,
            _ => Role::Assistant,
        };
        let body = match item.kind {
            ItemKind::Input | ItemKind::Assistant => PartBody::Text {
                text: item.text.clone(),
                synthetic: false,
                time: None,
            },
            ItemKind::Reasoning => PartBody::Reasoning {
                text: item.text.clone(),
                time: None,
            },
            ItemKind::Call => PartBody::Tool {
                call_id: item.call_id.clone().unwrap_or_default(),
                tool: item.name.clone().unwrap_or_default(),
                state: ToolState::Pending {
                    input: item.arguments,
                    raw: item.text,
                },
            },
            ItemKind::Output | ItemKind::Other => PartBody::Other {
                kind: item.name.clone().unwrap_or_else(|| "item".into()),
                data: Json::Null,
            },
        };
        self.push(Event::MessageAppended {
            message,
            role,
            agent: None,
            model: None,
            synthetic: false,
            parent: parent.filter(|_| role == Role::Assistant),
            source_id: None,
        });
        self.push(Event::PartAppended {
            message,
            part,
            body,
            source_id: item.call_id,
        });
        self.push(Event::SourceFields {
            format: item.format,
            target: SourceTarget::Message(message),
            fields: item.fields,
        });
    }

    /// Completes the tool part of a waiting call with output `item`.
    fn complete_call(&mut self, item: AgentItem, (part, tool, input): Waiting) {
        let at = self.context.at;
        self.push(Event::PartUpdated {
            part,
            body: PartBody::Tool {
                call_id: item.call_id.unwrap_or_default(),
                tool,
                state: ToolState::Completed {
                    input,
                    output: item.text,
                    title: None,
                    metadata: Json::Null,
                    start: at,
                    end: at,
                    attachments: Vec::new(),
                },
            },
        });
        self.push(Event::SourceFields {
            format: item.format,
            target: SourceTarget::Part(part),
            fields: item.fields_completing.unwrap_or(item.fields),
        });
    }

    /// [`Command::WithdrawAll`]: every message not withdrawn yet, in one
    /// event; nothing when there is none.
    pub(super) fn withdraw_all(&mut self, state: &SessionState, reason: String) {
        let messages: Vec<MessageId> = state
            .present_messages()
            .iter()
            .filter(|m| !m.withdrawn)
            .map(|m| m.id)
            .collect();
        if !messages.is_empty() {
            self.push(Event::MessagesWithdrawn { messages, reason });
        }
    }

    /// [`Command::ReopenCall`]: a completed call waits for its output
    /// again, restored first when a prune cleared it.
    pub(super) fn reopen_call(
        &mut self,
        state: &SessionState,
        part: PartId,
        reason: String,
    ) -> Result<(), Violation> {
        let (_, p) = state.part(part).ok_or(Violation::UnknownPart(part))?;
        let Some(PartBody::Tool {
            call_id,
            tool,
            state: ToolState::Completed { input, .. },
        }) = p.content()
        else {
            return Err(Violation::NotACompletedCall(part));
        };
        let body = PartBody::Tool {
            call_id: call_id.clone(),
            tool: tool.clone(),
            state: ToolState::Pending {
                input: input.clone(),
                raw: input.to_json_string(),
            },
        };
        if p.pruned.is_some() {
            self.push(Event::PartsRestored {
                parts: vec![part],
                reason,
            });
        }
        self.push(Event::PartUpdated { part, body });
        Ok(())
    }

    /// [`Command::FinishOpenStep`]: the step of the last message sent,
    /// when it is an assistant's still open, finishes with `tokens` (the
    /// window's estimate when `None`); then the overflow check.
    pub(super) fn finish_open_step(&mut self, state: &SessionState, tokens: Option<TokenUsage>) {
        let Some((message, reason)) = open_step(state) else {
            return;
        };
        let tokens = tokens.unwrap_or(TokenUsage {
            input: estimate_window(state),
            ..TokenUsage::default()
        });
        self.finish_step(message, reason, tokens);
    }

    /// [`Command::Settle`]: each setting that differs from the session's is
    /// recorded as a change.
    pub(super) fn settle(
        &mut self,
        state: &SessionState,
        policy: Option<Policy>,
        limits: Option<ModelLimits>,
    ) {
        if let Some(policy) = policy.filter(|p| *p != state.policy) {
            self.push(Event::PolicyChanged { policy });
        }
        if let Some(limits) = limits.filter(|l| *l != state.limits) {
            self.push(Event::LimitsChanged { limits });
        }
    }
}

/// The last user message still sent: the parent of new assistant messages.
fn last_input(state: &SessionState) -> Option<MessageId> {
    state
        .present_messages()
        .iter()
        .rev()
        .find(|m| m.role.is_input() && !m.withdrawn && !m.marker)
        .map(|m| m.id)
}

/// Tool parts still waiting for their output, by call id (the latest part
/// of a call id wins), with their tool and arguments.
fn waiting_calls(state: &SessionState) -> BTreeMap<String, Waiting> {
    let mut out = BTreeMap::new();
    let (_, order) = sent_order(state);
    for i in order {
        for p in &state.messages[i].parts {
            if let Some(PartBody::Tool {
                call_id,
                tool,
                state: ToolState::Pending { input, .. } | ToolState::Running { input, .. },
            }) = p.content()
            {
                out.insert(call_id.clone(), (p.id, tool.clone(), input.clone()));
            }
        }
    }
    out
}

/// The assistant message whose step is still open: the last message sent,
/// when it is an assistant's without a finish; `tool_calls` when it is a
/// call.
fn open_step(state: &SessionState) -> Option<(MessageId, FinishReason)> {
    let (_, order) = sent_order(state);
    let m = &state.messages[*order.last()?];
    if m.role != Role::Assistant || m.summary || m.finish.is_some() {
        return None;
    }
    let call = m.parts.iter().any(|p| p.kind() == "tool");
    let reason = if call {
        FinishReason::ToolCalls
    } else {
        FinishReason::Stop
    };
    Some((m.id, reason))
}
