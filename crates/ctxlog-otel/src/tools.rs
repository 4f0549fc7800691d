//! Tool calls as `execute_tool` spans: one per tool part, made when its
//! call ends (completed or failed), under the turn it began in.

use crate::content::Content;
use crate::ids::{span_of, Role};
use crate::model::{ns, Attribute, Kind, Span, SpanId, Value};
use crate::semconv::{
    CONVERSATION, ERROR_TYPE, OPERATION, SEQ, TOOL_ARGUMENTS, TOOL_CALL_ID, TOOL_NAME, TOOL_RESULT,
    TOOL_STATE, TOOL_TYPE,
};
use crate::turn::{Context, Turn};
use ctxlog_core::{Envelope, Event, PartId, Seq, ToolState};
use std::collections::BTreeMap;

/// A call that began and has not ended.
#[derive(Debug)]
struct OpenTool {
    call_id: String,
    tool: String,
    /// Start, ms.
    start: u64,
    /// The turn it began in.
    parent: SpanId,
    /// `pending` or `running`.
    status: &'static str,
    /// Its arguments, as they go out (with `--content` only).
    arguments: Option<String>,
}

/// What is kept of every tool part: all that grows with a session.
#[derive(Debug)]
struct Known {
    /// Its call id (what a prune names).
    call_id: String,
    /// Its span was made.
    sent: bool,
    /// It has an output now (completed or failed): what the audit asks.
    has_output: bool,
    /// The event that first named it.
    seq: Seq,
}

/// The tool calls of a session.
#[derive(Debug, Default)]
pub struct Tools {
    open: BTreeMap<PartId, OpenTool>,
    known: BTreeMap<PartId, Known>,
}

impl Tools {
    /// The call id of tool part `part`, when it is one.
    pub fn call_id(&self, part: &PartId) -> Option<&str> {
        self.known.get(part).map(|k| k.call_id.as_str())
    }

    /// Whether a tool call began and has not ended.
    pub fn has_open(&self) -> bool {
        !self.open.is_empty()
    }

    /// Forgets the tool parts first named before `seq`: a compaction's
    /// pivot left them out of the window, so no prune names them and no
    /// update changes their span (what keeps memory to the calls since the
    /// last compaction).
    pub fn forget_before(&mut self, seq: Seq) {
        self.known.retain(|_, k| k.seq >= seq);
    }

    /// Whether the tool part `event` appends or updates had an output
    /// before it (what [`ctxlog_core::Auditor::push_told`] is told).
    pub fn had_output(&self, event: &Event) -> bool {
        event
            .tool_call()
            .is_some_and(|(part, ..)| self.known.get(&part).is_some_and(|k| k.has_output))
    }

    /// Folds `e`; the span of a tool call it ends.
    pub fn push(&mut self, e: &Envelope, parent: SpanId, ctx: &Context) -> Option<Span> {
        let (part, call_id, tool, state) = e.event.tool_call()?;
        let known = self.known.entry(part).or_insert_with(|| Known {
            call_id: call_id.to_owned(),
            sent: false,
            has_output: false,
            seq: e.seq,
        });
        known.has_output = matches!(state, ToolState::Completed { .. } | ToolState::Error { .. });
        if known.sent {
            return None;
        }
        let arguments = ctx
            .content
            .on()
            .then(|| ctx.content.text(&state.input().to_json_string()));
        let open = self.open.entry(part).or_insert_with(|| OpenTool {
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            start: e.recorded_at,
            parent,
            status: "pending",
            arguments: None,
        });
        open.arguments = arguments;
        let (start, end, result, error) = match state {
            ToolState::Pending { .. } => return None,
            ToolState::Running { start, .. } => {
                open.status = "running";
                if *start > 0 {
                    open.start = *start;
                }
                return None;
            }
            ToolState::Completed {
                output, start, end, ..
            } => (*start, *end, output, false),
            ToolState::Error {
                error, start, end, ..
            } => (*start, *end, error, true),
        };
        let mut open = self.open.remove(&part)?;
        if start > 0 {
            open.start = start;
        }
        let end = if end > 0 { end } else { e.recorded_at };
        if let Some(k) = self.known.get_mut(&part) {
            k.sent = true;
        }
        Some(tool_span(
            part,
            open,
            end,
            e.seq,
            Some((result, error)),
            ctx,
        ))
    }

    /// The spans of calls still open when the session's events end: they
    /// end with it, marked open.
    pub fn finish(&mut self, turn: &Turn, ctx: &Context) -> Vec<Span> {
        let open = std::mem::take(&mut self.open);
        open.into_iter()
            .map(|(part, open)| tool_span(part, open, turn.end, turn.seq, None, ctx))
            .collect()
    }
}

/// The span of a tool call that ended at `end` (ms) with `outcome` (its
/// output or error text, and whether it failed; `None`: still open).
fn tool_span(
    part: PartId,
    open: OpenTool,
    end: u64,
    seq: Seq,
    outcome: Option<(&String, bool)>,
    ctx: &Context,
) -> Span {
    let mut attributes: Vec<Attribute> = vec![
        (OPERATION, Value::Str("execute_tool".into())),
        (TOOL_NAME, Value::Str(open.tool.clone())),
        (TOOL_CALL_ID, Value::Str(open.call_id)),
        (TOOL_TYPE, Value::Str("function".into())),
        (CONVERSATION, Value::Str(ctx.who.conversation.clone())),
    ];
    if let Some(arguments) = open.arguments {
        attributes.push((TOOL_ARGUMENTS, Value::Str(arguments)));
    }
    let mut error = None;
    match outcome {
        Some((text, failed)) => {
            if ctx.content.on() {
                attributes.push((TOOL_RESULT, Value::Str(ctx.content.text(text))));
            }
            if failed {
                attributes.push((ERROR_TYPE, Value::Str("tool_error".into())));
                error = Some(error_message(text, ctx.content));
            }
        }
        None => attributes.push((TOOL_STATE, Value::Str(open.status.into()))),
    }
    attributes.push((SEQ, Value::count(seq)));
    Span {
        trace: ctx.trace,
        id: span_of(&ctx.trace, Role::Tool, part.as_bytes()),
        parent: Some(open.parent),
        name: format!("execute_tool {}", open.tool),
        kind: Kind::Internal,
        start_ns: ns(open.start),
        end_ns: ns(end.max(open.start)),
        attributes,
        events: Vec::new(),
        error,
    }
}

/// The status message of a failed call: its text with `--content`, else
/// only that it failed (an error text can hold anything).
fn error_message(text: &str, content: Content) -> String {
    if content.on() {
        content.text(text.lines().next().unwrap_or_default())
    } else {
        "the tool call failed".into()
    }
}
