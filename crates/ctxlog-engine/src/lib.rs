//! ctxlog-engine: what an agent embeds. It is the I/O around the decisions
//! of [`ctxlog_core::decide()`]: it appends what they decide to a log (durable
//! [`SledStore`] or in-memory [`MemoryLog`]), calls the summarizer and the
//! compacting hook, and tells subscribers. The lifecycle, as the seeds
//! describe it:
//!
//! 1. after every finished step the overflow predicate is checked; on
//!    overflow a marker is queued (`CompactionRequested`, `auto`);
//! 2. [`Session::run_pending`] runs queued jobs: `CompactionStarted` (with the
//!    tail the policy keeps), the summarizer (no tools), the redacted summary,
//!    `SummaryCompleted`; on failure `CompactionFailed`, history intact;
//! 3. after an automatic compaction, the synthetic continue message (never
//!    after a manual one), then the loop guard;
//! 4. [`Session::end_turn`] prunes.
//!
//! ```
//! use ctxlog_engine::{EngineBuilder, ModelLimits, NewSession, Step, TokenUsage};
//!
//! # fn main() -> Result<(), ctxlog_engine::EngineError> {
//! # let dir = std::env::temp_dir().join(format!("ctxlog-doc-{}", std::process::id()));
//! let engine = EngineBuilder::new().open(&dir)?; // the embedded default: sled
//! let limits = ModelLimits { context: 128_000, input: None, output: Some(8_000) };
//! let session = engine.create_session(NewSession::new(limits))?;
//! let ask = session.user("Why does the parser test fail?")?;
//! let usage = TokenUsage { input: 2_400, output: 60, ..TokenUsage::default() };
//! let step = session.step(Step::new(ask).text("An off-by-one in parse_block.").tokens(usage))?;
//! if step.queued.is_some() {
//!     session.run_pending()?; // summarize before the next model request
//! }
//! session.end_turn()?; // prune old tool outputs when the policy says so
//! let window = session.window()?; // exactly what the model is sent next
//! assert_eq!(window.messages.len(), 2);
//! # drop(engine); let _ = std::fs::remove_dir_all(&dir);
//! # Ok(()) }
//! ```
//!
//! The API is small: [`EngineBuilder`] makes an [`Engine`] over a log;
//! [`Engine::create_session`] starts a session and [`Engine::session`]
//! opens one, and the [`Session`] handle they give is the one door to a
//! session: every command (each a [`ctxlog_core::Command`] decided by
//! `decide`, which refuses bad input before any event is made; only the
//! events a caller records as they are, `Session::record` and the
//! one-event changes, are left to the reducer to refuse) and every view.
//! [`Engine::subscribe`] tells of compactions, prunes and pauses;
//! [`workers`] runs pending jobs in the background; [`simulate`] replays a
//! recording under another policy.
//!
//! Clock and ids are injected ([`Clock`], [`ctxlog_core::IdSource`], through
//! [`EngineBuilder`]), so the same commands give byte-identical logs.
//!
//! Files:
//! - `clock.rs`: `Clock`, `SystemClock`, `ManualClock`, `system_ids`.
//! - `commands.rs`: A session's commands and views on its [`Session`]
//!   handle (`user`, `step`, `record`, `window`, `query`...), `NewSession`.
//! - `config.rs`: `EngineBuilder` (its configuration validated: a typed
//!   error), `CompactingHook`.
//! - `error.rs`: Everything an engine call can fail with.
//! - `items.rs`: The commands of a session kept item by item (`describe`,
//!   `settle`, `add_items`, `withdraw`, `withdraw_all`, `reopen_call`,
//!   `finish_open_step`): each a core command.
//! - `jobs.rs`: The job runner: hook, summarizer call (a panic is an error),
//!   redaction; `summary_request`; everything it decides comes from core
//!   (`StartJob` chooses the tail, `summary_input` leaves it out, `Fallback`
//!   chooses attempts and judges answers, `CompleteJob`/`FailJob`).
//! - `outcome.rs`: What engine calls report.
//! - `simulate/`: `simulate`.
//! - `transcript_prompt.rs`: OpenCode 1.18's summarizer system prompt,
//!   template and merge instruction, and `transcript_prompt` (the one user
//!   message).
//! - `workers.rs`: `Workers`: a bounded queue of sessions and a small pool
//!   over any engine; `Shutdown::Persist` leaves queued jobs pending in the
//!   log.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod clock;
mod commands;
mod config;
mod engine;
mod error;
mod items;
mod jobs;
mod outcome;
mod session;

pub mod simulate;
pub mod summarize;
pub mod transcript_prompt;
pub mod workers;

pub use clock::{system_ids, Clock, ManualClock, SystemClock};
pub use commands::{NewSession, Pruned};
pub use config::{
    CompactingHook, EngineBuilder, HookOutput, HOOK_MAX_LINES, HOOK_MAX_LINE_CHARS,
    HOOK_MAX_PROMPT_CHARS,
};
pub use ctxlog_core::{
    FinishReason, LoopGuard, MessageId, ModelLimits, PartBody, PartId, Policy, SessionId, Step,
    TokenUsage,
};
pub use ctxlog_sled::SledStore;
pub use ctxlog_store::MemoryLog;
pub use engine::{snapshot_due, Engine, MAX_CONFLICT_RETRIES, SNAPSHOT_EVERY};
pub use error::EngineError;
pub use jobs::summary_request;
pub use outcome::{JobOutcome, Notice, RequestCheck, StepOutcome};
pub use session::Session;
