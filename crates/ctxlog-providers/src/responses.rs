//! A window as the OpenAI Responses API `input` items Codex sends
//! (`window --format responses`), so the time-travel view can be checked
//! against the requests Codex 0.169 really sent (the differential test
//! does).
//!
//! The mapping, as read from the requests of `@openai/codex@0.169.0`:
//! - an input message is `{type: "message", role, content: [{type:
//!   "input_text", text}]}` (one content item per text part), its role as
//!   sent: `user`, or `developer` for Codex's injected context;
//! - an assistant message sends its texts as one `{type: "message", role:
//!   "assistant", content: [{type: "output_text", text}]}`, each tool call
//!   as `{type: "function_call", call_id, name, arguments}` (the input as
//!   JSON text), then each call's `{type: "function_call_output", call_id,
//!   output}`.
//!
//! Not in the window, so not here: Codex's instructions (its first input
//! item, which the rollout does not record), item ids and statuses.

use crate::Wire;
use ctxlog_core::window::{WindowMessage, WindowPart};
use ctxlog_core::Role;
use serde_json::{json, Value};

/// The Responses API, as a [`Wire`].
pub(crate) struct Responses;

impl Wire for Responses {
    fn input(&self, m: &WindowMessage) -> Option<Value> {
        input(m, m.role)
    }

    fn assistant(&self, m: &WindowMessage, out: &mut Vec<Value>) {
        assistant(m, out)
    }
}

fn input(m: &WindowMessage, role: Role) -> Option<Value> {
    let content: Vec<Value> = m
        .parts
        .iter()
        .filter_map(|p| match p {
            WindowPart::Text(t) | WindowPart::Reasoning(t) => {
                Some(json!({"type": "input_text", "text": t}))
            }
            WindowPart::File(a) => Some(json!({"type": "input_image", "image_url": a.url})),
            WindowPart::Tool { .. } => None,
        })
        .collect();
    (!content.is_empty())
        .then(|| json!({"type": "message", "role": role.as_str(), "content": content}))
}

fn assistant(m: &WindowMessage, out: &mut Vec<Value>) {
    let texts: Vec<Value> = m
        .parts
        .iter()
        .filter_map(|p| match p {
            WindowPart::Text(t) => Some(json!({"type": "output_text", "text": t})),
            _ => None,
        })
        .collect();
    if !texts.is_empty() {
        out.push(json!({"type": "message", "role": "assistant", "content": texts}));
    }
    let mut outputs = Vec::new();
    for p in &m.parts {
        if let WindowPart::Tool {
            call_id,
            tool,
            input,
            result,
        } = p
        {
            out.push(json!({
                "type": "function_call",
                "call_id": call_id,
                "name": tool,
                "arguments": input.to_json_string(),
            }));
            let text = result.text();
            outputs.push(json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": text,
            }));
        }
    }
    out.extend(outputs);
}
