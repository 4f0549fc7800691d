//! The reducer's side of the compaction lifecycle: a job requested, started,
//! completed (the window pivots and what falls before it is sealed) or
//! failed.

use super::job::{Job, JobStatus};
use super::message::Message;
use super::session::{LastFinished, SessionState};
use crate::event::{Envelope, Event, FinishReason, PartBody, Role};
use crate::ids::{MessageId, PartId, Seq};
use crate::part::Part;
use crate::policy::TokenUsage;

impl SessionState {
    /// The marker message, its compaction part and the job, requested.
    pub(super) fn apply_compaction_requested(&mut self, env: &Envelope) {
        let Event::CompactionRequested {
            message,
            part,
            auto,
            overflow,
            trigger,
            agent,
            model,
            source_id,
        } = &env.event
        else {
            return;
        };
        self.push_message(Message {
            agent: agent.as_deref().map(Box::from),
            model: model.clone().map(Box::new),
            marker: true,
            source_id: source_id.as_deref().map(Box::from),
            ..Message::blank(env, *message, Role::User)
        });
        let body = PartBody::Compaction {
            auto: *auto,
            overflow: *overflow,
        };
        self.push_part(*message, Part::held(*part, env.seq, body, None));
        self.push_job(Job {
            marker: *message,
            auto: *auto,
            overflow: *overflow,
            trigger: trigger.clone(),
            requested_seq: env.seq,
            status: JobStatus::Requested,
            attempts: 0,
            summary: None,
            tail_start: None,
            prompt: None,
            redactions: 0,
            steps_before: self.steps_finished,
        });
    }

    /// A new attempt: the previous attempt's summary is superseded, the new
    /// summary message is created and the job runs.
    pub(super) fn apply_compaction_started(&mut self, env: &Envelope) {
        let Event::CompactionStarted {
            job,
            summary_message,
            agent,
            model,
            prompt,
            tail_start,
            source_id,
        } = &env.event
        else {
            return;
        };
        // The superseded summary's error: `errors_set_by`.
        self.push_message(Message {
            agent: agent.as_deref().map(Box::from),
            model: model.clone().map(Box::new),
            parent: Some(*job),
            summary: true,
            source_id: source_id.as_deref().map(Box::from),
            ..Message::blank(env, *summary_message, Role::Assistant)
        });
        debug_assert!(
            self.job(*job).is_some(),
            "check let through a start of no job"
        );
        if let Some(j) = self.job_mut(*job) {
            j.status = JobStatus::Running;
            j.attempts += 1;
            j.summary = Some(*summary_message);
            j.tail_start = *tail_start;
            j.prompt = prompt.clone();
        }
    }

    /// The summary's step finishes and the job completes: the window pivots
    /// and what falls before its new start is closed.
    pub(super) fn apply_summary_completed(
        &mut self,
        seq: Seq,
        job: MessageId,
        part: PartId,
        reason: &FinishReason,
        tokens: &TokenUsage,
        redactions: u32,
    ) {
        let Some(summary) = self.job(job).and_then(|j| j.summary) else {
            debug_assert!(
                false,
                "check let through the completion of a job with no summary"
            );
            return;
        };
        self.finish_step(seq, summary, part, reason, tokens, None);
        if let Some(j) = self.job_mut(job) {
            j.status = JobStatus::Completed { seq };
            j.redactions = redactions;
        }
        let start = self.window_start();
        self.close_before(start);
        self.set_last_finished(LastFinished {
            message: summary,
            summary: true,
            tokens: *tokens,
            seq,
        });
    }

    /// The job fails (the summary of its latest attempt carries the error:
    /// `errors_set_by`).
    pub(super) fn apply_compaction_failed(&mut self, job: MessageId, error: &str) {
        debug_assert!(
            self.job(job).is_some(),
            "check let through a failure of no job"
        );
        if let Some(j) = self.job_mut(job) {
            j.status = JobStatus::Failed {
                error: error.to_owned(),
            };
        }
    }
}
