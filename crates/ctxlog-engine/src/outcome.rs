//! What engine calls report: step and job outcomes, and the notices sent to
//! subscribers after events are durable.

use ctxlog_core::{MessageId, OverflowCheck, SessionId};

/// What a finished step led to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepOutcome {
    /// The step's message.
    pub message: MessageId,
    /// The overflow check of this step.
    pub overflow: Option<OverflowCheck>,
    /// The compaction job queued because of it, if any.
    pub queued: Option<MessageId>,
}

/// What the check before a model request found ([`crate::Session::before_request`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestCheck {
    /// The check, when the policy checks before requests and a step was
    /// answered since the latest compaction.
    pub overflow: Option<OverflowCheck>,
    /// The compaction job queued because of it, if any: run it before the
    /// request ([`crate::Session::run_pending`]).
    pub queued: Option<MessageId>,
}

/// What became of one compaction job (as JSON, tagged by `status`:
/// `completed` or `failed`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum JobOutcome {
    /// The summary completed; the window now starts at the marker.
    Completed {
        /// The job.
        job: MessageId,
        /// The summary message.
        summary: MessageId,
        /// Whether a message resuming the session was appended (the
        /// refused prompt again, or the policy's continue message); never
        /// after a manual compaction, nor under a policy that writes none.
        continued: bool,
        /// Secrets redacted from the summary.
        redactions: u32,
        /// Why the loop guard paused automatic compaction after it, if it did.
        paused: Option<String>,
    },
    /// The job failed; history is as it was.
    Failed {
        /// The job.
        job: MessageId,
        /// Why.
        error: String,
        /// Why the loop guard paused automatic compaction after it, if it did.
        paused: Option<String>,
    },
}

impl JobOutcome {
    /// The job.
    pub fn job(&self) -> MessageId {
        match self {
            JobOutcome::Completed { job, .. } | JobOutcome::Failed { job, .. } => *job,
        }
    }

    /// The loop guard's pause after this job, if any.
    pub fn paused(&self) -> Option<&str> {
        match self {
            JobOutcome::Completed { paused, .. } | JobOutcome::Failed { paused, .. } => {
                paused.as_deref()
            }
        }
    }
}

/// What the engine tells its subscribers, after the events are durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A compaction completed: the window now starts at its marker.
    Compacted {
        /// The session.
        session: SessionId,
        /// The job.
        job: MessageId,
    },
    /// A compaction failed; history is as it was.
    CompactionFailed {
        /// The session.
        session: SessionId,
        /// The job.
        job: MessageId,
        /// Why.
        error: String,
    },
    /// Tool outputs were pruned.
    Pruned {
        /// The session.
        session: SessionId,
        /// How many parts.
        parts: usize,
        /// Their estimated tokens.
        tokens: u64,
    },
    /// The loop guard paused automatic compaction.
    AutoCompactionPaused {
        /// The session.
        session: SessionId,
        /// Why.
        reason: String,
    },
}

impl Notice {
    /// The notice a committed event gives subscribers, if any.
    pub fn of(session: SessionId, event: &ctxlog_core::Event) -> Option<Notice> {
        use ctxlog_core::Event;
        Some(match event {
            Event::SummaryCompleted { job, .. } => Notice::Compacted { session, job: *job },
            Event::CompactionFailed { job, error } => Notice::CompactionFailed {
                session,
                job: *job,
                error: error.clone(),
            },
            Event::PartsPruned {
                parts,
                total_tokens,
                ..
            } => Notice::Pruned {
                session,
                parts: parts.len(),
                tokens: *total_tokens,
            },
            Event::AutoCompactionPaused { reason, .. } => Notice::AutoCompactionPaused {
                session,
                reason: reason.clone(),
            },
            _ => return None,
        })
    }
}
