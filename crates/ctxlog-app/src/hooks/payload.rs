//! What an agent hands its hook, read into one [`HookCall`] whatever the
//! agent: Claude Code and Codex write a JSON object on the hook's standard
//! input (`hook_event_name`, `session_id`, `transcript_path`, `cwd`, and
//! `trigger`, `source` or `reason` by event); ctxlog's OpenCode plugin and
//! pi extension write the same keys (see `docs/hooks/`).

use ctxlog_core::Moment;
use ctxlog_import::Format;
use serde_json::Value;
use std::path::PathBuf;
use thiserror::Error;

/// The most bytes of a hook's input read (a `Stop` payload carries the
/// last answer whole).
pub const MAX_PAYLOAD_BYTES: usize = 16 << 20;

/// An agent whose hooks call ctxlog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HookAgent {
    /// Claude Code (command hooks in `settings.json`).
    ClaudeCode,
    /// Codex CLI (command hooks in `hooks.json`).
    Codex,
    /// OpenCode (a plugin).
    OpenCode,
    /// pi (an extension).
    Pi,
}

impl HookAgent {
    /// Its name on the command line and in the store (`claude-code`,
    /// `codex`, `opencode`, `pi`).
    pub fn name(self) -> &'static str {
        match self {
            HookAgent::ClaudeCode => "claude-code",
            HookAgent::Codex => "codex",
            HookAgent::OpenCode => "opencode",
            HookAgent::Pi => "pi",
        }
    }

    /// The format of its recordings.
    pub fn format(self) -> Format {
        match self {
            HookAgent::ClaudeCode => Format::ClaudeCode,
            HookAgent::Codex => Format::Codex,
            HookAgent::OpenCode => Format::OpenCode,
            HookAgent::Pi => Format::Pi,
        }
    }
}

/// One call of a hook, whatever the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCall {
    /// The agent that called.
    pub agent: HookAgent,
    /// The event as the agent names it (`PreCompact`, `session.idle`).
    pub hook: String,
    /// What the moment is.
    pub moment: Moment,
    /// What set it off, as the agent says: a compaction's `trigger`
    /// (`auto`, `manual`), a start's `source`, an end's `reason`.
    pub trigger: Option<String>,
    /// The agent's own id of the session.
    pub session: Option<String>,
    /// Its recording (`transcript_path`); `None` for OpenCode, whose
    /// sessions are in its database, or when the agent writes none.
    pub recording: Option<PathBuf>,
    /// The session's working directory.
    pub cwd: Option<PathBuf>,
    /// The agent's process, when the plugin or extension says
    /// (`agent_pid`).
    pub agent_pid: Option<u32>,
}

/// Why a hook's input was not understood; nothing was imported.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PayloadError {
    /// Not JSON.
    #[error("the hook's input is not JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("the hook's input is not a JSON object")]
    NotObject,
    /// A field it needs is missing.
    #[error("the hook's input has no {0}")]
    Missing(&'static str),
    /// A field is of another type.
    #[error("the hook's input field {field} is not {what}")]
    Type {
        /// The field.
        field: &'static str,
        /// What it should be.
        what: &'static str,
    },
}

/// The moment an event names, across the four agents' names for it.
pub fn moment_of(hook: &str) -> Moment {
    match hook {
        "SessionStart" | "session.created" | "session_start" => Moment::SessionStart,
        "UserPromptSubmit" | "chat.message" | "before_agent_start" => Moment::Prompt,
        "Stop" | "StopFailure" | "SubagentStop" | "session.idle" | "turn_end" | "agent_end" => {
            Moment::TurnEnd
        }
        "PreCompact" | "experimental.session.compacting" | "session_before_compact" => {
            Moment::BeforeCompaction
        }
        "PostCompact" | "session.compacted" | "session_compact" => Moment::AfterCompaction,
        "SessionEnd" | "session_shutdown" => Moment::SessionEnd,
        _ => Moment::Other,
    }
}

/// Reads the hook's input (see the module doc).
pub fn parse(agent: HookAgent, input: &[u8]) -> Result<HookCall, PayloadError> {
    let value: Value =
        serde_json::from_slice(input).map_err(|e| PayloadError::NotJson(e.to_string()))?;
    let Value::Object(fields) = value else {
        return Err(PayloadError::NotObject);
    };
    let text = |field: &'static str| -> Result<Option<String>, PayloadError> {
        match fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(PayloadError::Type {
                field,
                what: "a string",
            }),
        }
    };
    let hook = text("hook_event_name")?.ok_or(PayloadError::Missing("hook_event_name"))?;
    let moment = moment_of(&hook);
    let trigger = match text("trigger")? {
        Some(t) => Some(t),
        None => match moment {
            Moment::SessionStart => text("source")?,
            Moment::SessionEnd => text("reason")?,
            _ => None,
        },
    };
    let session = text("session_id")?;
    let recording = text("transcript_path")?.map(PathBuf::from);
    if agent == HookAgent::OpenCode && session.is_none() {
        return Err(PayloadError::Missing("session_id"));
    }
    let agent_pid = match fields.get("agent_pid") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().and_then(|p| u32::try_from(p).ok()).ok_or(
            PayloadError::Type {
                field: "agent_pid",
                what: "a process id",
            },
        )?),
    };
    Ok(HookCall {
        agent,
        hook,
        moment,
        trigger,
        session,
        recording,
        cwd: text("cwd")?.map(PathBuf::from),
        agent_pid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_codes_pre_compact_names_its_trigger_and_transcript() {
        let call = parse(
            HookAgent::ClaudeCode,
            br#"{"session_id":"abc","transcript_path":"/t/abc.jsonl","cwd":"/p","hook_event_name":"PreCompact","trigger":"auto","custom_instructions":null}"#,
        )
        .unwrap();
        assert_eq!(call.moment, Moment::BeforeCompaction);
        assert_eq!(call.trigger.as_deref(), Some("auto"));
        assert_eq!(call.recording, Some(PathBuf::from("/t/abc.jsonl")));
        assert_eq!(call.session.as_deref(), Some("abc"));
    }

    #[test]
    fn a_start_is_triggered_by_its_source_and_an_end_by_its_reason() {
        let start = parse(
            HookAgent::Codex,
            br#"{"session_id":"t","transcript_path":null,"hook_event_name":"SessionStart","source":"compact"}"#,
        )
        .unwrap();
        assert_eq!(start.trigger.as_deref(), Some("compact"));
        assert_eq!(start.recording, None);
        let end = parse(
            HookAgent::Pi,
            br#"{"hook_event_name":"session_shutdown","reason":"quit","agent_pid":42}"#,
        )
        .unwrap();
        assert_eq!(end.moment, Moment::SessionEnd);
        assert_eq!(end.trigger.as_deref(), Some("quit"));
        assert_eq!(end.agent_pid, Some(42));
    }

    #[test]
    fn bad_input_says_what_is_wrong() {
        assert!(matches!(
            parse(HookAgent::Codex, b"not json"),
            Err(PayloadError::NotJson(_))
        ));
        assert_eq!(
            parse(HookAgent::Codex, b"[1]"),
            Err(PayloadError::NotObject)
        );
        assert_eq!(
            parse(HookAgent::Codex, br#"{"session_id":"x"}"#),
            Err(PayloadError::Missing("hook_event_name"))
        );
        assert_eq!(
            parse(
                HookAgent::OpenCode,
                br#"{"hook_event_name":"session.idle"}"#
            ),
            Err(PayloadError::Missing("session_id"))
        );
        assert_eq!(
            parse(
                HookAgent::ClaudeCode,
                br#"{"hook_event_name":"Stop","transcript_path":7}"#
            ),
            Err(PayloadError::Type {
                field: "transcript_path",
                what: "a string"
            })
        );
    }
}
