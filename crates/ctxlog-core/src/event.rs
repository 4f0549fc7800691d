//! The event model: one enum of session events, each wrapped in an
//! [`Envelope`]. The variant lists here are part of the on-disk format:
//! **append new variants at the end, never reorder or remove** (a binary
//! codec stores the variant index). No type here uses `skip_serializing_if`,
//! `flatten` or `untagged`, so a non-self-describing codec can carry them.

use crate::capture::Capture;
use crate::ids::{EventId, MessageId, PartId, Seq, SessionId, TimestampMs};
use crate::json::Json;
use crate::policy::{ModelLimits, Policy, TokenUsage};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use crate::payload::{
    Attachment, CompactionTrigger, FinishReason, MessageError, ModelRef, PartBody, PromptRecord,
    PrunedPart, SessionAbout, SourceTarget, Span, ToolState,
};
pub use crate::role::Role;

/// Version of the event schema written by this build.
///
/// - 1: the first schema.
/// - 2: [`Policy`] gains `summary_input` and `failed_marker` (the
///   `opencode-1.18` preset). Schema-1 records still decode
///   ([`crate::codec::decode_envelope`]) with both at their defaults, which
///   are the rules every schema-1 policy had.
/// - 3: [`Policy`] gains `continue_message` and `provider_overflow`; older
///   records decode with both at their defaults (what ctxlog always did).
/// - 4: [`Event::SourceFields`] (a new variant: every older record decodes
///   unchanged; an older build refuses a schema-4 record by name).
/// - 5: [`Event::SessionDescribed`], [`Event::SessionReplaced`] and
///   [`CompactionTrigger::Recorded`] (new variants, as in 4).
/// - 6: [`Policy`] gains `threshold_percent` (and the budget rule
///   `ContextLess`, a new variant); older records decode with 100, the
///   threshold every older policy had.
/// - 7: [`Event::MessagesWithdrawn`] (a new variant, as in 4).
/// - 8: [`Policy`] gains `pivot` and `check_at` (and the continue message
///   `None`, a new variant); older records decode with
///   [`crate::PivotForm::Question`] and [`crate::OverflowCheckAt::EveryStep`],
///   what every older policy did.
/// - 9: [`Event::ImportStarted`] and [`Event::UsageReported`] (new
///   variants, as in 4).
/// - 10: [`Role::Developer`], [`Role::System`] and
///   [`crate::policy::Estimator::BytesPerToken`] (new variants, as in 4).
/// - 11: [`Event::Captured`] (a new variant, as in 4).
pub const EVENT_SCHEMA_VERSION: u16 = 11;

/// One recorded event with its metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The session the event belongs to.
    pub session: SessionId,
    /// Per-session sequence number, starting at 1, contiguous.
    pub seq: Seq,
    /// Unique id of this event (UUID v7).
    pub id: EventId,
    /// When the event was recorded, ms since the epoch, supplied by the caller.
    pub recorded_at: TimestampMs,
    /// The event that caused this one, if any.
    pub causation: Option<EventId>,
    /// Groups the events of one operation (a turn, a compaction job, an import).
    pub correlation: Option<Uuid>,
    /// What happened.
    pub event: Event,
}

/// Every event a session can record. **Append only**: the order of variants
/// is part of the log format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// The first event of every session: the policy and the model's limits.
    SessionStarted {
        /// The compaction policy in force.
        policy: Policy,
        /// The model's limits.
        limits: ModelLimits,
        /// Title, when known.
        title: Option<String>,
        /// The recorded session this one was imported from (its own id).
        source_id: Option<String>,
    },
    /// A message was appended (its parts follow as `PartAppended`).
    MessageAppended {
        /// The new message's id.
        message: MessageId,
        /// User or assistant.
        role: Role,
        /// Agent name (`build`, `plan`, ...).
        agent: Option<String>,
        /// The model it was produced with or addressed to.
        model: Option<ModelRef>,
        /// Written by the runtime (e.g. "Continue if you have next steps").
        synthetic: bool,
        /// The message it answers (assistant → user).
        parent: Option<MessageId>,
        /// Id in the recorded source (message id, `line:N`, ...).
        source_id: Option<String>,
    },
    /// A part was appended to an existing message.
    PartAppended {
        /// The message.
        message: MessageId,
        /// The new part's id.
        part: PartId,
        /// Its content. `StepFinish` and `Compaction` are refused here: they
        /// have dedicated events.
        body: PartBody,
        /// Id in the recorded source (part id, call id, ...).
        source_id: Option<String>,
    },
    /// A part's content was replaced (e.g. a tool going pending → running →
    /// completed). The kind must stay the same.
    PartUpdated {
        /// The part.
        part: PartId,
        /// Its new content.
        body: PartBody,
    },
    /// A model call finished: appends a step-finish part and sets the
    /// message's usage and finish. The overflow predicate is checked here.
    StepFinished {
        /// The assistant message (never a summary).
        message: MessageId,
        /// The step-finish part created.
        part: PartId,
        /// Why it stopped.
        reason: FinishReason,
        /// Its usage.
        tokens: TokenUsage,
        /// Cost in micro-units, when known.
        cost_micros: Option<u64>,
    },
    /// A compaction was queued: appends the marker, a user message holding
    /// one compaction part. The marker message id is the job id.
    CompactionRequested {
        /// The marker message (= job id).
        message: MessageId,
        /// Its compaction part.
        part: PartId,
        /// Automatic or manual.
        auto: bool,
        /// Triggered by a provider overflow error.
        overflow: bool,
        /// Why.
        trigger: CompactionTrigger,
        /// Agent of the marker message.
        agent: Option<String>,
        /// Model of the marker message.
        model: Option<ModelRef>,
        /// Id in the recorded source.
        source_id: Option<String>,
    },
    /// A compaction job started: appends the summary message (assistant,
    /// flagged `summary`, parent = marker). Text parts follow as `PartAppended`.
    CompactionStarted {
        /// The job (marker message).
        job: MessageId,
        /// The summary message created.
        summary_message: MessageId,
        /// Agent of the summary (`compaction`).
        agent: Option<String>,
        /// Model that summarises.
        model: Option<ModelRef>,
        /// The prompt used (hash and size).
        prompt: Option<PromptRecord>,
        /// First message of the recent tail kept verbatim after the summary.
        tail_start: Option<MessageId>,
        /// Id in the recorded source.
        source_id: Option<String>,
    },
    /// The summary finished: appends its step-finish part; the pivot is now
    /// complete and the window starts at the marker.
    SummaryCompleted {
        /// The job (marker message).
        job: MessageId,
        /// The step-finish part created on the summary message.
        part: PartId,
        /// Finish reason of the summary call.
        reason: FinishReason,
        /// Its usage.
        tokens: TokenUsage,
        /// Secrets redacted from the summary text (a count, never the secret).
        redactions: u32,
    },
    /// A compaction job failed; history is left as it was.
    CompactionFailed {
        /// The job (marker message).
        job: MessageId,
        /// What went wrong.
        error: String,
    },
    /// Tool outputs were marked pruned (hidden from the model, kept in the log).
    PartsPruned {
        /// Which parts, with their estimated tokens.
        parts: Vec<PrunedPart>,
        /// Sum of the parts' tokens.
        total_tokens: u64,
        /// The name of the policy that fired (or `manual`).
        policy: String,
    },
    /// The compaction policy changed from this point on.
    PolicyChanged {
        /// The new policy.
        policy: Policy,
    },
    /// Pruned parts were restored (an undo of `PartsPruned`).
    PartsRestored {
        /// Which parts.
        parts: Vec<PartId>,
        /// Why, free text.
        reason: String,
    },
    /// An error was recorded on a message (aborted, provider error, ...).
    MessageErrored {
        /// The message.
        message: MessageId,
        /// The error.
        error: MessageError,
    },
    /// The model's limits changed (model switch) from this point on.
    LimitsChanged {
        /// The new limits.
        limits: ModelLimits,
    },
    /// One attempt at building a compaction request: which strategy, how
    /// large the request was estimated, and whether it fits the model.
    CompactionAttempted {
        /// The job (marker message).
        job: MessageId,
        /// `full`, `truncated-tool-outputs` or `recent-turns`.
        strategy: String,
        /// Estimated tokens of the request.
        request_tokens: u64,
        /// The usable input budget it was checked against (`None` = unlimited).
        limit: Option<u64>,
        /// Whether it fits.
        fits: bool,
    },
    /// The loop guard stopped automatic compaction until the next real user
    /// message.
    AutoCompactionPaused {
        /// Why, in words.
        reason: String,
        /// Estimated window tokens before the last automatic compaction.
        window_before: u64,
        /// Estimated window tokens after it.
        window_after: u64,
    },
    /// Fields of an imported object that ctxlog does not model (OpenCode's
    /// `path`, snapshots, `summary.diffs`, the ids of parts ctxlog writes
    /// itself, ...), kept as the source wrote them so that an export to the
    /// same format gives them back. Nothing is derived from them.
    SourceFields {
        /// The source format they belong to (`opencode`).
        format: String,
        /// The object they complete.
        target: SourceTarget,
        /// A JSON object: an export merges it over the object it writes
        /// (objects key by key, any other value replacing the written one).
        fields: Json,
    },
    /// What the recording says about the session (title, directory, agent,
    /// model, cost), replacing what an earlier one (and `SessionStarted`'s
    /// title) said.
    SessionDescribed {
        /// The description.
        about: SessionAbout,
    },
    /// The recording this session was imported from changed in the past
    /// (an edited or branched file) and was stored again, as `by`, at the
    /// user's request (`import --replace`). This session stays readable as
    /// it was.
    SessionReplaced {
        /// The session that holds the recording's new version.
        by: SessionId,
    },
    /// Messages were taken back by the agent (the OpenAI Agents SDK's
    /// `pop_item` and `clear_session`): they leave the window, the prune
    /// walk and every view of the model input for good. Unlike a prune,
    /// nothing restores them; the log keeps them.
    MessagesWithdrawn {
        /// The messages, in the order they were withdrawn.
        messages: Vec<MessageId>,
        /// Why, in words (`pop_item`, `clear_session`, ...).
        reason: String,
    },
    /// An import began storing a recording in more than one append: it is
    /// complete once the session's head reaches `head` and its description
    /// stream's ([`crate::description_stream`]) reaches `descriptions`.
    /// Until then (the import was killed, the machine crashed) the session
    /// holds a prefix of the recording, and says so. Kept in the
    /// description stream, before the appends it announces.
    ImportStarted {
        /// The session's head once the import is complete.
        head: Seq,
        /// The description stream's head once the import is complete.
        descriptions: Seq,
    },
    /// What the model reported of a step whose end is not recorded yet:
    /// sets the message's usage, as its `StepFinished` will. A recording
    /// may show a response's usage long before its end, or never show its
    /// end (Claude Code writes each content block of an answer as a line
    /// with the answer's usage, and no line says which block is the last),
    /// so an import records what is known as soon as it is known, and the
    /// step's end once a later line tells it. No decision is made here.
    UsageReported {
        /// The assistant message of the open step.
        message: MessageId,
        /// The usage reported so far.
        tokens: TokenUsage,
    },
    /// An agent's hook brought the session in at a moment the agent named
    /// (see [`Capture`]). Kept in the description stream.
    Captured {
        /// When, why and how far.
        capture: Capture,
    },
}

/// Every event kind name, in variant order. A test checks this list against
/// `fixtures/event-kinds.txt`, so reordering variants fails CI.
pub const EVENT_KINDS: &[&str] = &[
    "session_started",
    "message_appended",
    "part_appended",
    "part_updated",
    "step_finished",
    "compaction_requested",
    "compaction_started",
    "summary_completed",
    "compaction_failed",
    "parts_pruned",
    "policy_changed",
    "parts_restored",
    "message_errored",
    "limits_changed",
    "compaction_attempted",
    "auto_compaction_paused",
    "source_fields",
    "session_described",
    "session_replaced",
    "messages_withdrawn",
    "import_started",
    "usage_reported",
    "captured",
];

impl Event {
    /// The tool call a part append or update carries: its part, call id,
    /// tool and state (`None` for any other event).
    pub fn tool_call(&self) -> Option<(PartId, &str, &str, &ToolState)> {
        match self {
            Event::PartAppended {
                part,
                body:
                    PartBody::Tool {
                        call_id,
                        tool,
                        state,
                    },
                ..
            }
            | Event::PartUpdated {
                part,
                body:
                    PartBody::Tool {
                        call_id,
                        tool,
                        state,
                    },
            } => Some((*part, call_id, tool, state)),
            _ => None,
        }
    }

    /// Whether the event describes (the session, or one of its messages or
    /// parts, as the recording has it, or how far its import got) rather
    /// than records something that happened: [`Event::SessionDescribed`],
    /// [`Event::SourceFields`] and [`Event::ImportStarted`]. A recording may
    /// change a description while it grows (OpenCode adds fields to a
    /// message after its turn, a title is generated), so descriptions are
    /// stored in the session's description stream
    /// ([`crate::description_stream`]), never between the events of what
    /// happened, whose seqs they would shift; each supersedes the last with
    /// the same [`Event::description_key`]. (Stores written before the
    /// description stream hold them at the end of each import.)
    pub fn is_description(&self) -> bool {
        self.description_key().is_some()
    }

    /// What a description describes: its kind, format and target (`None`
    /// for an event that is not a description).
    pub fn description_key(&self) -> Option<(u8, &str, Option<SourceTarget>)> {
        match self {
            Event::SessionDescribed { .. }
            | Event::ImportStarted { .. }
            | Event::Captured { .. } => Some((self.kind_index(), "", None)),
            Event::SourceFields { format, target, .. } => {
                Some((self.kind_index(), format.as_str(), Some(*target)))
            }
            _ => None,
        }
    }

    /// The event's kind name (snake case).
    pub fn kind(&self) -> &'static str {
        EVENT_KINDS[self.kind_index() as usize]
    }

    /// The variant index, as a binary codec stores it.
    pub fn kind_index(&self) -> u8 {
        match self {
            Event::SessionStarted { .. } => 0,
            Event::MessageAppended { .. } => 1,
            Event::PartAppended { .. } => 2,
            Event::PartUpdated { .. } => 3,
            Event::StepFinished { .. } => 4,
            Event::CompactionRequested { .. } => 5,
            Event::CompactionStarted { .. } => 6,
            Event::SummaryCompleted { .. } => 7,
            Event::CompactionFailed { .. } => 8,
            Event::PartsPruned { .. } => 9,
            Event::PolicyChanged { .. } => 10,
            Event::PartsRestored { .. } => 11,
            Event::MessageErrored { .. } => 12,
            Event::LimitsChanged { .. } => 13,
            Event::CompactionAttempted { .. } => 14,
            Event::AutoCompactionPaused { .. } => 15,
            Event::SourceFields { .. } => 16,
            Event::SessionDescribed { .. } => 17,
            Event::SessionReplaced { .. } => 18,
            Event::MessagesWithdrawn { .. } => 19,
            Event::ImportStarted { .. } => 20,
            Event::UsageReported { .. } => 21,
            Event::Captured { .. } => 22,
        }
    }
}
