//! ctxlog-core: the event model, the decisions and the pure reducers of ctxlog.
//!
//! A session is an ordered stream of [`Envelope`]s. [`decide()`] turns a
//! [`Command`] into the events to record: every decision of the compaction
//! lifecycle is made there, once. [`SessionState::evolve`] folds events into
//! the derived state; the views — [`window()`] (the exact model input),
//! [`SessionState::overflow`] (the seeds' predicate), [`plan_prune`] (the
//! prune plan) and [`SessionState::pending_jobs`] (queued compactions) — are
//! pure functions of that state. Nothing here does I/O, reads a clock or
//! draws a random number: ids and times come in with the commands and the
//! events, so replaying a log gives the same [`StateDigest`] in any process.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod audit;
pub mod capture;
pub mod codec;
pub mod decide;
pub mod digest;
pub mod error;
pub mod event;
pub mod fallback;
pub mod generate;
pub mod guard;
pub mod ids;
pub mod json;
mod lookup;
pub mod pack;
pub mod part;
pub mod policy;
pub mod printable;
pub mod prune;
pub mod recorder;
pub mod redact;
pub mod replay;
mod role;
mod sent_part;
pub mod state;
pub mod tail;
pub mod timeline;
pub mod transcript;
pub mod window;

pub use audit::{audit, had_output, source_in, AuditEntry, Auditor};
pub use capture::{AgentProcess, Capture, Moment};
pub use decide::{
    decide, AgentItem, Command, Context, Decided, Draft, ItemKind, RecordedCompaction, Step,
    SummaryText, TailChoice,
};
pub use digest::StateDigest;
pub use error::{Refused, RefusedCommand, RefusedEvent, Violation};
pub use event::{
    Attachment, CompactionTrigger, Envelope, Event, FinishReason, MessageError, ModelRef, PartBody,
    PromptRecord, PrunedPart, Role, SessionAbout, SourceTarget, Span, ToolState, EVENT_KINDS,
    EVENT_SCHEMA_VERSION,
};
pub use guard::LoopGuard;
pub use ids::{
    derived_uuid, description_event_id, description_stream, is_description_stream, EventId,
    IdSource, MessageId, PartId, SeededIds, Seq, SessionId, TimestampMs,
};
pub use json::{Json, JsonNumber};
pub use pack::EventPack;
pub use part::{body_from_event, Body, ContentError, Contents, Sketch, ToolSketch, ToolStage};
pub use policy::{
    ContinueMessage, FailedMarker, ModelLimits, OverflowCheck, OverflowCheckAt, PivotForm, Policy,
    ProviderOverflow, SummaryInput, TokenUsage, UnknownPreset, ALL_TURNS,
};
pub use prune::{plan_prune, PrunePlan, PruneStop};
pub use recorder::Recorder;
pub use state::{Job, JobStatus, Message, Part, PruneMark, SessionState, Tally, REDUCER_VERSION};
pub use tail::select_tail;
pub use timeline::{
    timeline, timeline_and_state, timeline_with, StepEvent, StepRow, StepTokens, Timeline,
    TimelineEnd, TimelineFold,
};
pub use transcript::{transcript, Transcript};
pub use window::{estimate_window, window, Window, WindowMessage, WindowPart};
