//! Feeding a recording to the simulated engine: which recorded events pass
//! through, which are left out or held, and the usage each step reports.

use super::report::{Decision, SimulationReport};
use crate::clock::ManualClock;
use crate::{EngineError, Session, StepOutcome};
use ctxlog_core::window::is_continue_text;
use ctxlog_core::{Envelope, Event, MessageId, PartBody, PartId, Policy, Role, TokenUsage};
use ctxlog_store::MemoryLog;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The simulation's running state: what is left out, the labels of
/// decisions, and the usage model.
pub(super) struct Feed<'a> {
    pub(super) session: Session<'a, MemoryLog>,
    clock: Arc<ManualClock>,
    fixed_limits: bool,
    /// The simulated policy when it is an unmodified preset on the
    /// recording's own limits: a recorded change of that preset's threshold
    /// (an import's inference of the limit the agent was configured with)
    /// applies to it too.
    own_preset: Option<Policy>,
    /// Events waiting to be applied in one append.
    batch: Vec<Event>,
    pub(super) decisions: Vec<Decision>,
    /// Source id of the latest message, the label of what follows it.
    pub(super) last_source: String,
    /// The recording's own markers and summaries, with their parts.
    skipped_messages: BTreeSet<MessageId>,
    skipped_parts: BTreeSet<PartId>,
    pub(super) call_ids: BTreeMap<PartId, String>,
    pub(super) sources: BTreeMap<MessageId, String>,
    /// A decision differed from the recording's: its usage no longer
    /// measures the simulated window.
    pub(super) diverged: bool,
    /// The simulation compacted and the recording has not yet (its marker
    /// must come before its next message, or the two differ).
    pub(super) unmatched: Option<MessageId>,
    /// The latest assistant message whose step has not finished (a request
    /// the provider may have refused).
    pub(super) open_step: Option<MessageId>,
    /// The text of the prompt the simulation replayed after its latest
    /// compaction, if it replayed one.
    pub(super) replayed: Option<String>,
    /// The recording's own automatic summary just completed: a user message
    /// next may be its continue message or its replay of a refused prompt.
    after_recorded_summary: bool,
    /// The recording's automatic jobs.
    recorded_auto: BTreeSet<MessageId>,
    /// A user message right after a recorded automatic summary, held until
    /// its first part shows whether it is the continue message or a replay.
    held: Option<(MessageId, Envelope)>,
    overhead: Option<u64>,
    /// The estimated window when the current step started.
    step_window: u64,
    /// The policy checks before each request, not after each step
    /// ([`OverflowCheckAt::BeforeRequest`](ctxlog_core::OverflowCheckAt::BeforeRequest)).
    pub(super) checks_before_requests: bool,
    /// Source id of the latest finished step.
    pub(super) last_step_source: String,
    steps: u64,
    turns: u64,
}

impl<'a> Feed<'a> {
    /// A feed into `session`, nothing fed yet.
    pub(super) fn new(
        session: Session<'a, MemoryLog>,
        clock: Arc<ManualClock>,
        fixed_limits: bool,
        checks_before_requests: bool,
        own_preset: Option<Policy>,
    ) -> Self {
        Feed {
            session,
            clock,
            fixed_limits,
            own_preset,
            batch: Vec::new(),
            decisions: Vec::new(),
            last_source: String::new(),
            skipped_messages: BTreeSet::new(),
            skipped_parts: BTreeSet::new(),
            call_ids: BTreeMap::new(),
            sources: BTreeMap::new(),
            diverged: false,
            unmatched: None,
            open_step: None,
            replayed: None,
            after_recorded_summary: false,
            recorded_auto: BTreeSet::new(),
            held: None,
            overhead: None,
            step_window: 0,
            checks_before_requests,
            last_step_source: String::new(),
            steps: 0,
            turns: 0,
        }
    }

    /// What the simulation found, once fed: with the simulated `log`, its
    /// head (`events`) and the window estimate at the end.
    pub(super) fn report(
        self,
        log: Vec<Envelope>,
        events: u64,
        final_window: u64,
    ) -> SimulationReport {
        SimulationReport {
            log,
            decisions: self.decisions,
            steps: self.steps,
            turns: self.turns,
            overhead: self.overhead.unwrap_or(0),
            events,
            final_window,
        }
    }
}

impl Feed<'_> {
    /// Feeds `events` (the first, `SessionStarted`, started the session),
    /// then ends the last turn; `progress` is told how many were fed.
    pub(super) fn run(
        &mut self,
        events: &[Envelope],
        mut progress: impl FnMut(usize),
    ) -> Result<(), EngineError> {
        for (i, env) in events.iter().enumerate().skip(1) {
            progress(i);
            self.clock.advance_to(env.recorded_at);
            if self.hold_resume(env)? {
                continue;
            }
            if let Event::CompactionRequested {
                auto: true,
                overflow: true,
                ..
            } = env.event
            {
                self.refusal()?;
            }
            // The recording compacted where its agent was about to send a
            // request: a policy that checks then checks here.
            if let Event::CompactionRequested {
                auto: true,
                overflow: false,
                ..
            } = env.event
            {
                self.request_check()?;
            }
            if let Some(event) = self.keep(&env.event) {
                self.feed(env, event)?;
            }
        }
        if let Some((_, held)) = self.held.take() {
            self.feed_kept(&held)?;
        }
        self.flush()?;
        if self.turns > 0 {
            self.end_turn()?;
        }
        progress(events.len());
        Ok(())
    }

    /// Leaves out the recording's own resume after an automatic compaction
    /// (the policy under test decides how to resume): a user message right
    /// after a recorded automatic summary is held until its first part; it
    /// is dropped when it is a synthetic continue message, or the replay of
    /// the prompt the simulation replayed too; fed as recorded otherwise.
    /// True when `env` was taken.
    fn hold_resume(&mut self, env: &Envelope) -> Result<bool, EngineError> {
        if let Some((held_id, held)) = self.held.take() {
            if let Event::PartAppended {
                message,
                part,
                body: PartBody::Text { text, .. },
                ..
            } = &env.event
            {
                let synthetic = matches!(
                    held.event,
                    Event::MessageAppended {
                        synthetic: true,
                        ..
                    }
                );
                let resume = if synthetic {
                    is_continue_text(text)
                } else {
                    self.replayed.as_deref() == Some(text.as_str())
                };
                if *message == held_id && resume {
                    // A replay is left out once.
                    self.replayed = None;
                    self.skipped_messages.insert(held_id);
                    self.skipped_parts.insert(*part);
                    return Ok(true);
                }
            }
            self.feed_kept(&held)?;
            return Ok(false);
        }
        let after = std::mem::take(&mut self.after_recorded_summary);
        if let Event::MessageAppended {
            message,
            role: Role::User,
            ..
        } = &env.event
        {
            if after {
                self.held = Some((*message, env.clone()));
                return Ok(true);
            }
        } else if after {
            // Only the very next message can be the continue message.
            self.after_recorded_summary = !matches!(env.event, Event::MessageAppended { .. });
        }
        Ok(false)
    }

    fn feed_kept(&mut self, env: &Envelope) -> Result<(), EngineError> {
        match self.keep(&env.event) {
            Some(event) => self.feed(env, event),
            None => Ok(()),
        }
    }

    /// A recorded policy change as the simulation takes it: a change of the
    /// simulated preset's own threshold, applied to it (see
    /// [`Feed::own_preset`]); any other is left out.
    fn adopted(&self, recorded: &Policy) -> Option<Event> {
        let own = self
            .own_preset
            .as_ref()
            .filter(|p| p.name == recorded.name)?;
        Some(Event::PolicyChanged {
            policy: Policy {
                overflow: recorded.overflow.clone(),
                threshold_percent: recorded.threshold_percent,
                ..own.clone()
            },
        })
    }

    /// The event as the simulation feeds it, or `None` when it is left out.
    fn keep(&mut self, event: &Event) -> Option<Event> {
        match event {
            Event::CompactionRequested { message, auto, .. } => {
                self.skipped_messages.insert(*message);
                if *auto {
                    self.recorded_auto.insert(*message);
                }
                // The recording compacted here: so did the simulation, or
                // the two differ from now on.
                if self.unmatched.take().is_none() || !auto {
                    self.diverged = true;
                }
                return None;
            }
            Event::CompactionStarted {
                summary_message, ..
            } => {
                self.skipped_messages.insert(*summary_message);
                return None;
            }
            Event::SummaryCompleted { job, .. } => {
                self.after_recorded_summary = self.recorded_auto.contains(job);
                return None;
            }
            Event::CompactionFailed { .. }
            | Event::PartsPruned { .. }
            | Event::PartsRestored { .. }
            | Event::CompactionAttempted { .. }
            | Event::AutoCompactionPaused { .. }
            // What an import kept for an export of the recording itself.
            | Event::SourceFields { .. }
            | Event::SessionStarted { .. } => return None,
            Event::PolicyChanged { policy } => return self.adopted(policy),
            Event::LimitsChanged { .. } if self.fixed_limits => return None,
            // Usage is estimated once the simulation went its own way.
            Event::UsageReported { .. } if self.diverged => return None,
            Event::PartAppended { message, part, .. }
                if self.skipped_messages.contains(message) =>
            {
                self.skipped_parts.insert(*part);
                return None;
            }
            Event::PartUpdated { part, .. } if self.skipped_parts.contains(part) => return None,
            Event::MessageErrored { message, .. } if self.skipped_messages.contains(message) => {
                return None
            }
            _ => {}
        }
        let mut event = event.clone();
        if let Event::MessageAppended { parent, .. } = &mut event {
            // A message answering a left-out summary or marker answers nothing here.
            if parent.is_some_and(|p| self.skipped_messages.contains(&p)) {
                *parent = None;
            }
        }
        Some(event)
    }

    fn feed(&mut self, env: &Envelope, event: Event) -> Result<(), EngineError> {
        match &event {
            Event::MessageAppended {
                message,
                role,
                synthetic,
                source_id,
                ..
            } => {
                let label = source_id
                    .clone()
                    .unwrap_or_else(|| format!("seq:{}", env.seq));
                self.message_appended(*message, *role, *synthetic, label)?;
                self.batch.push(event);
            }
            Event::PartAppended {
                part,
                body: PartBody::Tool { call_id, .. },
                ..
            } => {
                self.call_ids.insert(*part, call_id.clone());
                self.batch.push(event);
            }
            Event::StepFinished {
                message,
                part,
                reason,
                tokens,
                cost_micros,
            } => {
                let after = self
                    .sources
                    .get(message)
                    .cloned()
                    .unwrap_or_else(|| format!("seq:{}", env.seq));
                let tokens = self.usage(tokens);
                self.open_step = None;
                self.last_step_source = after.clone();
                self.batch.push(Event::StepFinished {
                    message: *message,
                    part: *part,
                    reason: reason.clone(),
                    tokens,
                    cost_micros: *cost_micros,
                });
                if let Some(outcome) = self.flush()? {
                    self.after_step(after, outcome)?;
                }
            }
            _ => self.batch.push(event),
        }
        Ok(())
    }

    /// What a recorded message (labelled `label`) leads to before it is
    /// batched: the check before a request, the end of the turn before a
    /// later real user prompt, and the window at a step's start.
    fn message_appended(
        &mut self,
        message: MessageId,
        role: Role,
        synthetic: bool,
        label: String,
    ) -> Result<(), EngineError> {
        if role == Role::Assistant {
            // A new request: checked before it is sent (a compaction
            // here is one the recording did not make: its own comes
            // before this message).
            self.request_check()?;
        }
        if self.unmatched.take().is_some() {
            // The simulation compacted; the recording went on without.
            self.diverged = true;
        }
        if role.is_input() && !synthetic {
            if self.turns > 0 {
                self.flush()?;
                self.end_turn()?;
            }
            self.turns += 1;
        }
        self.open_step = (role == Role::Assistant).then_some(message);
        // The window at a step's start is needed only to measure the
        // overhead (first step) and once usage is estimated.
        if role == Role::Assistant && (self.diverged || self.overhead.is_none()) {
            self.flush()?;
            self.step_window = self.session.window_estimate()?;
        }
        self.sources.insert(message, label.clone());
        self.last_source = label;
        Ok(())
    }

    /// The usage a step reports: as recorded until the simulation's
    /// decisions differ from the recording's, then the estimate (see the
    /// `simulate` module documentation).
    fn usage(&mut self, recorded: &TokenUsage) -> TokenUsage {
        self.steps += 1;
        let prompt = recorded.input + recorded.cache_read + recorded.cache_write;
        if self.overhead.is_none() && prompt > 0 {
            self.overhead = Some(prompt.saturating_sub(self.step_window));
        }
        if !self.diverged {
            return *recorded;
        }
        TokenUsage {
            total: None,
            input: self.overhead.unwrap_or(0) + self.step_window,
            output: recorded.output,
            reasoning: recorded.reasoning,
            cache_read: 0,
            cache_write: 0,
        }
    }

    /// Applies the waiting events in one append.
    pub(super) fn flush(&mut self) -> Result<Option<StepOutcome>, EngineError> {
        let batch = std::mem::take(&mut self.batch);
        self.session.record(batch)
    }
}
