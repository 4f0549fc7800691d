//! A window as the chat-completions `messages` array a provider receives
//! from OpenCode through `@ai-sdk/openai-compatible` (`window --format
//! openai`), so the time-travel view can be checked byte for byte against
//! the requests OpenCode really sent (the differential test does).
//!
//! The mapping, as read from OpenCode 1.18.33 (`toModelMessages`, then the
//! provider's message converter) and checked live:
//! - a user message with one text part sends `content` as that string; with
//!   several parts, an array of `{type: "text"}` / `{type: "image_url"}`
//!   parts; empty texts are not sent;
//! - an assistant message sends `content` = its texts concatenated (`""`
//!   when it has none), `reasoning_content` when it has reasoning, and
//!   `tool_calls` (`arguments` = the input as JSON text, keys in their
//!   recorded order); then one `tool` message per call, in order, whose
//!   `content` is the output (or the error text) exactly as the window
//!   holds it;
//! - a message left with nothing to send is not sent.
//!
//! Not covered (never produced by the recordings ctxlog reads): tool outputs
//! with attachments (OpenCode sends a JSON `content` value) and audio or PDF
//! files; reasoning recorded under another model, which OpenCode sends as
//! text.

use crate::Wire;
use ctxlog_core::window::{attachment_note, WindowMessage, WindowPart};
use ctxlog_core::Role;
use serde_json::{json, Map, Value};

/// Chat completions, as a [`Wire`].
pub(crate) struct Chat;

impl Wire for Chat {
    fn input(&self, m: &WindowMessage) -> Option<Value> {
        input(m, m.role)
    }

    fn assistant(&self, m: &WindowMessage, out: &mut Vec<Value>) {
        assistant(m, out)
    }
}

/// An input message with its role as sent: chat completions takes `user`,
/// `developer` and `system` alike.
fn input(m: &WindowMessage, role: Role) -> Option<Value> {
    let role = role.as_str();
    let parts: Vec<&WindowPart> = m
        .parts
        .iter()
        .filter(|p| !matches!(p, WindowPart::Text(t) if t.is_empty()))
        .collect();
    match parts.as_slice() {
        [] => None,
        [WindowPart::Text(t)] => Some(json!({"role": role, "content": t})),
        many => {
            let content: Vec<Value> = many
                .iter()
                .filter_map(|p| match p {
                    WindowPart::Text(t) | WindowPart::Reasoning(t) => {
                        Some(json!({"type": "text", "text": t}))
                    }
                    WindowPart::File(a) if a.mime.starts_with("image/") => {
                        Some(json!({"type": "image_url", "image_url": {"url": a.url}}))
                    }
                    WindowPart::File(a) => Some(json!({
                        "type": "text",
                        "text": attachment_note(a),
                    })),
                    WindowPart::Tool { .. } => None,
                })
                .collect();
            Some(json!({"role": role, "content": content}))
        }
    }
}

fn assistant(m: &WindowMessage, out: &mut Vec<Value>) {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for p in &m.parts {
        match p {
            WindowPart::Text(t) => text.push_str(t),
            WindowPart::Reasoning(t) => reasoning.push_str(t),
            WindowPart::File(_) => {}
            WindowPart::Tool {
                call_id,
                tool,
                input,
                result,
            } => {
                calls.push(json!({
                    "id": call_id,
                    "type": "function",
                    "function": {"name": tool, "arguments": input.to_json_string()},
                }));
                let content = result.text();
                results.push(json!({"role": "tool", "tool_call_id": call_id, "content": content}));
            }
        }
    }
    if text.is_empty() && reasoning.is_empty() && calls.is_empty() {
        return;
    }
    let mut msg = Map::new();
    msg.insert("role".into(), json!("assistant"));
    msg.insert("content".into(), json!(text));
    if !reasoning.is_empty() {
        msg.insert("reasoning_content".into(), json!(reasoning));
    }
    if !calls.is_empty() {
        msg.insert("tool_calls".into(), Value::Array(calls));
    }
    out.push(Value::Object(msg));
    out.extend(results);
}
