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
//!
//! Files:
//! - `audit.rs`: The audit trail, a pure fold over events (a summary's
//!   redactions counted by kind from the markers in its text); `Auditor`
//!   folds it an event at a time, remembering each id's source id and each
//!   tool output (O(session)), or, `Auditor::beside_state`, told by a caller
//!   folding the state beside it whether a tool part had an output
//!   (`had_output`) and naming no source ids (O(1)).
//! - `capture.rs`: A capture.
//! - `codec.rs`: The one bincode configuration (varint, little endian, no
//!   trailing bytes, size limit).
//! - `digest.rs`: `SessionState::digest` and snapshots.
//! - `error.rs`: `RefusedEvent { seq, id, kind, violation }`,
//!   `RefusedCommand`, `Violation`.
//! - `event.rs`: `Envelope` (session, seq, event id, recorded_at, causation,
//!   correlation), the `Event` enum, `EVENT_KINDS`, `Event::kind_index`,
//!   `is_description`, `description_key`.
//! - `payload.rs`: the values events carry (`PartBody`, `ToolState`,
//!   `CompactionTrigger`, `ModelRef`, `SessionAbout`, …), re-exported by
//!   `event`.
//! - `fallback.rs`: `summary_input` (the window up to the marker, minus the
//!   recorded tail and any refused prompt) and `Fallback` (full → truncated
//!   tool outputs → recent turns, shrinking after "too large"; `single` for a
//!   transcript; `answer` judges each reply).
//! - `generate.rs`: `generate` / `generate_into`: seeded, realistic sessions
//!   of any size, driven through `decide` (every event kind appears),
//!   streamed a turn at a time.
//! - `guard.rs`: `LoopGuard`: pause automatic compaction when it does not
//!   help or fires too often.
//! - `ids.rs`: Ids supplied by the caller (`IdSource`, `SeededIds`),
//!   `derived_uuid`, the description stream's id (`description_stream`,
//!   `is_description_stream`, `description_event_id`).
//! - `json.rs`: `Json`: tool inputs as a value that both JSON and bincode can
//!   carry.
//! - `lookup.rs`: `Lookup`: id → position tables, a sorted `Vec` for ids that
//!   arrive in increasing order (every id source puts the time first) and a
//!   `BTreeMap` beside it; half the size of a `BTreeMap`.
//! - `pack.rs`: `EventPack`: a session's events held encoded
//!   (length-prefixed, chunks of about 1 MiB), iterated borrowed or consumed
//!   (each chunk freed once read): an import holds a recording at about its
//!   encoded size.
//! - `part.rs`: `Part` (held content or a sealed `Sketch`), `PruneMark`,
//!   `body_from_event`, the `Contents` trait sealed content is read back
//!   through (`Part::body_in`).
//! - `policy/`: `limits` (`ModelLimits`, `TokenUsage`), `estimator` (UTF-16
//!   token estimate), `overflow_rule`, `settings` (`Policy`, `SummaryInput`,
//!   `FailedMarker`, `ContinueMessage`, `ProviderOverflow`, `PivotForm`,
//!   `OverflowCheckAt`, `unchecked_models`), `overflow_check` (budget,
//!   `threshold_percent`, `threshold()`, `check_overflow`, `check_count`),
//!   `presets`.
//! - `printable.rs`: Recorded text made inert for a terminal: control
//!   characters and bidirectional overrides as visible symbols (`one_line`
//!   for cells, `lines` for text).
//! - `prune.rs`: `plan_prune`: the seeds' backward walk; returns a plan and
//!   the `PartsPruned` event that applies it.
//! - `recorder.rs`: `Recorder`: an in-memory, validated log of one session
//!   with id and time injection; `run` decides and records;
//!   `request_compaction`/`summarize` go through `decide`; `take_events`.
//! - `redact/`: `redact`: secrets replaced by a marker naming their kind
//!   (`SecretKind`); `is_secret_key`; `count_markers`; detectors by family:
//!   `pem`, `tokens`, `placed`.
//! - `replay.rs`: `replay_of`: the refused prompt an overflow job sends
//!   again, `history_end`, `replay_parts` (media as a text note).
//! - `role.rs`: `Role`: user, assistant, developer, system, as the agent sent
//!   it; every decision treats the three input roles alike (`is_input`).
//! - `sent_part.rs`: A part as the window sends it, measured without
//!   rendering (`estimate_part`); read by both the reducer and the window,
//!   reads neither.
//! - `state/`: `SessionState` and its reducer; files `session`, `message`
//!   (`Message`), `job` (`Job`, `JobStatus`), `index` (never serialized),
//!   `estimates`, `check`, `evolve`, `compaction`, `close` (what a pivot
//!   seals and drops), `store`, `tally` (`Tally`: the figures of dropped
//!   messages) (see its `mod.rs`).
//! - `tail.rs`: `select_tail`: the 1.17 recent-turn tail chosen at job start
//!   (each message measured once; every suffix size O(1)).
//! - `timeline.rs`: One row per model step (reported tokens, usable budget,
//!   percentage, threshold, window estimate; a last step not yet ended is
//!   `open`, with the usage so far) with the audit entries after it;
//!   `timeline_with` calls back with the state at each step; `TimelineFold`
//!   folds it an event at a time beside an `Auditor::beside_state`, handing
//!   out each row once the next step begins (the lifecycle events after a
//!   step are its), so neither events nor rows are held (`ctxlog timeline`);
//!   a row's error is the one `SessionState::errors_set_by` gave its message
//!   so far, and `TimelineEnd::errors` has the last of each, so a message a
//!   pivot dropped still has one.
//! - `transcript.rs`: `transcript`: a job's history as OpenCode 1.18's
//!   summarizer transcript (tool results cut in UTF-16 units, the prior
//!   summary).

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
mod payload;
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
