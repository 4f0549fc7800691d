//! The prune plan: the seeds' algorithm, as a pure function of the state.
//!
//! Walk messages newest to oldest over the **whole** stored history (not the
//! window); count user messages; skip everything until the
//! `prune_protect_turns`-th most recent user message; stop at a summary
//! message and at the first already-pruned part; ignore protected tools;
//! accumulate estimated output tokens of completed tool parts and, once the
//! running total exceeds `prune_protect`, select every further part. The plan
//! applies only if the selected tokens exceed `prune_minimum` (strictly).
//! A plan marks parts; it never deletes anything.

use crate::event::{Event, PrunedPart};
use crate::policy::Policy;
use crate::state::{ends_prune_walk, prune_walk, SessionState};
use serde::{Deserialize, Serialize};

/// Why the walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PruneStop {
    /// Reached the oldest message.
    Start,
    /// Reached a compaction summary.
    Summary,
    /// Reached a part that is already pruned (idempotence boundary).
    AlreadyPruned,
}

/// The outcome of planning a prune.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrunePlan {
    /// Parts selected, newest first, with their estimated tokens.
    pub parts: Vec<PrunedPart>,
    /// Sum of the selected parts' tokens.
    pub prunable_tokens: u64,
    /// Estimated tokens of every completed tool output walked (kept or not).
    pub scanned_tokens: u64,
    /// Whether the plan should be applied (`prune` on and over the minimum).
    pub apply: bool,
    /// Why the walk ended.
    pub stop: PruneStop,
}

impl PrunePlan {
    /// The `PartsPruned` event that applies this plan, if it applies.
    pub fn to_event(&self, policy: &Policy) -> Option<Event> {
        self.apply.then(|| Event::PartsPruned {
            parts: self.parts.clone(),
            total_tokens: self.prunable_tokens,
            policy: policy.name.clone(),
        })
    }
}

/// Plans a prune of `state` under `policy` (usually `state.policy`; another
/// policy simulates what it would have done).
pub fn plan_prune(state: &SessionState, policy: &Policy) -> PrunePlan {
    let mut total = 0u64;
    let mut pruned = 0u64;
    let mut parts = Vec::new();
    let mut stop = PruneStop::Start;
    'walk: for (_, msg) in prune_walk(state.present_messages(), policy.prune_protect_turns) {
        if ends_prune_walk(msg) {
            stop = PruneStop::Summary;
            break;
        }
        for part in msg.parts.iter().rev() {
            let Some(units) = part.completed_output_units() else {
                continue;
            };
            if part
                .tool_name()
                .is_some_and(|t| policy.is_protected_tool(t))
            {
                continue;
            }
            if part.pruned.is_some() {
                stop = PruneStop::AlreadyPruned;
                break 'walk;
            }
            let estimate = policy.estimator.estimate_units(units);
            total += estimate;
            if total > policy.prune_protect {
                pruned += estimate;
                parts.push(PrunedPart {
                    part: part.id,
                    tokens: estimate,
                });
            }
        }
    }
    PrunePlan {
        apply: policy.prune && pruned > policy.prune_minimum,
        parts,
        prunable_tokens: pruned,
        scanned_tokens: total,
        stop,
    }
}
