//! The derived session state and its reducer, [`SessionState::evolve`].
//!
//! `evolve` is pure and deterministic: it reads only the state and the
//! envelope (never a clock, a random source or hash-map order), and it is
//! atomic: every check runs before the first mutation, so a refused event
//! leaves the state exactly as it was.

use crate::error::{RefusedEvent, Violation};
use crate::event::{
    CompactionTrigger, Envelope, Event, FinishReason, MessageError, ModelRef, PartBody,
    PromptRecord, PrunedPart, Role, SessionAbout, SourceTarget,
};
use crate::ids::{EventId, MessageId, PartId, Seq, SessionId, TimestampMs};
use crate::json::Json;
use crate::lookup::Lookup;
use crate::policy::{ModelLimits, OverflowCheck, Policy, TokenUsage};
use crate::window::estimate_part;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Version of the reducer's output; snapshots of another version are
/// discarded and rebuilt by a full replay (4: the policy in the state
/// gained `threshold_percent`; 5: parts before the window are sealed, their
/// content left in the log; 6: a message records whether it was withdrawn;
/// 7: the policy in the state gained `pivot` and `check_at`).
pub const REDUCER_VERSION: u32 = 7;

pub use crate::part::{Body, Part, PruneMark};
use crate::part::{ContentError, Contents};

/// A message as the state holds it. Its larger optional fields (model,
/// usage, error) are boxed: a long session holds hundreds of thousands of
/// messages, and boxing keeps each at a third of its inline size (the
/// encoding is the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Its id.
    pub id: MessageId,
    /// User or assistant.
    pub role: Role,
    /// Agent name (boxed strings here and below: no spare capacity;
    /// encoded as strings).
    pub agent: Option<Box<str>>,
    /// Model.
    pub model: Option<Box<ModelRef>>,
    /// Written by the runtime.
    pub synthetic: bool,
    /// The message it answers.
    pub parent: Option<MessageId>,
    /// Id in the recorded source.
    pub source_id: Option<Box<str>>,
    /// A compaction summary (assistant, created by `CompactionStarted`).
    pub summary: bool,
    /// A compaction marker (user, created by `CompactionRequested`).
    pub marker: bool,
    /// Seq of the event that created it.
    pub created_seq: Seq,
    /// When it was created, ms.
    pub created_at: TimestampMs,
    /// Finish reason of its last step.
    pub finish: Option<FinishReason>,
    /// Usage of its last step (overwritten by each step, as OpenCode does).
    pub tokens: Option<Box<TokenUsage>>,
    /// Error recorded on it.
    pub error: Option<Box<MessageError>>,
    /// Taken back by the agent ([`Event::MessagesWithdrawn`]): never sent
    /// again, never pruned.
    pub withdrawn: bool,
    /// Its parts, in order.
    pub parts: Vec<Part>,
}

impl Message {
    /// The texts of its text parts, in order, read back from `log` where
    /// sealed.
    pub fn texts_in<L: Contents + ?Sized>(&self, log: &L) -> Result<Vec<String>, ContentError> {
        let mut texts = Vec::new();
        for p in &self.parts {
            if p.kind() != "text" {
                continue;
            }
            if let PartBody::Text { text, .. } = &*p.body_in(log)? {
                texts.push(text.clone());
            }
        }
        Ok(texts)
    }
}

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
}

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
    index: Index,
}

/// Lookup tables, rebuilt from `messages` and `jobs`; never serialized.
/// Positions are kept as `u32`, which makes the tables a quarter smaller:
/// a session in memory holds far fewer than 2^32 messages or parts (each
/// costs more than 60 bytes, so 2^32 would take over 256 GiB).
#[derive(Debug, Clone, Default, PartialEq)]
struct Index {
    messages: Lookup<MessageId, u32>,
    parts: Lookup<PartId, (u32, u32)>,
    jobs: Lookup<MessageId, u32>,
    /// Each part's estimated tokens as it is sent (under the policy's
    /// estimator), by message and part position; empty for a sealed
    /// message (no window sends its parts again; its sum stays below).
    part_tokens: Vec<Vec<u64>>,
    /// Their sum per message: the window estimate adds these up, so a step
    /// costs O(messages in the window), not O(their text).
    message_tokens: Vec<u64>,
}

/// `i` as the index keeps it (saturating at `u32::MAX`, out of reach).
fn slot(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

impl Index {
    fn message(&self, id: &MessageId) -> Option<usize> {
        self.messages.get(id).map(|i| i as usize)
    }

    fn part(&self, id: &PartId) -> Option<(usize, usize)> {
        self.parts
            .get(id)
            .map(|(mi, pi)| (mi as usize, pi as usize))
    }

    fn job(&self, id: &MessageId) -> Option<usize> {
        self.jobs.get(id).map(|i| i as usize)
    }

    fn insert_message(&mut self, id: MessageId, at: usize) {
        self.messages.insert(id, slot(at));
    }

    fn insert_part(&mut self, id: PartId, message: usize, at: usize) {
        self.parts.insert(id, (slot(message), slot(at)));
    }

    fn insert_job(&mut self, id: MessageId, at: usize) {
        self.jobs.insert(id, slot(at));
    }
}

fn validate_policy(p: &Policy) -> Result<(), Violation> {
    let crate::policy::Estimator::CharsPerToken { chars_per_token } = p.estimator;
    if chars_per_token == 0 {
        return Err(Violation::InvalidPolicy(
            "chars_per_token must be at least 1",
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
    fn refresh_part_tokens(&mut self, id: PartId) {
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

    /// Seals the parts of every message before `start` not sealed yet.
    fn seal_before(&mut self, start: usize) {
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
            Event::ImportStarted { .. } => Ok(()),
            other => Err(Violation::NotADescription(other.kind())),
        }
    }

    fn ensure_new_message(&self, id: MessageId) -> Result<(), Violation> {
        if self.index.messages.contains_key(&id) {
            return Err(Violation::DuplicateMessage(id));
        }
        Ok(())
    }

    fn ensure_new_part(&self, id: PartId) -> Result<(), Violation> {
        if self.index.parts.contains_key(&id) {
            return Err(Violation::DuplicatePart(id));
        }
        Ok(())
    }

    fn existing_message(&self, id: MessageId) -> Result<&Message, Violation> {
        self.message(id).ok_or(Violation::UnknownMessage(id))
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
    fn check(&self, env: &Envelope) -> Result<(), Violation> {
        self.check_envelope(env)?;
        match &env.event {
            Event::SessionStarted { policy, .. } | Event::PolicyChanged { policy } => {
                validate_policy(policy)
            }
            Event::LimitsChanged { .. }
            | Event::AutoCompactionPaused { .. }
            | Event::SessionDescribed { .. }
            | Event::ImportStarted { .. } => Ok(()),
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
            if self.existing_message(*id)?.withdrawn {
                return Err(Violation::AlreadyWithdrawn(*id));
            }
        }
        Ok(())
    }

    /// Source fields complete an object that exists, with a JSON object.
    fn check_source_fields(&self, target: SourceTarget, fields: &Json) -> Result<(), Violation> {
        match target {
            SourceTarget::Session => {}
            SourceTarget::Message(m) => {
                self.existing_message(m)?;
            }
            SourceTarget::Part(p) => {
                self.part(p).ok_or(Violation::UnknownPart(p))?;
            }
        }
        if !matches!(fields, Json::Object(_)) {
            return Err(Violation::SourceFieldsNotAnObject);
        }
        Ok(())
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
            self.existing_message(p)?;
        }
        Ok(())
    }

    fn check_part_appended(
        &self,
        message: MessageId,
        part: PartId,
        body: &PartBody,
    ) -> Result<(), Violation> {
        let msg = self.existing_message(message)?;
        self.ensure_new_part(part)?;
        self.check_compaction_message_open(msg, body)?;
        check_new_body(msg, body)
    }

    fn check_part_updated(&self, part: PartId, body: &PartBody) -> Result<(), Violation> {
        let (msg, old) = self.part(part).ok_or(Violation::UnknownPart(part))?;
        self.check_compaction_message_open(msg, body)?;
        check_update(old, body)
    }

    fn check_step_finished(&self, message: MessageId, part: PartId) -> Result<(), Violation> {
        self.existing_message(message)?;
        self.ensure_new_part(part)?;
        self.check_agent_step(message, "step-finish")
    }

    /// A step (`kind`: its finish, or the usage it reported) is an agent's
    /// assistant message, never a summary.
    fn check_agent_step(&self, message: MessageId, kind: &'static str) -> Result<(), Violation> {
        let msg = self.existing_message(message)?;
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
        let msg = self.existing_message(message)?;
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
            self.existing_message(*step)?;
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
        if let Some(t) = tail_start {
            let before = match (self.message_index(t), self.message_index(job)) {
                (Some(ti), Some(mi)) => ti < mi,
                _ => false,
            };
            if !before {
                return Err(Violation::BadTailStart {
                    tail: t,
                    marker: job,
                });
            }
        }
        Ok(())
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
            let (_, p) = self.part(*part).ok_or(Violation::UnknownPart(*part))?;
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

    fn push_message(&mut self, msg: Message) {
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

    // The lookups below find what `check` validated; on a state that breaks
    // its own invariants (a damaged snapshot) they do nothing rather than
    // panic.

    fn push_part(&mut self, message: MessageId, mut part: Part) {
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

    fn part_mut(&mut self, id: PartId) -> Option<&mut Part> {
        let (mi, pi) = self.index.part(&id)?;
        self.messages.get_mut(mi)?.parts.get_mut(pi)
    }

    fn job_mut(&mut self, id: MessageId) -> Option<&mut Job> {
        let i = self.index.job(&id)?;
        self.jobs.get_mut(i)
    }

    fn message_mut(&mut self, id: MessageId) -> Option<&mut Message> {
        let i = self.index.message(&id)?;
        self.messages.get_mut(i)
    }

    fn set_message_error(&mut self, id: MessageId, error: MessageError) {
        if let Some(m) = self.message_mut(id) {
            m.error = Some(Box::new(error));
        }
    }

    fn new_message(env: &Envelope, id: MessageId, role: Role) -> Message {
        Message {
            id,
            role,
            agent: None,
            model: None,
            synthetic: false,
            parent: None,
            source_id: None,
            summary: false,
            marker: false,
            created_seq: env.seq,
            created_at: env.recorded_at,
            finish: None,
            tokens: None,
            error: None,
            withdrawn: false,
            parts: Vec::new(),
        }
    }

    /// Applies a checked event. Every lookup here was validated by `check`.
    fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::SessionStarted {
                policy,
                limits,
                title,
                source_id,
            } => {
                self.session = Some(env.session);
                self.started_at = env.recorded_at;
                self.policy = policy.clone();
                self.limits = limits.clone();
                self.title = title.clone();
                self.source_id = source_id.clone();
            }
            Event::PolicyChanged { policy } => {
                let estimator_changed = policy.estimator != self.policy.estimator;
                self.policy = policy.clone();
                if estimator_changed {
                    self.rebuild_index();
                }
            }
            Event::LimitsChanged { limits } => self.limits = limits.clone(),
            Event::CompactionAttempted { .. }
            | Event::SourceFields { .. }
            | Event::ImportStarted { .. } => {}
            Event::SessionDescribed { about } => {
                self.title = about.title.clone();
                self.about = Some(about.clone());
            }
            Event::SessionReplaced { by } => self.replaced_by = Some(*by),
            Event::AutoCompactionPaused { reason, .. } => self.auto_paused = Some(reason.clone()),
            Event::MessageAppended {
                message,
                role,
                agent,
                model,
                synthetic,
                parent,
                source_id,
            } => {
                if *role == Role::User && !*synthetic {
                    self.auto_paused = None;
                }
                self.push_message(Message {
                    agent: agent.as_deref().map(Box::from),
                    model: model.clone().map(Box::new),
                    synthetic: *synthetic,
                    parent: *parent,
                    source_id: source_id.as_deref().map(Box::from),
                    ..Self::new_message(env, *message, *role)
                });
            }
            Event::PartAppended {
                message,
                part,
                body,
                source_id,
            } => self.push_part(
                *message,
                Part::held(*part, env.seq, body.clone(), source_id.clone()),
            ),
            Event::PartUpdated { part, body } => {
                let sealed = self
                    .index
                    .part(part)
                    .is_some_and(|(mi, _)| mi < self.sealed);
                if let Some(p) = self.part_mut(*part) {
                    p.body = Body::Held(Box::new(body.clone()));
                    p.seq = env.seq;
                    if sealed {
                        p.seal();
                    }
                }
                self.refresh_part_tokens(*part);
            }
            Event::StepFinished {
                message,
                part,
                reason,
                tokens,
                cost_micros,
            } => {
                self.finish_step(env.seq, *message, *part, reason, tokens, *cost_micros);
                self.set_last_finished(LastFinished {
                    message: *message,
                    summary: false,
                    tokens: *tokens,
                    seq: env.seq,
                });
            }
            Event::UsageReported { message, tokens } => {
                if let Some(m) = self.message_mut(*message) {
                    m.tokens = Some(Box::new(*tokens));
                }
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
            Event::PartsPruned { parts, policy, .. } => {
                for PrunedPart { part, tokens } in parts {
                    if let Some(p) = self.part_mut(*part) {
                        p.pruned = Some(Box::new(PruneMark {
                            seq: env.seq,
                            at: env.recorded_at,
                            policy: policy.clone(),
                            tokens: *tokens,
                        }));
                    }
                    self.refresh_part_tokens(*part);
                }
            }
            Event::PartsRestored { parts, .. } => {
                for part in parts {
                    if let Some(p) = self.part_mut(*part) {
                        p.pruned = None;
                    }
                    self.refresh_part_tokens(*part);
                }
            }
            Event::MessageErrored { message, error } => {
                self.set_message_error(*message, error.clone());
            }
            Event::MessagesWithdrawn { messages, .. } => {
                for id in messages {
                    if let Some(m) = self.message_mut(*id) {
                        m.withdrawn = true;
                    }
                }
            }
        }
    }

    /// The marker message, its compaction part and the job, requested.
    fn apply_compaction_requested(&mut self, env: &Envelope) {
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
            ..Self::new_message(env, *message, Role::User)
        });
        let body = PartBody::Compaction {
            auto: *auto,
            overflow: *overflow,
        };
        self.push_part(*message, Part::held(*part, env.seq, body, None));
        self.index.insert_job(*message, self.jobs.len());
        self.jobs.push(Job {
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
        });
    }

    /// A new attempt: the previous attempt's summary is superseded, the new
    /// summary message is created and the job runs.
    fn apply_compaction_started(&mut self, env: &Envelope) {
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
        if let Some(old) = self.job(*job).and_then(|j| j.summary) {
            self.set_message_error(
                old,
                MessageError {
                    name: "CompactionRestarted".into(),
                    message: "superseded by a new attempt of the same job".into(),
                },
            );
        }
        self.push_message(Message {
            agent: agent.as_deref().map(Box::from),
            model: model.clone().map(Box::new),
            parent: Some(*job),
            summary: true,
            source_id: source_id.as_deref().map(Box::from),
            ..Self::new_message(env, *summary_message, Role::Assistant)
        });
        if let Some(j) = self.job_mut(*job) {
            j.status = JobStatus::Running;
            j.attempts += 1;
            j.summary = Some(*summary_message);
            j.tail_start = *tail_start;
            j.prompt = prompt.clone();
        }
    }

    fn apply_summary_completed(
        &mut self,
        seq: Seq,
        job: MessageId,
        part: PartId,
        reason: &FinishReason,
        tokens: &TokenUsage,
        redactions: u32,
    ) {
        let Some(summary) = self.job(job).and_then(|j| j.summary) else {
            return;
        };
        self.finish_step(seq, summary, part, reason, tokens, None);
        if let Some(j) = self.job_mut(job) {
            j.status = JobStatus::Completed { seq };
            j.redactions = redactions;
        }
        let start = self.window_start();
        self.seal_before(start);
        self.set_last_finished(LastFinished {
            message: summary,
            summary: true,
            tokens: *tokens,
            seq,
        });
    }

    fn apply_compaction_failed(&mut self, job: MessageId, error: &str) {
        if let Some(s) = self.job(job).and_then(|j| j.summary) {
            self.set_message_error(
                s,
                MessageError {
                    name: "CompactionFailed".into(),
                    message: error.to_owned(),
                },
            );
        }
        if let Some(j) = self.job_mut(job) {
            j.status = JobStatus::Failed {
                error: error.to_owned(),
            };
        }
    }

    /// `last_finished` is the newest message (in log order) that has a finish,
    /// as upstream's `lastFinished`; a late step of an older message does not
    /// move it back.
    fn set_last_finished(&mut self, candidate: LastFinished) {
        let newer = match &self.last_finished {
            None => true,
            Some(cur) => self.message_index(candidate.message) >= self.message_index(cur.message),
        };
        if newer {
            self.last_finished = Some(candidate);
        }
    }

    fn finish_step(
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

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn check_new_body(msg: &Message, body: &PartBody) -> Result<(), Violation> {
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
            if msg.role != Role::Assistant =>
        {
            Err(Violation::WrongRole {
                kind: body.kind(),
                role: role_name(msg.role),
                message: msg.id,
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
