//! The built-in policies: one preset per agent version measured, found by
//! name or alias.

use super::estimator::Estimator;
use super::overflow_rule::{BudgetRule, Comparison, CountRule, OverflowRule};
use super::settings::{
    ContinueMessage, FailedMarker, OverflowCheckAt, PivotForm, Policy, ProviderOverflow,
    SummaryInput, TailRule, ALL_TURNS, FULL_THRESHOLD,
};

/// Name of the default preset.
pub const PRESET_OPENCODE_SEED: &str = "opencode-seed";
/// Name of the OpenCode 1.17 preset.
pub const PRESET_OPENCODE_1_17: &str = "opencode-1.17";
/// Name of the OpenCode 1.18 preset.
pub const PRESET_OPENCODE_1_18: &str = "opencode-1.18";
/// Name of the Claude Code preset: the latest Claude Code measured
/// ([`PRESET_CLAUDE_CODE_2_1`]).
pub const PRESET_CLAUDE_CODE: &str = "claude-code";
/// Name of the Claude Code 2.1 preset.
pub const PRESET_CLAUDE_CODE_2_1: &str = "claude-code-2.1";
/// The models whose auto-compact window Claude Code 2.1.328 resolves to
/// "auto": it never compacts on the threshold after their answers, only
/// when the provider refuses a prompt as too long (measured with
/// `--debug-file`, `claude-code-2.1-observed.md`).
pub const CLAUDE_CODE_2_1_AUTO_WINDOW_MODELS: &[&str] = &[
    "claude-sonnet-4-5",
    "claude-sonnet-4-2025",
    "claude-haiku-4-5",
    "claude-opus-4-5",
    "claude-3-7-sonnet",
    "claude-3-5-haiku",
];
/// Name of the Codex CLI preset: the latest Codex measured
/// ([`PRESET_CODEX_0_169`]).
pub const PRESET_CODEX: &str = "codex";
/// Name of the Codex CLI 0.169 preset.
pub const PRESET_CODEX_0_169: &str = "codex-0.169";
/// Name of the pi coding-agent preset: the latest pi measured
/// ([`PRESET_PI_0_73`]).
pub const PRESET_PI: &str = "pi";
/// Name of the pi 0.73 preset.
pub const PRESET_PI_0_73: &str = "pi-0.73";
/// What pi 0.73 writes before a summary it sends (`COMPACTION_SUMMARY_PREFIX`).
pub const PI_SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// What pi 0.73 writes after a summary it sends (`COMPACTION_SUMMARY_SUFFIX`).
pub const PI_SUMMARY_SUFFIX: &str = "\n</summary>";
/// Name of the Goose preset.
pub const PRESET_GOOSE: &str = "goose";

impl Policy {
    /// The default preset, exactly as the seed documents describe it.
    pub fn opencode_seed() -> Self {
        Policy {
            name: PRESET_OPENCODE_SEED.into(),
            auto: true,
            prune: true,
            overflow: OverflowRule {
                count: CountRule::InputCacheReadOutput,
                comparison: Comparison::Greater,
                budget: BudgetRule::Seed,
                output_token_max: 32_000,
            },
            prune_protect: 40_000,
            prune_minimum: 20_000,
            prune_protect_turns: 2,
            protected_tools: vec!["skill".into()],
            estimator: Estimator::CharsPerToken { chars_per_token: 4 },
            tail: None,
            summary_input: SummaryInput::Messages,
            failed_marker: FailedMarker::Hidden,
            continue_message: ContinueMessage::Seed,
            provider_overflow: ProviderOverflow::Error,
            threshold_percent: FULL_THRESHOLD,
            pivot: PivotForm::Question,
            check_at: OverflowCheckAt::EveryStep,
            unchecked_models: Vec::new(),
        }
    }

    /// OpenCode 1.17 (`opencode-behavior.md` §1.3, §1.7, §1.10): `total` or all
    /// four counts, `>=`, `reserved` with a 20k buffer, a two-turn tail of at
    /// most 8k tokens, pruning off by default (as upstream since 1.14.19),
    /// the long continue message and compaction on a provider overflow.
    pub fn opencode_1_17() -> Self {
        Policy {
            name: PRESET_OPENCODE_1_17.into(),
            auto: true,
            prune: false,
            overflow: OverflowRule {
                count: CountRule::TotalOrAllFour,
                comparison: Comparison::GreaterOrEqual,
                budget: BudgetRule::Reserved {
                    reserved: None,
                    buffer: 20_000,
                },
                output_token_max: 32_000,
            },
            tail: Some(TailRule {
                turns: 2,
                preserve_recent_tokens: None,
                min_tokens: 2_000,
                max_tokens: 8_000,
                percent_of_usable: 25,
            }),
            continue_message: ContinueMessage::OpenCode,
            provider_overflow: ProviderOverflow::Compact,
            ..Self::opencode_seed()
        }
    }

    /// OpenCode 1.18 (read from the 1.18.33 binary and checked live by the
    /// differential test): 1.17's overflow rule and pruning off; a tail over
    /// every turn (no `tail_turns`) of at most 15k tokens; the summarizer
    /// gets a transcript with tool results cut at 2,000 characters; a failed
    /// compaction's marker is still sent.
    pub fn opencode_1_18() -> Self {
        Policy {
            name: PRESET_OPENCODE_1_18.into(),
            tail: Some(TailRule {
                turns: ALL_TURNS,
                preserve_recent_tokens: None,
                min_tokens: 2_000,
                max_tokens: 15_000,
                percent_of_usable: 25,
            }),
            summary_input: SummaryInput::Transcript {
                tool_output_max_chars: 2_000,
            },
            failed_marker: FailedMarker::Sent,
            ..Self::opencode_1_17()
        }
    }

    /// The policy every other agent's preset starts from: no pruning, the
    /// count is the provider's total (else all four counts), a provider's
    /// "too large" compacts, no recent tail; the trigger is each preset's.
    fn agent(name: &str, comparison: Comparison, budget: BudgetRule, percent: u64) -> Self {
        Policy {
            name: name.into(),
            prune: false,
            overflow: OverflowRule {
                count: CountRule::TotalOrAllFour,
                comparison,
                budget,
                output_token_max: 32_000,
            },
            provider_overflow: ProviderOverflow::Compact,
            threshold_percent: percent,
            ..Self::opencode_seed()
        }
    }

    /// Claude Code 2.1 (`@anthropic-ai/claude-code@2.1.328`, measured by
    /// `crates/ctxlog-differential/tests/claude_code.rs`): before each
    /// request, compacts when the last answer's four counts plus the
    /// estimate of what followed it (tool results, the new prompt) reach
    /// the effective window (context less `min(max output, 20,000)`) less a
    /// 13,000-token buffer (167,000 of 200,000), except after answers of the
    /// models whose auto-compact window it resolves to "auto"
    /// ([`CLAUDE_CODE_2_1_AUTO_WINDOW_MODELS`]: only a refusal compacts).
    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` is a share of the effective window,
    /// which `threshold_percent` (of the usable budget) only approximates.
    /// The summary is sent as one user message (its recorded text is the
    /// whole message), no continue message follows, and the messages Claude
    /// Code keeps verbatim are a recorded tail (this preset selects none).
    /// A prompt the provider refuses as too long is compacted and sent
    /// again where it was, nothing appended.
    pub fn claude_code_2_1() -> Self {
        Policy {
            continue_message: ContinueMessage::None,
            provider_overflow: ProviderOverflow::Retry,
            pivot: PivotForm::UserSummary {
                prefix: String::new(),
                suffix: String::new(),
                after_tail: false,
            },
            check_at: OverflowCheckAt::BeforeRequest { prompts: true },
            unchecked_models: CLAUDE_CODE_2_1_AUTO_WINDOW_MODELS
                .iter()
                .map(|m| (*m).to_owned())
                .collect(),
            ..Self::agent(
                PRESET_CLAUDE_CODE_2_1,
                Comparison::GreaterOrEqual,
                BudgetRule::ContextLess {
                    output_cap: 20_000,
                    buffer: 13_000,
                },
                FULL_THRESHOLD,
            )
        }
    }

    /// Codex CLI 0.169 (`@openai/codex@0.169.0`, measured by
    /// `crates/ctxlog-differential/tests/codex.rs`): before each request
    /// (mid-turn, and before a turn's prompt is added; never at a turn's
    /// end), compacts when the last response's `total_tokens` plus the
    /// estimate of the tool outputs after it reaches 90 % of the configured
    /// context window (a configured `model_auto_compact_token_limit` below it
    /// is what an import infers from the recording's automatic compactions,
    /// or `--threshold`); a provider's refusal fails
    /// the turn and compacts nothing. After a compaction Codex sends its
    /// replacement history (recorded as the compaction's tail), then the
    /// summary as a user message (its recorded text is the whole message),
    /// and no continue message.
    pub fn codex_0_169() -> Self {
        Policy {
            continue_message: ContinueMessage::None,
            provider_overflow: ProviderOverflow::Error,
            pivot: PivotForm::UserSummary {
                prefix: String::new(),
                suffix: String::new(),
                after_tail: true,
            },
            check_at: OverflowCheckAt::BeforeRequest { prompts: false },
            estimator: Estimator::BytesPerToken { bytes_per_token: 4 },
            ..Self::agent(
                PRESET_CODEX_0_169,
                Comparison::GreaterOrEqual,
                BudgetRule::ContextLess {
                    output_cap: 0,
                    buffer: 0,
                },
                90,
            )
        }
    }

    /// pi 0.73 (`@mariozechner/pi-coding-agent@0.73.1`, measured by
    /// `crates/ctxlog-differential/tests/pi.rs`): compacts when the newest
    /// answer's total (all four counts) exceeds the window less
    /// `reserveTokens` (16,384), strictly, and only after a run's final
    /// answer, never between its tool steps; keeps the newest
    /// `keepRecentTokens` (20,000) verbatim; sends the summary as one user
    /// message ([`PI_SUMMARY_PREFIX`] … [`PI_SUMMARY_SUFFIX`]) and no
    /// continue message; a provider's "too large" compacts, then the same
    /// request goes again.
    pub fn pi_0_73() -> Self {
        Policy {
            tail: Some(TailRule {
                turns: ALL_TURNS,
                preserve_recent_tokens: Some(20_000),
                min_tokens: 2_000,
                max_tokens: 20_000,
                percent_of_usable: 25,
            }),
            continue_message: ContinueMessage::None,
            provider_overflow: ProviderOverflow::Retry,
            pivot: PivotForm::UserSummary {
                prefix: PI_SUMMARY_PREFIX.into(),
                suffix: PI_SUMMARY_SUFFIX.into(),
                after_tail: false,
            },
            check_at: OverflowCheckAt::RunEnd,
            ..Self::agent(
                PRESET_PI_0_73,
                Comparison::Greater,
                BudgetRule::ContextLess {
                    output_cap: 0,
                    buffer: 16_384,
                },
                FULL_THRESHOLD,
            )
        }
    }

    /// Goose (`GOOSE_AUTO_COMPACT_THRESHOLD`, default 0.8, in its smart
    /// context management guide): compacts when the tokens used exceed
    /// 80 % of the context limit; the summary replaces the history.
    pub fn goose() -> Self {
        Self::agent(
            PRESET_GOOSE,
            Comparison::Greater,
            BudgetRule::ContextLess {
                output_cap: 0,
                buffer: 0,
            },
            80,
        )
    }

    /// A preset by name or alias ([`Policy::preset_aliases`]).
    pub fn preset(name: &str) -> Option<Self> {
        let name = Self::preset_aliases()
            .iter()
            .find(|(alias, _)| *alias == name)
            .map_or(name, |(_, preset)| *preset);
        match name {
            PRESET_OPENCODE_SEED => Some(Self::opencode_seed()),
            PRESET_OPENCODE_1_17 => Some(Self::opencode_1_17()),
            PRESET_OPENCODE_1_18 => Some(Self::opencode_1_18()),
            PRESET_CLAUDE_CODE_2_1 => Some(Self::claude_code_2_1()),
            PRESET_CODEX_0_169 => Some(Self::codex_0_169()),
            PRESET_PI_0_73 => Some(Self::pi_0_73()),
            PRESET_GOOSE => Some(Self::goose()),
            _ => None,
        }
    }

    /// The preset `name`, or an error that names the presets there are
    /// (the one message the CLI and the Python package give).
    pub fn named(name: &str) -> Result<Self, UnknownPreset> {
        Self::preset(name).ok_or_else(|| UnknownPreset(name.into()))
    }

    /// Names of the built-in presets, each a policy of its own.
    pub fn preset_names() -> &'static [&'static str] {
        &[
            PRESET_OPENCODE_SEED,
            PRESET_OPENCODE_1_17,
            PRESET_OPENCODE_1_18,
            PRESET_CLAUDE_CODE_2_1,
            PRESET_CODEX_0_169,
            PRESET_PI_0_73,
            PRESET_GOOSE,
        ]
    }

    /// Names that stand for a preset: an agent's plain name means the
    /// preset of its latest measured version, `(alias, preset)`.
    pub fn preset_aliases() -> &'static [(&'static str, &'static str)] {
        &[
            (PRESET_CLAUDE_CODE, PRESET_CLAUDE_CODE_2_1),
            (PRESET_CODEX, PRESET_CODEX_0_169),
            (PRESET_PI, PRESET_PI_0_73),
        ]
    }
}

/// The default policy is the seed preset, [`Policy::opencode_seed`].
impl Default for Policy {
    fn default() -> Self {
        Self::opencode_seed()
    }
}

/// A policy preset name that is none of [`Policy::preset_names`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy preset {0:?}; known: {known}", known = known_presets())]
pub struct UnknownPreset(pub String);

/// The preset names and aliases, as the unknown-preset error lists them.
fn known_presets() -> String {
    let aliases = Policy::preset_aliases()
        .iter()
        .map(|(alias, preset)| format!("{alias} (= {preset})"));
    Policy::preset_names()
        .iter()
        .map(|n| n.to_string())
        .chain(aliases)
        .collect::<Vec<_>>()
        .join(", ")
}
