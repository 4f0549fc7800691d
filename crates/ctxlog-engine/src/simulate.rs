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
//! - Until the first compaction (the simulation's or the recording's own)
//!   the recorded usage drives the overflow check. From then on the
//!   recording no longer matches what the agent would have seen, so each
//!   later step's usage is the engine's own estimate: the prompt is the
//!   estimated window when the step started plus the fixed overhead (system
//!   prompt, tool schemas) measured at the first step as recorded prompt
//!   minus estimated window; the output is as recorded.
//! - Compaction jobs run at once with the configured summarizer
//!   (extractive by default: deterministic, no network).
//!
//! Decision kinds: `prune`, `compaction`, `summary` (a job completed: window
//! estimate before and after), `continue` (the synthetic continue message
//! was appended), `compaction_failed`, and `stalled` (the loop guard paused
//! automatic compaction).

use crate::clock::ManualClock;
use crate::summarize::{ExtractiveSummarizer, Summarizer};
use crate::{Engine, EngineBuilder, EngineError, JobOutcome, StepOutcome};
use ctxlog_core::window::is_continue_text;
use ctxlog_core::{
    Envelope, Event, MessageId, ModelLimits, PartBody, PartId, Policy, Role, SeededIds, SessionId,
    TokenUsage,
};
use ctxlog_store::MemoryLog;
use serde::Serialize;
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
        /// compaction) rather than the recorded usage.
        estimated: bool,
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
}

impl SimulateConfig {
    /// `policy` with the recording's limits and the extractive summarizer.
    pub fn new(policy: Policy) -> Self {
        SimulateConfig {
            policy,
            limits: None,
            summarizer: Arc::new(ExtractiveSummarizer::default()),
        }
    }
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
}

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
        .ids(SeededIds::new(ENGINE_SEED))
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
    let session = engine.start(crate::NewSession {
        policy: config.policy,
        limits: config.limits.unwrap_or(recorded_limits),
        title,
        source_id,
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
        compacted: false,
        after_recorded_summary: false,
        recorded_auto: BTreeSet::new(),
        held: None,
        overhead: None,
        step_window: 0,
        steps: 0,
        turns: 0,
    };
    feed.run(events, progress)?;
    let final_window = engine.window_estimate(session)?;
    Ok(SimulationReport {
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
    /// A compaction happened (the simulation's or the recording's).
    compacted: bool,
    /// The recording's own automatic summary just completed: a synthetic
    /// user message next may be its continue message.
    after_recorded_summary: bool,
    /// The recording's automatic jobs.
    recorded_auto: BTreeSet<MessageId>,
    /// A synthetic user message right after a recorded automatic summary,
    /// held until its first part shows whether it is the continue message.
    held: Option<(MessageId, Envelope)>,
    overhead: Option<u64>,
    /// The estimated window when the current step started.
    step_window: u64,
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
            if self.hold_continue(env)? {
                continue;
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

    /// Leaves out the recording's own continue message after an automatic
    /// compaction (the policy under test decides whether to continue): a
    /// synthetic user message right after a recorded automatic summary is
    /// held until its first part; it is dropped when that part is the
    /// continue text, fed as recorded otherwise. True when `env` was taken.
    fn hold_continue(&mut self, env: &Envelope) -> Result<bool, EngineError> {
        if let Some((held_id, held)) = self.held.take() {
            if let Event::PartAppended {
                message,
                part,
                body: PartBody::Text { text, .. },
                ..
            } = &env.event
            {
                if *message == held_id && is_continue_text(text) {
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
            synthetic,
            ..
        } = &env.event
        {
            if after && *synthetic {
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
                return None;
            }
            Event::CompactionStarted {
                summary_message, ..
            } => {
                self.skipped_messages.insert(*summary_message);
                return None;
            }
            Event::SummaryCompleted { job, .. } => {
                // The agent compacted here: from now on its recorded usage
                // measures a window the simulation does not have.
                self.compacted = true;
                self.after_recorded_summary = self.recorded_auto.contains(job);
                return None;
            }
            Event::CompactionFailed { .. }
            | Event::PartsPruned { .. }
            | Event::PartsRestored { .. }
            | Event::PolicyChanged { .. }
            | Event::CompactionAttempted { .. }
            | Event::AutoCompactionPaused { .. }
            | Event::SessionStarted { .. } => return None,
            Event::LimitsChanged { .. } if self.fixed_limits => return None,
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
                if *role == Role::User && !synthetic {
                    if self.turns > 0 {
                        self.flush()?;
                        self.end_turn()?;
                    }
                    self.turns += 1;
                }
                // The window at a step's start is needed only to measure the
                // overhead (first step) and once usage is estimated.
                if *role == Role::Assistant && (self.compacted || self.overhead.is_none()) {
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

    /// The usage a step reports: as recorded until the first compaction,
    /// then the estimate (see the module documentation).
    fn usage(&mut self, recorded: &TokenUsage) -> TokenUsage {
        self.steps += 1;
        let prompt = recorded.input + recorded.cache_read + recorded.cache_write;
        if self.overhead.is_none() && prompt > 0 {
            self.overhead = Some(prompt.saturating_sub(self.step_window));
        }
        if !self.compacted {
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
        self.engine.apply(self.session, batch)
    }

    /// After a step that queued a job: run it at once and report.
    fn after_step(&mut self, after: String, outcome: StepOutcome) -> Result<(), EngineError> {
        let (Some(_), Some(check)) = (outcome.queued, outcome.overflow) else {
            return Ok(());
        };
        self.decisions.push(Decision::Compaction {
            after: after.clone(),
            auto: true,
            count: check.count,
            usable: check.usable,
            estimated: self.compacted,
        });
        let window_before = self.engine.window_estimate(self.session)?;
        let outcomes = self.engine.run_pending(self.session)?;
        let window_after = self.engine.window_estimate(self.session)?;
        for o in outcomes {
            match &o {
                JobOutcome::Completed { continued, .. } => {
                    self.compacted = true;
                    self.decisions.push(Decision::Summary {
                        after: after.clone(),
                        window_before,
                        window_after,
                    });
                    if *continued {
                        let after = after.clone();
                        self.decisions.push(Decision::Continue { after });
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
