//! The hooks' own log: a JSON line per call (when, which agent and
//! moment, what it stored, how long it took, or why it failed), in
//! `log.jsonl` under the hooks' directory. A hook never tells the agent
//! it failed; this log does, and `ctxlog hooks status` and `sessions`
//! read it. It is bounded: past [`MAX_LOG_BYTES`] it moves to
//! `log.1.jsonl` (the one before is dropped).

use serde::{Deserialize, Serialize};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The size at which the log moves aside.
pub const MAX_LOG_BYTES: u64 = 1 << 20;
/// How much of the log's end [`recent`] reads.
const TAIL_BYTES: u64 = 256 << 10;

/// One call of a hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// When the agent called, ms since the epoch.
    pub at: u64,
    /// The agent (`claude-code`, ...).
    pub agent: String,
    /// The moment as the agent names it.
    pub hook: Option<String>,
    /// Its trigger, source or reason.
    pub trigger: Option<String>,
    /// The agent's own session id.
    pub source_session: Option<String>,
    /// The store (a directory, or a PostgreSQL URL without its password).
    pub store: String,
    /// What the import did: `stored`, `waiting` (no recording yet) or
    /// `failed`; or what the agent's call did (its own line, beside the
    /// import's): `returned` (after the import ended) or `detached` (at
    /// its budget, the import going on).
    pub result: String,
    /// The stored session.
    pub session: Option<String>,
    /// Events written by this call.
    pub new_events: Option<usize>,
    /// The session's head after it.
    pub head: Option<u64>,
    /// How long it took, ms.
    pub ms: u64,
    /// Why it failed.
    pub error: Option<String>,
    /// What it sent to an OpenTelemetry endpoint (`CTXLOG_OTEL_EXPORT=1`),
    /// or why it could not.
    #[serde(default)]
    pub otel: Option<String>,
}

impl Run {
    /// Whether the call failed.
    pub fn failed(&self) -> bool {
        self.result == "failed"
    }
}

/// The log's file in `dir`.
pub fn log_file(dir: &Path) -> PathBuf {
    dir.join("log.jsonl")
}

/// Appends `run` to the log in `dir` (made, private, when missing), as one
/// write of one line, so calls at once never interleave within a line.
pub fn append(dir: &Path, run: &Run) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let file = log_file(dir);
    if std::fs::metadata(&file).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        let _ = std::fs::rename(&file, dir.join("log.1.jsonl"));
    }
    let mut line = serde_json::to_string(run).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(&file)?;
    f.write_all(line.as_bytes())
}

/// The calls in the log's last [`TAIL_BYTES`], oldest first; lines that
/// do not read are passed over.
pub fn recent(dir: &Path) -> Vec<Run> {
    let Ok(mut f) = std::fs::File::open(log_file(dir)) else {
        return Vec::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(TAIL_BYTES);
    let mut bytes = Vec::new();
    if f.seek(SeekFrom::Start(from)).is_err() || f.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.lines();
    if from > 0 {
        lines.next(); // cut in the middle
    }
    lines
        .filter_map(|l| serde_json::from_str::<Run>(l).ok())
        .collect()
}

/// For each agent, its last call, its last call that stored something,
/// and its failures since its last call that did not fail.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentRuns {
    /// The last call.
    pub last: Option<Run>,
    /// The last call that wrote events.
    pub last_import: Option<Run>,
    /// The calls that failed after the last one that did not.
    pub failing: Vec<Run>,
}

/// [`AgentRuns`] of `agent` in `runs`.
pub fn of_agent(runs: &[Run], agent: &str) -> AgentRuns {
    let mut out = AgentRuns::default();
    for r in runs.iter().filter(|r| r.agent == agent) {
        if r.result == "returned" || r.result == "detached" {
            continue;
        }
        if r.failed() {
            out.failing.push(r.clone());
        } else {
            out.failing.clear();
        }
        if r.new_events.is_some_and(|n| n > 0) {
            out.last_import = Some(r.clone());
        }
        out.last = Some(r.clone());
    }
    out
}
