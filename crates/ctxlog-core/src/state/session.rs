//! [`SessionState`]: everything derived from one session's events, and the
//! queries the views and the decisions read it through.

use super::index::Index;
use super::job::{Job, JobStatus};
use super::message::Message;
use super::tally::Tally;
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
    /// The messages the state holds, in append order: the window, and
    /// before it the closed messages a prune walk can still reach (those
    /// before are dropped, their content left in the log, counted in
    /// [`SessionState::evicted`]); when the state keeps its history
    /// ([`SessionState::keeping_history`]), the dropped ones too, first
    /// (before [`SessionState::present_from`]).
    pub messages: Vec<Message>,
    /// The parts of `messages[..sealed]` are sealed: the window starts
    /// after them and never moves back, so their content is left in the log
    /// (see [`crate::part`]).
    pub sealed: usize,
    /// What the dropped messages contributed to the session's figures when
    /// they were dropped, and prunes of their parts since (see
    /// [`SessionState::tally`]).
    pub evicted: Tally,
    /// All compaction jobs, in request order (one per compaction: small).
    pub jobs: Vec<Job>,
    /// Agent steps finished so far: assistant messages, not summaries,
    /// that have a finish (the loop guard counts back from it).
    pub steps_finished: u64,
    /// The last finished model call.
    pub last_finished: Option<LastFinished>,
    /// Set while the loop guard has paused automatic compaction (until the
    /// next real user message).
    pub auto_paused: Option<String>,
    #[serde(skip)]
    pub(super) index: Index,
    /// Whether dropped messages are let go (the default) or kept.
    #[serde(skip)]
    pub(super) retention: Retention,
    /// `messages[..kept_from]` are dropped, kept only when the state keeps
    /// its history (0 otherwise): no lookup but the `history_` ones finds
    /// them, and late events still change them (for views).
    #[serde(skip)]
    pub(super) kept_from: usize,
}

/// What a state does with the messages a pivot drops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Retention {
    /// Drops them: the state holds what the next decision needs, and its
    /// memory does not grow with the session's history.
    #[default]
    Window,
    /// Keeps them, sealed, in front, for views of the whole history (an
    /// export, a report). Everything else behaves as under `Window`.
    History,
}

impl SessionState {
    /// An empty state, before `SessionStarted`.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty state that keeps every message, dropped ones too, for views
    /// of the whole history. It accepts and refuses exactly what
    /// [`SessionState::new`] does, and has the same digest.
    pub fn keeping_history() -> Self {
        Self {
            retention: Retention::History,
            ..Self::default()
        }
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

    /// Folds `events` from an empty state that keeps its history
    /// ([`SessionState::keeping_history`]).
    pub fn replay_keeping_history<'a>(
        events: impl IntoIterator<Item = &'a Envelope>,
    ) -> Result<Self, RefusedEvent> {
        let mut state = Self::keeping_history();
        for e in events {
            state.evolve(e)?;
        }
        Ok(state)
    }

    /// Position in `messages` of a message the state has not dropped (in
    /// the window, or closed but still in the prune walk's reach): what
    /// events and decisions may refer to.
    pub fn message_index(&self, id: MessageId) -> Option<usize> {
        self.index.message(&id).filter(|&i| i >= self.kept_from)
    }

    /// A message the state has not dropped, by id.
    pub fn message(&self, id: MessageId) -> Option<&Message> {
        self.message_index(id).and_then(|i| self.messages.get(i))
    }

    /// A part of a message the state has not dropped, by id, with its
    /// message.
    pub fn part(&self, id: PartId) -> Option<(&Message, &Part)> {
        let (mi, pi) = self
            .index
            .part(&id)
            .filter(|&(mi, _)| mi >= self.kept_from)?;
        let m = self.messages.get(mi)?;
        Some((m, m.parts.get(pi)?))
    }

    /// The messages the state has not dropped: the window, and before it
    /// the closed messages a prune walk can still reach.
    pub fn present_messages(&self) -> &[Message] {
        self.messages.get(self.kept_from..).unwrap_or_default()
    }

    /// Position in `messages` of the first of [`SessionState::present_messages`]
    /// (0 unless the state keeps its history).
    pub fn present_from(&self) -> usize {
        self.kept_from
    }

    /// Whether a pivot dropped messages (or, keeping the history, treats
    /// them as dropped): an id the state does not know may then be one of
    /// theirs.
    pub fn has_dropped(&self) -> bool {
        self.evicted.messages > 0
    }

    /// The session's figures over its whole history: those of the messages
    /// it dropped plus those of the messages it has not. O(messages held).
    pub fn tally(&self) -> Tally {
        let mut t = self.evicted;
        self.present_messages()
            .iter()
            .for_each(|m| t.add_message(m));
        t
    }

    /// Position in `messages` of any message the state holds, dropped or
    /// not (the latest with this id): for views of the history.
    pub fn history_index(&self, id: MessageId) -> Option<usize> {
        self.index.message(&id)
    }

    /// Any message the state holds, dropped or not, by id (the latest with
    /// this id).
    pub fn history_message(&self, id: MessageId) -> Option<&Message> {
        self.history_index(id).and_then(|i| self.messages.get(i))
    }

    /// Any part the state holds, dropped or not, with its message.
    pub fn history_part(&self, id: PartId) -> Option<(&Message, &Part)> {
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

    /// The parts the state holds that are currently pruned, in message
    /// order (the count over the whole history: [`SessionState::tally`]).
    pub fn pruned_parts(&self) -> impl Iterator<Item = (&Message, &Part)> {
        self.messages
            .iter()
            .flat_map(|m| m.parts.iter().map(move |p| (m, p)))
            .filter(|(_, p)| p.pruned.is_some())
    }
}
