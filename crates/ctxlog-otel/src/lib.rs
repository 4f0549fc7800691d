//! ctxlog-otel: sessions as OpenTelemetry traces, in the form the GenAI
//! semantic conventions give (`invoke_agent` per turn, `chat` per model
//! call, the summarizer's included, `execute_tool` per tool call), with
//! compactions and prunes as `ctxlog.*` span events of their turn; sent
//! over OTLP/HTTP (protobuf or JSON) or written as OTLP JSON, for past
//! sessions and live ones (`ctxlog otel export [--follow]`).
//!
//! A session is one trace whose id is the session's; every span id is
//! derived from the ctxlog id it stands for, so an export sent twice is
//! the same spans, and a receiver that keeps one copy of a span keeps one
//! copy of the session. Times are the recording's. Texts go out only when
//! asked, redacted unless told otherwise.
//!
//! Files:
//! - `calls.rs`: Model calls (steps, summarizer calls) as `chat` spans;
//!   what a compaction or prune says beyond its audit line.
//! - `content.rs`: Texts as they may go out (opt-in, redacted, cut).
//! - `endpoint.rs`: The endpoint and resource from `--endpoint` and the
//!   standard `OTEL_*` variables.
//! - `export.rs`: The export use case: sessions → folds → batches → a
//!   sink (HTTP or file).
//! - `follow.rs`: Live export: new events as they are stored, with a
//!   bounded queue and retries.
//! - `fold.rs`: A session's events → spans, an event at a time.
//! - `hooked.rs`: What an agent's hook sends: the spans its new events
//!   made final.
//! - `ids.rs`: Trace and span ids from ctxlog's ids.
//! - `lifecycle.rs`: Audit lines as `ctxlog.*` span events.
//! - `model.rs`: Spans before any wire format.
//! - `otlp.rs`: Spans → OTLP protobuf and JSON.
//! - `semconv.rs`: The conventions' names and ctxlog's own.
//! - `send.rs`: One request, retried with backoff.
//! - `tools.rs`: Tool calls as `execute_tool` spans.
//! - `turn.rs`: A turn as an `invoke_agent` span.

mod calls;
pub mod content;
pub mod endpoint;
pub mod export;
pub mod fold;
pub mod follow;
pub mod hooked;
pub mod ids;
mod lifecycle;
pub mod model;
pub mod otlp;
pub mod semconv;
pub mod send;
mod tools;
pub mod turn;

pub use content::Content;
pub use endpoint::{ConfigError, Endpoint, Protocol};
pub use export::{export, exportable, Batcher, ExportError, Exported, FileSink, HttpSink, Sink};
pub use fold::TraceFold;
pub use send::{Patience, SendError, Sender};
