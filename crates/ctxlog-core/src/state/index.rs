//! [`Index`]: the state's lookup tables and the token estimates the reducer
//! keeps, rebuilt from the messages and jobs and never serialized.

use crate::ids::{MessageId, PartId};
use crate::lookup::Lookup;

/// Lookup tables, rebuilt from `messages` and `jobs`; never serialized.
/// Positions are kept as `u32`, which makes the tables a quarter smaller:
/// a session in memory holds far fewer than 2^32 messages or parts (each
/// costs more than 60 bytes, so 2^32 would take over 256 GiB).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Index {
    pub(super) messages: Lookup<MessageId, u32>,
    pub(super) parts: Lookup<PartId, (u32, u32)>,
    pub(super) jobs: Lookup<MessageId, u32>,
    /// Each part's estimated tokens as it is sent (under the policy's
    /// estimator), by message and part position; empty for a sealed
    /// message (no window sends its parts again; its sum stays below).
    pub(super) part_tokens: Vec<Vec<u64>>,
    /// Their sum per message: the window estimate adds these up, so a step
    /// costs O(messages in the window), not O(their text).
    pub(super) message_tokens: Vec<u64>,
}

/// `i` as the index keeps it (saturating at `u32::MAX`, out of reach).
fn slot(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

impl Index {
    pub(super) fn message(&self, id: &MessageId) -> Option<usize> {
        self.messages.get(id).map(|i| i as usize)
    }

    pub(super) fn part(&self, id: &PartId) -> Option<(usize, usize)> {
        self.parts
            .get(id)
            .map(|(mi, pi)| (mi as usize, pi as usize))
    }

    pub(super) fn job(&self, id: &MessageId) -> Option<usize> {
        self.jobs.get(id).map(|i| i as usize)
    }

    pub(super) fn insert_message(&mut self, id: MessageId, at: usize) {
        self.messages.insert(id, slot(at));
    }

    pub(super) fn insert_part(&mut self, id: PartId, message: usize, at: usize) {
        self.parts.insert(id, (slot(message), slot(at)));
    }

    /// Forgets the first `n` messages (dropped from the state): their ids
    /// and their parts' leave the tables, every later position moves down
    /// by `n`.
    pub(super) fn drop_front(&mut self, n: usize) {
        let n32 = slot(n);
        self.messages.filter_map_values(|i| i.checked_sub(n32));
        self.parts
            .filter_map_values(|(mi, pi)| Some((mi.checked_sub(n32)?, pi)));
        self.part_tokens.drain(..n.min(self.part_tokens.len()));
        self.message_tokens
            .drain(..n.min(self.message_tokens.len()));
    }

    pub(super) fn insert_job(&mut self, id: MessageId, at: usize) {
        self.jobs.insert(id, slot(at));
    }
}
