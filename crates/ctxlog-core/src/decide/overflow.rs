//! The drafter's overflow checks: [`Command::CheckOverflow`] after a step
//! and [`Command::BeforeRequest`] before a request, each queueing an
//! automatic compaction when the count reaches the threshold.

use super::checks::{checks_after, model_of, pending_tokens};
use super::drafter::Drafter;
use super::Command;
use crate::event::CompactionTrigger;
use crate::ids::MessageId;
use crate::policy::{OverflowCheck, OverflowCheckAt};
use crate::state::SessionState;

impl Drafter<'_, '_> {
    /// [`Command::BeforeRequest`]: the count of the last answer plus the
    /// estimate of what followed it, against the threshold.
    pub(super) fn before_request(&mut self, state: &SessionState) {
        if let Some((step, check)) = check_before_request(state) {
            self.queue_on_overflow(state, step, check);
        }
    }

    /// [`Command::CheckOverflow`]: the overflow predicate after `step`.
    pub(super) fn check_overflow(&mut self, state: &SessionState, step: MessageId) {
        if let Some(check) = check_after_step(state, step) {
            self.queue_on_overflow(state, step, check);
        }
    }

    /// An automatic compaction queued when `check` overflows, unless the
    /// loop guard paused them or a job is pending already.
    fn queue_on_overflow(&mut self, state: &SessionState, step: MessageId, check: OverflowCheck) {
        if check.overflow && state.auto_paused.is_none() && state.pending_jobs().next().is_none() {
            self.marker(true, false, CompactionTrigger::Overflow { step, check });
        }
    }
}

/// The overflow check `command` makes when it is decided on `state`: for
/// [`Command::CheckOverflow`] the predicate after its step, for
/// [`Command::BeforeRequest`] the count before the request; `None` for
/// every other command, and when the policy does not check there. A
/// query: the runner asks it on the state it is about to decide on, so
/// that it can report what the check found (whether or not it queued).
pub fn overflow_check(state: &SessionState, command: &Command) -> Option<OverflowCheck> {
    match command {
        Command::CheckOverflow { step } => check_after_step(state, *step),
        Command::BeforeRequest => check_before_request(state).map(|(_, check)| check),
        _ => None,
    }
}

/// The predicate after `step`, when the policy checks after it.
fn check_after_step(state: &SessionState, step: MessageId) -> Option<OverflowCheck> {
    checks_after(state, step)
        .then(|| state.overflow())
        .flatten()
}

/// The check before a request, with the answer it counts from.
fn check_before_request(state: &SessionState) -> Option<(MessageId, OverflowCheck)> {
    let (step, count) = count_before_request(state)?;
    Some((step, state.policy.check_count(&state.limits, count)))
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
