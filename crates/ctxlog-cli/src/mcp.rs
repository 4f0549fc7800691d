//! `mcp`: ctxlog as an MCP server over stdio for the agent working in this
//! directory, and `mcp install`/`uninstall`, which write the agent's own
//! configuration to start it.

use crate::{Cli, CliError};
use ctxlog_setup::mcp::{self as install, Agent, Scope, ServerCommand};
use ctxlog_setup::Homes;
use serde_json::json;
use std::path::PathBuf;

/// `mcp`'s arguments.
#[derive(clap::Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    pub action: Option<McpAction>,
    /// Answer with secrets as recorded (by default every answer has them
    /// replaced by markers).
    #[arg(long)]
    pub no_redact: bool,
    /// The most bytes of text one call answers with (the rest is one call
    /// away, by the cursor the answer ends with).
    #[arg(long, default_value_t = ctxlog_mcp::MAX_BYTES)]
    pub max_bytes: usize,
}

/// `mcp install` and `mcp uninstall`.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum McpAction {
    /// Write the agent's MCP configuration so that it starts `ctxlog mcp`
    /// (again: nothing changes; everything else in the file is kept).
    Install(InstallArgs),
    /// Remove ctxlog from the agent's MCP configuration.
    Uninstall(InstallArgs),
}

/// Which agent's configuration, and where.
#[derive(clap::Args, Debug, Clone)]
pub struct InstallArgs {
    /// The agent (pi has no MCP client).
    #[arg(long, value_enum)]
    pub agent: AgentName,
    /// This project's configuration, or the user's.
    #[arg(long, value_enum, default_value_t = ScopeName::Project)]
    pub scope: ScopeName,
    /// The project directory (default: the working directory).
    #[arg(long)]
    pub project: Option<PathBuf>,
}

/// Agents with an MCP client.
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum AgentName {
    /// Claude Code.
    ClaudeCode,
    /// Codex CLI.
    Codex,
    /// OpenCode.
    Opencode,
}

/// Where a configuration applies.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeName {
    /// This project only.
    Project,
    /// Every session of this user.
    User,
}

/// `mcp`.
pub(crate) fn mcp(cli: &Cli, a: &McpArgs) -> Result<(), CliError> {
    match &a.action {
        None => {
            let mut settings = ctxlog_mcp::Settings::from_env(cli.db.clone());
            settings.redact = !a.no_redact;
            settings.max_bytes = a.max_bytes;
            ctxlog_mcp::serve_stdio(settings).map_err(|e| CliError::Failed(e.to_string()))
        }
        Some(McpAction::Install(i)) => write(cli, i, true),
        Some(McpAction::Uninstall(i)) => write(cli, i, false),
    }
}

fn write(cli: &Cli, i: &InstallArgs, add: bool) -> Result<(), CliError> {
    let project = match &i.project {
        Some(p) => p.clone(),
        None => std::env::current_dir()
            .map_err(|e| CliError::Failed(format!("the working directory: {e}")))?,
    };
    let project = std::fs::canonicalize(&project)
        .map_err(|e| CliError::BadInput(format!("--project {}: {e}", project.display())))?;
    let homes = Homes::from_env(project);
    let agent = match i.agent {
        AgentName::ClaudeCode => Agent::ClaudeCode,
        AgentName::Codex => Agent::Codex,
        AgentName::Opencode => Agent::OpenCode,
    };
    let scope = match i.scope {
        ScopeName::Project => Scope::Project,
        ScopeName::User => Scope::User,
    };
    let written = if add {
        install::install(agent, scope, &homes, &server_command(cli)?)
    } else {
        install::uninstall(agent, scope, &homes)
    }
    .map_err(|e| match e {
        e @ ctxlog_setup::InstallError::Unreadable { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(e.to_string()),
    })?;
    if cli.json {
        println!(
            "{}",
            json!({ "ok": true, "file": written.file.display().to_string(), "changed": written.changed })
        );
    } else {
        let what = match (add, written.changed) {
            (true, true) => "added ctxlog to",
            (true, false) => "ctxlog was already in",
            (false, true) => "removed ctxlog from",
            (false, false) => "ctxlog was not in",
        };
        println!("{what} {}", written.file.display());
    }
    Ok(())
}

/// This very binary, with `--db` when the store is not the default.
fn server_command(cli: &Cli) -> Result<ServerCommand, CliError> {
    let mut args = store_options(cli)?;
    args.push("mcp".to_owned());
    Ok(ServerCommand {
        program: this_program()?,
        args,
    })
}

/// This very binary, by its absolute path.
pub(crate) fn this_program() -> Result<String, CliError> {
    Ok(std::env::current_exe()
        .map_err(|e| CliError::Failed(format!("where ctxlog is: {e}")))?
        .display()
        .to_string())
}

/// `--db DIR` (absolute: an agent runs the command in its own directory)
/// when the store is not the default; nothing for the default. A
/// PostgreSQL store is refused: its URL may hold a password, which an
/// agent's configuration must not.
pub(crate) fn store_options(cli: &Cli) -> Result<Vec<String>, CliError> {
    let default = ctxlog_app::logs::Location::Dir(crate::default_store());
    if cli.db.to_string() == default.to_string() {
        return Ok(Vec::new());
    }
    if matches!(cli.db, ctxlog_app::logs::Location::Postgres(_)) {
        return Err(CliError::BadInput(
            "a PostgreSQL store's URL may hold a password: give it to the agent as CTXLOG_DB in its environment instead of --db".into(),
        ));
    }
    let dir = cli.db.dir().map(|d| {
        std::fs::canonicalize(d).unwrap_or_else(|_| {
            std::env::current_dir()
                .map(|cwd| cwd.join(d))
                .unwrap_or_else(|_| d.to_owned())
        })
    });
    Ok(vec![
        "--db".to_owned(),
        dir.map_or_else(|| cli.db.to_string(), |d| d.display().to_string()),
    ])
}
