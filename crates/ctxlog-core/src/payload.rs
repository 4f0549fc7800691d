//! The values events carry: parts (`PartBody`, `ToolState`), the model
//! and finish of a step, compaction triggers, errors, pruned parts and
//! what a session is about. Part of the on-disk format like the events
//! themselves (see `event.rs`): variants are appended, never reordered.

use crate::ids::{MessageId, PartId, TimestampMs};
use crate::json::Json;
use crate::policy::{OverflowCheck, TokenUsage};
use serde::{Deserialize, Serialize};

/// The provider and model a message was produced with or addressed to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRef {
    /// Provider id, e.g. `anthropic`.
    pub provider: String,
    /// Model id, e.g. `claude-sonnet-4-5`.
    pub model: String,
}

/// Why a model call stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FinishReason {
    /// The model ended its turn.
    Stop,
    /// The model asked for tool calls.
    ToolCalls,
    /// The output limit was hit.
    Length,
    /// The provider filtered the content.
    ContentFilter,
    /// The call failed.
    Error,
    /// Anything else, verbatim.
    Other(String),
}

/// Start and end times of a part (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Span {
    /// Start, ms.
    pub start: TimestampMs,
    /// End, ms, once known.
    pub end: Option<TimestampMs>,
}

/// A file or media attachment (user file part or tool-output attachment).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// MIME type.
    pub mime: String,
    /// File name, when known.
    pub filename: Option<String>,
    /// URL or data URL of the content.
    pub url: String,
}

/// The lifecycle state of a tool call, carried whole by every update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToolState {
    /// Called, not started.
    Pending {
        /// Arguments.
        input: Json,
        /// The raw argument text, as streamed.
        raw: String,
    },
    /// Executing.
    Running {
        /// Arguments.
        input: Json,
        /// Display title.
        title: Option<String>,
        /// Start time, ms.
        start: TimestampMs,
    },
    /// Finished with an output.
    Completed {
        /// Arguments.
        input: Json,
        /// The full output text. Kept intact even after pruning.
        output: String,
        /// Display title.
        title: Option<String>,
        /// Tool-specific metadata.
        metadata: Json,
        /// Start and end times, ms.
        start: TimestampMs,
        /// End time, ms.
        end: TimestampMs,
        /// Media or files the tool returned.
        attachments: Vec<Attachment>,
    },
    /// Finished with an error.
    Error {
        /// Arguments.
        input: Json,
        /// The error text.
        error: String,
        /// Start time, ms.
        start: TimestampMs,
        /// End time, ms.
        end: TimestampMs,
    },
}

impl ToolState {
    /// The call's arguments.
    pub fn input(&self) -> &Json {
        match self {
            ToolState::Pending { input, .. }
            | ToolState::Running { input, .. }
            | ToolState::Completed { input, .. }
            | ToolState::Error { input, .. } => input,
        }
    }

    /// Short status name: `pending`, `running`, `completed`, `error`.
    pub fn status(&self) -> &'static str {
        match self {
            ToolState::Pending { .. } => "pending",
            ToolState::Running { .. } => "running",
            ToolState::Completed { .. } => "completed",
            ToolState::Error { .. } => "error",
        }
    }
}

/// The content of a part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PartBody {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Written by the runtime, not by a person or the model.
        synthetic: bool,
        /// Times, when known.
        time: Option<Span>,
    },
    /// Model reasoning ("thinking").
    Reasoning {
        /// The reasoning text.
        text: String,
        /// Times, when known.
        time: Option<Span>,
    },
    /// A tool call and its result in one part.
    Tool {
        /// Provider call id (`tool_use` id, `call_id`, ...).
        call_id: String,
        /// Tool name.
        tool: String,
        /// Lifecycle state.
        state: ToolState,
    },
    /// A file attached to a message.
    File(Attachment),
    /// Start of one model call.
    StepStart {
        /// Workspace snapshot id, when recorded.
        snapshot: Option<String>,
    },
    /// End of one model call. Created only by [`Event::StepFinished`](crate::Event::StepFinished) and
    /// [`Event::SummaryCompleted`](crate::Event::SummaryCompleted).
    StepFinish {
        /// Why the call stopped.
        reason: FinishReason,
        /// Its usage.
        tokens: TokenUsage,
        /// Its cost in micro-units of currency, when known.
        cost_micros: Option<u64>,
    },
    /// A compaction marker: queues a compaction job. Created only by
    /// [`Event::CompactionRequested`](crate::Event::CompactionRequested).
    Compaction {
        /// Triggered automatically (true) or by hand (false).
        auto: bool,
        /// Triggered by a provider context-overflow error.
        overflow: bool,
    },
    /// A part type ctxlog does not model (OpenCode's `patch`, `agent`,
    /// `subtask`, `retry`, `snapshot`, ...): kept verbatim so an export gives
    /// it back, never sent to the model.
    Other {
        /// The source's type name.
        kind: String,
        /// The source's fields, minus the ids.
        data: Json,
    },
}

impl PartBody {
    /// Short kind name, as OpenCode spells part types.
    pub fn kind(&self) -> &'static str {
        match self {
            PartBody::Text { .. } => "text",
            PartBody::Reasoning { .. } => "reasoning",
            PartBody::Tool { .. } => "tool",
            PartBody::File(_) => "file",
            PartBody::StepStart { .. } => "step-start",
            PartBody::StepFinish { .. } => "step-finish",
            PartBody::Compaction { .. } => "compaction",
            PartBody::Other { .. } => "other",
        }
    }
}

/// Why a compaction was requested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompactionTrigger {
    /// The overflow predicate fired after a finished step.
    Overflow {
        /// The step's message.
        step: MessageId,
        /// The numbers used.
        check: OverflowCheck,
    },
    /// The provider rejected a request as too large.
    ProviderOverflow {
        /// The provider's error text.
        error: String,
    },
    /// Asked for by hand.
    Manual,
    /// Read from a recorded session that had already compacted (written by
    /// ctxlog before schema 5; see [`CompactionTrigger::Recorded`]).
    Imported,
    /// Read from a recorded session: the recording's agent decided it.
    Recorded {
        /// The agent that decided it: `claude-code`, `codex`, `pi`,
        /// `opencode-1.18.33` (`opencode` when its version is unknown).
        agent: String,
        /// The context's tokens before it, as the agent recorded them
        /// (Claude Code's `compactMetadata.preTokens`, pi's
        /// `tokensBefore`).
        tokens_before: Option<u64>,
    },
}

/// An error recorded on a message (OpenCode's `error.name` / message).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageError {
    /// Error kind, e.g. `MessageAbortedError`.
    pub name: String,
    /// Human-readable text.
    pub message: String,
}

/// How the compaction prompt actually used looked: its hash and size, never
/// its text (which may carry untrusted hook content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptRecord {
    /// SHA-256 of the prompt text, hex.
    pub sha256: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// One part marked as pruned, with its estimated output tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrunedPart {
    /// The tool part.
    pub part: PartId,
    /// Estimated tokens of its output at the time of pruning.
    pub tokens: u64,
}

/// The object of a recorded source that [`Event::SourceFields`](crate::Event::SourceFields) completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SourceTarget {
    /// The session itself (OpenCode's `info`).
    Session,
    /// A message (its `info`).
    Message(MessageId),
    /// A part.
    Part(PartId),
}

/// What a recording says about its session as a whole, where it says it.
/// Unlike what happened in the session, it can change while the session
/// grows (OpenCode titles a session after its first prompt, users rename
/// sessions, the cost adds up), so each [`Event::SessionDescribed`](crate::Event::SessionDescribed)
/// replaces the one before.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionAbout {
    /// The title.
    pub title: Option<String>,
    /// The working directory the agent ran in.
    pub directory: Option<String>,
    /// The agent that recorded it: `opencode-1.18.33`, `claude-code-2.0.5`,
    /// `codex-0.41.0`, `pi` (the version when the recording has one).
    pub agent: Option<String>,
    /// The model last used, `provider/model` when the provider is known.
    pub model: Option<String>,
    /// The cost the agent recorded, in US dollars.
    pub cost_usd: Option<f64>,
}
