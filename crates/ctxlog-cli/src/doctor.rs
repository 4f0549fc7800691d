//! `ctxlog doctor`: whether everything that keeps the store current and
//! gives its history back works, and what to do where it does not: the
//! store, each agent's hooks (installed, runnable, failing), and the MCP
//! server each agent starts.

use crate::hook::hooks_dir;
use crate::{Cli, CliError};
use ctxlog_app::hooks::runs;
use ctxlog_setup::hooks::{self, Agent};
use ctxlog_setup::mcp::{self, Scope};
use ctxlog_setup::Homes;
use serde_json::json;

/// `doctor`.
pub(crate) fn doctor(cli: &Cli) -> Result<(), CliError> {
    let project = std::env::current_dir()
        .map_err(|e| CliError::Failed(format!("the working directory: {e}")))?;
    let homes = Homes::from_env(project);
    let mut problems: Vec<String> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    match store_line(cli) {
        Ok(line) => lines.push(line),
        Err(e) => problems.push(format!("store {}: {e}", cli.db)),
    }
    let runs = runs::recent(&hooks_dir());
    for agent in Agent::ALL {
        let mut installed = Vec::new();
        for (scope, name) in [(Scope::User, "user"), (Scope::Project, "project")] {
            match hooks::status(agent, scope, &homes) {
                Ok(st) if st.installed() => {
                    installed.push(name);
                    problems.extend(st.problems.iter().map(|p| format!("{}: {p}", agent.name())));
                }
                Ok(_) => {}
                Err(e) => problems.push(format!("{}: {e}", agent.name())),
            }
        }
        let of = runs::of_agent(&runs, agent.name());
        let hooks = if installed.is_empty() {
            format!("no hooks (`ctxlog hooks install --agent {}`)", agent.name())
        } else {
            format!("hooks ({})", installed.join(", "))
        };
        let mcp = match mcp_agent(agent) {
            Some(a) => {
                let scopes: Vec<&str> = [(Scope::User, "user"), (Scope::Project, "project")]
                    .into_iter()
                    .filter(|(s, _)| mcp::installed(a, *s, &homes))
                    .map(|(_, n)| n)
                    .collect();
                if scopes.is_empty() {
                    "no MCP server".to_owned()
                } else {
                    format!("MCP server ({})", scopes.join(", "))
                }
            }
            None => "no MCP client".to_owned(),
        };
        lines.push(format!("{}: {hooks}, {mcp}", agent.name()));
        if let Some(last) = of.failing.last() {
            problems.push(format!(
                "{}'s hook failed {} time(s) since it last worked: {}",
                agent.name(),
                of.failing.len(),
                last.error.as_deref().unwrap_or("?")
            ));
        }
    }
    if cli.json {
        println!(
            "{}",
            json!({"ok": problems.is_empty(), "checked": lines, "problems": problems})
        );
    } else {
        for l in &lines {
            println!("{l}");
        }
        for p in &problems {
            println!("problem: {p}");
        }
        if problems.is_empty() {
            println!("no problems found");
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CliError::Reported(problems.len()))
    }
}

/// The store, opened, and how many sessions it holds.
fn store_line(cli: &Cli) -> Result<String, CliError> {
    if let Some(dir) = cli.db.dir().filter(|d| !d.exists()) {
        return Ok(format!(
            "store {}: none yet (the first import makes it)",
            dir.display()
        ));
    }
    let store = crate::store::open_existing(&cli.db)?;
    let sessions =
        ctxlog_app::catalog::sessions(&store).map_err(|e| CliError::Failed(e.to_string()))?;
    Ok(format!("store {}: {} session(s)", cli.db, sessions.len()))
}

/// The agent's MCP client, when it has one.
fn mcp_agent(agent: Agent) -> Option<mcp::Agent> {
    match agent {
        Agent::ClaudeCode => Some(mcp::Agent::ClaudeCode),
        Agent::Codex => Some(mcp::Agent::Codex),
        Agent::OpenCode => Some(mcp::Agent::OpenCode),
        Agent::Pi => None,
    }
}
