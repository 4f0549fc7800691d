//! Claude Code: command hooks in `settings.json` (the project's
//! `.claude/settings.json`, or the user's in `$CLAUDE_CONFIG_DIR`, else
//! `~/.claude`), one group per event after the user's, no matcher (every
//! trigger, source and reason).

use super::json_hooks::{self, Placed};
use super::record::{undo, write_installed};
use super::{Agent, HookCommand, Status};
use crate::files::{io, read_optional, Homes, InstallError, Written};
use crate::mcp::Scope;
use std::path::{Path, PathBuf};

/// The events ctxlog's hook runs on, each with its timeout in seconds
/// (the hook returns within its budget; the timeout only bounds a hook
/// that hangs).
pub const EVENTS: [(&str, u64); 6] = [
    ("SessionStart", 10),
    ("UserPromptSubmit", 10),
    ("Stop", 10),
    ("PreCompact", 10),
    ("PostCompact", 10),
    ("SessionEnd", 10),
];

const WHAT: &str = "Claude Code's settings.json";

/// The settings file of `scope`.
pub fn settings_file(scope: Scope, homes: &Homes) -> PathBuf {
    match scope {
        Scope::Project => homes.project.join(".claude/settings.json"),
        Scope::User => homes.claude_dir().join("settings.json"),
    }
}

/// See [`super::install`].
pub fn install(
    scope: Scope,
    homes: &Homes,
    command: &HookCommand,
    records: &Path,
) -> Result<Vec<Written>, InstallError> {
    let file = settings_file(scope, homes);
    let before = read_optional(&file).map_err(io(&file))?;
    let (_, after) = json_hooks::with_ours(
        (&file, WHAT),
        before.as_deref(),
        Agent::ClaudeCode,
        &EVENTS,
        &command.shell(Agent::ClaudeCode),
    )?;
    Ok(vec![write_installed(
        records,
        &file,
        before.as_deref(),
        &after,
    )?])
}

/// See [`super::uninstall`].
pub fn uninstall(
    scope: Scope,
    homes: &Homes,
    records: &Path,
) -> Result<Vec<Written>, InstallError> {
    let file = settings_file(scope, homes);
    let written = undo(records, &file, |text| {
        json_hooks::without_ours(&file, WHAT, text, Agent::ClaudeCode)
    })?;
    Ok(vec![written])
}

/// See [`super::status`].
pub fn status(scope: Scope, homes: &Homes) -> Result<Status, InstallError> {
    let file = settings_file(scope, homes);
    let text = read_optional(&file).map_err(io(&file))?;
    let doc = json_hooks::parse(&file, text.as_deref(), WHAT)?;
    let found = json_hooks::ours(&doc, Agent::ClaudeCode);
    let mut problems = Vec::new();
    for (event, _) in EVENTS {
        if !found.is_empty() && !found.iter().any(|p| p.event == event) {
            problems.push(format!("no hook on {event}: install again"));
        }
    }
    Ok(Status {
        files: vec![file],
        commands: commands(&found),
        problems,
    })
}

/// The distinct commands of `found`.
pub(crate) fn commands(found: &[Placed]) -> Vec<String> {
    let mut out: Vec<String> = found
        .iter()
        .filter_map(|p| {
            p.entry
                .get("command")
                .and_then(|c| c.as_str())
                .map(str::to_owned)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}
