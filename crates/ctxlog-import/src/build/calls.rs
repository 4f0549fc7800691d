//! Tool calls waiting for their result: a pending tool part appended, then
//! completed (or errored) once its result is read.

use super::{as_json, Builder, OpenCall};
use crate::ImportError;
use ctxlog_core::{Json, MessageId, PartBody, TimestampMs, ToolState};

impl Builder<'_> {
    /// Appends a tool call that waits for its result (a pending tool part
    /// whose source id is the call id); returns what [`Builder::complete_call`]
    /// needs later.
    pub fn pending_call(
        &mut self,
        at: TimestampMs,
        message: MessageId,
        call_id: &str,
        tool: String,
        arguments: &serde_json::Value,
    ) -> Result<OpenCall, ImportError> {
        let input = as_json(arguments);
        let body = PartBody::Tool {
            call_id: call_id.to_owned(),
            tool: tool.clone(),
            state: ToolState::Pending {
                input: input.clone(),
                raw: arguments.to_string(),
            },
        };
        let part = self.part(at, message, body, Some(call_id.to_owned()))?;
        Ok(OpenCall {
            part,
            tool,
            input,
            start: at,
        })
    }

    /// Completes (or errors) a waiting tool call with its result.
    pub fn complete_call(
        &mut self,
        at: TimestampMs,
        call_id: &str,
        call: OpenCall,
        output: String,
        is_error: bool,
        metadata: Json,
    ) -> Result<(), ImportError> {
        let state = if is_error {
            ToolState::Error {
                input: call.input,
                error: output,
                start: call.start,
                end: at,
            }
        } else {
            ToolState::Completed {
                input: call.input,
                output,
                title: None,
                metadata,
                start: call.start,
                end: at,
                attachments: Vec::new(),
            }
        };
        self.update(
            at,
            call.part,
            PartBody::Tool {
                call_id: call_id.to_owned(),
                tool: call.tool,
                state,
            },
        )
    }
}
