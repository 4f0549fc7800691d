//! A capture: an agent's own hook (or plugin, or extension) brought its
//! session into the store at a moment the agent named (a compaction about
//! to happen, a turn's end, the session's end). Kept in the session's
//! description stream ([`crate::description_stream`]), never between the
//! events of what happened, so a session imported by hooks has the same
//! events and seqs as one imported once at the end.

use crate::ids::Seq;
use serde::{Deserialize, Serialize};

/// What an agent was doing when it called its hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Moment {
    /// The session started (or was resumed, or restarted after a
    /// compaction).
    SessionStart,
    /// A prompt was submitted.
    Prompt,
    /// A turn (or a model step) ended.
    TurnEnd,
    /// A compaction is about to replace the session's history.
    BeforeCompaction,
    /// A compaction completed.
    AfterCompaction,
    /// The session ended (its agent exits or moves on).
    SessionEnd,
    /// Another moment the agent named.
    Other,
}

impl Moment {
    /// Whether the agent goes on running the session after this moment.
    pub fn ends_session(self) -> bool {
        self == Moment::SessionEnd
    }
}

/// The agent's process while it runs the session, so a listing can tell a
/// live session from one whose agent has gone: its pid and its start time
/// (in the kernel's clock ticks since boot, so a reused pid is told apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentProcess {
    /// Its process id.
    pub pid: u32,
    /// When it started, clock ticks after boot (`/proc/PID/stat` field 22).
    pub started: u64,
}

/// One capture (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capture {
    /// The agent that called (`claude-code`, `codex`, `opencode`, `pi`).
    pub agent: String,
    /// The hook or event as the agent names it (`PreCompact`,
    /// `session.idle`, `session_before_compact`, ...).
    pub hook: String,
    /// What the moment is.
    pub moment: Moment,
    /// What set it off, as the agent says (`auto`, `manual`), if it says.
    pub trigger: Option<String>,
    /// The session's head once what the recording held then was stored.
    pub head: Seq,
    /// The agent's process, when known.
    pub process: Option<AgentProcess>,
}

impl Capture {
    /// "captured at PreCompact (auto)": the moment in the agent's words.
    pub fn words(&self) -> String {
        match &self.trigger {
            Some(t) => format!("captured at {} ({t})", self.hook),
            None => format!("captured at {}", self.hook),
        }
    }
}
