//! The window: the exact model input derived from the state, per the seeds.
//!
//! - History starts at the latest *completed* pivot (the marker whose summary
//!   finished); with a recorded tail the order is
//!   `[marker, summary, tail…, everything after the summary]`, or
//!   `[marker, tail…, summary, …]` when the policy sends the summary after
//!   the tail (Codex).
//! - A compaction marker renders as the user text [`COMPACTION_QUESTION`],
//!   and the summary as the assistant's answer, under the policy's
//!   [`PivotForm::Question`] (OpenCode); under [`PivotForm::UserSummary`]
//!   (pi, Claude Code, Codex) no marker is sent and the summary is one user
//!   message, wrapped in the policy's prefix and suffix.
//! - A pruned tool output renders as exactly [`PRUNED_PLACEHOLDER`] and its
//!   attachments are dropped; the stored output is untouched.
//! - A pending or running tool renders as the error [`INTERRUPTED_TOOL`], so
//!   every call has a result.
//! - Summaries that never completed, markers of failed compactions (unless
//!   the policy's [`FailedMarker`] is `Sent`, as in OpenCode), and
//!   assistant messages with an error (other than an abort that left
//!   content), are left out.
//! - Step markers carry no content and are not sent.

use crate::event::{Attachment, PartBody, Role, ToolState};
use crate::ids::MessageId;
use crate::json::Json;
use crate::part::Part;
use crate::policy::{Estimator, FailedMarker, PivotForm};
use crate::state::{JobStatus, Message, SessionState};
use serde::{Deserialize, Serialize};

pub use crate::sent_part::{COMPACTION_QUESTION, INTERRUPTED_TOOL, PRUNED_PLACEHOLDER};

/// The synthetic user message after an automatic compaction.
pub const CONTINUE_TEXT: &str = "Continue if you have next steps";
/// The continue message of OpenCode since 2026-02-10 ([`crate::ContinueMessage::OpenCode`]).
pub const CONTINUE_TEXT_OPENCODE: &str = "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed.";
/// What OpenCode 1.18 puts before [`CONTINUE_TEXT_OPENCODE`] after a provider
/// overflow with no prompt to replay (it blames media whatever the cause).
pub const OVERFLOW_CONTINUE_PREFIX: &str = "The previous request exceeded the provider's size limit due to large media attachments. The conversation was compacted and media files were removed from context. If the user was asking about attached images or files, explain that the attachments were too large to process and suggest they try again with smaller or fewer files.\n\n";
/// How an attachment is named where its content is not sent (a transcript, a
/// replayed prompt, a text-only request): `[Attached <mime>: <filename>]`.
pub fn attachment_note(a: &Attachment) -> String {
    format!(
        "[Attached {}: {}]",
        a.mime,
        a.filename.as_deref().unwrap_or("file")
    )
}

/// Whether `text` is a continue message (any preset's, with or without the
/// overflow prefix).
pub fn is_continue_text(text: &str) -> bool {
    text.starts_with(CONTINUE_TEXT) || text.starts_with(OVERFLOW_CONTINUE_PREFIX)
}

/// The error name OpenCode gives a provider's "request too large".
pub const CONTEXT_OVERFLOW_ERROR: &str = "ContextOverflowError";
/// The error name of an aborted message, whose content is still sent.
pub const ABORTED_ERROR: &str = "MessageAbortedError";

/// The model input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// The marker of the pivot the window starts at, if any.
    pub pivot: Option<MessageId>,
    /// The messages, in the order they are sent.
    pub messages: Vec<WindowMessage>,
}

/// One message of the model input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowMessage {
    /// The stored message it renders.
    pub id: MessageId,
    /// User or assistant.
    pub role: Role,
    /// Its content.
    pub parts: Vec<WindowPart>,
}

/// One piece of model input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WindowPart {
    /// Text.
    Text(String),
    /// Reasoning.
    Reasoning(String),
    /// A file or media attachment.
    File(Attachment),
    /// A tool call with its result.
    Tool {
        /// Provider call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Arguments.
        input: Json,
        /// The result as sent.
        result: ToolResult,
    },
}

/// A tool result as sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToolResult {
    /// Output text and attachments.
    Output {
        /// The text (the placeholder when pruned).
        text: String,
        /// Attachments (none when pruned).
        attachments: Vec<Attachment>,
    },
    /// An error text.
    Error(String),
}

impl ToolResult {
    /// The text the model reads: the output (the placeholder when pruned)
    /// or the error.
    pub fn text(&self) -> &str {
        match self {
            ToolResult::Output { text, .. } => text,
            ToolResult::Error(e) => e,
        }
    }
}

impl WindowPart {
    /// Estimated tokens of this part's content under `estimator`.
    pub fn estimate(&self, estimator: &Estimator) -> u64 {
        match self {
            WindowPart::Text(t) | WindowPart::Reasoning(t) => estimator.estimate(t),
            WindowPart::File(a) => estimator.estimate(&a.url),
            WindowPart::Tool {
                tool,
                input,
                result,
                ..
            } => {
                estimator.estimate(tool)
                    + estimator.estimate(&input.to_json_string())
                    + estimator.estimate(result.text())
            }
        }
    }
}

impl WindowMessage {
    /// A fixed JSON form of this message, close to what an AI SDK model
    /// message serialises to (role, typed content parts). Used to estimate
    /// the size of whole turns the way OpenCode does
    /// (`estimate(JSON.stringify(toModelMessages(turn)))`).
    pub fn to_json(&self) -> Json {
        let obj = |fields: Vec<(&str, Json)>| {
            Json::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        };
        let content = self
            .parts
            .iter()
            .map(|p| match p {
                WindowPart::Text(t) => {
                    obj(vec![("type", "text".into()), ("text", t.as_str().into())])
                }
                WindowPart::Reasoning(t) => obj(vec![
                    ("type", "reasoning".into()),
                    ("text", t.as_str().into()),
                ]),
                WindowPart::File(a) => obj(vec![
                    ("type", "file".into()),
                    ("mediaType", a.mime.as_str().into()),
                    ("data", a.url.as_str().into()),
                ]),
                WindowPart::Tool {
                    call_id,
                    tool,
                    input,
                    result,
                } => {
                    let output = match result {
                        ToolResult::Output { text, .. } => obj(vec![
                            ("type", "text".into()),
                            ("value", text.as_str().into()),
                        ]),
                        ToolResult::Error(e) => obj(vec![
                            ("type", "error-text".into()),
                            ("value", e.as_str().into()),
                        ]),
                    };
                    obj(vec![
                        ("type", "tool-call".into()),
                        ("toolCallId", call_id.as_str().into()),
                        ("toolName", tool.as_str().into()),
                        ("input", input.clone()),
                        ("output", output),
                    ])
                }
            })
            .collect();
        obj(vec![
            ("role", self.role.as_str().into()),
            ("content", Json::Array(content)),
        ])
    }
}

/// Estimated tokens of `messages` serialised together as one JSON array,
/// estimated once (not part by part).
pub fn estimate_json(messages: &[WindowMessage], estimator: &Estimator) -> u64 {
    let array = Json::Array(messages.iter().map(WindowMessage::to_json).collect());
    estimator.estimate_units(array.json_utf16_len())
}

impl Window {
    /// Estimated tokens of the whole window (content only, no framing).
    pub fn estimate(&self, estimator: &Estimator) -> u64 {
        self.messages
            .iter()
            .flat_map(|m| &m.parts)
            .map(|p| p.estimate(estimator))
            .sum()
    }
}

/// Whether a stored message is sent at all (before looking at its parts).
pub(crate) fn is_sent(state: &SessionState, m: &Message) -> bool {
    if m.withdrawn {
        return false;
    }
    if m.summary && !summary_completed(state, m.id) {
        return false;
    }
    // An agent that sends its summary as a user message never sends a marker.
    if m.marker && matches!(state.policy.pivot, PivotForm::UserSummary { .. }) {
        return false;
    }
    // A failed compaction leaves the window as it was: its marker is not
    // sent, unless the policy follows OpenCode, which still sends it.
    if m.marker
        && state.policy.failed_marker == FailedMarker::Hidden
        && state
            .job(m.id)
            .is_some_and(|j| matches!(j.status, JobStatus::Failed { .. }))
    {
        return false;
    }
    if m.role == Role::Assistant {
        if let Some(err) = &m.error {
            if err.name != ABORTED_ERROR {
                return false;
            }
        }
    }
    true
}

/// Renders one stored message as model input; `None` when it sends nothing.
pub fn render_message(state: &SessionState, m: &Message) -> Option<WindowMessage> {
    if !is_sent(state, m) {
        return None;
    }
    if let (true, PivotForm::UserSummary { prefix, suffix, .. }) = (m.summary, &state.policy.pivot)
    {
        return Some(user_summary(m, prefix, suffix));
    }
    let parts: Vec<WindowPart> = m.parts.iter().filter_map(render_held).collect();
    if parts.is_empty() {
        return None;
    }
    Some(WindowMessage {
        id: m.id,
        role: m.role,
        parts,
    })
}

/// A completed summary as the one user message [`PivotForm::UserSummary`]
/// sends: `prefix`, its texts, `suffix`.
/// A summary as one user message: its text wrapped in the policy's prefix
/// and suffix, after the synthetic texts the agent sends before it in the
/// same message (Claude Code's reminders), each a part of its own.
fn user_summary(m: &Message, prefix: &str, suffix: &str) -> WindowMessage {
    let mut parts = Vec::new();
    let mut text = prefix.to_owned();
    for p in &m.parts {
        match p.content() {
            Some(PartBody::Text {
                text: t,
                synthetic: true,
                ..
            }) => parts.push(WindowPart::Text(t.clone())),
            Some(PartBody::Text { text: t, .. }) => text.push_str(t),
            _ => {}
        }
    }
    text.push_str(suffix);
    parts.push(WindowPart::Text(text));
    WindowMessage {
        id: m.id,
        role: Role::User,
        parts,
    }
}

/// Renders a part the window can send. The window never reaches a sealed
/// part (it starts after them, see [`crate::part`]); one found anyway (a
/// state that breaks its invariants) renders as nothing.
fn render_held(p: &Part) -> Option<WindowPart> {
    debug_assert!(!p.is_sealed(), "the window reached sealed part {}", p.id);
    render_part(p.content()?, p.pruned.is_some())
}

/// Renders one part's content as model input; `None` when it sends nothing.
pub fn render_part(body: &PartBody, pruned: bool) -> Option<WindowPart> {
    Some(match body {
        PartBody::Text { text, .. } => WindowPart::Text(text.clone()),
        PartBody::Reasoning { text, .. } => WindowPart::Reasoning(text.clone()),
        PartBody::File(a) => WindowPart::File(a.clone()),
        PartBody::Compaction { .. } => WindowPart::Text(COMPACTION_QUESTION.into()),
        PartBody::StepStart { .. } | PartBody::StepFinish { .. } | PartBody::Other { .. } => {
            return None
        }
        PartBody::Tool {
            call_id,
            tool,
            state,
        } => WindowPart::Tool {
            call_id: call_id.clone(),
            tool: tool.clone(),
            input: state.input().clone(),
            result: match state {
                ToolState::Completed { .. } if pruned => ToolResult::Output {
                    text: PRUNED_PLACEHOLDER.into(),
                    attachments: Vec::new(),
                },
                ToolState::Completed {
                    output,
                    attachments,
                    ..
                } => ToolResult::Output {
                    text: output.clone(),
                    attachments: attachments.clone(),
                },
                ToolState::Error { error, .. } => ToolResult::Error(error.clone()),
                ToolState::Pending { .. } | ToolState::Running { .. } => {
                    ToolResult::Error(INTERRUPTED_TOOL.into())
                }
            },
        },
    })
}

fn summary_completed(state: &SessionState, summary: MessageId) -> bool {
    let marker = match state.message(summary).and_then(|m| m.parent) {
        Some(p) => p,
        None => return false,
    };
    state.job(marker).is_some_and(|j| {
        j.summary == Some(summary) && matches!(j.status, JobStatus::Completed { .. })
    })
}

/// The stored messages the window covers, in the order they are sent
/// (never a withdrawn one).
///
/// A completed pivot always has its marker and summary in the state; one
/// that does not (a state that breaks its invariants, e.g. a damaged
/// snapshot) is treated as no pivot rather than a panic.
pub fn window_order(state: &SessionState) -> (Option<MessageId>, Vec<usize>) {
    let pivot = state.pivot().and_then(|job| {
        let m = state.message_index(job.marker)?;
        let s = job.summary.and_then(|s| state.message_index(s))?;
        Some((job, m, s))
    });
    let kept = |&i: &usize| state.messages.get(i).is_some_and(|m| !m.withdrawn);
    let Some((job, m, s)) = pivot else {
        return (None, (0..state.messages.len()).filter(kept).collect());
    };
    let after_tail = matches!(
        state.policy.pivot,
        PivotForm::UserSummary {
            after_tail: true,
            ..
        }
    );
    let mut order = if after_tail { vec![m] } else { vec![m, s] };
    if let Some(t) = job.tail_start.and_then(|t| state.message_index(t)) {
        order.extend(t..m);
    }
    if after_tail {
        order.push(s);
    }
    order.extend((m + 1..state.messages.len()).filter(|&i| i != s));
    order.retain(kept);
    // A summary sent as a user message replaces the ones before it: an
    // older pivot's summary inside the kept tail is not sent again (pi
    // skips compaction entries in what it keeps).
    if matches!(state.policy.pivot, PivotForm::UserSummary { .. }) {
        order.retain(|&i| i == s || !state.messages.get(i).is_some_and(|m| m.summary));
    }
    (Some(job.marker), order)
}

/// The stored messages the window sends, in the order it sends them:
/// [`window_order`] without the messages that send nothing (a summary not
/// completed, a failed marker the policy hides, an assistant message with
/// an error).
pub fn sent_order(state: &SessionState) -> (Option<MessageId>, Vec<usize>) {
    let (pivot, mut order) = window_order(state);
    order.retain(|&i| state.messages.get(i).is_some_and(|m| is_sent(state, m)));
    (pivot, order)
}

/// `window(state).estimate(&state.policy.estimator)`, without building the
/// window: what the loop guard and `simulate` measure at every step. Each
/// message's estimate is kept by the reducer, so this costs O(messages in
/// the window).
pub fn estimate_window(state: &SessionState) -> u64 {
    let (_, order) = window_order(state);
    let wrapped = matches!(state.policy.pivot, PivotForm::UserSummary { .. });
    let e = &state.policy.estimator;
    order
        .into_iter()
        .filter_map(|i| Some((i, state.messages.get(i)?)))
        .filter(|(_, m)| is_sent(state, m))
        .map(|(i, m)| {
            // The wrapped summary is measured as sent (one message); only
            // it is rendered.
            let sent = (wrapped && m.summary)
                .then(|| render_message(state, m))
                .flatten();
            match sent {
                Some(sent) => sent.parts.iter().map(|p| p.estimate(e)).sum(),
                None => state.message_tokens(i),
            }
        })
        .sum()
}

/// The exact model input at the state's head.
pub fn window(state: &SessionState) -> Window {
    let (pivot, order) = window_order(state);
    Window {
        pivot,
        messages: order
            .into_iter()
            .filter_map(|i| render_message(state, &state.messages[i]))
            .collect(),
    }
}
