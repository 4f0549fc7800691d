//! `simulate`: a recorded session run through an [`Engine`](crate::Engine)
//! over an in-memory log ([`MemoryLog`](crate::MemoryLog)), as if the agent
//! had run under another policy, reporting every decision the engine takes.
//! No store is created; each step costs the same at any length of the
//! recording.
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
//!   ([`Session::refused`](crate::Session::refused)) and the policy decides
//!   (compact and replay the prompt, or record the error). The recording's
//!   own replay of the prompt is left out when the simulation replayed it
//!   too.
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
//!
//! The files: this one holds the configuration and the entry point;
//! `report` what a simulation reports ([`Decision`], [`SimulationReport`]);
//! `feed` how the recorded events are fed (what passes, what is left out
//! or held, the usage model); `decisions` what the engine decides on the
//! way (checks, refusals, compaction jobs, prunes), run at once and
//! reported.

mod decisions;
mod feed;
mod report;

pub use report::{Decision, SimulationReport};

use crate::clock::ManualClock;
use crate::summarize::{ExtractiveSummarizer, Summarizer};
use crate::{EngineBuilder, EngineError};
use ctxlog_core::{Envelope, Event, ModelLimits, OverflowCheckAt, Policy, SeededIds};
use ctxlog_store::EventLog;
use feed::Feed;
use sha2::{Digest, Sha256};
use std::sync::Arc;

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
    // Simulated under an unmodified preset on the recording's own limits,
    // the threshold the recording showed for that preset applies.
    let own_preset = (!fixed_limits
        && Policy::preset(&config.policy.name).as_ref() == Some(&config.policy))
    .then(|| config.policy.clone());
    let checks_before_requests = matches!(
        config.policy.check_at,
        OverflowCheckAt::BeforeRequest { .. }
    );
    let session = engine.create_session(crate::NewSession {
        title,
        policy: config.policy,
        limits: config.limits.unwrap_or(recorded_limits),
        source_id: config.source_id.or(source_id),
        id: None,
    })?;
    let mut feed = Feed::new(
        session,
        clock,
        fixed_limits,
        checks_before_requests,
        own_preset,
    );
    feed.run(events, progress)?;
    let final_window = session.window_estimate()?;
    let log = engine
        .store()
        .read(session.id(), 1)?
        .collect::<Result<Vec<_>, _>>()?;
    let head = session.query(|state| state.head)?;
    Ok(feed.report(log, head, final_window))
}
