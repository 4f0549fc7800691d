//! The commands [`decide`](super::decide()) takes, and the values they
//! carry ([`Step`], [`RecordedCompaction`], [`SummaryText`]).

use super::items::AgentItem;
use crate::event::{CompactionTrigger, Event, FinishReason, ModelRef};
use crate::event::{PartBody, PromptRecord};
use crate::ids::{MessageId, PartId};
use crate::policy::{ModelLimits, Policy, TokenUsage};

/// Which messages a compaction keeps verbatim after its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TailChoice {
    /// The tail the session's policy keeps.
    #[default]
    Policy,
    /// From this message on (`None`: no tail), as a runtime chose it.
    From(Option<MessageId>),
}

/// One finished model call: an assistant message, its parts and its usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The user message it answers.
    pub parent: MessageId,
    /// Its content (text, reasoning, tool calls...), in order.
    pub parts: Vec<PartBody>,
    /// The usage the provider reported.
    pub tokens: TokenUsage,
    /// Why the call stopped.
    pub finish: FinishReason,
    /// The model that answered.
    pub model: Option<ModelRef>,
    /// The agent (`build`, `plan`...).
    pub agent: Option<String>,
    /// Cost in micro-units, when known.
    pub cost_micros: Option<u64>,
    /// Id of the message in a recorded source.
    pub source_id: Option<String>,
}

impl Step {
    /// A step answering `parent` that stopped on its own, with no parts yet.
    pub fn new(parent: MessageId) -> Self {
        Step {
            parent,
            parts: Vec::new(),
            tokens: TokenUsage::default(),
            finish: FinishReason::Stop,
            model: None,
            agent: None,
            cost_micros: None,
            source_id: None,
        }
    }

    /// Adds a text part.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.parts.push(PartBody::Text {
            text: text.into(),
            synthetic: false,
            time: None,
        });
        self
    }

    /// Adds any part.
    pub fn part(mut self, body: PartBody) -> Self {
        self.parts.push(body);
        self
    }

    /// Sets the reported usage.
    pub fn tokens(mut self, tokens: TokenUsage) -> Self {
        self.tokens = tokens;
        self
    }

    /// Sets the finish reason.
    pub fn finish(mut self, finish: FinishReason) -> Self {
        self.finish = finish;
        self
    }

    /// Sets the model.
    pub fn model(mut self, model: ModelRef) -> Self {
        self.model = Some(model);
        self
    }
}

/// A compaction the recording already did (marker, summary, completion).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCompaction {
    /// Triggered automatically.
    pub auto: bool,
    /// Caused by the provider refusing a request as too large (or an
    /// answer whose input exceeded the window).
    pub overflow: bool,
    /// The summary text (a placeholder is written when it is blank).
    pub text: String,
    /// First message kept verbatim after the summary.
    pub tail_start: Option<MessageId>,
    /// Source id of the marker.
    pub marker_source: Option<String>,
    /// Source id of the summary message.
    pub summary_source: Option<String>,
    /// The agent that decided it (see [`CompactionTrigger::Recorded`]).
    pub decided_by: String,
    /// The context's tokens before it, as the agent recorded them.
    pub tokens_before: Option<u64>,
    /// The usage of the summarizer's own call, when the agent recorded it.
    pub tokens: Option<TokenUsage>,
}

/// What the summarizer produced for a job.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryText {
    /// The (already redacted) summary.
    pub text: String,
    /// Why the summary call stopped.
    pub finish: FinishReason,
    /// Its usage.
    pub tokens: TokenUsage,
    /// Secrets redacted from it.
    pub redactions: u32,
}

/// Everything that can be asked of a session.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Starts the session (the first event).
    Start {
        /// The policy in force.
        policy: Policy,
        /// The model's limits.
        limits: ModelLimits,
        /// Title.
        title: Option<String>,
        /// Id of the recorded source session.
        source_id: Option<String>,
    },
    /// A user message with one text part; `synthetic` when the runtime wrote it.
    UserMessage {
        /// The text.
        text: String,
        /// Written by the runtime.
        synthetic: bool,
        /// Id in a recorded source.
        source_id: Option<String>,
    },
    /// A whole finished step, in one append; then the overflow check.
    Step(Step),
    /// An assistant message with no parts (a step built part by part).
    AssistantMessage {
        /// The user message it answers.
        parent: MessageId,
        /// The model.
        model: Option<ModelRef>,
    },
    /// A part appended to a message.
    AppendPart {
        /// The message.
        message: MessageId,
        /// The content.
        body: PartBody,
    },
    /// The step of a message built part by part finished; then the overflow check.
    FinishStep {
        /// The assistant message.
        message: MessageId,
        /// Why it stopped.
        reason: FinishReason,
        /// Its usage.
        tokens: TokenUsage,
    },
    /// The provider refused the request of assistant message `message` as
    /// too large (its error text): under [`ProviderOverflow::Compact`](crate::policy::ProviderOverflow::Compact) an
    /// automatic compaction flagged `overflow` is queued (it replays the
    /// refused prompt after the summary); otherwise, or when automatic
    /// compaction is off, paused or already pending, the error is recorded
    /// on the message.
    Refused {
        /// The assistant message of the refused request (no finished step).
        message: MessageId,
        /// The provider's words.
        error: String,
    },
    /// Events recorded as they are, each a new id and the command's time: a
    /// recording's (decided by the agent), or a change that is one event
    /// and decides nothing (a part updated, an attempt of a job, a restore,
    /// a policy or limits change, a description, a withdrawal, an error on
    /// a message). A batch ending with a finished step is followed by the
    /// overflow check.
    Record(Vec<Event>),
    /// A compaction the recording already did.
    RecordCompaction(RecordedCompaction),
    /// A compaction asked for by hand (no continue message after it).
    RequestCompaction,
    /// A compaction queued with the trigger a runtime gives it, outside
    /// the overflow check (a session written by hand: tests, replays).
    QueueCompaction {
        /// Automatic (continued after its summary) or manual.
        auto: bool,
        /// Why.
        trigger: CompactionTrigger,
    },
    /// Starts (or restarts, after a crash) a pending job: the summary message,
    /// with the recent tail the policy keeps.
    StartJob {
        /// The job (marker message).
        job: MessageId,
        /// The model that summarises.
        model: Option<ModelRef>,
        /// The prompt used (hash and size).
        prompt: Option<PromptRecord>,
        /// Which messages it keeps verbatim after the summary.
        tail: TailChoice,
    },
    /// The running job's summary arrived.
    CompleteJob {
        /// The job.
        job: MessageId,
        /// The summary.
        summary: SummaryText,
    },
    /// The job failed; history stays as it was.
    FailJob {
        /// The job.
        job: MessageId,
        /// Why.
        error: String,
    },
    /// The turn ended: prune when the policy says so.
    EndTurn,
    /// The agent is about to send its next model request: under a policy
    /// that checks then ([`OverflowCheckAt::BeforeRequest`](crate::policy::OverflowCheckAt::BeforeRequest)), queue an
    /// automatic compaction when the last answer's count plus the estimate
    /// of what came after it reaches the threshold. Nothing under the
    /// other policies (they check after each step).
    BeforeRequest,
    /// Settings: each one given that differs from the session's is
    /// recorded as a change.
    Settle {
        /// The policy wanted.
        policy: Option<Policy>,
        /// The limits wanted.
        limits: Option<ModelLimits>,
    },
    /// Items of a session an agent runtime keeps (the OpenAI Agents SDK's),
    /// in one append: each a message of its own, but an output whose call
    /// waits, which completes the call's tool part.
    AddItems(Vec<AgentItem>),
    /// Every message not withdrawn yet is withdrawn (a session cleared).
    WithdrawAll {
        /// Why.
        reason: String,
    },
    /// A completed call's output taken back: the call waits for its output
    /// again (restored first when a prune cleared it).
    ReopenCall {
        /// The call's tool part.
        part: PartId,
        /// Why.
        reason: String,
    },
    /// The step of the last message sent, when it is an assistant's still
    /// open, finishes with `tokens` (the window's estimate when `None`);
    /// then the overflow check.
    FinishOpenStep {
        /// The usage the provider reported, if any.
        tokens: Option<TokenUsage>,
    },
    /// Reaction after a finished step: queue an automatic compaction on overflow.
    CheckOverflow {
        /// The step's message.
        step: MessageId,
    },
    /// Reaction after an automatic compaction: the loop guard.
    CheckGuard {
        /// Estimated window before the compaction (`None` after a failure).
        window_before: Option<u64>,
    },
}

impl Command {
    /// The command's name, snake case (in errors).
    pub fn name(&self) -> &'static str {
        match self {
            Command::Start { .. } => "start",
            Command::UserMessage { .. } => "user_message",
            Command::Step(_) => "step",
            Command::AssistantMessage { .. } => "assistant_message",
            Command::AppendPart { .. } => "append_part",
            Command::FinishStep { .. } => "finish_step",
            Command::Refused { .. } => "refused",
            Command::Record(_) => "record",
            Command::RecordCompaction(_) => "record_compaction",
            Command::RequestCompaction => "request_compaction",
            Command::QueueCompaction { .. } => "queue_compaction",
            Command::StartJob { .. } => "start_job",
            Command::CompleteJob { .. } => "complete_job",
            Command::FailJob { .. } => "fail_job",
            Command::EndTurn => "end_turn",
            Command::Settle { .. } => "settle",
            Command::AddItems(_) => "add_items",
            Command::WithdrawAll { .. } => "withdraw_all",
            Command::ReopenCall { .. } => "reopen_call",
            Command::FinishOpenStep { .. } => "finish_open_step",
            Command::CheckOverflow { .. } => "check_overflow",
            Command::BeforeRequest => "before_request",
            Command::CheckGuard { .. } => "check_guard",
        }
    }
}
