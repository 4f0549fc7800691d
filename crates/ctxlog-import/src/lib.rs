//! ctxlog-import: recorded agent sessions into ctxlog events.
//!
//! Importers read line by line (a large file never becomes one JSON tree in
//! memory), check every event against the reducer as they go, and return the
//! whole session's events, so the caller stores it whole or not at all. Bad
//! input is an [`ImportError`] naming the file, the line and the field.
//!
//! Formats so far: Claude Code JSONL ([`claude_code`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod claude_code;
pub mod limits;
pub mod time;

use ctxlog_core::{Envelope, ModelLimits, Policy, SessionId};
use thiserror::Error;

/// A recorded format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Claude Code transcript JSONL.
    ClaudeCode,
}

impl Format {
    /// The name `--format` accepts.
    pub fn name(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
        }
    }

    /// Guesses the format from a file's first non-empty line.
    pub fn detect(first_line: &str) -> Option<Format> {
        let v: serde_json::Value = serde_json::from_str(first_line).ok()?;
        let ty = v.get("type")?.as_str()?;
        let claude = matches!(
            ty,
            "user"
                | "assistant"
                | "summary"
                | "file-history-snapshot"
                | "system"
                | "queue-operation"
        ) && (v.get("sessionId").is_some()
            || v.get("leafUuid").is_some()
            || v.get("messageId").is_some()
            || v.get("uuid").is_some());
        claude.then_some(Format::ClaudeCode)
    }
}

/// How to import.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The policy recorded at the session's start.
    pub policy: Policy,
    /// Limits to use instead of the built-in table (and of the file's own).
    pub limits: Option<ModelLimits>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            policy: Policy::opencode_seed(),
            limits: None,
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
}

/// Bad input, named by file, line (1-based) and field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{file}:{line}: {message}")]
pub struct ImportError {
    /// The file.
    pub file: String,
    /// The line (1-based); 0 when the file as a whole is at fault.
    pub line: u64,
    /// What is wrong.
    pub message: String,
}
