//! A window as the Anthropic Messages API `messages` array an agent sends
//! (`window --format anthropic`), so the time-travel view can be checked
//! against the requests pi and Claude Code really sent (the differential
//! tests do).
//!
//! The mapping, as read from `@mariozechner/pi-ai@0.73.1`'s
//! `convertMessages` (`providers/anthropic.js`) and checked live:
//! - a user message sends `content` as an array of `{type: "text"}` blocks
//!   (blank texts left out; a message left empty is not sent) and images as
//!   `{type: "image"}` blocks;
//! - an assistant message sends its non-blank texts as `text` blocks, its
//!   reasoning as `thinking` blocks and each tool call as `{type:
//!   "tool_use", id, name, input}`; a message with no block is not sent;
//! - the results of one assistant message's calls follow as one user
//!   message of `{type: "tool_result", tool_use_id, content, is_error}`
//!   blocks, `content` the output (or the error text) as a string.
//!
//! Transport details are not part of the window: `cache_control` marks,
//! the system prompt and the tools are left out (a comparison strips
//! `cache_control` from what the agent sent). Not covered: reasoning
//! signatures (ctxlog keeps the reasoning text only).

use crate::Wire;
use ctxlog_core::window::{ToolResult, WindowMessage, WindowPart};
use serde_json::{json, Value};

/// The Messages API, as a [`Wire`]. It has no developer or system message
/// between turns (its `system` is one field before them all): injected
/// instructions go as the user's.
pub(crate) struct Anthropic;

impl Wire for Anthropic {
    fn input(&self, m: &WindowMessage) -> Option<Value> {
        user(m)
    }

    fn assistant(&self, m: &WindowMessage, out: &mut Vec<Value>) {
        assistant(m, out)
    }
}

/// An input message as a user message (`None` when nothing is left).
pub(crate) fn user(m: &WindowMessage) -> Option<Value> {
    let content: Vec<Value> = m
        .parts
        .iter()
        .filter_map(|p| match p {
            WindowPart::Text(t) | WindowPart::Reasoning(t) if !t.trim().is_empty() => {
                Some(json!({"type": "text", "text": t}))
            }
            WindowPart::File(a) => Some(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": a.mime, "data": a.url},
            })),
            _ => None,
        })
        .collect();
    (!content.is_empty()).then(|| json!({"role": "user", "content": content}))
}

/// An assistant message, then the results of its calls as a user message.
pub(crate) fn assistant(m: &WindowMessage, out: &mut Vec<Value>) {
    let mut content = Vec::new();
    let mut results = Vec::new();
    for p in &m.parts {
        match p {
            WindowPart::Text(t) if !t.trim().is_empty() => {
                content.push(json!({"type": "text", "text": t}))
            }
            WindowPart::Reasoning(t) if !t.trim().is_empty() => {
                content.push(json!({"type": "thinking", "thinking": t}))
            }
            WindowPart::Tool {
                call_id,
                tool,
                input,
                result,
            } => {
                let input = serde_json::to_value(input).unwrap_or(Value::Null);
                let input = if input.is_null() { json!({}) } else { input };
                content
                    .push(json!({"type": "tool_use", "id": call_id, "name": tool, "input": input}));
                let (text, is_error) = (result.text(), matches!(result, ToolResult::Error(_)));
                results.push(json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": text,
                    "is_error": is_error,
                }));
            }
            _ => {}
        }
    }
    if content.is_empty() {
        return;
    }
    out.push(json!({"role": "assistant", "content": content}));
    if !results.is_empty() {
        out.push(json!({"role": "user", "content": results}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxlog_core::window::Window;
    use ctxlog_core::{Json, MessageId, Role};
    use uuid::Uuid;

    fn message(role: Role, parts: Vec<WindowPart>) -> WindowMessage {
        WindowMessage {
            id: MessageId(Uuid::nil()),
            role,
            parts,
        }
    }

    #[test]
    fn calls_then_their_results_as_one_user_message() {
        let window = Window {
            pivot: None,
            messages: vec![
                message(Role::User, vec![WindowPart::Text("run it".into())]),
                message(
                    Role::Assistant,
                    vec![
                        WindowPart::Text(" ".into()),
                        WindowPart::Tool {
                            call_id: "a".into(),
                            tool: "bash".into(),
                            input: Json::Null,
                            result: ToolResult::Output {
                                text: "ok".into(),
                                attachments: Vec::new(),
                            },
                        },
                        WindowPart::Tool {
                            call_id: "b".into(),
                            tool: "bash".into(),
                            input: Json::Null,
                            result: ToolResult::Error("no".into()),
                        },
                    ],
                ),
                message(Role::User, vec![WindowPart::Text("  ".into())]),
            ],
        };
        let sent = crate::Format::Anthropic.encode(&window);
        assert_eq!(
            sent,
            vec![
                json!({"role": "user", "content": [{"type": "text", "text": "run it"}]}),
                json!({"role": "assistant", "content": [
                    {"type": "tool_use", "id": "a", "name": "bash", "input": {}},
                    {"type": "tool_use", "id": "b", "name": "bash", "input": {}},
                ]}),
                json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "ok", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "b", "content": "no", "is_error": true},
                ]}),
            ]
        );
    }
}
