//! What a simulation reports: each decision the engine took, in log order,
//! and the run's totals.

use ctxlog_core::{Envelope, Event};
use serde::Serialize;

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
    /// ([`SimulateConfig::keepable`](super::SimulateConfig::keepable)).
    pub fn kept_name(&self) -> Option<&str> {
        match self.log.first().map(|e| &e.event) {
            Some(Event::SessionStarted { source_id, .. }) => source_id.as_deref(),
            _ => None,
        }
    }
}
