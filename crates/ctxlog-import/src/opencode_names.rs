//! OpenCode's names for what ctxlog models, shared by the OpenCode importer
//! and the exporter: finish reasons, and the `error.data.ref` of ctxlog's
//! own compaction outcomes.

use ctxlog_core::FinishReason;

/// An OpenCode finish reason.
pub fn finish_from(s: &str) -> FinishReason {
    match s {
        "stop" => FinishReason::Stop,
        "tool-calls" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content-filter" => FinishReason::ContentFilter,
        "error" => FinishReason::Error,
        other => FinishReason::Other(other.into()),
    }
}

/// OpenCode's name for a finish reason.
pub fn finish_name(f: &FinishReason) -> String {
    match f {
        FinishReason::Stop => "stop".into(),
        FinishReason::ToolCalls => "tool-calls".into(),
        FinishReason::Length => "length".into(),
        FinishReason::ContentFilter => "content-filter".into(),
        FinishReason::Error => "error".into(),
        FinishReason::Other(o) => o.clone(),
    }
}

/// `error.data.ref` of a compaction job ctxlog recorded as failed.
pub(crate) const FAILED_REF: &str = "ctxlog:CompactionFailed";
/// `error.data.ref` of a summary attempt a restarted job superseded.
pub(crate) const RESTARTED_REF: &str = "ctxlog:CompactionRestarted";

/// The field of an exported user message's `info` that names the role it
/// was sent with when that was not `user` (`developer`, `system`): OpenCode
/// knows only user and assistant messages.
pub(crate) const SENT_ROLE: &str = "ctxlogRole";
