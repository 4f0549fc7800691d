//! What-if replay of a recorded session: its events are fed through a real
//! [`Engine`] over a throw-away store, as if the agent had run under another
//! policy, and every decision the engine takes is reported.
//!
//! How the recording is fed:
//! - Messages, parts, steps, errors and model switches pass through as
//!   recorded (same ids, same source ids, the recorded times on a manual
//!   clock). The recording's own compactions, prunes and policy events are
//!   left out: the policy under test decides those.
//! - `limits`, when given, replace the recording's limits for the whole run
//!   (its `LimitsChanged` events are then left out).
//! - Prune runs at the end of each turn: before each later real user prompt
//!   and at the end of the recording.
//! - Until the first compaction (the simulation's or the recording's own)
//!   the recorded usage drives the overflow check. From then on the recording no longer matches
//!   what the agent would have seen, so each later step's usage is the
//!   engine's own estimate: the prompt is the estimated window when the step
//!   started plus the fixed overhead (system prompt, tool schemas) measured
//!   at the first step as recorded prompt minus estimated window; the output
//!   is as recorded.
//! - Compaction jobs run at once with the configured summarizer
//!   (extractive by default: deterministic, no network).
//!
//! Decision kinds: `prune`, `compaction` (the contract), and the
//! engine's own `summary` (a job completed: window estimate before and
//! after), `continue` (the synthetic continue message was appended),
//! `compaction_failed`, and `stalled` (the loop guard paused automatic
//! compaction).

use crate::summarize::Summarizer;
use crate::{Engine, EngineConfig, EngineError, JobOutcome, ManualClock};
use ctxlog_core::{
    Envelope, Event, MessageId, ModelLimits, PartBody, PartId, Policy, Role, SeededIds, SessionId,
    TokenUsage,
};
use ctxlog_store::{Durability, EventLog, SledStore, StoreConfig};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// One decision the engine took during the replay.
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

/// How to replay.
pub struct ReplayConfig {
    /// The policy under test.
    pub policy: Policy,
    /// Limits for the whole run; `None` follows the recording's.
    pub limits: Option<ModelLimits>,
    /// The summarizer for compaction jobs.
    pub summarizer: Arc<dyn Summarizer>,
}

/// What a replay found.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
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

struct Feed<'a> {
    engine: &'a Engine,
    session: SessionId,
    clock: Arc<ManualClock>,
    batch: Vec<Event>,
    seen: u64,
    decisions: Vec<Decision>,
    last_source: String,
}

impl Feed<'_> {
    fn estimate(&self) -> Result<u64, EngineError> {
        let w = self.engine.window(self.session)?;
        let policy = self.engine.with(self.session, |s| Ok(s.policy.estimator))?;
        Ok(w.estimate(&policy))
    }

    fn flush(&mut self) -> Result<Option<crate::StepOutcome>, EngineError> {
        let batch = std::mem::take(&mut self.batch);
        let out = self.engine.apply(self.session, batch)?;
        self.scan()?;
        Ok(out)
    }

    /// Reports pauses found in the log since the last scan.
    fn scan(&mut self) -> Result<(), EngineError> {
        for e in self.engine.store().read(self.session, self.seen + 1)? {
            let e = e?;
            self.seen = e.seq;
            if let Event::AutoCompactionPaused { reason, .. } = &e.event {
                self.decisions.push(Decision::Stalled {
                    after: self.last_source.clone(),
                    reason: reason.clone(),
                });
            }
        }
        Ok(())
    }
}

/// Replays `events` (a recording imported by `ctxlog-import`, seq 1 first)
/// through an engine over a fresh store at `dir` (which must not exist or be
/// empty; the caller removes it).
pub fn replay_recording(
    events: &[Envelope],
    config: ReplayConfig,
    dir: &Path,
    mut progress: impl FnMut(usize),
) -> Result<ReplayReport, EngineError> {
    let mut store_config = StoreConfig::new(dir);
    store_config.durability = Durability::Buffered;
    let store = SledStore::open_with(store_config)?;
    let first_at = events.first().map_or(0, |e| e.recorded_at);
    let clock = Arc::new(ManualClock::new(first_at));
    // Engine ids must not collide with the recording's: a seed of their own.
    let mut engine_config = EngineConfig::new(Box::new(SeededIds::new(0x5349_4D55)), clock.clone());
    engine_config.summarizer = config.summarizer;
    let engine = Engine::new(store, engine_config);
    let (title, source_id, recorded_limits) = match events.first().map(|e| &e.event) {
        Some(Event::SessionStarted {
            title,
            source_id,
            limits,
            ..
        }) => (title.clone(), source_id.clone(), limits.clone()),
        _ => (None, None, ModelLimits::default()),
    };
    let fixed = config.limits.is_some();
    let limits = config.limits.unwrap_or(recorded_limits);
    let session = engine.start_session_from(config.policy, limits, title, source_id)?;
    let mut feed = Feed {
        engine: &engine,
        session,
        clock,
        batch: Vec::new(),
        seen: 1,
        decisions: Vec::new(),
        last_source: String::new(),
    };
    let mut skipped_messages: BTreeSet<MessageId> = BTreeSet::new();
    let mut skipped_parts: BTreeSet<PartId> = BTreeSet::new();
    let mut call_ids: BTreeMap<PartId, String> = BTreeMap::new();
    let mut sources: BTreeMap<MessageId, String> = BTreeMap::new();
    let mut compacted = false;
    let mut overhead: Option<u64> = None;
    let mut step_window: u64 = 0;
    let (mut steps, mut turns) = (0u64, 0u64);
    for (i, env) in events.iter().enumerate().skip(1) {
        progress(i);
        feed.clock.advance_to(env.recorded_at);
        let event = env.event.clone();
        match &event {
            Event::CompactionRequested { message, .. } => {
                skipped_messages.insert(*message);
                continue;
            }
            Event::CompactionStarted {
                summary_message, ..
            } => {
                skipped_messages.insert(*summary_message);
                continue;
            }
            Event::SummaryCompleted { .. } => {
                // The agent compacted here: from now on its recorded usage
                // measures a window the simulation does not have.
                compacted = true;
                continue;
            }
            Event::CompactionFailed { .. }
            | Event::PartsPruned { .. }
            | Event::PartsRestored { .. }
            | Event::PolicyChanged { .. }
            | Event::CompactionAttempted { .. }
            | Event::AutoCompactionPaused { .. }
            | Event::SessionStarted { .. } => continue,
            Event::LimitsChanged { .. } if fixed => continue,
            Event::PartAppended { message, part, .. } if skipped_messages.contains(message) => {
                skipped_parts.insert(*part);
                continue;
            }
            Event::PartUpdated { part, .. } if skipped_parts.contains(part) => continue,
            Event::MessageErrored { message, .. } if skipped_messages.contains(message) => continue,
            _ => {}
        }
        let mut event = event;
        if let Event::MessageAppended { parent, .. } = &mut event {
            // A message answering a left-out summary or marker answers nothing here.
            if parent.is_some_and(|p| skipped_messages.contains(&p)) {
                *parent = None;
            }
        }
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
                    if turns > 0 {
                        feed.flush()?;
                        prune(&mut feed, &call_ids)?;
                    }
                    turns += 1;
                }
                // The window at a step's start is needed only to measure the
                // overhead (first step) and once usage is estimated.
                if *role == Role::Assistant && (compacted || overhead.is_none()) {
                    feed.flush()?;
                    step_window = feed.estimate()?;
                }
                sources.insert(*message, label.clone());
                feed.last_source = label;
                feed.batch.push(event);
            }
            Event::PartAppended {
                part,
                body: PartBody::Tool { call_id, .. },
                ..
            } => {
                call_ids.insert(*part, call_id.clone());
                feed.batch.push(event);
            }
            Event::StepFinished {
                message,
                part,
                reason,
                tokens,
                cost_micros,
            } => {
                steps += 1;
                let recorded_prompt = tokens.input + tokens.cache_read + tokens.cache_write;
                if overhead.is_none() && recorded_prompt > 0 {
                    overhead = Some(recorded_prompt.saturating_sub(step_window));
                }
                let tokens = if compacted {
                    TokenUsage {
                        total: None,
                        input: overhead.unwrap_or(0) + step_window,
                        output: tokens.output,
                        reasoning: tokens.reasoning,
                        cache_read: 0,
                        cache_write: 0,
                    }
                } else {
                    *tokens
                };
                feed.batch.push(Event::StepFinished {
                    message: *message,
                    part: *part,
                    reason: reason.clone(),
                    tokens,
                    cost_micros: *cost_micros,
                });
                let after = sources
                    .get(message)
                    .cloned()
                    .unwrap_or_else(|| format!("seq:{}", env.seq));
                let outcome = feed.flush()?;
                let Some(outcome) = outcome else { continue };
                if outcome.queued.is_none() {
                    continue;
                }
                let check = outcome.overflow.expect("a queued job has a check");
                feed.decisions.push(Decision::Compaction {
                    after: after.clone(),
                    auto: true,
                    count: check.count,
                    usable: check.usable,
                    estimated: compacted,
                });
                let window_before = feed.estimate()?;
                let outcomes = engine.run_pending(session)?;
                let window_after = feed.estimate()?;
                for o in outcomes {
                    match o {
                        JobOutcome::Completed { continued, .. } => {
                            compacted = true;
                            feed.decisions.push(Decision::Summary {
                                after: after.clone(),
                                window_before,
                                window_after,
                            });
                            if continued {
                                feed.decisions.push(Decision::Continue {
                                    after: after.clone(),
                                });
                            }
                        }
                        JobOutcome::Failed { error, .. } => {
                            feed.decisions.push(Decision::CompactionFailed {
                                after: after.clone(),
                                error,
                            })
                        }
                    }
                }
                feed.scan()?;
            }
            _ => feed.batch.push(event),
        }
    }
    feed.flush()?;
    if turns > 0 {
        prune(&mut feed, &call_ids)?;
    }
    progress(events.len());
    let final_window = feed.estimate()?;
    let head = engine.store().head(session)?;
    let decisions = std::mem::take(&mut feed.decisions);
    drop(feed);
    engine.store().flush()?;
    Ok(ReplayReport {
        decisions,
        steps,
        turns,
        overhead: overhead.unwrap_or(0),
        events: head,
        final_window,
    })
}

fn prune(feed: &mut Feed<'_>, call_ids: &BTreeMap<PartId, String>) -> Result<(), EngineError> {
    let before = feed.seen;
    if feed.engine.end_turn(feed.session)?.is_none() {
        return Ok(());
    }
    for e in feed.engine.store().read(feed.session, before + 1)? {
        let e = e?;
        feed.seen = e.seq;
        if let Event::PartsPruned {
            parts,
            total_tokens,
            ..
        } = &e.event
        {
            feed.decisions.push(Decision::Prune {
                after: feed.last_source.clone(),
                call_ids: parts
                    .iter()
                    .map(|p| call_ids.get(&p.part).cloned().unwrap_or_default())
                    .collect(),
                tokens: *total_tokens,
            });
        }
    }
    Ok(())
}
