//! [`Policy`]: the record of every setting, the kinds of choice its fields
//! hold, and the defaults older records decode with.

use super::estimator::Estimator;
use super::overflow_rule::OverflowRule;
use serde::{Deserialize, Serialize};

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

impl Policy {
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
}
