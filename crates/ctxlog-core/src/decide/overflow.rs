//! The drafter's overflow checks: [`Command::CheckOverflow`] after a step
//! and [`Command::BeforeRequest`] before a request, each queueing an
//! automatic compaction when the count reaches the threshold.

use super::checks::{checks_after, model_of, pending_tokens};
use super::drafter::Drafter;
#[cfg(doc)]
use super::Command;
use crate::event::CompactionTrigger;
use crate::ids::MessageId;
use crate::policy::OverflowCheckAt;
use crate::state::SessionState;

impl Drafter<'_, '_> {
    /// [`Command::BeforeRequest`]: the count of the last answer plus the
    /// estimate of what followed it, against the threshold.
    pub(super) fn before_request(&mut self, state: &SessionState) {
        let Some((step, count)) = count_before_request(state) else {
            return;
        };
        let check = state.policy.check_count(&state.limits, count);
        self.out.overflow = Some(check);
        if check.overflow && state.auto_paused.is_none() && state.pending_jobs().next().is_none() {
            self.marker(true, false, CompactionTrigger::Overflow { step, check });
        }
    }

    /// [`Command::CheckOverflow`]: the overflow predicate after `step`.
    pub(super) fn check_overflow(&mut self, state: &SessionState, step: MessageId) {
        if !checks_after(state, step) {
            return;
        }
        let check = state.overflow();
        self.out.overflow = check;
        if let Some(check) = check.filter(|c| c.overflow) {
            if state.auto_paused.is_none() && state.pending_jobs().next().is_none() {
                self.marker(true, false, CompactionTrigger::Overflow { step, check });
            }
        }
    }
}

/// What a policy that checks before each request compares with its
/// threshold now: the last answer's count plus the estimate of what the
/// window holds after it, with that answer; `None` when the policy checks
/// elsewhere, no answer finished yet, or it does not check the answer's
/// model.
pub fn count_before_request(state: &SessionState) -> Option<(MessageId, u64)> {
    let OverflowCheckAt::BeforeRequest { prompts } = state.policy.check_at else {
        return None;
    };
    let last = state.last_finished.as_ref().filter(|l| !l.summary)?;
    let step = last.message;
    if !state.policy.checks_model(model_of(state, step)) {
        return None;
    }
    let count = state
        .policy
        .count(&last.tokens)
        .saturating_add(pending_tokens(state, step, prompts));
    Some((step, count))
}
