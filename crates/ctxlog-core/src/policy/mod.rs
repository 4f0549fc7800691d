//! Compaction policy as data: the overflow predicate, the prune thresholds,
//! the token estimator and the recent-turn tail. A policy is recorded in the
//! log (`SessionStarted`, `PolicyChanged`) so a replay knows exactly which
//! rules produced each decision.
//!
//! Files: `limits` (the model's limits and a call's usage), `estimator` (the
//! token estimate), `overflow_rule` (the overflow predicate's constants),
//! `settings` (the [`Policy`] record, its kinds of choice and the defaults
//! older records decode with), `overflow_check` (the budget, the threshold
//! and the check) and `presets` (the built-in policies by name).

mod estimator;
mod limits;
mod overflow_check;
mod overflow_rule;
mod presets;
mod settings;

pub use estimator::{estimate_tokens, utf16_len, Estimator};
pub use limits::{ModelLimits, TokenUsage};
pub use overflow_check::OverflowCheck;
pub use overflow_rule::{BudgetRule, Comparison, CountRule, OverflowRule};
pub use presets::{
    UnknownPreset, CLAUDE_CODE_2_1_AUTO_WINDOW_MODELS, PI_SUMMARY_PREFIX, PI_SUMMARY_SUFFIX,
    PRESET_CLAUDE_CODE, PRESET_CLAUDE_CODE_2_1, PRESET_CODEX, PRESET_CODEX_0_169, PRESET_GOOSE,
    PRESET_OPENCODE_1_17, PRESET_OPENCODE_1_18, PRESET_OPENCODE_SEED, PRESET_PI, PRESET_PI_0_73,
};
pub use settings::{
    ContinueMessage, FailedMarker, OverflowCheckAt, PivotForm, Policy, ProviderOverflow,
    SummaryInput, TailRule, ALL_TURNS, FULL_THRESHOLD,
};
