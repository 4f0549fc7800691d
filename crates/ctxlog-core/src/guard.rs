//! The loop guard: automatic compaction pauses (recorded as
//! `AutoCompactionPaused`) until the next real user message when it does not
//! help or fires too often. This is what stops OpenCode's #27924 loop, where
//! a fixed prompt overhead makes every step overflow again.

use crate::event::{Event, Role};
use crate::state::Job;
use crate::state::SessionState;
use crate::window::estimate_window;

/// When automatic compaction stops itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopGuard {
    /// An automatic compaction must shrink the estimated window by at least
    /// this many percent.
    pub min_shrink_percent: u64,
    /// Most automatic compactions (completed or failed)...
    pub max_auto: u32,
    /// ...within this many finished steps.
    pub within_steps: u32,
}

impl Default for LoopGuard {
    fn default() -> Self {
        LoopGuard {
            min_shrink_percent: 20,
            max_auto: 3,
            within_steps: 6,
        }
    }
}

impl LoopGuard {
    /// After an automatic compaction (completed, with the window estimate
    /// before it, or failed: `None`): the pause to record, if any.
    pub fn check(&self, state: &SessionState, before: Option<u64>) -> Option<Event> {
        let after = estimate_window(state);
        let shrunk_enough = before.is_none_or(|b| {
            after.saturating_mul(100) <= b.saturating_mul(100 - self.min_shrink_percent.min(100))
        });
        let recent_auto = self.recent_auto(state);
        let reason = if !shrunk_enough {
            format!(
                "automatic compaction shrank the window from ~{} to ~{after} tokens, less than {}%",
                before.unwrap_or(0),
                self.min_shrink_percent
            )
        } else if recent_auto >= self.max_auto {
            format!(
                "{recent_auto} automatic compactions within the last {} steps",
                self.within_steps
            )
        } else {
            return None;
        };
        Some(Event::AutoCompactionPaused {
            reason,
            window_before: before.unwrap_or(after),
            window_after: after,
        })
    }

    /// Automatic compactions (completed or failed) requested after the
    /// `within_steps`-th most recent finished step. When fewer steps than
    /// that finished in the messages the state holds, a job whose marker
    /// left the state counts when fewer than `within_steps` (at least one)
    /// steps finished after it was requested.
    fn recent_auto(&self, state: &SessionState) -> u32 {
        let within = self.within_steps.max(1);
        let since = state
            .messages
            .iter()
            .enumerate()
            .skip(state.present_from())
            .rev()
            .filter(|(_, m)| m.role == Role::Assistant && !m.summary && m.finish.is_some())
            .nth(within as usize - 1)
            .map(|(i, _)| i);
        let recent = |j: &&Job| match (state.message_index(j.marker), since) {
            (Some(marker), Some(s)) => marker > s,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => state.steps_finished.saturating_sub(j.steps_before) < u64::from(within),
        };
        state
            .jobs
            .iter()
            .filter(|j| j.auto && !j.status.is_pending())
            .filter(recent)
            .count() as u32
    }
}
