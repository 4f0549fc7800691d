//! Compaction policy as data: the overflow predicate, the prune thresholds,
//! the token estimator and the recent-turn tail. A policy is recorded in the
//! log (`SessionStarted`, `PolicyChanged`) so a replay knows exactly which
//! rules produced each decision.

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

/// The token estimator used for tool outputs and turn sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Estimator {
    /// `round_half_up(utf16_len / chars_per_token)`, what OpenCode's
    /// `Math.round(text.length / 4)` computes.
    CharsPerToken {
        /// Characters (UTF-16 code units) per token; 4 in OpenCode.
        chars_per_token: u32,
    },
}

impl Estimator {
    /// Estimated tokens of a text of `units` UTF-16 code units.
    pub fn estimate_units(&self, units: u64) -> u64 {
        match *self {
            Estimator::CharsPerToken { chars_per_token } => {
                estimate_tokens(units, chars_per_token as u64)
            }
        }
    }

    /// Estimated tokens of `text`.
    pub fn estimate(&self, text: &str) -> u64 {
        match *self {
            Estimator::CharsPerToken { chars_per_token } => {
                estimate_tokens(utf16_len(text), chars_per_token as u64)
            }
        }
    }
}

/// Length in UTF-16 code units: what JavaScript's `String.length` counts.
///
/// Counted on the bytes: every byte that starts a char is one unit, and a
/// 4-byte char (lead byte `0xF0..=0xF4`) is a surrogate pair, one more. The
/// loop has no branches, so it vectorizes; the prune walk and every window
/// estimate run it over whole tool outputs (it was the top user-space symbol
/// of the benchmark's profile when it decoded chars).
pub fn utf16_len(text: &str) -> u64 {
    text.as_bytes()
        .iter()
        .map(|&b| u64::from(b & 0xC0 != 0x80) + u64::from(b >= 0xF0))
        .sum()
}

/// `round_half_up(units / per_token)` with integer arithmetic; `per_token`
/// of 0 is treated as 1.
pub fn estimate_tokens(units: u64, per_token: u64) -> u64 {
    let d = per_token.max(1);
    // floor((units + d/2) / d) == round-half-up for the exact quotient
    // when d is even; for odd d, (2u + d) / 2d is exact.
    (2 * units + d) / (2 * d)
}

/// The recent-turn tail kept verbatim after a compaction (OpenCode §1.7 step 5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TailRule {
    /// Recent user turns considered (`compaction.tail_turns`, 2 in 1.17);
    /// 0 disables; [`ALL_TURNS`] considers every turn.
    pub turns: u32,
    /// Fixed token budget (`preserve_recent_tokens`); when `None`,
    /// `min(max_tokens, max(min_tokens, usable × percent / 100))`.
    pub preserve_recent_tokens: Option<u64>,
    /// Lower bound of the derived budget (2,000).
    pub min_tokens: u64,
    /// Upper bound of the derived budget (8,000 in 1.17, 15,000 in 1.18).
    pub max_tokens: u64,
    /// Share of the usable budget, in percent (25).
    pub percent_of_usable: u64,
}

/// `TailRule::turns` meaning "every turn" (OpenCode 1.18 leaves
/// `compaction.tail_turns` unset: only the token budget limits the tail).
pub const ALL_TURNS: u32 = u32::MAX;

/// What the summarizer is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum SummaryInput {
    /// The history as model messages, then the compaction prompt (seed, 1.17).
    #[default]
    Messages,
    /// One user message holding the history as a text transcript
    /// (`[User]: …`, `[Assistant tool call]: …`, `[Tool result]: …`) with
    /// each tool result cut after `tool_output_max_chars` UTF-16 units, and
    /// the prior summary after it (OpenCode 1.18).
    Transcript {
        /// Where a tool result is cut (2,000 in OpenCode 1.18).
        tool_output_max_chars: u32,
    },
}

/// Whether the marker of a failed compaction is still sent to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum FailedMarker {
    /// Left out: a failed compaction leaves the window as it was (ctxlog's
    /// rule for `opencode-seed` and `opencode-1.17`).
    #[default]
    Hidden,
    /// Sent as the compaction question, as OpenCode does (its window only
    /// skips *completed* pivots and errored summaries; 1.18.33 observed).
    Sent,
}

/// What is appended after an automatic compaction's summary when there is
/// no refused prompt to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ContinueMessage {
    /// [`crate::window::CONTINUE_TEXT`] (the seed; OpenCode until 2026-02-10).
    #[default]
    Seed,
    /// [`crate::window::CONTINUE_TEXT_OPENCODE`], marked `compaction_continue`
    /// on export; after a provider overflow it starts with
    /// [`crate::window::OVERFLOW_CONTINUE_PREFIX`] (OpenCode 1.17, 1.18).
    OpenCode,
    /// Nothing: the agent goes on with its next request on the compacted
    /// context (pi 0.73, Claude Code 2.1, Codex 0.169; added in event
    /// schema 8).
    None,
}

/// How a completed compaction is sent to the model (added in event schema 8).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum PivotForm {
    /// The marker as the user question [`crate::window::COMPACTION_QUESTION`],
    /// then the summary as the assistant's answer (OpenCode; every policy
    /// before schema 8).
    #[default]
    Question,
    /// The summary alone, as one user message whose text is `prefix`, the
    /// summary and `suffix`; a compaction marker is never sent (pi 0.73:
    /// `COMPACTION_SUMMARY_PREFIX` and `_SUFFIX` of its `messages.ts`).
    UserSummary {
        /// Text before the summary.
        prefix: String,
        /// Text after it.
        suffix: String,
        /// Sent after the kept tail rather than before it (Codex 0.169
        /// sends its replacement history, then the summary).
        after_tail: bool,
    },
}

/// When the overflow predicate runs (added in event schema 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum OverflowCheckAt {
    /// After every finished step, tool steps included (OpenCode; every
    /// policy before schema 8).
    #[default]
    EveryStep,
    /// Only after a step that ends the agent's run: one that did not stop
    /// for tool calls (pi 0.73 checks at `agent_end`, never between the
    /// steps of a run).
    RunEnd,
    /// Before each model request, never after a step
    /// ([`crate::Command::BeforeRequest`], which an agent or `simulate`
    /// sends): the count is the last answer's plus the estimate of what
    /// the window holds after it, its tool results and, when `prompts`,
    /// the user messages too (Claude Code 2.1 counts the new prompt; Codex
    /// 0.169 checks mid-turn with the tool outputs and before a turn's
    /// prompt is added).
    BeforeRequest {
        /// Whether user messages after the last answer count.
        prompts: bool,
    },
}

/// What a provider's "request too large" answer to an agent request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ProviderOverflow {
    /// Recorded as the message's error; nothing else happens (the seed).
    #[default]
    Error,
    /// An automatic compaction flagged `overflow`: it summarizes the history
    /// before the refused prompt and then replays that prompt as a new user
    /// message (OpenCode since 2026-03-02: 1.17, 1.18).
    Compact,
    /// An automatic compaction flagged `overflow`, after which the agent
    /// sends the refused request again on the compacted context: the
    /// prompt stays where it was (in the kept tail), nothing is appended
    /// (pi 0.73; added in event schema 8).
    Retry,
}

/// A complete compaction policy. Every constant is configurable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Preset or user-given name; recorded in prune events as "the policy that fired".
    pub name: String,
    /// `compaction.auto`: automatic compaction on overflow.
    pub auto: bool,
    /// `compaction.prune`: tool-output pruning when a turn ends.
    pub prune: bool,
    /// The overflow predicate.
    pub overflow: OverflowRule,
    /// `PRUNE_PROTECT`: newest estimated tool-output tokens kept.
    pub prune_protect: u64,
    /// `PRUNE_MINIMUM`: prune only if strictly more than this would be cleared.
    pub prune_minimum: u64,
    /// Recent user turns never pruned (2).
    pub prune_protect_turns: u32,
    /// Tools whose output is never pruned, sorted (`skill`).
    pub protected_tools: Vec<String>,
    /// The token estimator.
    pub estimator: Estimator,
    /// The recent-turn tail kept after compaction; `None` = no tail (seed).
    pub tail: Option<TailRule>,
    /// What the summarizer is sent (added in event schema 2; schema-1
    /// records decode with the default).
    #[serde(default)]
    pub summary_input: SummaryInput,
    /// Whether a failed compaction's marker is sent (added in event schema 2).
    #[serde(default)]
    pub failed_marker: FailedMarker,
    /// The message that resumes an automatic compaction (added in event schema 3).
    #[serde(default)]
    pub continue_message: ContinueMessage,
    /// What a provider's "request too large" does (added in event schema 3).
    #[serde(default)]
    pub provider_overflow: ProviderOverflow,
    /// Where automatic compaction fires, as a percentage (1–100) of the
    /// usable budget: the count is compared with `usable × percent / 100`
    /// (added in event schema 6; older records decode with 100).
    #[serde(default = "full_threshold")]
    pub threshold_percent: u64,
    /// How a completed compaction is sent (added in event schema 8; older
    /// records decode with [`PivotForm::Question`]).
    #[serde(default)]
    pub pivot: PivotForm,
    /// When the overflow predicate runs (added in event schema 8; older
    /// records decode with [`OverflowCheckAt::EveryStep`]).
    #[serde(default)]
    pub check_at: OverflowCheckAt,
    /// Models the threshold never applies to, as prefixes of model ids:
    /// after an answer of one of them the overflow predicate does not run,
    /// and only a provider's refusal compacts (Claude Code 2.1.328 resolves
    /// their auto-compact window to "auto"). Added in event schema 8; older
    /// records decode with none.
    #[serde(default)]
    pub unchecked_models: Vec<String>,
}

/// The threshold of every policy before the knob existed: the whole usable
/// budget.
pub const FULL_THRESHOLD: u64 = 100;

fn full_threshold() -> u64 {
    FULL_THRESHOLD
}

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
    pub fn claude_code_2_1() -> Self {
        Policy {
            continue_message: ContinueMessage::None,
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
    /// context window (a configured `model_auto_compact_token_limit` below it is
    /// the threshold percentage: `--threshold`); a provider's refusal fails
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

    /// Whether the overflow predicate runs after an answer of `model` (see
    /// [`Policy::unchecked_models`]).
    pub fn checks_model(&self, model: Option<&str>) -> bool {
        let Some(model) = model else {
            return true;
        };
        !self
            .unchecked_models
            .iter()
            .any(|prefix| model.starts_with(prefix.as_str()))
    }

    /// Whether `tool`'s output is protected from pruning.
    pub fn is_protected_tool(&self, tool: &str) -> bool {
        self.protected_tools.iter().any(|t| t == tool)
    }

    /// Estimated tokens of `text` under this policy's estimator.
    pub fn estimate(&self, text: &str) -> u64 {
        self.estimator.estimate(text)
    }

    /// `maxOutputTokens(model) = min(limit.output, OUTPUT_TOKEN_MAX) || OUTPUT_TOKEN_MAX`.
    pub fn max_output_tokens(&self, limits: &ModelLimits) -> u64 {
        let cap = self.overflow.output_token_max;
        match limits.output {
            Some(out) if out > 0 => out.min(cap),
            _ => cap,
        }
    }

    /// The usable input budget for `limits`; `None` when auto-compaction can
    /// never fire (context limit 0).
    pub fn usable(&self, limits: &ModelLimits) -> Option<u64> {
        if limits.context == 0 {
            return None;
        }
        let max_out = self.max_output_tokens(limits);
        let input = limits.input.filter(|&i| i > 0);
        Some(match self.overflow.budget {
            BudgetRule::Seed => input.unwrap_or_else(|| limits.context.saturating_sub(max_out)),
            BudgetRule::Reserved { reserved, buffer } => match input {
                Some(i) => i.saturating_sub(reserved.unwrap_or(buffer.min(max_out))),
                None => limits.context.saturating_sub(max_out),
            },
            BudgetRule::ContextLess { output_cap, buffer } => input
                .unwrap_or(limits.context)
                .saturating_sub(max_out.min(output_cap))
                .saturating_sub(buffer),
        })
    }

    /// Where automatic compaction fires: `usable × threshold_percent / 100`
    /// (the percentage taken as 1–100); `None` without a context limit.
    pub fn threshold(&self, limits: &ModelLimits) -> Option<u64> {
        let percent = self.threshold_percent.clamp(1, FULL_THRESHOLD);
        self.usable(limits)
            .map(|u| (u128::from(u) * u128::from(percent) / 100) as u64)
    }

    /// The number compared with the budget.
    pub fn count(&self, tokens: &TokenUsage) -> u64 {
        match self.overflow.count {
            CountRule::InputCacheReadOutput => tokens
                .input
                .saturating_add(tokens.cache_read)
                .saturating_add(tokens.output),
            CountRule::TotalOrAllFour => match tokens.total {
                Some(t) if t > 0 => t,
                _ => tokens
                    .input
                    .saturating_add(tokens.output)
                    .saturating_add(tokens.cache_read)
                    .saturating_add(tokens.cache_write),
            },
        }
    }

    /// The overflow predicate for one finished step's usage.
    pub fn check_overflow(&self, limits: &ModelLimits, tokens: &TokenUsage) -> OverflowCheck {
        self.check_count(limits, self.count(tokens))
    }

    /// The overflow predicate for a count already made (the usage's
    /// [`Policy::count`], plus what came after it when checked before a
    /// request).
    pub fn check_count(&self, limits: &ModelLimits, count: u64) -> OverflowCheck {
        let usable = self.usable(limits);
        let overflow = match self.threshold(limits) {
            Some(u) if self.auto => match self.overflow.comparison {
                Comparison::Greater => count > u,
                Comparison::GreaterOrEqual => count >= u,
            },
            _ => false,
        };
        OverflowCheck {
            count,
            usable,
            overflow,
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Self::opencode_seed()
    }
}

/// The outcome of one overflow check, with the numbers used (for the audit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverflowCheck {
    /// The token count compared.
    pub count: u64,
    /// The usable budget; `None` when the context limit is 0.
    pub usable: Option<u64>,
    /// Whether the step overflowed: the count reached the policy's
    /// threshold, `usable` times its percentage (always false when `auto`
    /// is off).
    pub overflow: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn utf16_len_counts_like_char_decoding(s in ".*") {
            let by_chars: u64 = s.chars().map(|c| c.len_utf16() as u64).sum();
            proptest::prop_assert_eq!(utf16_len(&s), by_chars);
        }
    }

    #[test]
    fn utf16_len_of_every_width() {
        assert_eq!(utf16_len(""), 0);
        assert_eq!(utf16_len("a"), 1);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("日本"), 2);
        assert_eq!(utf16_len("😀"), 2);
        assert_eq!(utf16_len("a😀é日"), 5);
    }

    fn limits(context: u64, input: Option<u64>, output: Option<u64>) -> ModelLimits {
        ModelLimits {
            context,
            input,
            output,
        }
    }

    fn usage(input: u64, cache_read: u64, output: u64) -> TokenUsage {
        TokenUsage {
            input,
            cache_read,
            output,
            ..TokenUsage::default()
        }
    }

    #[test]
    fn estimate_rounds_half_up_on_utf16_units() {
        let e = Estimator::CharsPerToken { chars_per_token: 4 };
        let table: &[(&str, u64)] = &[
            ("", 0),
            ("a", 0),          // 0.25
            ("ab", 1),         // 0.5 rounds up
            ("abc", 1),        // 0.75
            ("abcd", 1),       // 1.0
            ("abcde", 1),      // 1.25
            ("abcdef", 2),     // 1.5 rounds up
            ("😀", 1),         // 2 UTF-16 units (surrogate pair) -> 0.5 -> 1
            ("é", 0),          // 1 unit, 2 UTF-8 bytes
            ("😀😀😀", 2),     // 6 units -> 1.5 -> 2
            ("日本語です", 1), // 5 units -> 1.25
        ];
        for (text, want) in table {
            assert_eq!(e.estimate(text), *want, "estimate({text:?})");
        }
        assert_eq!(utf16_len("😀a"), 3);
        // odd divisor: 5 units / 3 = 1.67 -> 2; 4/3 = 1.33 -> 1; 3/2=1.5 -> 2
        assert_eq!(estimate_tokens(5, 3), 2);
        assert_eq!(estimate_tokens(4, 3), 1);
        assert_eq!(estimate_tokens(3, 2), 2);
    }

    /// Each agent preset fires where its agent does: (preset, limits,
    /// last count that fits, first count that overflows).
    #[test]
    fn agent_presets_fire_at_their_agents_thresholds() {
        let cases = [
            (
                Policy::claude_code_2_1(),
                limits(200_000, None, Some(64_000)),
                166_999,
                167_000,
            ),
            (
                Policy::claude_code_2_1(),
                limits(200_000, None, Some(8_000)),
                178_999,
                179_000,
            ),
            (
                Policy::codex_0_169(),
                limits(272_000, None, None),
                244_799,
                244_800,
            ),
            (
                Policy::pi_0_73(),
                limits(200_000, None, None),
                183_616,
                183_617,
            ),
            (
                Policy::goose(),
                limits(128_000, None, None),
                102_400,
                102_401,
            ),
        ];
        for (policy, limits, fits, overflows) in cases {
            let at = |n: u64| {
                policy
                    .check_overflow(
                        &limits,
                        &TokenUsage {
                            total: Some(n),
                            ..TokenUsage::default()
                        },
                    )
                    .overflow
            };
            assert!(!at(fits), "{}: {fits} fits", policy.name);
            assert!(at(overflows), "{}: {overflows} overflows", policy.name);
            assert_eq!(Policy::preset(&policy.name), Some(policy.clone()));
        }
    }

    #[test]
    fn the_threshold_percentage_scales_the_usable_budget() {
        let mut p = Policy::opencode_1_17();
        let l = limits(100_000, None, Some(10_000));
        assert_eq!(p.usable(&l), Some(90_000));
        assert_eq!(p.threshold(&l), Some(90_000));
        p.threshold_percent = 50;
        assert_eq!(p.threshold(&l), Some(45_000));
        let check = p.check_overflow(&l, &usage(45_000, 0, 0));
        assert!(check.overflow);
        assert_eq!(
            check.usable,
            Some(90_000),
            "the check keeps the usable budget"
        );
        assert!(!p.check_overflow(&l, &usage(44_999, 0, 0)).overflow);
        // Out of range: taken as 1..=100.
        p.threshold_percent = 0;
        assert_eq!(p.threshold(&l), Some(900));
        p.threshold_percent = 250;
        assert_eq!(p.threshold(&l), Some(90_000));
        assert_eq!(
            Policy::opencode_seed().threshold(&limits(0, None, None)),
            None
        );
    }

    #[test]
    fn seed_overflow_table() {
        let p = Policy::opencode_seed();
        // (limits, usage, expected usable, expected overflow)
        let cases: Vec<(ModelLimits, TokenUsage, Option<u64>, bool)> = vec![
            // 200k context, 64k output: reserve min(64k,32k) = 32k -> usable 168k
            (
                limits(200_000, None, Some(64_000)),
                usage(100_000, 68_000, 0),
                Some(168_000),
                false,
            ), // == usable
            (
                limits(200_000, None, Some(64_000)),
                usage(100_000, 68_000, 1),
                Some(168_000),
                true,
            ), // usable + 1
            // output limit below the cap: reserve = output
            (
                limits(128_000, None, Some(16_384)),
                usage(111_616, 0, 0),
                Some(111_616),
                false,
            ),
            (
                limits(128_000, None, Some(16_384)),
                usage(111_617, 0, 0),
                Some(111_616),
                true,
            ),
            // no output limit: reserve 32k
            (
                limits(100_000, None, None),
                usage(68_001, 0, 0),
                Some(68_000),
                true,
            ),
            // input limit preferred over context - reserve
            (
                limits(400_000, Some(272_000), Some(128_000)),
                usage(272_000, 0, 0),
                Some(272_000),
                false,
            ),
            (
                limits(400_000, Some(272_000), Some(128_000)),
                usage(200_000, 72_000, 1),
                Some(272_000),
                true,
            ),
            // context 0: never
            (
                limits(0, None, Some(4_096)),
                usage(10_000_000, 0, 0),
                None,
                false,
            ),
            // reasoning and cache_write are not counted by the seed rule
            (
                limits(100_000, None, Some(32_000)),
                TokenUsage {
                    input: 60_000,
                    reasoning: 50_000,
                    cache_write: 50_000,
                    ..Default::default()
                },
                Some(68_000),
                false,
            ),
        ];
        for (i, (l, u, usable, overflow)) in cases.iter().enumerate() {
            let c = p.check_overflow(l, u);
            assert_eq!(c.usable, *usable, "case {i}: usable");
            assert_eq!(c.overflow, *overflow, "case {i}: overflow ({c:?})");
        }
        let off = Policy {
            auto: false,
            ..Policy::opencode_seed()
        };
        assert!(
            !off.check_overflow(&limits(1000, None, None), &usage(1_000_000, 0, 0))
                .overflow
        );
    }

    #[test]
    fn opencode_1_17_overflow_table() {
        let p = Policy::opencode_1_17();
        let total = |t: u64| TokenUsage {
            total: Some(t),
            ..Default::default()
        };
        let cases: Vec<(ModelLimits, TokenUsage, Option<u64>, bool)> = vec![
            // no input limit: context - maxOut; >= fires at equality
            (
                limits(200_000, None, Some(64_000)),
                total(168_000),
                Some(168_000),
                true,
            ),
            (
                limits(200_000, None, Some(64_000)),
                total(167_999),
                Some(168_000),
                false,
            ),
            // with input limit: input - min(20k, maxOut)
            (
                limits(400_000, Some(272_000), Some(128_000)),
                total(252_000),
                Some(252_000),
                true,
            ),
            (limits(0, Some(100_000), Some(8_192)), total(1), None, false),
            (
                limits(120_000, Some(100_000), Some(8_192)),
                total(91_808),
                Some(91_808),
                true,
            ),
            // total absent: all four counts
            (
                limits(200_000, None, Some(64_000)),
                TokenUsage {
                    input: 3,
                    output: 1480,
                    cache_write: 15438,
                    cache_read: 151_079,
                    ..Default::default()
                },
                Some(168_000),
                true,
            ),
            // usable clamps at 0: every step overflows (the upstream loop quirk)
            (
                limits(200_000, Some(10_000), Some(64_000)),
                total(0),
                Some(0),
                true,
            ),
        ];
        for (i, (l, u, usable, overflow)) in cases.iter().enumerate() {
            let c = p.check_overflow(l, u);
            assert_eq!(c.usable, *usable, "case {i}: usable");
            assert_eq!(c.overflow, *overflow, "case {i}: overflow ({c:?})");
        }
        // `reserved` applies only with an input limit
        let mut r = Policy::opencode_1_17();
        r.overflow.budget = BudgetRule::Reserved {
            reserved: Some(50_000),
            buffer: 20_000,
        };
        assert_eq!(
            r.usable(&limits(400_000, Some(272_000), Some(128_000))),
            Some(222_000)
        );
        assert_eq!(
            r.usable(&limits(200_000, None, Some(64_000))),
            Some(168_000)
        );
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
