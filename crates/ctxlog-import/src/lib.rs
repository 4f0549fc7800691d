//! ctxlog-import: recorded agent sessions into ctxlog events.
//!
//! Importers stream their input (JSONL line by line; an OpenCode export
//! message by message), so a large file never becomes one JSON tree in
//! memory. They check every event against the reducer as they go and return
//! the whole session's events, so bad input anywhere in it is refused before
//! anything is stored.
//! Bad input is an [`ImportError`] naming the file and the line or JSON path.
//!
//! Formats: OpenCode export ([`opencode`]), Claude Code JSONL
//! ([`claude_code`]), Codex rollout JSONL ([`codex`]) and pi session JSONL
//! ([`pi`]). [`export`] writes a session back as an OpenCode export.
//!
//! Inside, dependencies point one way: every importer records through
//! `build`'s builder; the OpenCode importer and the exporter share only
//! `opencode_names` (OpenCode's finish reasons and error refs) and `json`
//! (merging kept fields), so neither depends on the other. The larger
//! modules are directories whose `mod.rs` lists its files.
//!
//! Shared conventions (each module's doc has its own mapping):
//! - Ids derive from the recording's own session id, so a second import of
//!   the same file yields the same events (the store deduplicates them).
//! - Source ids (message ids, call ids) ride on the events; a step with no
//!   id of its own gets `line:N`, a 1-based line of its own (for Codex the
//!   first the model produced in it: online, its last is not known yet).
//! - A *real user prompt* is a user message that is not a tool result, not a
//!   compaction marker and not wholly synthetic; turns count real prompts.
//! - Times are clamped to never go backwards (recordings are not always
//!   monotonic; the log is).
//! - **Import is online**: the events a line (an OpenCode message) gives
//!   depend only on it and the lines before it, so importing any prefix of
//!   a recording gives a prefix of what the whole file gives, and a later
//!   import of the grown file only appends. What a later line may still
//!   change waits for it: a step's end (Claude Code writes each content
//!   block of an answer as a line of its own, and no line says which is the
//!   last), a step whose tool calls have no result yet, a last line without
//!   its newline that does not parse. What describes the session (title,
//!   cost, source fields) comes last, apart from what happened
//!   ([`ctxlog_core::Event::is_description`]).
//!
//! Files:
//! - `discover.rs`: Where the agents keep their sessions (`Places` from the
//!   environment) and the files found there.
//! - `limits.rs`: The model table and `resolve`.
//! - `opencode_db.rs`: OpenCode ≥ 1.2's SQLite database (read-only,
//!   `query_only`, one read transaction per session): each session assembled
//!   into exactly what `opencode export` prints.
//! - `opencode_storage.rs`: OpenCode ≤ 1.1's storage tree assembled into the
//!   export it stands for.
//! - `projects.rs`: Which of the sessions found were recorded in one project
//!   directory, as each agent tells it.
//! - `strict.rs`: Strict reading: a count or time is an integer 0..2^53 or
//!   absent, anything else an error naming the field.
//! - `time.rs`: RFC 3339 ↔ epoch ms, no date library.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod build;
pub mod claude_code;
pub mod codex;
pub mod discover;
pub mod export;
mod json;
pub mod limits;
pub mod opencode;
pub mod opencode_db;
mod opencode_names;
pub mod opencode_storage;
pub mod pi;
pub mod projects;
mod strict;
pub mod time;

pub use limits::LimitOverrides;

use ctxlog_core::{EventPack, Policy, SessionId};
use std::io::{BufRead, Read};
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

    /// Why `line`, read as a line of this format, is refused: it is
    /// recognisably another agent's (a file of those is not taken for a
    /// recording of this format with nothing in it yet).
    pub(crate) fn foreign_line(self, line: &serde_json::Value) -> Option<String> {
        let other = line.as_object().and_then(Format::detect_object)?;
        let ty = line
            .get("type")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        (other != self).then(|| {
            format!(
                "a {} line (`type` {ty:?}), not a {} one: this file is not a {} recording; import it with --format {}, or without --format",
                other.name(),
                self.name(),
                self.name(),
                other.name()
            )
        })
    }

    /// The format one JSON value (a line, or a whole export) is of.
    pub(crate) fn detect_object(o: &serde_json::Map<String, serde_json::Value>) -> Option<Format> {
        // An export without its `info` is one still (its messages are
        // `{info, parts}`): the importer names what is missing.
        let opencode_message = |m: &serde_json::Value| {
            m.get("info").is_some_and(serde_json::Value::is_object) && m.get("parts").is_some()
        };
        let messages = o.get("messages").and_then(serde_json::Value::as_array);
        if o.contains_key("info") && o.contains_key("messages")
            || messages
                .and_then(|m| m.first())
                .is_some_and(opencode_message)
        {
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
    /// Record the preset of the agent that wrote the recording instead,
    /// when one matches (`claude-code`, `codex`, `pi`; an OpenCode 1.17.x
    /// or 1.18.x export → `opencode-1.17`, `opencode-1.18`). Off when the
    /// user named a policy.
    pub detect_policy: bool,
    /// Overrides of the model limits (the table and the file's own are used
    /// otherwise).
    pub limits: LimitOverrides,
    /// The longest JSONL line, or OpenCode export message, read; longer
    /// input is refused, so memory stays bounded on any input.
    pub max_line_bytes: u64,
    /// Which version of the recording this is: 0 for the first; each
    /// `import --replace` of a recording that changed in the past stores it
    /// as the next version, a session with ids of its own.
    pub version: u32,
}

/// The default [`ImportOptions::max_line_bytes`]: 64 MiB, the largest record
/// the store keeps.
pub const DEFAULT_MAX_LINE_BYTES: u64 = ctxlog_core::codec::MAX_ENCODED_BYTES;

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            policy: Policy::opencode_seed(),
            detect_policy: true,
            limits: LimitOverrides::default(),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            version: 0,
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
    /// The events, seq 1 onwards, held encoded (about the size of their
    /// encoding; [`EventPack::to_vec`] decodes them all).
    pub events: EventPack,
    /// Messages created.
    pub messages: u64,
    /// Distinct tool invocations.
    pub tool_calls: u64,
    /// Model calls (steps), a last one whose end is not recorded yet
    /// included.
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

/// The message of an input that holds no session (yet).
pub(crate) const NO_SESSION: &str = "no session found: nothing to import";

impl ImportError {
    /// The input holds no session yet: for a recording still being written
    /// there is nothing to import yet, which is no failure.
    pub fn holds_no_session(&self) -> bool {
        self.message == NO_SESSION
    }
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
/// parsed value. Invalid UTF-8 and bad JSON name the line; a line longer
/// than `max` bytes is refused. A last line without its newline that does
/// not read yet is being written: it is left out and its number returned.
pub(crate) fn each_line<R: BufRead>(
    mut reader: R,
    file: &str,
    max: u64,
    mut f: impl FnMut(u64, serde_json::Value) -> Result<(), ImportError>,
) -> Result<Option<u64>, ImportError> {
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let read = (&mut reader)
            .take(max.saturating_add(1))
            .read_until(b'\n', &mut buf)
            .map_err(|e| ImportError {
                file: file.to_owned(),
                line: n + 1,
                path: None,
                message: format!("cannot read: {e}"),
            })?;
        if read == 0 {
            return Ok(None);
        }
        n += 1;
        let err = |message: String| ImportError {
            file: file.to_owned(),
            line: n,
            path: None,
            message,
        };
        let ended = buf.last() == Some(&b'\n');
        if !ended && buf.len() as u64 > max {
            return Err(err(format!(
                "the line is longer than {max} bytes (the limit; see --max-line-bytes)"
            )));
        }
        let parsed = std::str::from_utf8(&buf)
            .map_err(|e| format!("invalid UTF-8 at byte {}", e.valid_up_to()))
            .and_then(|text| {
                let text = if n == 1 {
                    text.trim_start_matches('\u{feff}')
                } else {
                    text
                };
                // The line without its end: a value cut short ends there,
                // not on a line after it.
                let text = text.trim_end_matches(['\n', '\r']);
                if text.trim().is_empty() {
                    return Ok(None);
                }
                serde_json::from_str(text)
                    .map(Some)
                    .map_err(|e| not_json(&e))
            });
        match parsed {
            Ok(Some(v)) => f(n, v)?,
            Ok(None) => {}
            Err(_) if !ended => return Ok(Some(n)),
            Err(message) => return Err(err(message)),
        }
    }
}

/// What is wrong with a line that does not parse, at its column (the
/// line is one JSON value: its own line number would say nothing).
fn not_json(e: &serde_json::Error) -> String {
    let what = e.to_string();
    let what = what
        .rsplit_once(" at line ")
        .map_or(what.as_str(), |(what, _)| what);
    format!("not JSON: {what} at column {}", e.column())
}

/// Counts the bytes read through it since its counter was last set to 0 and
/// fails a read past `max` (an OpenCode message longer than the limit).
pub(crate) struct Bounded<R> {
    inner: R,
    used: std::rc::Rc<std::cell::Cell<u64>>,
    max: u64,
}

impl<R> Bounded<R> {
    /// Wraps `inner`; the counter is shared with whoever resets it.
    pub(crate) fn new(inner: R, max: u64) -> (Self, std::rc::Rc<std::cell::Cell<u64>>) {
        let used = std::rc::Rc::new(std::cell::Cell::new(0));
        (
            Bounded {
                inner,
                used: used.clone(),
                max,
            },
            used,
        )
    }
}

impl<R: std::io::Read> std::io::Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let used = self.used.get().saturating_add(n as u64);
        self.used.set(used);
        if used > self.max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "a message longer than {} bytes (the limit; see --max-line-bytes)",
                    self.max
                ),
            ));
        }
        Ok(n)
    }
}

/// Whether an agent's version `v` (`2.1.328`, `0.169.0`) is at least
/// `(major, minor)`; a part that is not a number counts as 0.
pub(crate) fn version_at_least(v: &str, (major, minor): (u64, u64)) -> bool {
    let mut parts = v.split('.').map(|p| p.trim().parse::<u64>().unwrap_or(0));
    let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a, b) >= (major, minor)
}
