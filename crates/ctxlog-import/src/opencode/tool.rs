//! Tool parts: a call's state as OpenCode recorded it (`pending`,
//! `running`, `completed`, `error`), appended as a part, and a completed
//! output pruned at `time.compacted` noted for its prune mark.

use super::fields::part_fields;
use super::values::str_at;
use super::Importer;
use crate::build::as_json;
use crate::ImportError;
use ctxlog_core::{Attachment, MessageId, PartBody, ToolState};
use serde_json::Value;

impl Importer<'_> {
    /// Appends tool part `p` (at `ppath`) to `message`; a completed output
    /// pruned at `time.compacted` waits for its prune mark (see
    /// [`Importer::flush_prunes`]).
    pub(super) fn tool_part(
        &mut self,
        ppath: &str,
        message: MessageId,
        p: &Value,
        at: u64,
        source: Option<String>,
    ) -> Result<(), ImportError> {
        let (body, compacted) = self.tool(ppath, p, at)?;
        let kept_id = source.is_some();
        let part = self.b.part(at, message, body.clone(), source)?;
        self.keep_part(at, part, p, part_fields("tool"), kept_id)?;
        if let (
            Some(t),
            PartBody::Tool {
                state: ToolState::Completed { output, .. },
                ..
            },
        ) = (compacted, &body)
        {
            let tokens = self.b.options().policy.estimate(output);
            self.prunes.push((t, part, tokens));
        }
        Ok(())
    }

    /// Tool part `p`'s body (at `path`), and when its output was pruned.
    fn tool(&self, path: &str, p: &Value, at: u64) -> Result<(PartBody, Option<u64>), ImportError> {
        let tool = str_at(p, "tool")
            .ok_or_else(|| self.err(format!("{path}.tool"), "missing or not a string"))?
            .to_owned();
        let call_id = str_at(p, "callID")
            .ok_or_else(|| self.err(format!("{path}.callID"), "missing or not a string"))?
            .to_owned();
        let s = p
            .get("state")
            .filter(|s| s.is_object())
            .ok_or_else(|| self.err(format!("{path}.state"), "missing or not an object"))?;
        let input = as_json(s.get("input").unwrap_or(&Value::Null));
        let time = |pointer: &str| self.count(s, pointer, || format!("{path}.state"));
        let status = str_at(s, "status")
            .ok_or_else(|| self.err(format!("{path}.state.status"), "missing or not a string"))?;
        let title = str_at(s, "title").map(str::to_owned);
        let state = match status {
            "pending" => ToolState::Pending {
                input,
                raw: str_at(s, "raw").unwrap_or("").to_owned(),
            },
            "running" => ToolState::Running {
                input,
                title,
                start: time("/time/start")?.unwrap_or(at),
            },
            "completed" => ToolState::Completed {
                input,
                output: match s.get("output") {
                    Some(Value::String(o)) => o.clone(),
                    None | Some(Value::Null) => String::new(),
                    Some(_) => return Err(self.err(format!("{path}.state.output"), "not a string")),
                },
                title,
                metadata: as_json(s.get("metadata").unwrap_or(&Value::Null)),
                start: time("/time/start")?.unwrap_or(at),
                end: time("/time/end")?.unwrap_or(at),
                attachments: attachments(s),
            },
            "error" => ToolState::Error {
                input,
                error: str_at(s, "error").unwrap_or("").to_owned(),
                start: time("/time/start")?.unwrap_or(at),
                end: time("/time/end")?.unwrap_or(at),
            },
            other => {
                return Err(self.err(
                    format!("{path}.state.status"),
                    format!("unknown status {other:?}"),
                ))
            }
        };
        let compacted = if status == "completed" {
            time("/time/compacted")?
        } else {
            None
        };
        Ok((
            PartBody::Tool {
                call_id,
                tool,
                state,
            },
            compacted,
        ))
    }
}

/// The files a completed tool state (`s`) attached.
fn attachments(s: &Value) -> Vec<Attachment> {
    s.get("attachments")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|f| Attachment {
                    mime: str_at(f, "mime").unwrap_or("").to_owned(),
                    filename: str_at(f, "filename").map(str::to_owned),
                    url: str_at(f, "url").unwrap_or("").to_owned(),
                })
                .collect()
        })
        .unwrap_or_default()
}
