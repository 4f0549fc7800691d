//! The step in progress: its items gathered, written as soon as they may
//! be (a 0.169 step of text only waits for its usage record), and its end
//! (a finish, or an abort's error).

use super::{Importer, Item, Step};
use crate::build::{NewMessage, OpenCall};
use crate::ImportError;
use ctxlog_core::{
    Event, FinishReason, MessageError, MessageId, ModelRef, PartBody, Role, ToolState,
};
use serde_json::Value;

impl Importer<'_> {
    /// The step in progress, opened at `at` when there is none.
    pub(super) fn step(&mut self, at: u64) -> &mut Step {
        self.step.get_or_insert_with(|| Step {
            start: at,
            at,
            ..Step::default()
        })
    }

    /// Adds an item to the step in progress and writes what may be written
    /// of it: everything, but for a 0.169 step of text only (see
    /// [`Importer::held`]), which waits for its usage record.
    pub(super) fn push_item(
        &mut self,
        at: u64,
        body: PartBody,
        source: Option<String>,
    ) -> Result<(), ImportError> {
        let line = self.line;
        let tool = matches!(body, PartBody::Tool { .. });
        let waits_for_usage = self.since_0_169;
        let s = self.step(at);
        if s.message.is_none() && s.items.is_empty() {
            s.first_line = line;
        }
        s.items.push(Item { body, source, at });
        s.at = at;
        s.has_tool |= tool;
        if !waits_for_usage || s.has_tool {
            let mut s = self.step.take().unwrap_or_default();
            let written = self.write_items(&mut s);
            self.step = Some(s);
            written?;
        }
        Ok(())
    }

    /// The call of the step in progress that has no output yet, if one
    /// has none: the step is stored as far as it is known, and its end
    /// waits for a later line (none says which item is a step's last).
    pub(super) fn open_call(&self) -> Option<String> {
        let s = self.step.as_ref()?;
        let message = s.message?;
        let state = self.b.state()?;
        self.written
            .iter()
            .find(|(_, c)| state.part(c.part).is_some_and(|(m, _)| m.id == message))
            .map(|(call, _)| {
                format!(
                    "the step of line {} waits for the output of call {call:?}",
                    s.first_line.max(1)
                )
            })
    }

    /// Writes step `s`'s message, when it has none yet, and its items not
    /// written yet. A step whose usage is known before its items (before
    /// 0.169, `token_count` comes first) records it with its message.
    fn write_items(&mut self, s: &mut Step) -> Result<(), ImportError> {
        if s.message.is_none() {
            if s.items.is_empty() && s.usage.is_none() {
                return Ok(());
            }
            let model = self.b.model().map(|m| ModelRef {
                provider: "openai".into(),
                model: m.to_owned(),
            });
            let message = self.b.message(
                s.start,
                Role::Assistant,
                NewMessage {
                    parent: self.last_user,
                    source: Some(format!("line:{}", s.first_line)),
                    model,
                    ..NewMessage::default()
                },
            )?;
            s.message = Some(message);
            if let (Some(tokens), false) = (s.usage, s.items.is_empty()) {
                self.b
                    .record(s.start, Event::UsageReported { message, tokens })?;
            }
        }
        let Some(message) = s.message else {
            return Ok(());
        };
        for item in std::mem::take(&mut s.items) {
            let pending = match &item.body {
                PartBody::Tool {
                    call_id,
                    tool,
                    state: ToolState::Pending { input, .. },
                } => Some((call_id.clone(), tool.clone(), input.clone())),
                _ => None,
            };
            let part = self.b.part(item.at, message, item.body, item.source)?;
            if let Some((call, tool, input)) = pending {
                self.written.insert(
                    call,
                    OpenCall {
                        part,
                        tool,
                        input,
                        start: item.at,
                    },
                );
            }
        }
        Ok(())
    }

    /// Ends the step in progress: what is left of it written, and its
    /// finish. Returns its message, if it has one.
    pub(super) fn close_step(&mut self, aborted: bool) -> Result<Option<MessageId>, ImportError> {
        let Some(s) = self.step.take() else {
            return Ok(None);
        };
        self.write_step(s, aborted)
    }

    /// Ends step `s` (see [`Importer::close_step`]).
    pub(super) fn write_step(
        &mut self,
        mut s: Step,
        aborted: bool,
    ) -> Result<Option<MessageId>, ImportError> {
        self.write_items(&mut s)?;
        let Some(message) = s.message else {
            return Ok(None);
        };
        let reason = if aborted {
            FinishReason::Other("aborted".into())
        } else if s.has_tool {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        };
        self.b
            .finish_step(s.at, message, reason, s.usage.unwrap_or_default(), None)?;
        Ok(Some(message))
    }

    /// `turn_aborted`: ends the step in progress; one the abort cut gets
    /// a `MessageAbortedError`.
    pub(super) fn turn_aborted(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        // Only a step the abort cut short gets the error; an abort
        // before the model answered leaves nothing to mark.
        let cut = self
            .step
            .as_ref()
            .is_some_and(|s| s.message.is_some() || !s.items.is_empty());
        let written = self.close_step(cut)?;
        if let Some(m) = written.filter(|_| cut) {
            let reason = p
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("interrupted");
            self.b.record(
                at,
                Event::MessageErrored {
                    message: m,
                    error: MessageError {
                        name: "MessageAbortedError".into(),
                        message: format!("turn aborted: {reason}"),
                    },
                },
            )?;
        }
        Ok(())
    }
}
