//! A message's parts, appended in order as OpenCode wrote them: text,
//! reasoning, step starts and finishes, files, tool calls (see `tool`), and
//! any other kind verbatim.

use super::fields::part_fields;
use super::values::str_at;
use super::Importer;
use crate::build::as_json;
use crate::opencode_names::finish_from;
use crate::ImportError;
use ctxlog_core::{Attachment, FinishReason, MessageId, PartBody, Span};
use serde_json::{Map, Value};

impl Importer<'_> {
    /// Appends `parts`; returns whether a step-finish was among them. A
    /// step-finish ends at its `time.end` (ctxlog's own exports write one),
    /// else the last one at the message's `completed` time, else at `at`.
    pub(super) fn parts(
        &mut self,
        path: &str,
        message: MessageId,
        parts: &[Value],
        at: u64,
        summary: bool,
        completed: Option<u64>,
    ) -> Result<bool, ImportError> {
        let last_step = parts
            .iter()
            .rposition(|p| str_at(p, "type") == Some("step-finish"));
        let mut stepped = false;
        for (i, p) in parts.iter().enumerate() {
            let ppath = format!("{path}.parts[{i}]");
            let step_end = completed.filter(|_| last_step == Some(i));
            stepped |= self.part(&ppath, message, p, at, summary, step_end)?;
        }
        Ok(stepped)
    }

    /// Appends part `p` (at `ppath`) of `message`; returns whether it was a
    /// step-finish. A summary keeps only its step start, text and
    /// reasoning; `step_end` is the message's `completed` time when `p` is
    /// its last step-finish.
    fn part(
        &mut self,
        ppath: &str,
        message: MessageId,
        p: &Value,
        at: u64,
        summary: bool,
        step_end: Option<u64>,
    ) -> Result<bool, ImportError> {
        if !p.is_object() {
            return Err(self.err(ppath.to_owned(), "not an object"));
        }
        let kind = str_at(p, "type")
            .ok_or_else(|| self.err(format!("{ppath}.type"), "missing or not a string"))?;
        let source = str_at(p, "id").map(str::to_owned);
        if !summary
            && matches!(kind, "tool" | "reasoning" | "step-start" | "step-finish")
            && self.is_user(message)
        {
            return Ok(false); // OpenCode never puts these on user messages
        }
        let span = self.span(p, ppath)?;
        let body = match kind {
            "text" => PartBody::Text {
                text: str_at(p, "text")
                    .ok_or_else(|| self.err(format!("{ppath}.text"), "not a string"))?
                    .to_owned(),
                synthetic: p.get("synthetic").and_then(Value::as_bool) == Some(true),
                time: span,
            },
            "reasoning" => PartBody::Reasoning {
                text: str_at(p, "text").unwrap_or("").to_owned(),
                time: span,
            },
            // A summary's step-finish becomes SummaryCompleted's part.
            "step-finish" if summary => return Ok(false),
            "step-finish" => {
                self.step_finish(ppath, message, p, at, step_end)?;
                return Ok(true);
            }
            "step-start" => PartBody::StepStart {
                snapshot: str_at(p, "snapshot").map(str::to_owned),
            },
            // A summary holds only its step start, text and reasoning.
            _ if summary => return Ok(false),
            "file" => PartBody::File(Attachment {
                mime: str_at(p, "mime")
                    .unwrap_or("application/octet-stream")
                    .to_owned(),
                filename: str_at(p, "filename").map(str::to_owned),
                url: str_at(p, "url").unwrap_or("").to_owned(),
            }),
            "tool" => {
                self.tool_part(ppath, message, p, at, source)?;
                return Ok(false);
            }
            "compaction" => {
                return Err(self.err(
                    format!("{ppath}.type"),
                    "a compaction part outside a user marker message",
                ))
            }
            other => other_body(other, p),
        };
        // An unmodelled kind keeps all its fields in its body already.
        let keep = (!matches!(body, PartBody::Other { .. })).then_some(source.is_some());
        let part = self.b.part(at, message, body, source)?;
        if let Some(kept_id) = keep {
            self.keep_part(at, part, p, part_fields(kind), kept_id)?;
        }
        Ok(false)
    }

    /// Whether `message` is a user message.
    fn is_user(&self, message: MessageId) -> bool {
        self.b
            .state()
            .and_then(|s| s.message(message))
            .is_some_and(|m| m.role.is_input())
    }

    /// Part `p`'s `time` (at `ppath`), when it has a start.
    fn span(&self, p: &Value, ppath: &str) -> Result<Option<Span>, ImportError> {
        Ok(match self.count(p, "/time/start", || ppath.to_owned())? {
            Some(start) => Some(Span {
                start,
                end: self.count(p, "/time/end", || ppath.to_owned())?,
            }),
            None => None,
        })
    }

    /// Records step-finish part `p` (at `ppath`) as the end of a step of
    /// `message`: at its `time.end`, else at `step_end`, else at `at`.
    fn step_finish(
        &mut self,
        ppath: &str,
        message: MessageId,
        p: &Value,
        at: u64,
        step_end: Option<u64>,
    ) -> Result<(), ImportError> {
        let t = self
            .count(p, "/time/end", || ppath.to_owned())?
            .or(step_end)
            .unwrap_or(at);
        let reason = str_at(p, "reason")
            .map(finish_from)
            .unwrap_or(FinishReason::Stop);
        let (tokens, cost) = self.usage(p, ppath)?;
        let part = self.b.finish_step(t, message, reason, tokens, cost)?;
        self.keep_part(t, part, p, part_fields("step-finish"), false)
    }
}

/// A part of a kind ctxlog does not model (`kind`), kept verbatim but for
/// the ids and type every part has.
fn other_body(kind: &str, p: &Value) -> PartBody {
    let mut data: Map<String, Value> = p.as_object().cloned().unwrap_or_default();
    for k in ["id", "sessionID", "messageID", "type"] {
        data.remove(k);
    }
    PartBody::Other {
        kind: kind.to_owned(),
        data: as_json(&Value::Object(data)),
    }
}
