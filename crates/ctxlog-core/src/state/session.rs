//! [`SessionState`]: everything derived from one session's events, and the
//! queries the views and the decisions read it through.

use super::index::Index;
use super::job::{Job, JobStatus};
use super::message::Message;
use crate::error::RefusedEvent;
use crate::event::{Envelope, SessionAbout};
use crate::ids::{EventId, MessageId, PartId, Seq, SessionId, TimestampMs};
use crate::part::Part;
use crate::policy::{ModelLimits, OverflowCheck, Policy, TokenUsage};
use serde::{Deserialize, Serialize};

/// The last finished model call, for the overflow check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastFinished {
    /// Its message.
    pub message: MessageId,
    /// Whether it was a compaction summary (never checked for overflow).
    pub summary: bool,
    /// Its usage.
    pub tokens: TokenUsage,
    /// Seq of the event that finished it.
    pub seq: Seq,
}

/// Everything derived from one session's events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// The session, once started.
    pub session: Option<SessionId>,
    /// Seq of the last applied event (0 = none).
    pub head: Seq,
    /// Id of the last applied event.
    pub last_event: Option<EventId>,
    /// When the session started, ms.
    pub started_at: TimestampMs,
    /// Title: `SessionStarted`'s, then the last `SessionDescribed`'s.
    pub title: Option<String>,
    /// The last `SessionDescribed`'s description.
    pub about: Option<SessionAbout>,
    /// The session that holds a newer version of the recording
    /// (`SessionReplaced`).
    pub replaced_by: Option<SessionId>,
    /// Id of the recorded source session.
    pub source_id: Option<String>,
    /// The policy in force.
    pub policy: Policy,
    /// The model's limits in force.
    pub limits: ModelLimits,
    /// All messages, in append order. Nothing is ever removed.
    pub messages: Vec<Message>,
    /// The parts of `messages[..sealed]` are sealed: the window starts
    /// after them and never moves back, so their content is left in the
    /// log (see [`crate::part`]).
    pub sealed: usize,
    /// All compaction jobs, in request order.
    pub jobs: Vec<Job>,
    /// The last finished model call.
    pub last_finished: Option<LastFinished>,
    /// Set while the loop guard has paused automatic compaction (until the
    /// next real user message).
    pub auto_paused: Option<String>,
    #[serde(skip)]
    pub(super) index: Index,
}

impl SessionState {
    /// An empty state, before `SessionStarted`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds `events` from an empty state.
    pub fn replay<'a>(
        events: impl IntoIterator<Item = &'a Envelope>,
    ) -> Result<Self, RefusedEvent> {
        let mut state = Self::new();
        for e in events {
            state.evolve(e)?;
        }
        Ok(state)
    }

    /// Position of a message in `messages`.
    pub fn message_index(&self, id: MessageId) -> Option<usize> {
        self.index.message(&id)
    }

    /// A message by id.
    pub fn message(&self, id: MessageId) -> Option<&Message> {
        self.message_index(id).and_then(|i| self.messages.get(i))
    }

    /// A part by id, with its message.
    pub fn part(&self, id: PartId) -> Option<(&Message, &Part)> {
        let (mi, pi) = self.index.part(&id)?;
        let m = self.messages.get(mi)?;
        Some((m, m.parts.get(pi)?))
    }

    /// A compaction job by its marker id.
    pub fn job(&self, marker: MessageId) -> Option<&Job> {
        self.index.job(&marker).and_then(|i| self.jobs.get(i))
    }

    /// Jobs still to run (requested or started, not finished), oldest first.
    pub fn pending_jobs(&self) -> impl Iterator<Item = &Job> {
        self.jobs.iter().filter(|j| j.status.is_pending())
    }

    /// The latest completed pivot: the completed job whose marker is newest.
    pub fn pivot(&self) -> Option<&Job> {
        self.jobs
            .iter()
            .filter(|j| matches!(j.status, JobStatus::Completed { .. }))
            .max_by_key(|j| self.message_index(j.marker))
    }

    /// Position of the first message the window can send: the latest
    /// pivot's recorded tail, else its marker; 0 before any pivot. It never
    /// moves back (the reducer refuses a summary that would move it).
    pub fn window_start(&self) -> usize {
        let Some(job) = self.pivot() else {
            return 0;
        };
        let marker = self.message_index(job.marker).unwrap_or(0);
        job.tail_start
            .and_then(|t| self.message_index(t))
            .map_or(marker, |t| t.min(marker))
    }

    /// The overflow check of the last finished step; `None` when no step has
    /// finished or the last finished call was a summary (never checked).
    pub fn overflow(&self) -> Option<OverflowCheck> {
        let last = self.last_finished.as_ref()?;
        if last.summary {
            return None;
        }
        Some(self.policy.check_overflow(&self.limits, &last.tokens))
    }

    /// All parts currently pruned, in message order.
    pub fn pruned_parts(&self) -> impl Iterator<Item = (&Message, &Part)> {
        self.messages
            .iter()
            .flat_map(|m| m.parts.iter().map(move |p| (m, p)))
            .filter(|(_, p)| p.pruned.is_some())
    }
}
