//! [`ModelLimits`] and [`TokenUsage`]: the model's limits and one call's
//! usage, as data in the log.

use serde::{Deserialize, Serialize};

/// The model's token limits, as data in the log. The default (context 0)
/// means "unlimited": auto-compaction never fires.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ModelLimits {
    /// Context window in tokens; 0 means "unlimited": never auto-compact.
    pub context: u64,
    /// A dedicated maximum input, when the model has one.
    pub input: Option<u64>,
    /// Maximum output tokens, when known.
    pub output: Option<u64>,
}

/// Token usage of one model call, as the provider reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// The provider's total, when it reports one.
    pub total: Option<u64>,
    /// Prompt tokens (uncached part, OpenCode convention).
    pub input: u64,
    /// Output tokens (excluding reasoning).
    pub output: u64,
    /// Reasoning tokens.
    pub reasoning: u64,
    /// Cached prompt tokens read.
    pub cache_read: u64,
    /// Prompt tokens written to the cache.
    pub cache_write: u64,
}

impl TokenUsage {
    /// The sum of the five counts (what the agents compute).
    pub fn sum(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.reasoning)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    /// The provider's total when it reported one (above 0), else
    /// [`TokenUsage::sum`]: a step's total as the views show it.
    pub fn shown_total(&self) -> u64 {
        self.total.filter(|&v| v > 0).unwrap_or_else(|| self.sum())
    }
}
