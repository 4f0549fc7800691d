//! [`SessionState::evolve`]: checks one event, then applies it, one function
//! per kind of change ([`SessionState::describe`] for the description
//! stream).

use super::message::Message;
use super::session::{LastFinished, SessionState};
use crate::error::{RefusedEvent, Violation};
use crate::event::{Envelope, Event, PartBody, PrunedPart};
use crate::ids::{MessageId, PartId, Seq};
use crate::part::{Body, Part, PruneMark};
use crate::policy::Policy;

impl SessionState {
    /// Applies one event. On error the state is unchanged.
    pub fn evolve(&mut self, env: &Envelope) -> Result<(), RefusedEvent> {
        let refuse = |violation| RefusedEvent {
            seq: env.seq,
            id: env.id,
            kind: env.event.kind(),
            violation,
        };
        self.check(env).map_err(refuse)?;
        self.apply(env);
        self.head = env.seq;
        self.last_event = Some(env.id);
        Ok(())
    }

    /// Applies a description read from the session's description stream
    /// ([`crate::description_stream`]): the title and [`SessionState::about`]
    /// of a [`Event::SessionDescribed`]; source fields and import marks are
    /// only checked. Nothing else changes (not the head: the description
    /// stream has seqs of its own), so the digest of what happened is the
    /// same with or without the descriptions.
    pub fn describe(&mut self, event: &Event) -> Result<(), Violation> {
        match event {
            Event::SessionDescribed { about } => {
                self.title = about.title.clone();
                self.about = Some(about.clone());
                Ok(())
            }
            Event::SourceFields { target, fields, .. } => self.check_source_fields(*target, fields),
            Event::ImportStarted { .. } | Event::Captured { .. } => Ok(()),
            other => Err(Violation::NotADescription(other.kind())),
        }
    }

    /// Applies a checked event. Every lookup here was validated by `check`.
    fn apply(&mut self, env: &Envelope) {
        for (message, error) in self.errors_set_by(&env.event) {
            self.set_message_error(message, error);
        }
        match &env.event {
            Event::SessionStarted { .. } => self.apply_session_started(env),
            Event::PolicyChanged { policy } => self.apply_policy_changed(policy),
            Event::LimitsChanged { limits } => self.limits = limits.clone(),
            Event::CompactionAttempted { .. }
            | Event::SourceFields { .. }
            | Event::ImportStarted { .. }
            | Event::Captured { .. } => {}
            Event::SessionDescribed { about } => {
                self.title = about.title.clone();
                self.about = Some(about.clone());
            }
            Event::SessionReplaced { by } => self.replaced_by = Some(*by),
            Event::AutoCompactionPaused { reason, .. } => self.auto_paused = Some(reason.clone()),
            Event::MessageAppended { .. } => self.apply_message_appended(env),
            Event::PartAppended {
                message,
                part,
                body,
                source_id,
            } => self.push_part(
                *message,
                Part::held(*part, env.seq, body.clone(), source_id.clone()),
            ),
            Event::PartUpdated { part, body } => self.apply_part_updated(env.seq, *part, body),
            Event::StepFinished { .. } => self.apply_step_finished(env),
            Event::UsageReported { message, tokens } => {
                let held = self.message_mut(*message).map(|m| {
                    m.tokens = Some(Box::new(*tokens));
                });
                self.checked_held(held.is_some(), "the message of a usage");
            }
            Event::CompactionRequested { .. } => self.apply_compaction_requested(env),
            Event::CompactionStarted { .. } => self.apply_compaction_started(env),
            Event::SummaryCompleted {
                job,
                part,
                reason,
                tokens,
                redactions,
            } => self.apply_summary_completed(env.seq, *job, *part, reason, tokens, *redactions),
            Event::CompactionFailed { job, error } => self.apply_compaction_failed(*job, error),
            Event::PartsPruned { parts, policy, .. } => self.apply_parts_pruned(env, parts, policy),
            Event::PartsRestored { parts, .. } => self.apply_parts_restored(parts),
            // Its error is set with the others, above.
            Event::MessageErrored { .. } => {}
            Event::MessagesWithdrawn { messages, .. } => self.apply_messages_withdrawn(messages),
        }
    }

    /// The session, its start, policy, limits, title and source.
    fn apply_session_started(&mut self, env: &Envelope) {
        let Event::SessionStarted {
            policy,
            limits,
            title,
            source_id,
        } = &env.event
        else {
            return;
        };
        self.session = Some(env.session);
        self.started_at = env.recorded_at;
        self.policy = policy.clone();
        self.limits = limits.clone();
        self.title = title.clone();
        self.source_id = source_id.clone();
    }

    /// The new policy; every estimate again when its estimator changed.
    fn apply_policy_changed(&mut self, policy: &Policy) {
        let estimator_changed = policy.estimator != self.policy.estimator;
        self.policy = policy.clone();
        if estimator_changed {
            self.rebuild_index();
        }
    }

    /// The new message; a real user message lifts the loop guard's pause.
    fn apply_message_appended(&mut self, env: &Envelope) {
        let Event::MessageAppended {
            message,
            role,
            agent,
            model,
            synthetic,
            parent,
            source_id,
        } = &env.event
        else {
            return;
        };
        if role.is_input() && !*synthetic {
            self.auto_paused = None;
        }
        self.push_message(Message {
            agent: agent.as_deref().map(Box::from),
            model: model.clone().map(Box::new),
            synthetic: *synthetic,
            parent: *parent,
            source_id: source_id.as_deref().map(Box::from),
            ..Message::blank(env, *message, *role)
        });
    }

    /// The part's new content (sealed again when its message is), and its
    /// estimate.
    fn apply_part_updated(&mut self, seq: Seq, part: PartId, body: &PartBody) {
        let sealed = self
            .index
            .part(&part)
            .is_some_and(|(mi, _)| mi < self.sealed);
        let held = self.part_mut(part).map(|p| {
            p.body = Body::Held(Box::new(body.clone()));
            p.seq = seq;
            if sealed {
                p.seal();
            }
        });
        self.checked_held(held.is_some(), "an updated part");
        self.refresh_part_tokens(part);
    }

    /// The step-finish part, and the step as the last finished call.
    fn apply_step_finished(&mut self, env: &Envelope) {
        let Event::StepFinished {
            message,
            part,
            reason,
            tokens,
            cost_micros,
        } = &env.event
        else {
            return;
        };
        if self.message(*message).is_some_and(|m| m.finish.is_none()) {
            self.steps_finished += 1;
        }
        self.finish_step(env.seq, *message, *part, reason, tokens, *cost_micros);
        self.set_last_finished(LastFinished {
            message: *message,
            summary: false,
            tokens: *tokens,
            seq: env.seq,
        });
    }

    /// A prune mark on each part, and its estimate; the prune of a part
    /// the state dropped is counted in `evicted`.
    fn apply_parts_pruned(&mut self, env: &Envelope, parts: &[PrunedPart], policy: &str) {
        for PrunedPart { part, tokens } in parts {
            if self.part(*part).is_none() {
                self.evicted.pruned_parts += 1;
                self.evicted.pruned_tokens += *tokens;
            }
            let held = self.part_mut(*part).map(|p| {
                p.pruned = Some(Box::new(PruneMark {
                    seq: env.seq,
                    at: env.recorded_at,
                    policy: policy.to_owned(),
                    tokens: *tokens,
                }));
            });
            self.checked_held(held.is_some(), "a pruned part");
            self.refresh_part_tokens(*part);
        }
    }

    /// Each part's prune mark lifted, and its estimate.
    fn apply_parts_restored(&mut self, parts: &[PartId]) {
        for part in parts {
            let held = self.part_mut(*part).map(|p| p.pruned = None);
            self.checked_held(held.is_some(), "a restored part");
            self.refresh_part_tokens(*part);
        }
    }

    /// Each message marked withdrawn.
    fn apply_messages_withdrawn(&mut self, messages: &[MessageId]) {
        for id in messages {
            let held = self.message_mut(*id).map(|m| m.withdrawn = true);
            self.checked_held(held.is_some(), "a withdrawn message");
        }
    }

    /// The assertion paired with `check`: an id `apply` looks up was
    /// checked to be held, unless the state dropped messages (a late event
    /// may then name one it no longer holds, and is taken unchecked). A
    /// miss otherwise is a bug in `check`, never bad input.
    fn checked_held(&self, held: bool, what: &str) {
        debug_assert!(
            held || self.has_dropped(),
            "check let through {what} the state does not hold"
        );
    }
}
