//! Response items: user-side messages, assistant text, reasoning, tool
//! calls (pending until their output) and the outputs that complete them.

use super::Importer;
use crate::build::{as_json, NewMessage};
use crate::ImportError;
use ctxlog_core::{Attachment, Json, PartBody, Role, ToolState};
use serde_json::Value;

/// The openings of the context Codex injects as a user message.
const INJECTED: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
];

impl Importer<'_> {
    /// An input message with the role it was sent with; a developer or
    /// system message is runtime instructions, never a real prompt.
    fn user(&mut self, p: &Value, at: u64, role: Role) -> Result<(), ImportError> {
        let injected = role != Role::User;
        self.close_step(false)?;
        let content = p
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| self.err("field `payload.content` is not an array"))?;
        let mut bodies = Vec::new();
        let mut texts = Vec::new();
        for (i, c) in content.iter().enumerate() {
            match c.get("type").and_then(Value::as_str) {
                Some("input_text") | Some("text") => {
                    let t = c.get("text").and_then(Value::as_str).ok_or_else(|| {
                        self.err(format!("field `payload.content[{i}].text` is not a string"))
                    })?;
                    texts.push(t.to_owned());
                }
                Some("input_image") => bodies.push(PartBody::File(Attachment {
                    mime: "image/*".into(),
                    filename: None,
                    url: c
                        .get("image_url")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                })),
                _ => {}
            }
        }
        let synthetic = injected
            || (!texts.is_empty()
                && texts
                    .iter()
                    .all(|t| INJECTED.iter().any(|p| t.trim_start().starts_with(p))));
        let message = self.b.message(
            at,
            role,
            NewMessage {
                source: Some(format!("line:{}", self.line)),
                synthetic,
                ..NewMessage::default()
            },
        )?;
        for text in texts {
            self.b.text(at, message, text, synthetic)?;
        }
        for body in bodies {
            self.b.part(at, message, body, None)?;
        }
        if !synthetic {
            self.last_user = Some(message);
        }
        Ok(())
    }

    pub(super) fn item(&mut self, kind: &str, p: &Value, at: u64) -> Result<(), ImportError> {
        match kind {
            "message" => match p.get("role").and_then(Value::as_str) {
                Some("user") => self.user(p, at, Role::User),
                Some("developer") => self.user(p, at, Role::Developer),
                Some("system") => self.user(p, at, Role::System),
                Some("assistant") => {
                    let content = p
                        .get("content")
                        .and_then(Value::as_array)
                        .ok_or_else(|| self.err("field `payload.content` is not an array"))?;
                    for c in content {
                        if let Some(t) = c.get("text").and_then(Value::as_str) {
                            let body = PartBody::Text {
                                text: t.to_owned(),
                                synthetic: false,
                                time: None,
                            };
                            self.push_item(at, body, None)?;
                        }
                    }
                    Ok(())
                }
                _ => Err(self.err("field `payload.role` missing or unknown")),
            },
            "reasoning" => {
                let text = p
                    .get("summary")
                    .and_then(Value::as_array)
                    .map(|s| {
                        s.iter()
                            .filter_map(|x| x.get("text").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
                self.push_item(at, PartBody::Reasoning { text, time: None }, None)
            }
            "function_call" | "custom_tool_call" | "local_shell_call" => self.call(kind, p, at),
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
                self.output(p, at)
            }
            _ => Ok(()), // web_search_call and future items: not replayed
        }
    }

    /// A tool call of `kind`, pending until its output.
    fn call(&mut self, kind: &str, p: &Value, at: u64) -> Result<(), ImportError> {
        let call_id = p
            .get("call_id")
            .and_then(Value::as_str)
            .or_else(|| p.get("id").and_then(Value::as_str))
            .ok_or_else(|| self.err("field `payload.call_id` missing"))?
            .to_owned();
        if let Some(first) = self.call_lines.insert(call_id.clone(), self.line) {
            return Err(self.err(format!(
                "field `payload.call_id`: call {call_id:?} was already made at line {first}; every call needs its own id"
            )));
        }
        let tool = p
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(if kind == "local_shell_call" {
                "local_shell"
            } else {
                "tool"
            })
            .to_owned();
        let (input, raw) = match p
            .get("arguments")
            .or_else(|| p.get("input"))
            .or_else(|| p.get("action"))
        {
            Some(Value::String(s)) => (
                serde_json::from_str::<Value>(s)
                    .map(|v| as_json(&v))
                    .unwrap_or_else(|_| Json::String(s.clone())),
                s.clone(),
            ),
            Some(v) => (as_json(v), v.to_string()),
            None => (Json::Null, String::new()),
        };
        let body = PartBody::Tool {
            call_id: call_id.clone(),
            tool,
            state: ToolState::Pending { input, raw },
        };
        self.push_item(at, body, Some(call_id))
    }

    fn output(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        let call_id = p
            .get("call_id")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("field `payload.call_id` missing"))?
            .to_owned();
        let (text, metadata) = match p.get("output") {
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(o)) => match o.get("output").and_then(Value::as_str) {
                    Some(output) => (
                        output.to_owned(),
                        o.get("metadata").map(as_json).unwrap_or(Json::Null),
                    ),
                    None => (s.clone(), Json::Null),
                },
                _ => (s.clone(), Json::Null),
            },
            Some(Value::Object(o)) => (
                o.get("content")
                    .or_else(|| o.get("output"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                Json::Null,
            ),
            Some(Value::Null) | None => (String::new(), Json::Null),
            Some(_) => return Err(self.err("field `payload.output` is not a string")),
        };
        // Every call is written as it is read: its output completes it.
        if !self.written.contains_key(&call_id) && self.call_lines.contains_key(&call_id) {
            return Err(self.err(format!("a second output for call {call_id:?}")));
        }
        let call = self
            .written
            .remove(&call_id)
            .ok_or_else(|| self.err(format!("tool output for unknown call {call_id:?}")))?;
        self.b
            .complete_call(at, &call_id, call, text, false, metadata)
    }
}
