//! `simulate`: a recorded session run through an [`Engine`] over an
//! in-memory log ([`MemoryLog`]), as if the agent had run under another
//! policy, reporting every decision the engine takes. No store is created;
//! each step costs the same at any length of the recording.
//!
//! How the recording is fed:
//! - Messages, parts, steps, errors and model switches pass through as
//!   recorded (same ids, same source ids, the recorded times on a manual
//!   clock). The recording's own compactions (marker, summary, and the
//!   synthetic continue message right after a summary), prunes and policy
//!   events are left out: the policy under test decides those.
//! - `limits`, when given, replace the recording's limits for the whole run
//!   (its `LimitsChanged` events are then left out).
//! - The turn ends (prune, when the policy prunes) before each later real
//!   user prompt and at the end of the recording.
//! - While the simulation decides what the recording did (it compacts after
//!   exactly the steps and refusals the recording compacted after) the
//!   recorded usage drives the overflow check: the agent saw that window.
//!   From the first difference on (a compaction only one of them made, a
//!   manual compaction, a refusal the policy does not compact on) the
//!   recording no longer matches what the agent would have seen, so each
//!   later step's usage is the engine's own estimate: the prompt is the
//!   estimated window when the step started plus the fixed overhead (system
//!   prompt, tool schemas) measured at the first step as recorded prompt
//!   minus estimated window; the output is as recorded.
//! - A recorded compaction flagged `overflow` means the provider refused the
//!   request before it: the simulation tells the engine so
//!   ([`Engine::refused`]) and the policy decides (compact and replay the
//!   prompt, or record the error). The recording's own replay of the prompt
//!   is left out when the simulation replayed it too.
//! - Under a policy that checks before each request
//!   ([`OverflowCheckAt::BeforeRequest`]: Claude Code's, Codex's) the check
//!   runs before each recorded request (an assistant message) and where
//!   the recording compacted automatically (its agent was about to send
//!   one), instead of after each step.
//! - Compaction jobs run at once with the configured summarizer
//!   (extractive by default: deterministic, no network).
//!
//! Decision kinds: `prune`, `compaction`, `refused` (the provider refused a
//! request: compacted or not), `summary` (a job completed: window estimate
//! before and after), `continue` (the synthetic continue message was
//! appended), `replay` (the refused prompt was sent again),
//! `compaction_failed`, and `stalled` (the loop guard paused automatic
//! compaction).

use crate::clock::ManualClock;
use crate::summarize::{ExtractiveSummarizer, Summarizer};
use crate::{Engine, EngineBuilder, EngineError, JobOutcome, StepOutcome};
use ctxlog_core::window::is_continue_text;
use ctxlog_core::{
    Envelope, Event, MessageId, ModelLimits, OverflowCheckAt, PartBody, PartId, Policy, Role,
    SeededIds, SessionId, TokenUsage,
};
use ctxlog_store::{EventLog, MemoryLog};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// One decision the engine took during the simulation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decision {
    /// Tool outputs pruned at the end of a turn.
    Prune {
        /// Source id of the last message of the turn it ran after.
        after: String,
        /// The pruned calls.
        call_ids: Vec<String>,
        /// Sum of the pruned outputs' estimates.
        tokens: u64,
    },
    /// A compaction triggered by a step that overflowed.
    Compaction {
        /// Source id of the step that overflowed.
        after: String,
        /// Always true here (the simulator never compacts by hand).
        auto: bool,
        /// The token count compared.
        count: u64,
        /// The usable budget.
        usable: Option<u64>,
        /// Whether the count was the engine's estimate (after the first
        /// decision that differs from the recording's) rather than the
        /// recorded usage.
        estimated: bool,
    },
    /// The provider refused a request as too large (as recorded).
    Refused {
        /// Source id of the refused request's message.
        after: String,
        /// Whether the policy queued a compaction (else it recorded the error).
        compacted: bool,
    },
    /// A compaction job completed.
    Summary {
        /// Source id of the step that triggered it.
        after: String,
        /// Estimated window tokens before.
        window_before: u64,
        /// Estimated window tokens after.
        window_after: u64,
    },
    /// The synthetic continue message was appended after an automatic compaction.
    Continue {
        /// Source id of the step that triggered the compaction.
        after: String,
    },
    /// The refused prompt was appended again after the compaction it caused.
    Replay {
        /// Source id of the refused request's message.
        after: String,
    },
    /// A compaction job failed.
    CompactionFailed {
        /// Source id of the step that triggered it.
        after: String,
        /// Why.
        error: String,
    },
    /// The loop guard paused automatic compaction.
    Stalled {
        /// Source id of the step after which it paused.
        after: String,
        /// Why.
        reason: String,
    },
}

/// How to simulate.
pub struct SimulateConfig {
    /// The policy under test.
    pub policy: Policy,
    /// Limits for the whole run; `None` follows the recording's.
    pub limits: Option<ModelLimits>,
    /// The summarizer for compaction jobs.
    pub summarizer: Arc<dyn Summarizer>,
    /// The seed of the ids the simulated engine draws (its session's,
    /// events', markers' and summaries'); [`SimulateConfig::new`] gives a
    /// fixed one. A simulation kept in a store needs ids of its own:
    /// [`SimulateConfig::keepable`].
    pub seed: u64,
    /// The simulated session's source id (default: the recording's), the
    /// name a kept simulation is found by.
    pub source_id: Option<String>,
}

impl SimulateConfig {
    /// `policy` with the recording's limits and the extractive summarizer.
    pub fn new(policy: Policy) -> Self {
        SimulateConfig {
            policy,
            limits: None,
            summarizer: Arc::new(ExtractiveSummarizer::default()),
            seed: ENGINE_SEED,
            source_id: None,
        }
    }

    /// A simulation to keep in a store beside its recording: named
    /// `<source id>@<policy>` and with ids seeded from that name, the
    /// policy, the limits and the recording's length and last event (the
    /// same simulation of the same recording keeps the same ids, so keeping
    /// it again stores nothing new; any other draws other ids).
    pub fn keepable(mut self, recording_source: &str, recording: &[Envelope]) -> Self {
        let name = kept_name(recording_source, &self.policy.name);
        let mut h = Sha256::new();
        h.update(name.as_bytes());
        // JSON: a stable encoding of both (field order is declaration order).
        h.update(serde_json::to_vec(&self.policy).unwrap_or_default());
        h.update(serde_json::to_vec(&self.limits).unwrap_or_default());
        h.update((recording.len() as u64).to_le_bytes());
        if let Some(last) = recording.last() {
            h.update(last.id.0.as_bytes());
        }
        let digest = h.finalize();
        let mut seed = [0u8; 8];
        seed.copy_from_slice(&digest[..8]);
        self.seed = u64::from_le_bytes(seed);
        self.source_id = Some(name);
        self
    }
}

/// The name of a simulation of the recording named `source` under
/// `policy`, kept beside it: `<source>@<policy>` (`manual` for ctxlog's
/// own work on a session, see `ctxlog_app::catalog::manual_copy`).
pub fn kept_name(source: &str, policy: &str) -> String {
    format!("{source}@{policy}")
}

/// What a simulation found.
#[derive(Debug, Clone, Serialize)]
pub struct SimulationReport {
    /// Decisions, in log order.
    pub decisions: Vec<Decision>,
    /// Recorded steps fed.
    pub steps: u64,
    /// Real user prompts (turns).
    pub turns: u64,
    /// Fixed prompt overhead measured at the first step, tokens.
    pub overhead: u64,
    /// Events in the simulated log.
    pub events: u64,
    /// Estimated window tokens at the end.
    pub final_window: u64,
    /// The simulated session's events, seq 1 first.
    #[serde(skip)]
    pub log: Vec<Envelope>,
}

impl SimulationReport {
    /// The name the simulated session carries when it was made to be kept
    /// ([`SimulateConfig::keepable`]).
    pub fn kept_name(&self) -> Option<&str> {
        match self.log.first().map(|e| &e.event) {
            Some(Event::SessionStarted { source_id, .. }) => source_id.as_deref(),
            _ => None,
        }
    }
}

/// The error a recorded refusal is simulated with (the recording keeps no
/// provider text: only that its compaction was caused by an overflow).
const RECORDED_REFUSAL: &str = "the provider refused the request as too large (recorded)";

/// Ids the simulated engine draws: a seed of its own, so they never collide
/// with the recording's.
const ENGINE_SEED: u64 = 0x5349_4D55;

/// Runs `events` (a recording imported by `ctxlog-import`, seq 1 first)
/// under `config`, in memory; `progress` is told how many events were fed.
pub fn simulate_recording(
    events: &[Envelope],
    config: SimulateConfig,
    progress: impl FnMut(usize),
) -> Result<SimulationReport, EngineError> {
    let first_at = events.first().map_or(0, |e| e.recorded_at);
    let clock = Arc::new(ManualClock::new(first_at));
    let engine = EngineBuilder::default()
        .clock(clock.clone())
        .ids(SeededIds::new(config.seed))
        .summarizer(config.summarizer)
        .in_memory()?;
    let (title, source_id, recorded_limits) = match events.first().map(|e| &e.event) {
        Some(Event::SessionStarted {
            title,
            source_id,
            limits,
            ..
        }) => (title.clone(), source_id.clone(), limits.clone()),
        _ => (None, None, ModelLimits::default()),
    };
    let fixed_limits = config.limits.is_some();
    let checks_before_requests = matches!(
        config.policy.check_at,
        OverflowCheckAt::BeforeRequest { .. }
    );
    let session = engine.start(crate::NewSession {
        title,
        policy: config.policy,
        limits: config.limits.unwrap_or(recorded_limits),
        source_id: config.source_id.or(source_id),
    })?;
    let mut feed = Feed {
        engine: &engine,
        session,
        clock,
        fixed_limits,
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
    };
    feed.run(events, progress)?;
    let final_window = engine.window_estimate(session)?;
    let log = engine
        .store()
        .read(session, 1)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SimulationReport {
        log,
        decisions: feed.decisions,
        steps: feed.steps,
        turns: feed.turns,
        overhead: feed.overhead.unwrap_or(0),
        events: engine.state(session)?.head,
        final_window,
    })
}

/// The simulation's running state: what is left out, the labels of
/// decisions, and the usage model.
struct Feed<'a> {
    engine: &'a Engine<MemoryLog>,
    session: SessionId,
    clock: Arc<ManualClock>,
    fixed_limits: bool,
    /// Events waiting to be applied in one append.
    batch: Vec<Event>,
    decisions: Vec<Decision>,
    /// Source id of the latest message, the label of what follows it.
    last_source: String,
    /// The recording's own markers and summaries, with their parts.
    skipped_messages: BTreeSet<MessageId>,
    skipped_parts: BTreeSet<PartId>,
    call_ids: BTreeMap<PartId, String>,
    sources: BTreeMap<MessageId, String>,
    /// A decision differed from the recording's: its usage no longer
    /// measures the simulated window.
    diverged: bool,
    /// The simulation compacted and the recording has not yet (its marker
    /// must come before its next message, or the two differ).
    unmatched: Option<MessageId>,
    /// The latest assistant message whose step has not finished (a request
    /// the provider may have refused).
    open_step: Option<MessageId>,
    /// The text of the prompt the simulation replayed after its latest
    /// compaction, if it replayed one.
    replayed: Option<String>,
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
    /// ([`OverflowCheckAt::BeforeRequest`]).
    checks_before_requests: bool,
    /// Source id of the latest finished step.
    last_step_source: String,
    steps: u64,
    turns: u64,
}

impl Feed<'_> {
    fn run(
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
            | Event::PolicyChanged { .. }
            | Event::CompactionAttempted { .. }
            | Event::AutoCompactionPaused { .. }
            // What an import kept for an export of the recording itself.
            | Event::SourceFields { .. }
            | Event::SessionStarted { .. } => return None,
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
                if *role == Role::Assistant {
                    // A new request: checked before it is sent (a compaction
                    // here is one the recording did not make: its own comes
                    // before this message).
                    self.request_check()?;
                }
                if self.unmatched.take().is_some() {
                    // The simulation compacted; the recording went on without.
                    self.diverged = true;
                }
                if *role == Role::User && !synthetic {
                    if self.turns > 0 {
                        self.flush()?;
                        self.end_turn()?;
                    }
                    self.turns += 1;
                }
                self.open_step = (*role == Role::Assistant).then_some(*message);
                // The window at a step's start is needed only to measure the
                // overhead (first step) and once usage is estimated.
                if *role == Role::Assistant && (self.diverged || self.overhead.is_none()) {
                    self.flush()?;
                    self.step_window = self.engine.window_estimate(self.session)?;
                }
                self.sources.insert(*message, label.clone());
                self.last_source = label;
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

    /// The usage a step reports: as recorded until the simulation's
    /// decisions differ from the recording's, then the estimate (see the
    /// module documentation).
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
    fn flush(&mut self) -> Result<Option<StepOutcome>, EngineError> {
        let batch = std::mem::take(&mut self.batch);
        self.engine.record(self.session, batch)
    }

    /// After a step that queued a job: run it at once and report.
    fn after_step(&mut self, after: String, outcome: StepOutcome) -> Result<(), EngineError> {
        let (Some(job), Some(check)) = (outcome.queued, outcome.overflow) else {
            return Ok(());
        };
        self.decisions.push(Decision::Compaction {
            after: after.clone(),
            auto: true,
            count: check.count,
            usable: check.usable,
            estimated: self.diverged,
        });
        self.run_jobs(after, job)
    }

    /// Before a request, under a policy that checks then: the check, and
    /// the job it queued run at once.
    fn request_check(&mut self) -> Result<(), EngineError> {
        if !self.checks_before_requests {
            return Ok(());
        }
        self.flush()?;
        let check = self.engine.before_request(self.session)?;
        let (Some(job), Some(c)) = (check.queued, check.overflow) else {
            return Ok(());
        };
        let after = self.last_step_source.clone();
        self.decisions.push(Decision::Compaction {
            after: after.clone(),
            auto: true,
            count: c.count,
            usable: c.usable,
            estimated: self.diverged,
        });
        self.run_jobs(after, job)
    }

    /// A recorded compaction flagged `overflow`: the provider refused the
    /// open step's request. The policy decides what that does.
    fn refusal(&mut self) -> Result<(), EngineError> {
        self.flush()?;
        let Some(step) = self.open_step.take() else {
            // No request to attribute it to: the recording's compaction is
            // one the simulation cannot make.
            return Ok(());
        };
        let after = self.sources.get(&step).cloned().unwrap_or_default();
        let queued = self.engine.refused(self.session, step, RECORDED_REFUSAL)?;
        self.decisions.push(Decision::Refused {
            after: after.clone(),
            compacted: queued.is_some(),
        });
        match queued {
            Some(job) => self.run_jobs(after, job),
            None => Ok(()),
        }
    }

    /// Runs the queued job `job` at once and reports what it led to.
    fn run_jobs(&mut self, after: String, job: MessageId) -> Result<(), EngineError> {
        self.unmatched = Some(job);
        let window_before = self.engine.window_estimate(self.session)?;
        let outcomes = self.engine.run_pending(self.session)?;
        let window_after = self.engine.window_estimate(self.session)?;
        self.replayed = None;
        for o in outcomes {
            match &o {
                JobOutcome::Completed { continued, .. } => {
                    self.decisions.push(Decision::Summary {
                        after: after.clone(),
                        window_before,
                        window_after,
                    });
                    if *continued {
                        let after = after.clone();
                        match self.replayed_prompt()? {
                            Some(text) => {
                                self.replayed = Some(text);
                                self.decisions.push(Decision::Replay { after });
                            }
                            None => self.decisions.push(Decision::Continue { after }),
                        }
                    }
                }
                JobOutcome::Failed { error, .. } => {
                    self.decisions.push(Decision::CompactionFailed {
                        after: after.clone(),
                        error: error.clone(),
                    })
                }
            }
            if let Some(reason) = o.paused() {
                self.decisions.push(Decision::Stalled {
                    after: self.last_source.clone(),
                    reason: reason.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// The first text of the message that resumed the latest compaction,
    /// when it is a replayed prompt (a real user message) rather than a
    /// synthetic continue message.
    fn replayed_prompt(&self) -> Result<Option<String>, EngineError> {
        let state = self.engine.state(self.session)?;
        let Some(last) = state.messages.last().filter(|m| m.role == Role::User) else {
            return Ok(None);
        };
        if last.synthetic {
            return Ok(None);
        }
        Ok(last.parts.iter().find_map(|p| match p.content()? {
            PartBody::Text { text, .. } => Some(text.clone()),
            _ => None,
        }))
    }

    /// The end of a turn: prune when the policy says so.
    fn end_turn(&mut self) -> Result<(), EngineError> {
        if let Some(pruned) = self.engine.end_turn(self.session)? {
            self.decisions.push(Decision::Prune {
                after: self.last_source.clone(),
                call_ids: pruned
                    .parts
                    .iter()
                    .map(|p| self.call_ids.get(&p.part).cloned().unwrap_or_default())
                    .collect(),
                tokens: pruned.tokens,
            });
        }
        Ok(())
    }
}
