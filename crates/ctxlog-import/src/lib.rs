//! ctxlog-import: recorded agent sessions into ctxlog events.
//!
//! Importers stream their input (JSONL line by line; an OpenCode export
//! message by message), so a large file never becomes one JSON tree in
//! memory. They check every event against the reducer as they go and return
//! the whole session's events, so the caller stores it whole or not at all.
//! Bad input is an [`ImportError`] naming the file and the line or JSON path.
//!
//! Formats: OpenCode export ([`opencode`]), Claude Code JSONL
//! ([`claude_code`]), Codex rollout JSONL ([`codex`]) and pi session JSONL
//! ([`pi`]). [`export`] writes a session back as an OpenCode export.
//!
//! Shared conventions (each module's doc has its own mapping):
//! - Ids derive from the recording's own session id, so a second import of
//!   the same file yields the same events (the store deduplicates them).
//! - Source ids (message ids, call ids) ride on the events; a step with no
//!   id of its own gets `line:N`, the 1-based line that ends it.
//! - A *real user prompt* is a user message that is not a tool result, not a
//!   compaction marker and not wholly synthetic; turns count real prompts.
//! - Times are clamped to never go backwards (recordings are not always
//!   monotonic; the log is).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod build;
pub mod claude_code;
pub mod codex;
pub mod export;
pub mod limits;
pub mod opencode;
pub mod pi;
pub mod time;

pub use limits::LimitOverrides;

use ctxlog_core::{Envelope, Policy, SessionId};
use std::io::BufRead;
use thiserror::Error;

/// A recorded format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenCode `opencode export` JSON.
    OpenCode,
    /// Claude Code transcript JSONL.
    ClaudeCode,
    /// Codex CLI rollout JSONL.
    Codex,
    /// pi coding-agent session JSONL.
    Pi,
}

impl Format {
    /// Every format, in `--format` order.
    pub const ALL: [Format; 4] = [
        Format::OpenCode,
        Format::ClaudeCode,
        Format::Codex,
        Format::Pi,
    ];

    /// The name `--format` accepts.
    pub fn name(self) -> &'static str {
        match self {
            Format::OpenCode => "opencode",
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::Pi => "pi",
        }
    }

    /// The format named `name` (as `--format` spells it).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Guesses the format from the first bytes of a file (up to a few KB is
    /// enough; the first line need not be complete).
    pub fn sniff(head: &[u8]) -> Option<Format> {
        let text = String::from_utf8_lossy(head);
        let text = text.trim_start_matches('\u{feff}').trim_start();
        let first = text.lines().next().unwrap_or("");
        if let Ok(serde_json::Value::Object(o)) = serde_json::from_str(first) {
            return Format::detect_object(&o);
        }
        // A pretty-printed or very long first line: an OpenCode export
        // starts with its `info` or `messages` key; a JSONL line cut short
        // still shows its type near the start.
        let rest = text.strip_prefix('{')?.trim_start();
        if rest.starts_with("\"info\"") || rest.starts_with("\"messages\"") {
            return Some(Format::OpenCode);
        }
        let compact: String = first.chars().filter(|c| !c.is_whitespace()).collect();
        if compact.contains("\"type\":\"session_meta\"") {
            Some(Format::Codex)
        } else if compact.contains("\"sessionId\":")
            && ["user", "assistant", "summary", "system"]
                .iter()
                .any(|t| compact.contains(&format!("\"type\":\"{t}\"")))
        {
            Some(Format::ClaudeCode)
        } else if compact.contains("\"type\":\"session\"") {
            Some(Format::Pi)
        } else {
            None
        }
    }

    fn detect_object(o: &serde_json::Map<String, serde_json::Value>) -> Option<Format> {
        if o.contains_key("info") && o.contains_key("messages") {
            return Some(Format::OpenCode);
        }
        let ty = o.get("type")?.as_str()?;
        if o.contains_key("payload") && o.contains_key("timestamp") {
            return Some(Format::Codex);
        }
        if ty == "session" && o.contains_key("id") && !o.contains_key("sessionId") {
            return Some(Format::Pi);
        }
        let claude = matches!(
            ty,
            "user"
                | "assistant"
                | "summary"
                | "file-history-snapshot"
                | "system"
                | "queue-operation"
        ) && (o.contains_key("sessionId")
            || o.contains_key("leafUuid")
            || o.contains_key("messageId")
            || o.contains_key("uuid"));
        claude.then_some(Format::ClaudeCode)
    }
}

/// How to import.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The policy recorded at the session's start.
    pub policy: Policy,
    /// Record the preset of the agent version that wrote the recording
    /// instead, when one matches (an OpenCode 1.18.x export →
    /// `opencode-1.18`). Off when the user named a policy.
    pub detect_policy: bool,
    /// Overrides of the model limits (the table and the file's own are used
    /// otherwise).
    pub limits: LimitOverrides,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            policy: Policy::opencode_seed(),
            detect_policy: true,
            limits: LimitOverrides::default(),
        }
    }
}

/// A session read from a recording.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The ctxlog session id (derived from the source session id, so a second
    /// import of the same recording yields the same ids and deduplicates).
    pub session: SessionId,
    /// The format read.
    pub format: Format,
    /// The recording's own session id.
    pub source_session: Option<String>,
    /// The events, seq 1 onwards.
    pub events: Vec<Envelope>,
    /// Messages created.
    pub messages: u64,
    /// Distinct tool invocations.
    pub tool_calls: u64,
    /// Model calls (steps).
    pub steps: u64,
    /// Things the user should know (e.g. a model assumed to have default
    /// limits).
    pub warnings: Vec<String>,
}

/// Bad input, named by file and line (JSONL) or JSON path.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}: {message}", location(file, *line, path.as_deref()))]
pub struct ImportError {
    /// The file.
    pub file: String,
    /// The line (1-based); 0 when unknown or the file as a whole is at fault.
    pub line: u64,
    /// The JSON path (`messages[3].parts[1].state`), for whole-file JSON.
    pub path: Option<String>,
    /// What is wrong.
    pub message: String,
}

fn location(file: &str, line: u64, path: Option<&str>) -> String {
    match (line, path) {
        (0, None) => file.to_owned(),
        (0, Some(p)) => format!("{file}: {p}"),
        (l, None) => format!("{file}:{l}"),
        (l, Some(p)) => format!("{file}:{l}: {p}"),
    }
}

/// Imports `reader` in `format`; `file` names it in errors.
pub fn import<R: BufRead>(
    reader: R,
    file: &str,
    format: Format,
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    match format {
        Format::OpenCode => opencode::import(reader, file, options),
        Format::ClaudeCode => claude_code::import(reader, file, options),
        Format::Codex => codex::import(reader, file, options),
        Format::Pi => pi::import(reader, file, options),
    }
}

/// Reads JSONL: calls `f` with each non-empty line's 1-based number and
/// parsed value. Invalid UTF-8 and bad JSON name the line.
pub(crate) fn each_line<R: BufRead>(
    mut reader: R,
    file: &str,
    mut f: impl FnMut(u64, serde_json::Value) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| ImportError {
                file: file.to_owned(),
                line: n + 1,
                path: None,
                message: format!("cannot read: {e}"),
            })?;
        if read == 0 {
            return Ok(());
        }
        n += 1;
        let err = |message: String| ImportError {
            file: file.to_owned(),
            line: n,
            path: None,
            message,
        };
        let text = std::str::from_utf8(&buf)
            .map_err(|e| err(format!("invalid UTF-8 at byte {}", e.valid_up_to())))?;
        let text = if n == 1 {
            text.trim_start_matches('\u{feff}')
        } else {
            text
        };
        if text.trim().is_empty() {
            continue;
        }
        let v = serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}")))?;
        f(n, v)?;
    }
}
