//! [`Job`]: a compaction job, and [`JobStatus`], where it is in its lifecycle.

use crate::event::{CompactionTrigger, PromptRecord};
use crate::ids::{MessageId, Seq};
use serde::{Deserialize, Serialize};

/// Where a compaction job is in its lifecycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobStatus {
    /// Queued, not started.
    Requested,
    /// Started (a summary message exists), not finished.
    Running,
    /// The summary completed: this job is a pivot.
    Completed {
        /// Seq of `SummaryCompleted`.
        seq: Seq,
    },
    /// Failed; history was left as it was.
    Failed {
        /// What went wrong.
        error: String,
    },
}

impl JobStatus {
    /// Short name.
    pub fn name(&self) -> &'static str {
        match self {
            JobStatus::Requested => "requested",
            JobStatus::Running => "running",
            JobStatus::Completed { .. } => "completed",
            JobStatus::Failed { .. } => "failed",
        }
    }

    /// Requested or running: still to be done.
    pub fn is_pending(&self) -> bool {
        matches!(self, JobStatus::Requested | JobStatus::Running)
    }
}

/// A compaction job: a marker message and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// The marker message (the job id).
    pub marker: MessageId,
    /// Automatic or manual.
    pub auto: bool,
    /// Triggered by a provider overflow.
    pub overflow: bool,
    /// Why it was requested.
    pub trigger: CompactionTrigger,
    /// Seq of `CompactionRequested`.
    pub requested_seq: Seq,
    /// Lifecycle state.
    pub status: JobStatus,
    /// How many times it started.
    pub attempts: u32,
    /// The summary message of the latest attempt.
    pub summary: Option<MessageId>,
    /// First message of the verbatim tail, if one was kept.
    pub tail_start: Option<MessageId>,
    /// The prompt used by the latest attempt.
    pub prompt: Option<PromptRecord>,
    /// Secrets redacted from the summary.
    pub redactions: u32,
    /// Agent steps finished when it was requested
    /// ([`SessionState::steps_finished`](super::SessionState::steps_finished)).
    pub steps_before: u64,
}
