//! Closing what a pivot leaves behind: the messages before the window's new
//! start are sealed; those the prune walk can no longer reach are dropped,
//! counted in [`SessionState::evicted`] (when the state keeps its history,
//! they stay in front of the others, found only by the `history_` lookups).
//!
//! The prune walk (OpenCode's quirk, `opencode-behavior.md` §1.10) passes
//! the latest summary while fewer than `prune_protect_turns` user messages
//! follow it, so it can mark parts before the window; it stops at the
//! first summary after that many user messages, or at a part already
//! pruned. The messages from there to the window's start stay, sealed.

use super::message::{ends_prune_walk, prune_walk};
use super::session::{Retention, SessionState};
use std::borrow::Cow;

impl SessionState {
    /// Closes every message before `start` (the window's new start).
    pub(super) fn close_before(&mut self, start: usize) {
        let reach = self.prune_reach(start);
        self.seal_before(start);
        for m in self.messages.get(self.kept_from..reach).unwrap_or_default() {
            self.evicted.add_message(m);
        }
        match self.retention {
            Retention::Window => self.remove_front(reach),
            Retention::History => self.kept_from = self.kept_from.max(reach),
        }
    }

    /// Where a prune walk that enters the closed messages before `start`
    /// (with no user message counted yet: the farthest it goes) stops, under
    /// the policy in force.
    fn prune_reach(&self, start: usize) -> usize {
        let policy = &self.policy;
        let floor = self.kept_from;
        let closed = self
            .messages
            .get(floor..start.min(self.messages.len()))
            .unwrap_or_default();
        for (i, m) in prune_walk(closed, policy.prune_protect_turns) {
            let pruned_before = m.parts.iter().any(|p| {
                p.completed_output_units().is_some()
                    && p.pruned.is_some()
                    && !p.tool_name().is_some_and(|t| policy.is_protected_tool(t))
            });
            if ends_prune_walk(m) || pruned_before {
                return floor + i;
            }
        }
        floor
    }

    /// Removes the first `n` messages (counted in `evicted` already).
    fn remove_front(&mut self, n: usize) {
        let n = n.min(self.messages.len());
        if n == 0 {
            return;
        }
        self.messages.drain(..n);
        self.index.drop_front(n);
        self.sealed = self.sealed.saturating_sub(n);
        self.kept_from = self.kept_from.saturating_sub(n);
    }

    /// The state without the messages it dropped: itself, or, keeping the
    /// history, a copy without them (what the digest and a snapshot encode,
    /// so that both retentions give the same).
    pub(crate) fn held(&self) -> Cow<'_, SessionState> {
        if self.kept_from == 0 {
            return Cow::Borrowed(self);
        }
        let mut copy = self.clone();
        copy.remove_front(self.kept_from);
        copy.retention = Retention::Window;
        Cow::Owned(copy)
    }
}
