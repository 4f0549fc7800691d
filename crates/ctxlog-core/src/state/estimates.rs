//! Keeping the [`Index`] whole: [`SessionState::rebuild_index`], and the
//! per-part token estimates the window reads and the reducer refreshes.

use super::index::Index;
use super::session::SessionState;
use crate::ids::PartId;
use crate::sent_part::estimate_part;

impl SessionState {
    /// Rebuilds the lookup tables (after decoding a snapshot).
    pub fn rebuild_index(&mut self) {
        let mut index = Index::default();
        let e = &self.policy.estimator;
        for (mi, m) in self.messages.iter().enumerate() {
            index.insert_message(m.id, mi);
            let mut tokens = Vec::with_capacity(m.parts.len());
            for (pi, p) in m.parts.iter().enumerate() {
                index.insert_part(p.id, mi, pi);
                tokens.push(estimate_part(p, e));
            }
            index.message_tokens.push(tokens.iter().sum());
            if mi < self.sealed {
                tokens = Vec::new();
            }
            index.part_tokens.push(tokens);
        }
        for (ji, j) in self.jobs.iter().enumerate() {
            index.insert_job(j.marker, ji);
        }
        self.index = index;
    }

    /// Estimated tokens of a message's parts as they are sent (0 for an
    /// unknown position), kept up to date by the reducer.
    pub(crate) fn message_tokens(&self, index: usize) -> u64 {
        self.index.message_tokens.get(index).copied().unwrap_or(0)
    }

    /// Re-estimates one part after its body or prune mark changed.
    pub(super) fn refresh_part_tokens(&mut self, id: PartId) {
        let Some((mi, pi)) = self.index.part(&id) else {
            return;
        };
        let Some(m) = self.messages.get(mi) else {
            return;
        };
        if mi < self.sealed {
            // A sealed message keeps only its sum: measure it again.
            let sum = m
                .parts
                .iter()
                .map(|p| estimate_part(p, &self.policy.estimator))
                .sum();
            if let Some(old) = self.index.message_tokens.get_mut(mi) {
                *old = sum;
            }
            return;
        }
        let Some(p) = m.parts.get(pi) else {
            return;
        };
        let new = estimate_part(p, &self.policy.estimator);
        let (Some(old), Some(sum)) = (
            self.index
                .part_tokens
                .get_mut(mi)
                .and_then(|t| t.get_mut(pi)),
            self.index.message_tokens.get_mut(mi),
        ) else {
            return;
        };
        *sum = *sum - *old + new;
        *old = new;
    }
}
