//! A stored part as the window sends it, measured without rendering it: the
//! fixed texts sent in place of content, and [`estimate_part`].
//!
//! Both the reducer (which keeps each part's estimate) and the window (which
//! renders the parts) read this module; it reads neither of them.

use crate::event::{PartBody, ToolState};
use crate::part::{Body, Part, Sketch, ToolStage};
use crate::policy::Estimator;

/// What a compaction marker says to the model.
pub const COMPACTION_QUESTION: &str = "What did we do so far?";
/// What a pruned tool output says to the model.
pub const PRUNED_PLACEHOLDER: &str = "[Old tool result content cleared]";
/// What an unfinished tool call says to the model.
pub const INTERRUPTED_TOOL: &str = "[Tool execution was interrupted]";

/// Estimated tokens of one stored part as it is sent: what
/// [`WindowPart::estimate`](crate::window::WindowPart::estimate) gives for
/// its rendering, without rendering it (from its sketch once sealed).
pub(crate) fn estimate_part(p: &Part, e: &Estimator) -> u64 {
    let pruned = p.pruned.is_some();
    let body = match &p.body {
        Body::Held(b) => b,
        Body::Sealed(s) => return estimate_sketch(s, pruned, e),
    };
    match &**body {
        PartBody::Text { text, .. } | PartBody::Reasoning { text, .. } => e.estimate(text),
        PartBody::File(a) => e.estimate(&a.url),
        PartBody::Compaction { .. } => e.estimate(COMPACTION_QUESTION),
        PartBody::StepStart { .. } | PartBody::StepFinish { .. } | PartBody::Other { .. } => 0,
        PartBody::Tool { tool, state, .. } => {
            let result = match state {
                ToolState::Completed { .. } if pruned => PRUNED_PLACEHOLDER,
                ToolState::Completed { output, .. } => output,
                ToolState::Error { error, .. } => error,
                ToolState::Pending { .. } | ToolState::Running { .. } => INTERRUPTED_TOOL,
            };
            e.estimate(tool) + e.estimate_units(state.input().json_utf16_len()) + e.estimate(result)
        }
    }
}

/// [`estimate_part`] of a sealed part, from the lengths its sketch kept.
fn estimate_sketch(s: &Sketch, pruned: bool, e: &Estimator) -> u64 {
    match s {
        Sketch::Text { units, .. } | Sketch::Reasoning { units } => e.estimate_units(*units),
        Sketch::File { url_units } => e.estimate_units(*url_units),
        Sketch::Compaction => e.estimate(COMPACTION_QUESTION),
        Sketch::StepStart | Sketch::StepFinish(_) | Sketch::Other => 0,
        Sketch::Tool(t) => {
            let result = match t.stage {
                ToolStage::Completed if pruned => e.estimate(PRUNED_PLACEHOLDER),
                ToolStage::Completed | ToolStage::Error => e.estimate_units(t.result_units),
                ToolStage::Pending | ToolStage::Running => e.estimate(INTERRUPTED_TOOL),
            };
            e.estimate(&t.tool) + e.estimate_units(t.input_units) + result
        }
    }
}
