//! Every invariant an event must keep, checked before anything changes, so
//! a refused event leaves the state as it was.

use super::job::{Job, JobStatus};
use super::message::Message;
use super::session::SessionState;
use crate::error::Violation;
use crate::event::{
    CompactionTrigger, Envelope, Event, FinishReason, PartBody, PrunedPart, Role, SourceTarget,
};
use crate::ids::{MessageId, PartId};
use crate::json::Json;
use crate::part::Part;
use crate::policy::{Estimator, Policy};
use std::collections::BTreeSet;

/// A policy an event may carry: an estimator that divides, a name, a tail
/// whose bounds are in order.
pub(crate) fn validate_policy(p: &Policy) -> Result<(), Violation> {
    let per_token = match p.estimator {
        Estimator::CharsPerToken { chars_per_token } => chars_per_token,
        Estimator::BytesPerToken { bytes_per_token } => bytes_per_token,
    };
    if per_token == 0 {
        return Err(Violation::InvalidPolicy(
            "the estimator's characters (or bytes) per token must be at least 1",
        ));
    }
    if p.name.is_empty() {
        return Err(Violation::InvalidPolicy("the policy needs a name"));
    }
    if let Some(t) = &p.tail {
        if t.min_tokens > t.max_tokens {
            return Err(Violation::InvalidPolicy(
                "tail min_tokens exceeds max_tokens",
            ));
        }
    }
    Ok(())
}

impl SessionState {
    fn ensure_new_message(&self, id: MessageId) -> Result<(), Violation> {
        if self.message_index(id).is_some() {
            return Err(Violation::DuplicateMessage(id));
        }
        Ok(())
    }

    fn ensure_new_part(&self, id: PartId) -> Result<(), Violation> {
        if self.part(id).is_some() {
            return Err(Violation::DuplicatePart(id));
        }
        Ok(())
    }

    /// The message an event names or changes: `Some` when the state has
    /// it; `None` when it may be one a pivot dropped (the state no longer
    /// knows their ids: the event is taken unchecked, a late event on a
    /// message long out of the window); an error otherwise.
    fn target_message(&self, id: MessageId) -> Result<Option<&Message>, Violation> {
        match self.message(id) {
            Some(m) => Ok(Some(m)),
            None if self.has_dropped() => Ok(None),
            None => Err(Violation::UnknownMessage(id)),
        }
    }

    /// The part an event names or changes, as [`Self::target_message`].
    fn target_part(&self, id: PartId) -> Result<Option<(&Message, &Part)>, Violation> {
        match self.part(id) {
            Some(found) => Ok(Some(found)),
            None if self.has_dropped() => Ok(None),
            None => Err(Violation::UnknownPart(id)),
        }
    }

    fn existing_job(&self, id: MessageId) -> Result<&Job, Violation> {
        self.job(id).ok_or(Violation::UnknownJob(id))
    }

    /// Markers hold only their compaction part; a summary takes text or
    /// reasoning only while its job is running, so a pivot never changes
    /// after the fact.
    fn check_compaction_message_open(
        &self,
        msg: &Message,
        body: &PartBody,
    ) -> Result<(), Violation> {
        if msg.marker {
            return Err(Violation::ClosedMessage {
                message: msg.id,
                why: "a compaction marker holds only its compaction part",
            });
        }
        if msg.summary {
            let running = msg
                .parent
                .and_then(|m| self.job(m))
                .is_some_and(|j| j.status == JobStatus::Running && j.summary == Some(msg.id));
            if !running {
                return Err(Violation::ClosedMessage {
                    message: msg.id,
                    why: "the summary's job is no longer running",
                });
            }
            if !matches!(
                body,
                PartBody::Text { .. } | PartBody::Reasoning { .. } | PartBody::StepStart { .. }
            ) {
                return Err(Violation::ClosedMessage {
                    message: msg.id,
                    why: "a summary holds only its step start, text and reasoning (the summarizer has no tools)",
                });
            }
        }
        Ok(())
    }

    /// Every invariant, checked before anything changes.
    pub(super) fn check(&self, env: &Envelope) -> Result<(), Violation> {
        self.check_envelope(env)?;
        match &env.event {
            Event::SessionStarted { policy, .. } | Event::PolicyChanged { policy } => {
                validate_policy(policy)
            }
            Event::LimitsChanged { .. }
            | Event::AutoCompactionPaused { .. }
            | Event::SessionDescribed { .. }
            | Event::ImportStarted { .. }
            | Event::Captured { .. } => Ok(()),
            Event::SessionReplaced { by } if Some(*by) == self.session => {
                Err(Violation::ReplacedByItself)
            }
            Event::SessionReplaced { .. } => Ok(()),
            Event::CompactionAttempted { job, .. } | Event::CompactionFailed { job, .. } => {
                self.pending_job(*job).map(|_| ())
            }
            Event::MessageAppended {
                message, parent, ..
            } => self.check_message_appended(*message, *parent),
            Event::PartAppended {
                message,
                part,
                body,
                ..
            } => self.check_part_appended(*message, *part, body),
            Event::PartUpdated { part, body } => self.check_part_updated(*part, body),
            Event::StepFinished { message, part, .. } => self.check_step_finished(*message, *part),
            Event::UsageReported { message, .. } => self.check_agent_step(*message, "usage"),
            Event::CompactionRequested {
                message,
                part,
                trigger,
                ..
            } => self.check_compaction_requested(*message, *part, trigger),
            Event::CompactionStarted {
                job,
                summary_message,
                tail_start,
                ..
            } => self.check_compaction_started(*job, *summary_message, *tail_start),
            Event::SummaryCompleted {
                job, part, reason, ..
            } => self.check_summary_completed(*job, *part, reason),
            Event::PartsPruned {
                parts,
                total_tokens,
                ..
            } => self.check_parts_pruned(parts, *total_tokens),
            Event::PartsRestored { parts, .. } => self.check_parts_restored(parts),
            Event::MessageErrored { message, .. } => self.check_message_errored(*message),
            Event::SourceFields { target, fields, .. } => self.check_source_fields(*target, fields),
            Event::MessagesWithdrawn { messages, .. } => self.check_messages_withdrawn(messages),
        }
    }

    /// Withdrawn messages exist, are listed once and are not withdrawn yet.
    fn check_messages_withdrawn(&self, messages: &[MessageId]) -> Result<(), Violation> {
        if messages.is_empty() {
            return Err(Violation::NoMessages);
        }
        let mut seen = BTreeSet::new();
        for id in messages {
            if !seen.insert(*id) {
                return Err(Violation::RepeatedMessage(*id));
            }
            if self.target_message(*id)?.is_some_and(|m| m.withdrawn) {
                return Err(Violation::AlreadyWithdrawn(*id));
            }
        }
        Ok(())
    }

    /// Source fields complete an object that exists, with a JSON object.
    pub(super) fn check_source_fields(
        &self,
        target: SourceTarget,
        fields: &Json,
    ) -> Result<(), Violation> {
        match target {
            SourceTarget::Session => {}
            SourceTarget::Message(m) => {
                self.target_message(m)?;
            }
            SourceTarget::Part(p) => {
                self.target_part(p)?;
            }
        }
        check_fields_object(fields)
    }

    /// The envelope: the next seq, of this session, started exactly once.
    fn check_envelope(&self, env: &Envelope) -> Result<(), Violation> {
        if env.seq != self.head + 1 {
            return Err(Violation::SequenceGap {
                expected: self.head + 1,
                got: env.seq,
            });
        }
        match (self.session, &env.event) {
            (None, Event::SessionStarted { .. }) => Ok(()),
            (None, _) => Err(Violation::NotStarted),
            (Some(_), Event::SessionStarted { .. }) => Err(Violation::AlreadyStarted),
            (Some(s), _) if s != env.session => Err(Violation::WrongSession {
                expected: s,
                got: env.session,
            }),
            _ => Ok(()),
        }
    }

    fn check_message_appended(
        &self,
        message: MessageId,
        parent: Option<MessageId>,
    ) -> Result<(), Violation> {
        self.ensure_new_message(message)?;
        if let Some(p) = parent {
            self.target_message(p)?;
        }
        Ok(())
    }

    fn check_part_appended(
        &self,
        message: MessageId,
        part: PartId,
        body: &PartBody,
    ) -> Result<(), Violation> {
        self.ensure_new_part(part)?;
        self.check_new_part_on(message, body)
    }

    /// `message` may take a new part `body` (what `decide` checks of an
    /// appended part, and the reducer of every one).
    pub(crate) fn check_new_part_on(
        &self,
        message: MessageId,
        body: &PartBody,
    ) -> Result<(), Violation> {
        let Some(msg) = self.target_message(message)? else {
            return Ok(());
        };
        self.check_compaction_message_open(msg, body)?;
        check_new_body(msg.role, msg.id, body)
    }

    /// `parent` is a message a new one may answer.
    pub(crate) fn check_parent(&self, parent: MessageId) -> Result<(), Violation> {
        self.target_message(parent).map(drop)
    }

    /// A summary `text` finishing `reason` may complete the running `job`
    /// (what `decide` checks of a completion): not finished by an error,
    /// not blank, its tail not before the window.
    pub(crate) fn check_completion(
        &self,
        job: MessageId,
        text: &str,
        reason: &FinishReason,
    ) -> Result<(), Violation> {
        if *reason == FinishReason::Error {
            return Err(Violation::SummaryFinishedWithError(job));
        }
        if text.trim().is_empty() {
            return Err(Violation::EmptySummary(job));
        }
        self.check_window_moves_forward(self.existing_job(job)?)
    }

    /// A job started now on the marker `job` may keep its tail from `tail`:
    /// a message before the marker.
    pub(crate) fn check_tail(&self, job: MessageId, tail: MessageId) -> Result<(), Violation> {
        match (self.message_index(tail), self.message_index(job)) {
            (Some(t), Some(m)) if t < m => Ok(()),
            _ => Err(Violation::BadTailStart { tail, marker: job }),
        }
    }

    /// `message` is an agent's step that may finish.
    pub(crate) fn check_step_on(&self, message: MessageId) -> Result<(), Violation> {
        self.target_message(message)?;
        self.check_agent_step(message, "step-finish")
    }

    fn check_part_updated(&self, part: PartId, body: &PartBody) -> Result<(), Violation> {
        let Some((msg, old)) = self.target_part(part)? else {
            return Ok(());
        };
        self.check_compaction_message_open(msg, body)?;
        check_update(old, body)
    }

    fn check_step_finished(&self, message: MessageId, part: PartId) -> Result<(), Violation> {
        self.target_message(message)?;
        self.ensure_new_part(part)?;
        self.check_agent_step(message, "step-finish")
    }

    /// A step (`kind`: its finish, or the usage it reported) is an agent's
    /// assistant message, never a summary.
    fn check_agent_step(&self, message: MessageId, kind: &'static str) -> Result<(), Violation> {
        let Some(msg) = self.target_message(message)? else {
            return Ok(());
        };
        if msg.role != Role::Assistant {
            return Err(Violation::WrongRole {
                kind,
                role: "user",
                message,
            });
        }
        if msg.summary {
            return Err(Violation::StepOnSummary(message));
        }
        Ok(())
    }

    fn check_message_errored(&self, message: MessageId) -> Result<(), Violation> {
        let Some(msg) = self.target_message(message)? else {
            return Ok(());
        };
        if msg.summary {
            // An errored summary must never be a pivot: the job says so.
            return Err(Violation::SummaryErrorNeedsJobEvent(message));
        }
        Ok(())
    }

    /// A job that is requested or running.
    fn pending_job(&self, job: MessageId) -> Result<&Job, Violation> {
        let j = self.existing_job(job)?;
        if !j.status.is_pending() {
            return Err(Violation::JobState {
                job,
                status: j.status.name(),
                expected: "requested or running",
            });
        }
        Ok(j)
    }

    fn check_compaction_requested(
        &self,
        message: MessageId,
        part: PartId,
        trigger: &CompactionTrigger,
    ) -> Result<(), Violation> {
        self.ensure_new_message(message)?;
        self.ensure_new_part(part)?;
        if let CompactionTrigger::Overflow { step, .. } = trigger {
            self.target_message(*step)?;
        }
        Ok(())
    }

    fn check_compaction_started(
        &self,
        job: MessageId,
        summary_message: MessageId,
        tail_start: Option<MessageId>,
    ) -> Result<(), Violation> {
        self.pending_job(job)?;
        self.ensure_new_message(summary_message)?;
        match tail_start {
            Some(t) => self.check_tail(job, t),
            None => Ok(()),
        }
    }

    fn check_summary_completed(
        &self,
        job: MessageId,
        part: PartId,
        reason: &FinishReason,
    ) -> Result<(), Violation> {
        let j = self.existing_job(job)?;
        if j.status != JobStatus::Running {
            return Err(Violation::JobState {
                job,
                status: j.status.name(),
                expected: "running",
            });
        }
        self.ensure_new_part(part)?;
        if *reason == FinishReason::Error {
            return Err(Violation::SummaryFinishedWithError(job));
        }
        self.check_window_moves_forward(j)?;
        let summary = j
            .summary
            .and_then(|s| self.message(s))
            .ok_or(Violation::UnknownJob(job))?;
        let has_text = summary.parts.iter().any(Part::is_nonblank_text);
        if !has_text {
            return Err(Violation::EmptySummary(job));
        }
        Ok(())
    }

    /// A job that becomes the pivot must not start the window before where
    /// it starts now (its sealed history cannot be sent again).
    fn check_window_moves_forward(&self, j: &Job) -> Result<(), Violation> {
        let (Some(tail), Some(marker)) = (j.tail_start, self.message_index(j.marker)) else {
            return Ok(());
        };
        let current = self.pivot().and_then(|p| self.message_index(p.marker));
        if current.is_some_and(|c| c > marker) {
            return Ok(()); // an older job: the pivot does not move
        }
        let start = self.window_start();
        match self.message_index(tail) {
            Some(t) if t < start => Err(Violation::TailBeforeWindow {
                job: j.marker,
                tail,
                start: self.messages.get(start).map_or(j.marker, |m| m.id),
            }),
            _ => Ok(()),
        }
    }

    fn check_parts_pruned(&self, parts: &[PrunedPart], total_tokens: u64) -> Result<(), Violation> {
        if parts.is_empty() {
            return Err(Violation::NoParts);
        }
        let mut seen = BTreeSet::new();
        let mut sum = 0u64;
        for PrunedPart { part, tokens } in parts {
            if !seen.insert(*part) {
                return Err(Violation::RepeatedPart(*part));
            }
            let Some((_, p)) = self.target_part(*part)? else {
                // A part of a message the state dropped: counted.
                sum = sum.saturating_add(*tokens);
                continue;
            };
            if p.completed_output_units().is_none() {
                return Err(Violation::NotPrunable(*part));
            }
            if p.pruned.is_some() {
                return Err(Violation::AlreadyPruned(*part));
            }
            sum = sum.saturating_add(*tokens);
        }
        if sum != total_tokens {
            return Err(Violation::TokenSumMismatch {
                stated: total_tokens,
                sum,
            });
        }
        Ok(())
    }

    fn check_parts_restored(&self, parts: &[PartId]) -> Result<(), Violation> {
        if parts.is_empty() {
            return Err(Violation::NoParts);
        }
        let mut seen = BTreeSet::new();
        for part in parts {
            if !seen.insert(*part) {
                return Err(Violation::RepeatedPart(*part));
            }
            let (_, p) = self.part(*part).ok_or(Violation::UnknownPart(*part))?;
            if p.pruned.is_none() {
                return Err(Violation::NotPruned(*part));
            }
        }
        Ok(())
    }
}

/// Source fields are a JSON object.
pub(crate) fn check_fields_object(fields: &Json) -> Result<(), Violation> {
    match fields {
        Json::Object(_) => Ok(()),
        _ => Err(Violation::SourceFieldsNotAnObject),
    }
}

/// A new part `body` on a message of `role` (`message`): never a step
/// finish or a compaction part (they have events of their own), and a
/// tool call, reasoning or step start only on an assistant's.
pub(crate) fn check_new_body(
    role: Role,
    message: MessageId,
    body: &PartBody,
) -> Result<(), Violation> {
    match body {
        PartBody::StepFinish { .. } => Err(Violation::DedicatedEventRequired {
            kind: "step-finish",
            event: "step_finished or summary_completed",
        }),
        PartBody::Compaction { .. } => Err(Violation::DedicatedEventRequired {
            kind: "compaction",
            event: "compaction_requested",
        }),
        PartBody::Tool { .. } | PartBody::Reasoning { .. } | PartBody::StepStart { .. }
            if role != Role::Assistant =>
        {
            Err(Violation::WrongRole {
                kind: body.kind(),
                role: role.as_str(),
                message,
            })
        }
        _ => Ok(()),
    }
}

fn check_update(old: &Part, body: &PartBody) -> Result<(), Violation> {
    let kind = old.kind();
    if matches!(kind, "step-finish" | "compaction") {
        return Err(Violation::ImmutablePart(kind));
    }
    if old.pruned.is_some() {
        return Err(Violation::PartPruned(old.id));
    }
    match (old.tool_call(), body) {
        (
            Some((c0, t0)),
            PartBody::Tool {
                call_id: c1,
                tool: t1,
                ..
            },
        ) => {
            if c0 != c1 || t0 != t1 {
                Err(Violation::KindChanged {
                    part: old.id,
                    from: format!("tool {t0} call {c0}"),
                    to: format!("tool {t1} call {c1}"),
                })
            } else {
                Ok(())
            }
        }
        _ if kind == body.kind() => Ok(()),
        _ => Err(Violation::KindChanged {
            part: old.id,
            from: kind.into(),
            to: body.kind().into(),
        }),
    }
}
