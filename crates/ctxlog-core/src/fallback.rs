//! What a compaction job summarizes, and how its request is cut down when it
//! would not fit the model: the decisions of the job runner, without its I/O.
//!
//! - [`summary_input`]: the window up to and including the marker, minus the
//!   recent tail the policy keeps verbatim (the tail [`crate::decide()`] chose
//!   with [`select_tail`] and recorded in `CompactionStarted`).
//! - [`Fallback`]: the attempts, in order: the full request; tool outputs cut
//!   to [`TRUNCATED_TOOL_OUTPUT_CHARS`]; only the most recent turns, shrunk
//!   again (a bounded number of times) each time the provider says a request
//!   was too large. An attempt that would not fit is recorded and skipped; the
//!   same request is never sent twice. [`Fallback::answer`] decides what the
//!   summarizer's answer means: complete, try a smaller request, or fail.

use crate::event::FinishReason;
use crate::ids::MessageId;
use crate::policy::Estimator;
use crate::replay::history_end;
use crate::state::SessionState;
#[cfg(doc)]
use crate::tail::select_tail;
use crate::window::{
    estimate_json, render_message, window_order, ToolResult, WindowMessage, WindowPart,
};
use std::collections::VecDeque;

/// Tool outputs are cut to this many characters in the second attempt.
pub const TRUNCATED_TOOL_OUTPUT_CHARS: usize = 2_000;

/// How many times the recent-turns attempt shrinks after "too large" answers.
pub const MAX_SHRINKS: u32 = 4;

/// The messages job `marker` summarizes: the window up to the marker,
/// without the tail kept verbatim after the summary (the one its
/// `CompactionStarted` recorded, chosen by [`select_tail`]) and, for a job
/// that replays a refused prompt, without that prompt and what followed it
/// ([`history_end`]). Empty when the marker is unknown.
pub fn summary_input(state: &SessionState, marker: MessageId) -> Vec<WindowMessage> {
    let (Some(marker_index), Some(end)) = (state.message_index(marker), history_end(state, marker))
    else {
        return Vec::new();
    };
    let tail_start = state.job(marker).and_then(|j| j.tail_start);
    let tail_index = tail_start.and_then(|t| state.message_index(t));
    let (_, order) = window_order(state);
    order
        .into_iter()
        .filter(|&i| i < end || i == marker_index)
        .filter(|&i| !tail_index.is_some_and(|t| t <= i && i < marker_index))
        .filter_map(|i| render_message(state, &state.messages[i]))
        .collect()
}

/// How a compaction request is cut down when it would not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Everything.
    Full,
    /// Tool outputs cut to [`TRUNCATED_TOOL_OUTPUT_CHARS`].
    TruncatedToolOutputs,
    /// Cut outputs, and only the longest suffix of messages that fits.
    RecentTurns,
}

impl Strategy {
    /// The name recorded in `CompactionAttempted`.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Full => "full",
            Strategy::TruncatedToolOutputs => "truncated-tool-outputs",
            Strategy::RecentTurns => "recent-turns",
        }
    }

    /// The messages under this strategy; `None` when it cannot make a request
    /// that keeps the marker and at least two messages of the conversation.
    /// `fixed` is the size of what every request carries besides the
    /// messages (system prompt, instruction).
    pub fn apply(
        self,
        messages: &[WindowMessage],
        fixed: u64,
        limit: Option<u64>,
        e: &Estimator,
    ) -> Option<Vec<WindowMessage>> {
        let mut out = messages.to_vec();
        if self == Strategy::Full {
            return Some(out);
        }
        out.iter_mut()
            .flat_map(|m| &mut m.parts)
            .for_each(truncate_tool_output);
        if self == Strategy::TruncatedToolOutputs {
            return Some(out);
        }
        let start = recent_start(&out, fixed, limit?, e)?;
        out.drain(..start);
        Some(out)
    }
}

fn truncate_tool_output(part: &mut WindowPart) {
    if let WindowPart::Tool {
        result: ToolResult::Output { text, .. },
        ..
    } = part
    {
        let n = text.chars().count();
        if n > TRUNCATED_TOOL_OUTPUT_CHARS {
            let mut cut: String = text.chars().take(TRUNCATED_TOOL_OUTPUT_CHARS).collect();
            cut.push_str(&format!(
                "\n[Tool output truncated for compaction: omitted {} chars]",
                n - TRUNCATED_TOOL_OUTPUT_CHARS
            ));
            *text = cut;
        }
    }
}

/// The start of the longest suffix that fits, always ending with the marker:
/// at a user message when one is in reach, else (a long autonomous turn) at
/// any message, as long as it keeps at least two messages of the conversation.
fn recent_start(
    messages: &[WindowMessage],
    fixed: u64,
    limit: u64,
    e: &Estimator,
) -> Option<usize> {
    let n = messages.len();
    // The JSON array of messages[i..] is `[` + their JSON joined by `,` +
    // `]`: each message is measured once and every suffix is a sum.
    let units: Vec<u64> = messages
        .iter()
        .map(|m| m.to_json().json_utf16_len())
        .collect();
    let (mut at_user, mut at_any) = (None, None);
    let mut body = 0u64;
    for i in (0..n.saturating_sub(1)).rev() {
        if i + 1 == n - 1 {
            body = units[n - 1];
        }
        body += units[i] + 1;
        if e.estimate_units(2 + body) + fixed > limit {
            break;
        }
        at_any = Some(i);
        if messages[i].role.is_input() {
            at_user = Some(i);
        }
    }
    at_user.or(at_any.filter(|&i| n - 1 - i >= 2))
}

/// Estimated tokens of a request carrying `messages` and `fixed` other tokens.
pub fn request_tokens(messages: &[WindowMessage], fixed: u64, e: &Estimator) -> u64 {
    estimate_json(messages, e) + fixed
}

/// One attempt the fallback plan decided on.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// The strategy.
    pub strategy: Strategy,
    /// The messages to send.
    pub messages: Vec<WindowMessage>,
    /// Their estimated tokens, `fixed` included.
    pub request_tokens: u64,
    /// The budget it was checked against.
    pub limit: Option<u64>,
    /// Whether it fits (an attempt that does not is recorded, not sent).
    pub fits: bool,
}

/// What the summarizer answered to one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer<'a> {
    /// A summary text and why the call stopped.
    Text {
        /// The text.
        text: &'a str,
        /// Why the call stopped.
        finish: &'a FinishReason,
    },
    /// The provider said the request was too large (its words).
    TooLarge(&'a str),
    /// Any other failure (its words).
    Failed(&'a str),
}

/// What an answer means for the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The text is the summary: complete the job.
    Complete,
    /// Try the next (smaller) attempt.
    Retry,
    /// The job fails with this error.
    Fail(String),
}

/// The plan of attempts for one job; see the module documentation.
#[derive(Debug, Clone)]
pub struct Fallback {
    plan: VecDeque<Strategy>,
    target: Option<u64>,
    previous: Option<u64>,
    shrinks_left: u32,
    last_error: String,
}

impl Fallback {
    /// A plan for a model whose usable input is `limit` (`None`: unlimited).
    pub fn new(limit: Option<u64>) -> Self {
        Fallback {
            plan: [
                Strategy::Full,
                Strategy::TruncatedToolOutputs,
                Strategy::RecentTurns,
            ]
            .into(),
            target: limit,
            previous: None,
            shrinks_left: MAX_SHRINKS,
            last_error: "the compaction request does not fit the model, even with only the most \
                         recent turns"
                .into(),
        }
    }

    /// A plan of one attempt with everything (a transcript is sent whole).
    pub fn single(limit: Option<u64>) -> Self {
        Fallback {
            plan: [Strategy::Full].into(),
            ..Self::new(limit)
        }
    }

    /// What `answer` to `attempt` means: a summary with text and no error
    /// completes the job; "too large" makes every later attempt smaller;
    /// anything else fails the job.
    pub fn answer(&mut self, attempt: &Attempt, answer: Answer<'_>) -> Verdict {
        match answer {
            Answer::Text { text, .. } if text.trim().is_empty() => {
                Verdict::Fail("the summarizer returned no text".into())
            }
            Answer::Text {
                finish: FinishReason::Error,
                ..
            } => Verdict::Fail("the summarizer finished with an error".into()),
            Answer::Text { .. } => Verdict::Complete,
            Answer::TooLarge(error) => {
                self.last_error = error.to_owned();
                self.too_large(attempt);
                Verdict::Retry
            }
            Answer::Failed(error) => Verdict::Fail(error.to_owned()),
        }
    }

    /// Why the job fails when the plan is exhausted: the last "too large"
    /// answer, or that nothing fits.
    pub fn exhausted(&self) -> String {
        self.last_error.clone()
    }

    /// The next attempt, or `None` when the plan is exhausted.
    pub fn next(
        &mut self,
        messages: &[WindowMessage],
        fixed: u64,
        e: &Estimator,
    ) -> Option<Attempt> {
        while let Some(strategy) = self.plan.pop_front() {
            let Some(cut) = strategy.apply(messages, fixed, self.target, e) else {
                continue;
            };
            let tokens = request_tokens(&cut, fixed, e);
            if self.previous == Some(tokens) {
                // The same request again would get the same answer.
                continue;
            }
            self.previous = Some(tokens);
            return Some(Attempt {
                strategy,
                messages: cut,
                request_tokens: tokens,
                limit: self.target,
                fits: self.target.is_none_or(|l| tokens <= l),
            });
        }
        None
    }

    /// The provider answered `attempt` with "too large": every later attempt
    /// must be smaller, and the recent turns are tried again, smaller.
    fn too_large(&mut self, attempt: &Attempt) {
        self.target = Some(attempt.request_tokens.saturating_mul(2) / 3);
        if attempt.strategy == Strategy::RecentTurns && self.shrinks_left > 0 {
            self.shrinks_left -= 1;
            self.plan.push_front(Strategy::RecentTurns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Role;
    use proptest::prelude::*;

    /// The definition `recent_start` computes with suffix sums.
    fn recent_start_by_definition(
        messages: &[WindowMessage],
        fixed: u64,
        limit: u64,
        e: &Estimator,
    ) -> Option<usize> {
        let n = messages.len();
        let (mut at_user, mut at_any) = (None, None);
        for i in (0..n.saturating_sub(1)).rev() {
            if request_tokens(&messages[i..], fixed, e) > limit {
                break;
            }
            at_any = Some(i);
            if messages[i].role.is_input() {
                at_user = Some(i);
            }
        }
        at_user.or(at_any.filter(|&i| n - 1 - i >= 2))
    }

    proptest! {
        #[test]
        fn recent_start_is_the_longest_suffix_that_fits(
            sizes in prop::collection::vec((0usize..400, any::<bool>()), 0..30),
            fixed in 0u64..200,
            limit in 0u64..3_000,
        ) {
            let messages: Vec<WindowMessage> = sizes
                .iter()
                .enumerate()
                .map(|(i, &(n, user))| WindowMessage {
                    id: crate::ids::MessageId(uuid::Uuid::from_u128(i as u128)),
                    role: if user { Role::User } else { Role::Assistant },
                    parts: vec![WindowPart::Text("é\"x".repeat(n))],
                })
                .collect();
            let e = Estimator::CharsPerToken { chars_per_token: 4 };
            prop_assert_eq!(
                recent_start(&messages, fixed, limit, &e),
                recent_start_by_definition(&messages, fixed, limit, &e)
            );
        }
    }
}
