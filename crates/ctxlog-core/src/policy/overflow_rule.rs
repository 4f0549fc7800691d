//! [`OverflowRule`]: the overflow predicate's constants, as data in the log.

use serde::{Deserialize, Serialize};

/// Which token counts make up the number compared against the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CountRule {
    /// Seed rule: `input + cache_read + output`.
    InputCacheReadOutput,
    /// OpenCode ≥ 1.1.57: `total` when reported (non-zero), else
    /// `input + output + cache_read + cache_write`.
    TotalOrAllFour,
}

/// How the count is compared with the usable budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Comparison {
    /// Overflow when `count > usable` (seed rule).
    Greater,
    /// Overflow when `count >= usable` (OpenCode ≥ 1.1.57).
    GreaterOrEqual,
}

/// How the usable input budget is derived from the model's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BudgetRule {
    /// Seed rule: `usable = input limit`, else `context − min(output, output_token_max)`
    /// (`output_token_max` when the model has no output limit).
    Seed,
    /// OpenCode ≥ 1.1.57 (§1.3): with an input limit,
    /// `max(0, input − (reserved ?? min(buffer, max_out)))`; without,
    /// `max(0, context − max_out)` (`reserved` is ignored there, as upstream).
    Reserved {
        /// `compaction.reserved`, when configured.
        reserved: Option<u64>,
        /// `COMPACTION_BUFFER` (20,000).
        buffer: u64,
    },
    /// The whole context window less a reserve for the answer and a fixed
    /// buffer: `max(0, input or context − min(max_out, output_cap) −
    /// buffer)` (Claude Code: cap 20,000, buffer 13,000; pi: cap 0, buffer
    /// 16,384; Codex and Goose: both 0, with a threshold percentage).
    ContextLess {
        /// The most of the model's output limit reserved (0: none).
        output_cap: u64,
        /// Tokens kept free beside it.
        buffer: u64,
    },
}

/// The overflow predicate's constants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverflowRule {
    /// Which counts are summed.
    pub count: CountRule,
    /// `>` or `>=`.
    pub comparison: Comparison,
    /// How the budget is derived.
    pub budget: BudgetRule,
    /// `OUTPUT_TOKEN_MAX`, the global output cap (32,000).
    pub output_token_max: u64,
}
