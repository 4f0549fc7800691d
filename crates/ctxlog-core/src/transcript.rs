//! The summarizer input of [`SummaryInput::Transcript`] (OpenCode 1.18): the
//! history a job summarizes written out as one text, and the summary of the
//! pivot before it. Checked byte for byte against the real OpenCode by the
//! differential test.
//!
//! - The history is [`summary_input`]'s messages without compaction markers
//!   and completed summaries; the last completed summary becomes the prior
//!   summary (its text parts trimmed, joined by `\n`).
//! - A user message is `[User]: ` and its text parts joined by `\n`, then one
//!   `[Attached <mime>: <filename>]` line per file.
//! - An assistant message is one line per part: `[Assistant]: `,
//!   `[Assistant reasoning]: `, `[Assistant tool call]: tool(<input JSON>)`
//!   followed by `[Tool result]: ` (the output and its attachment lines, cut
//!   after `tool_output_max_chars` UTF-16 units and marked `\n[truncated]`;
//!   the placeholder when pruned) or `[Tool error]: `; an unfinished call has
//!   no result line.
//! - Messages that render to nothing are left out; the rest are joined by a
//!   blank line.

use crate::event::{PartBody, Role, ToolState};
use crate::fallback::summary_input;
use crate::ids::MessageId;
#[cfg(doc)]
use crate::policy::SummaryInput;
use crate::state::{JobStatus, Message, SessionState};
use crate::window::{attachment_note, PRUNED_PLACEHOLDER};

/// What follows a tool result cut for the transcript.
pub const TRUNCATED_MARK: &str = "\n[truncated]";

/// The history of one job as the transcript summarizer reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transcript {
    /// The conversation, one block per message.
    pub conversation: String,
    /// The summary of the pivot this history starts from, if any.
    pub prior_summary: Option<String>,
}

/// The transcript of job `marker`, with tool results cut after
/// `tool_output_max_chars` UTF-16 units.
pub fn transcript(
    state: &SessionState,
    marker: MessageId,
    tool_output_max_chars: u32,
) -> Transcript {
    let completed_summary = |id: MessageId| {
        state
            .jobs
            .iter()
            .any(|j| j.summary == Some(id) && matches!(j.status, JobStatus::Completed { .. }))
    };
    let max = tool_output_max_chars as usize;
    let mut prior_summary = None;
    let mut blocks = Vec::new();
    for rendered in summary_input(state, marker) {
        let Some(message) = state.message(rendered.id) else {
            continue;
        };
        if message.marker {
            continue;
        }
        if message.summary && completed_summary(message.id) {
            prior_summary = summary_text(message);
            continue;
        }
        let block = match message.role {
            Role::Assistant => assistant_block(message, max),
            Role::User | Role::Developer | Role::System => user_block(message),
        };
        if !block.is_empty() {
            blocks.push(block);
        }
    }
    Transcript {
        conversation: blocks.join("\n\n"),
        prior_summary,
    }
}

fn summary_text(message: &Message) -> Option<String> {
    let texts: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|p| match p.content()? {
            PartBody::Text { text, .. } => Some(text.trim()),
            _ => None,
        })
        .filter(|t| !t.is_empty())
        .collect();
    let text = texts.join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn user_block(message: &Message) -> String {
    let texts: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|p| match p.content()? {
            PartBody::Text { text, .. } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let mut lines = Vec::new();
    if !texts.is_empty() {
        lines.push(format!("[User]: {}", texts.join("\n")));
    }
    lines.extend(message.parts.iter().filter_map(|p| match p.content()? {
        PartBody::File(a) => Some(attachment_note(a)),
        _ => None,
    }));
    lines.join("\n")
}

fn assistant_block(message: &Message, max: usize) -> String {
    let mut lines = Vec::new();
    for part in &message.parts {
        let Some(body) = part.content() else {
            continue; // the transcript covers the window, which holds its parts
        };
        match body {
            PartBody::Text { text, .. } if !text.is_empty() => {
                lines.push(format!("[Assistant]: {text}"))
            }
            PartBody::Reasoning { text, .. } if !text.is_empty() => {
                lines.push(format!("[Assistant reasoning]: {text}"))
            }
            PartBody::Tool { tool, state, .. } => {
                let input = state.input().to_json_string();
                lines.push(format!("[Assistant tool call]: {tool}({input})"));
                match state {
                    ToolState::Completed { .. } if part.pruned.is_some() => {
                        lines.push(format!("[Tool result]: {PRUNED_PLACEHOLDER}"))
                    }
                    ToolState::Completed {
                        output,
                        attachments,
                        ..
                    } => {
                        let mut result = vec![output.clone()];
                        result.extend(attachments.iter().map(attachment_note));
                        let result = cut(&result.join("\n"), max);
                        lines.push(format!("[Tool result]: {result}"));
                    }
                    ToolState::Error { error, .. } => lines.push(format!("[Tool error]: {error}")),
                    ToolState::Pending { .. } | ToolState::Running { .. } => {}
                }
            }
            _ => {}
        }
    }
    lines.join("\n")
}

/// `text` when it has at most `max` UTF-16 units, else its first `max` units
/// and [`TRUNCATED_MARK`] (a surrogate pair straddling the cut is left out
/// whole, where JavaScript would keep half of it).
pub fn cut(text: &str, max: usize) -> String {
    let mut units = 0;
    for (at, c) in text.char_indices() {
        units += c.len_utf16();
        if units > max {
            return format!("{}{TRUNCATED_MARK}", &text[..at]);
        }
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_counts_utf16_units() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "abc\n[truncated]");
        // "é" is one unit, "😀" two.
        assert_eq!(cut("éé", 2), "éé");
        assert_eq!(cut("a😀", 2), "a\n[truncated]");
        assert_eq!(cut("a😀", 3), "a😀");
    }
}
