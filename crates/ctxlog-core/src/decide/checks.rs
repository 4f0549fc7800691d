//! What the overflow checks and the job commands read of a state.

#[cfg(doc)]
use super::Command;
use crate::error::Violation;
use crate::event::{FinishReason, PartBody, ToolState};
use crate::ids::MessageId;
use crate::policy::{ContinueMessage, OverflowCheckAt, Policy};
use crate::state::SessionState;
use crate::window::{CONTINUE_TEXT, CONTINUE_TEXT_OPENCODE, OVERFLOW_CONTINUE_PREFIX};

/// Whether the policy's overflow predicate runs after `step` (see
/// [`OverflowCheckAt`]): under `RunEnd`, not after a step that stopped for
/// tool calls (the run goes on).
pub(super) fn checks_after(state: &SessionState, step: MessageId) -> bool {
    if !state.policy.checks_model(model_of(state, step)) {
        return false;
    }
    match state.policy.check_at {
        OverflowCheckAt::EveryStep => true,
        OverflowCheckAt::BeforeRequest { .. } => false,
        OverflowCheckAt::RunEnd => !state
            .message(step)
            .is_some_and(|m| m.finish.as_ref() == Some(&FinishReason::ToolCalls)),
    }
}

/// The model id that answered `step`, when recorded.
pub(super) fn model_of(state: &SessionState, step: MessageId) -> Option<&str> {
    state
        .message(step)
        .and_then(|m| m.model.as_deref())
        .map(|m| m.model.as_str())
}

/// Estimated tokens of what the window holds after the answer of `step`
/// (for [`Command::BeforeRequest`]): the results of its tool calls as sent,
/// and every later message sent (user messages only when `prompts`).
/// `step` is the last finished step, after the latest pivot, so what
/// follows it in the log is what follows it in the window: this costs the
/// messages after it, not the window.
pub(super) fn pending_tokens(state: &SessionState, step: MessageId, prompts: bool) -> u64 {
    let Some(at) = state.message_index(step) else {
        return 0;
    };
    let e = &state.policy.estimator;
    let results: u64 = state.messages[at]
        .parts
        .iter()
        .filter_map(|p| match p.content()? {
            PartBody::Tool {
                state: tool,
                call_id,
                ..
            } => Some(match tool {
                ToolState::Completed { .. } if p.pruned.is_some() => {
                    e.estimate_result(call_id, crate::window::PRUNED_PLACEHOLDER)
                }
                ToolState::Completed { output, .. } => e.estimate_result(call_id, output),
                ToolState::Error { error, .. } => e.estimate_result(call_id, error),
                ToolState::Pending { .. } | ToolState::Running { .. } => 0,
            }),
            _ => None,
        })
        .sum();
    let later: u64 = (at + 1..state.messages.len())
        .filter(|&i| {
            let m = &state.messages[i];
            crate::window::is_sent(state, m) && (prompts || !m.role.is_input())
        })
        .map(|i| state.message_tokens(i))
        .sum();
    results.saturating_add(later)
}

/// The continue message after an automatic compaction under `policy`
/// (`overflow`: it was caused by a provider overflow and has nothing to replay).
pub fn continue_text(policy: &Policy, overflow: bool) -> String {
    match policy.continue_message {
        ContinueMessage::Seed => CONTINUE_TEXT.into(),
        ContinueMessage::OpenCode if overflow => {
            format!("{OVERFLOW_CONTINUE_PREFIX}{CONTINUE_TEXT_OPENCODE}")
        }
        ContinueMessage::OpenCode => CONTINUE_TEXT_OPENCODE.into(),
        ContinueMessage::None => String::new(),
    }
}

/// Whether `job` is pending (requested or running), and if so whether it is
/// automatic.
pub(super) fn pending_job(state: &SessionState, job: MessageId) -> Result<bool, Violation> {
    let j = state.job(job).ok_or(Violation::UnknownJob(job))?;
    if !j.status.is_pending() {
        return Err(Violation::JobState {
            job,
            status: j.status.name(),
            expected: "requested or running",
        });
    }
    Ok(j.auto)
}
