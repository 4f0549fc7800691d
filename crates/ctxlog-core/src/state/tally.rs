//! [`Tally`]: the session's figures over its whole history (messages,
//! steps, peak, prunes), kept for the messages a pivot closed so that a
//! state holding only its window still answers them.

use super::message::Message;
use crate::event::Role;
use serde::{Deserialize, Serialize};

/// Figures summed over messages: those a state dropped
/// ([`SessionState::evicted`](super::SessionState::evicted)) or every
/// message ([`SessionState::tally`](super::SessionState::tally)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Messages.
    pub messages: u64,
    /// User messages.
    pub user_messages: u64,
    /// Assistant messages.
    pub assistant_messages: u64,
    /// Messages withdrawn.
    pub withdrawn: u64,
    /// Agent steps: the step-finish parts of messages that are not
    /// summaries, and an agent message's open step with the usage it
    /// reported so far.
    pub steps: u64,
    /// Of those, the open steps.
    pub open_steps: u64,
    /// The largest total of those steps.
    pub peak_tokens: u64,
    /// Parts pruned (and not restored).
    pub pruned_parts: u64,
    /// Their estimated tokens when pruned.
    pub pruned_tokens: u64,
}

impl Tally {
    /// Adds one message's figures.
    pub(super) fn add_message(&mut self, m: &Message) {
        self.messages += 1;
        match m.role {
            Role::Assistant => self.assistant_messages += 1,
            Role::User | Role::Developer | Role::System => self.user_messages += 1,
        }
        self.withdrawn += u64::from(m.withdrawn);
        for p in &m.parts {
            if let Some(mark) = &p.pruned {
                self.pruned_parts += 1;
                self.pruned_tokens += mark.tokens;
            }
        }
        if m.summary {
            return;
        }
        let steps = m.parts.iter().filter_map(|p| p.step_tokens());
        // A step whose end is not recorded yet, with the usage it reported
        // (the timeline's open row).
        let open = match (m.role, &m.finish, &m.tokens) {
            (Role::Assistant, None, Some(tokens)) => Some(&**tokens),
            _ => None,
        };
        self.open_steps += u64::from(open.is_some());
        for tokens in steps.chain(open) {
            self.steps += 1;
            self.peak_tokens = self.peak_tokens.max(tokens.shown_total());
        }
    }
}
