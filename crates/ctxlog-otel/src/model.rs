//! The spans a session becomes, before any wire format: what the fold
//! makes and the OTLP encoders read.

/// A trace id: a session's (its UUID's 16 bytes).
pub type TraceId = [u8; 16];
/// A span id, derived from the ctxlog id the span stands for.
pub type SpanId = [u8; 8];

/// An attribute's value (the OTLP `AnyValue`s ctxlog writes).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string.
    Str(String),
    /// An integer (token counts saturate at `i64::MAX`).
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// An array of strings.
    Strs(Vec<String>),
}

impl Value {
    /// A count as an OTLP integer.
    pub fn count(n: u64) -> Value {
        Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

/// A key and its value.
pub type Attribute = (&'static str, Value);

/// What a span stands for, as OTLP's span kind says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Work inside the agent (a turn, a tool call).
    Internal,
    /// A call to a model provider.
    Client,
}

/// Something that happened during a span (a compaction, a prune).
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    /// `ctxlog.compaction`, `ctxlog.prune`, ...
    pub name: String,
    /// When, ns since the epoch.
    pub time_ns: u64,
    /// What.
    pub attributes: Vec<Attribute>,
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The session's trace.
    pub trace: TraceId,
    /// This span.
    pub id: SpanId,
    /// The span it is part of (`None`: a turn, a root).
    pub parent: Option<SpanId>,
    /// `invoke_agent build`, `chat claude-sonnet-4-5`, `execute_tool bash`.
    pub name: String,
    /// Internal or client.
    pub kind: Kind,
    /// Start, ns since the epoch (the recording's times).
    pub start_ns: u64,
    /// End, ns since the epoch (never before the start).
    pub end_ns: u64,
    /// Its attributes, in a fixed order.
    pub attributes: Vec<Attribute>,
    /// Its events, in log order.
    pub events: Vec<SpanEvent>,
    /// The error it ended with, if any (OTLP status `ERROR` and this message).
    pub error: Option<String>,
}

/// Milliseconds since the epoch as OTLP's nanoseconds.
pub fn ns(ms: u64) -> u64 {
    ms.saturating_mul(1_000_000)
}
