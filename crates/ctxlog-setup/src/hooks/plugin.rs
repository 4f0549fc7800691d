//! OpenCode and pi run ctxlog from code of their own: a plugin file in
//! OpenCode's `plugins/` directory and an extension file in pi's
//! `extensions/` directory, which ctxlog writes whole (its first line says
//! so) and an uninstall removes. Each hands `ctxlog hook` the same JSON
//! Claude Code's hooks get (`hook_event_name`, `session_id`,
//! `transcript_path`, `cwd`, `trigger`, and the agent's `agent_pid`) on
//! its standard input, and waits for it at most a second: `ctxlog hook`
//! answers within its own budget.

use super::record::{undo, write_installed};
use super::{Agent, HookCommand, Status};
use crate::files::{io, read_optional, Homes, InstallError, Written};
use crate::mcp::Scope;
use std::path::{Path, PathBuf};

/// The first line of every file ctxlog writes here.
pub const MARK: &str = "// Written by `ctxlog hooks install`; `ctxlog hooks uninstall` removes it.";

/// The file of `agent` (OpenCode or pi) in `scope`.
pub fn plugin_file(agent: Agent, scope: Scope, homes: &Homes) -> PathBuf {
    match (agent, scope) {
        (Agent::Pi, Scope::Project) => homes.project.join(".pi/extensions/ctxlog.ts"),
        (Agent::Pi, Scope::User) => homes.pi_dir().join("extensions/ctxlog.ts"),
        (_, Scope::Project) => homes.project.join(".opencode/plugins/ctxlog.js"),
        (_, Scope::User) => homes.config_dir().join("opencode/plugins/ctxlog.js"),
    }
}

/// The code that calls `argv` with a payload: spawned with the payload
/// on its standard input, awaited at most a second, never failing.
fn caller(argv: &[String]) -> String {
    let argv = serde_json::to_string(argv).unwrap_or_else(|_| "[]".into());
    format!(
        r#"{MARK}
import {{ spawn }} from "node:child_process";

const CTXLOG = {argv};

function call(payload) {{
  return new Promise((resolve) => {{
    let child;
    try {{
      child = spawn(CTXLOG[0], CTXLOG.slice(1), {{ stdio: ["pipe", "ignore", "ignore"] }});
    }} catch {{
      return resolve();
    }}
    const timer = setTimeout(resolve, 1000);
    const done = () => {{
      clearTimeout(timer);
      resolve();
    }};
    child.on("error", done);
    child.on("exit", done);
    child.stdin.on("error", () => {{}});
    child.stdin.end(JSON.stringify({{ ...payload, agent_pid: process.pid }}));
  }});
}}
"#
    )
}

/// OpenCode's plugin: the session's creation, each prompt's end (idle),
/// before and after a compaction.
fn opencode_plugin(argv: &[String]) -> String {
    caller(argv)
        + r#"
export const CtxlogPlugin = async ({ directory }) => ({
  event: async ({ event }) => {
    const id = event?.properties?.sessionID ?? event?.properties?.info?.id;
    const kinds = ["session.created", "session.idle", "session.compacted"];
    if (!id || !kinds.includes(event.type)) return;
    await call({ hook_event_name: event.type, session_id: id, cwd: directory });
  },
  "experimental.session.compacting": async (input) => {
    await call({ hook_event_name: "experimental.session.compacting", session_id: input.sessionID, cwd: directory });
  },
});
"#
}

/// pi's extension: the session's start, each prompt's end, before and
/// after a compaction, the session's end.
fn pi_extension(argv: &[String]) -> String {
    caller(argv)
        + r#"
function payload(name, ctx, trigger) {
  const sm = ctx.sessionManager;
  return {
    hook_event_name: name,
    session_id: sm.getSessionId(),
    transcript_path: sm.getSessionFile(),
    cwd: ctx.cwd,
    trigger,
  };
}

export default function (pi) {
  pi.on("session_start", async (event, ctx) => { await call(payload("session_start", ctx, event.reason)); });
  pi.on("agent_end", async (_event, ctx) => { await call(payload("agent_end", ctx)); });
  pi.on("session_before_compact", async (_event, ctx) => { await call(payload("session_before_compact", ctx)); });
  pi.on("session_compact", async (_event, ctx) => { await call(payload("session_compact", ctx)); });
  pi.on("session_shutdown", async (event, ctx) => { await call(payload("session_shutdown", ctx, event.reason)); });
}
"#
}

/// See [`super::install`]. A file of the same name that ctxlog did not
/// write is left alone, and said so.
pub fn install(
    agent: Agent,
    scope: Scope,
    homes: &Homes,
    command: &HookCommand,
    records: &Path,
) -> Result<Vec<Written>, InstallError> {
    let file = plugin_file(agent, scope, homes);
    let before = read_optional(&file).map_err(io(&file))?;
    if before.as_deref().is_some_and(|t| !t.starts_with(MARK)) {
        return Err(InstallError::Unreadable {
            file,
            what: "a file ctxlog wrote",
            why: "another file of that name is there".into(),
        });
    }
    let argv = command.argv(agent);
    let text = match agent {
        Agent::Pi => pi_extension(&argv),
        _ => opencode_plugin(&argv),
    };
    Ok(vec![write_installed(
        records,
        &file,
        before.as_deref(),
        &text,
    )?])
}

/// See [`super::uninstall`]: the file goes, when ctxlog wrote it.
pub fn uninstall(
    agent: Agent,
    scope: Scope,
    homes: &Homes,
    records: &Path,
) -> Result<Vec<Written>, InstallError> {
    let file = plugin_file(agent, scope, homes);
    let written = undo(records, &file, |text| {
        Ok(if text.starts_with(MARK) {
            None
        } else {
            Some(text.to_owned())
        })
    })?;
    Ok(vec![written])
}

/// See [`super::status`].
pub fn status(agent: Agent, scope: Scope, homes: &Homes) -> Result<Status, InstallError> {
    let file = plugin_file(agent, scope, homes);
    let text = read_optional(&file).map_err(io(&file))?;
    let commands = text
        .as_deref()
        .filter(|t| t.starts_with(MARK))
        .and_then(argv_line)
        .into_iter()
        .collect();
    Ok(Status {
        files: vec![file],
        commands,
        problems: Vec::new(),
    })
}

/// The `const CTXLOG = [...]` line of a file ctxlog wrote.
fn argv_line(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("const CTXLOG = "))
        .map(|l| l.trim_end_matches(';').to_owned())
}

/// The program of a command [`status`] found (a JSON list).
pub(crate) fn program_of(command: &str) -> Option<String> {
    serde_json::from_str::<Vec<String>>(command)
        .ok()?
        .into_iter()
        .next()
}
