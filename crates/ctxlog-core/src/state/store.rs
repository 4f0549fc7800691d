//! The reducer's writes to messages, parts and jobs, each keeping the index
//! (positions and token estimates) in step.
//!
//! The lookups here find what `check` validated; on a state that breaks its
//! own invariants (a damaged snapshot) they do nothing rather than panic.

use super::job::Job;
use super::message::Message;
use super::session::{LastFinished, SessionState};
use crate::event::{FinishReason, MessageError, PartBody};
use crate::ids::{MessageId, PartId, Seq};
use crate::part::Part;
use crate::policy::TokenUsage;
use crate::sent_part::estimate_part;

impl SessionState {
    /// Appends a message, with its parts' estimates.
    pub(super) fn push_message(&mut self, msg: Message) {
        self.index.insert_message(msg.id, self.messages.len());
        let tokens: Vec<u64> = msg
            .parts
            .iter()
            .map(|p| estimate_part(p, &self.policy.estimator))
            .collect();
        self.index.message_tokens.push(tokens.iter().sum());
        self.index.part_tokens.push(tokens);
        self.messages.push(msg);
    }

    /// Appends a part to `message` (sealed at once when the message is).
    pub(super) fn push_part(&mut self, message: MessageId, mut part: Part) {
        let Some(mi) = self.index.message(&message) else {
            return;
        };
        let sealed = mi < self.sealed;
        if sealed {
            part.seal();
        }
        let Some(m) = self.messages.get_mut(mi) else {
            return;
        };
        self.index.insert_part(part.id, mi, m.parts.len());
        let tokens = estimate_part(&part, &self.policy.estimator);
        m.parts.push(part);
        if let (Some(t), Some(sum)) = (
            self.index.part_tokens.get_mut(mi),
            self.index.message_tokens.get_mut(mi),
        ) {
            if !sealed {
                t.push(tokens);
            }
            *sum += tokens;
        }
    }

    /// Appends a job.
    pub(super) fn push_job(&mut self, job: Job) {
        self.index.insert_job(job.marker, self.jobs.len());
        self.jobs.push(job);
    }

    /// A part the state holds, dropped or not (a late event on a dropped
    /// message changes the copy a state keeping its history holds).
    pub(super) fn part_mut(&mut self, id: PartId) -> Option<&mut Part> {
        let (mi, pi) = self.index.part(&id)?;
        self.messages.get_mut(mi)?.parts.get_mut(pi)
    }

    pub(super) fn job_mut(&mut self, id: MessageId) -> Option<&mut Job> {
        let i = self.index.job(&id)?;
        self.jobs.get_mut(i)
    }

    /// A message the state holds, dropped or not (see `part_mut`).
    pub(super) fn message_mut(&mut self, id: MessageId) -> Option<&mut Message> {
        let i = self.index.message(&id)?;
        self.messages.get_mut(i)
    }

    pub(super) fn set_message_error(&mut self, id: MessageId, error: MessageError) {
        if let Some(m) = self.message_mut(id) {
            m.error = Some(Box::new(error));
        }
    }

    /// Seals the parts of every message before `start` not sealed yet.
    pub(super) fn seal_before(&mut self, start: usize) {
        let end = start.min(self.messages.len());
        for m in self
            .messages
            .get_mut(self.sealed..end)
            .into_iter()
            .flatten()
        {
            m.parts.iter_mut().for_each(Part::seal);
            m.parts.shrink_to_fit(); // a sealed message rarely grows again
        }
        for t in self
            .index
            .part_tokens
            .get_mut(self.sealed..end)
            .into_iter()
            .flatten()
        {
            *t = Vec::new();
        }
        self.sealed = self.sealed.max(end);
    }

    /// `last_finished` is the newest message (in log order) that has a finish,
    /// as upstream's `lastFinished`; a late step of an older message does not
    /// move it back.
    pub(super) fn set_last_finished(&mut self, candidate: LastFinished) {
        let newer = match &self.last_finished {
            None => true,
            Some(cur) => self.message_index(candidate.message) >= self.message_index(cur.message),
        };
        if newer {
            self.last_finished = Some(candidate);
        }
    }

    /// The step-finish part on `message`, and its finish and usage.
    pub(super) fn finish_step(
        &mut self,
        seq: Seq,
        message: MessageId,
        part: PartId,
        reason: &FinishReason,
        tokens: &TokenUsage,
        cost_micros: Option<u64>,
    ) {
        let body = PartBody::StepFinish {
            reason: reason.clone(),
            tokens: *tokens,
            cost_micros,
        };
        self.push_part(message, Part::held(part, seq, body, None));
        if let Some(m) = self.message_mut(message) {
            m.finish = Some(reason.clone());
            m.tokens = Some(Box::new(*tokens));
        }
    }
}
