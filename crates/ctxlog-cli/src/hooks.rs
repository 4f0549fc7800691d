//! `ctxlog hooks install|uninstall|status`: each agent's own configuration
//! made to call `ctxlog hook` (`ctxlog_setup::hooks`), and what the hooks
//! did since (their log).

use crate::hook::{hooks_dir, AgentArg};
use crate::mcp::ScopeName;
use crate::{Cli, CliError};
use ctxlog_app::dates::Zone;
use ctxlog_app::hooks::runs::{self, Run};
use ctxlog_setup::hooks::{self, Agent, HookCommand};
use ctxlog_setup::mcp::Scope;
use ctxlog_setup::Homes;
use serde_json::json;
use std::path::PathBuf;

/// `hooks`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub action: HooksAction,
}

/// What `hooks` does.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum HooksAction {
    /// Make the agent call `ctxlog hook` at its session's start, each
    /// prompt, each turn's end, before and after each compaction and at the
    /// session's end (again: nothing changes; the user's own hooks are
    /// kept).
    Install(Which),
    /// Remove exactly what install added (a file nobody changed since gets
    /// its very bytes back).
    Uninstall(Which),
    /// Per agent: what is installed where, what keeps it from running, and
    /// when its hook last ran and last imported.
    Status(StatusArgs),
}

/// Which agent's configuration, and where.
#[derive(clap::Args, Debug, Clone)]
pub struct Which {
    /// The agent.
    #[arg(long, value_enum)]
    pub agent: AgentArg,
    /// Every session of this user, or this project's only.
    #[arg(long, value_enum, default_value_t = ScopeName::User)]
    pub scope: ScopeName,
    /// The project directory (default: the working directory).
    #[arg(long)]
    pub project: Option<PathBuf>,
}

/// `hooks status`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct StatusArgs {
    /// Only this agent.
    #[arg(long, value_enum)]
    pub agent: Option<AgentArg>,
    /// The project directory whose configuration is looked at too
    /// (default: the working directory).
    #[arg(long)]
    pub project: Option<PathBuf>,
}

fn setup_agent(a: AgentArg) -> Agent {
    match a {
        AgentArg::ClaudeCode => Agent::ClaudeCode,
        AgentArg::Codex => Agent::Codex,
        AgentArg::Opencode => Agent::OpenCode,
        AgentArg::Pi => Agent::Pi,
    }
}

fn homes(project: Option<&PathBuf>) -> Result<Homes, CliError> {
    let project = match project {
        Some(p) => p.clone(),
        None => std::env::current_dir()
            .map_err(|e| CliError::Failed(format!("the working directory: {e}")))?,
    };
    let project = std::fs::canonicalize(&project)
        .map_err(|e| CliError::BadInput(format!("--project {}: {e}", project.display())))?;
    Ok(Homes::from_env(project))
}

/// `hooks`.
pub(crate) fn hooks(cli: &Cli, a: &HooksArgs) -> Result<(), CliError> {
    match &a.action {
        HooksAction::Install(w) => write(cli, w, true),
        HooksAction::Uninstall(w) => write(cli, w, false),
        HooksAction::Status(s) => status(cli, s),
    }
}

fn write(cli: &Cli, w: &Which, add: bool) -> Result<(), CliError> {
    let homes = homes(w.project.as_ref())?;
    let agent = setup_agent(w.agent);
    let scope = match w.scope {
        ScopeName::Project => Scope::Project,
        ScopeName::User => Scope::User,
    };
    let records = hooks_dir().join("installed");
    let written = if add {
        let options = crate::mcp::store_options(cli)?;
        let program = crate::mcp::this_program()?;
        hooks::install(
            agent,
            scope,
            &homes,
            &HookCommand { program, options },
            &records,
        )
    } else {
        hooks::uninstall(agent, scope, &homes, &records)
    }
    .map_err(|e| match e {
        e @ ctxlog_setup::InstallError::Unreadable { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(e.to_string()),
    })?;
    let problems = if add {
        hooks::status(agent, scope, &homes)
            .map(|s| s.problems)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    if cli.json {
        let files: Vec<_> = written
            .iter()
            .map(|w| json!({"file": w.file.display().to_string(), "changed": w.changed}))
            .collect();
        println!(
            "{}",
            json!({"ok": true, "agent": agent.name(), "files": files, "problems": problems})
        );
        return Ok(());
    }
    for f in &written {
        let what = match (add, f.changed) {
            (true, true) => "added ctxlog's hooks to",
            (true, false) => "ctxlog's hooks were already in",
            (false, true) => "removed ctxlog's hooks from",
            (false, false) => "ctxlog's hooks were not in",
        };
        println!("{what} {}", f.file.display());
    }
    for p in &problems {
        eprintln!("warning: {p}");
    }
    Ok(())
}

fn status(cli: &Cli, s: &StatusArgs) -> Result<(), CliError> {
    let homes = homes(s.project.as_ref())?;
    let agents: Vec<Agent> = match s.agent {
        Some(a) => vec![setup_agent(a)],
        None => Agent::ALL.to_vec(),
    };
    let runs = runs::recent(&hooks_dir());
    let zone = cli.zone();
    let mut out = Vec::new();
    for agent in agents {
        let mut scopes = Vec::new();
        for (scope, name) in [(Scope::User, "user"), (Scope::Project, "project")] {
            let st =
                hooks::status(agent, scope, &homes).map_err(|e| CliError::Failed(e.to_string()))?;
            scopes.push((name, st));
        }
        let of = runs::of_agent(&runs, agent.name());
        if cli.json {
            out.push(json!({
                "agent": agent.name(),
                "scopes": scopes.iter().map(|(name, st)| json!({
                    "scope": name,
                    "installed": st.installed(),
                    "files": st.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
                    "commands": st.commands,
                    "problems": st.problems,
                })).collect::<Vec<_>>(),
                "last_run": of.last,
                "last_import": of.last_import,
                "failing": of.failing,
            }));
            continue;
        }
        println!("{}:", agent.name());
        for (name, st) in &scopes {
            let file = st
                .files
                .first()
                .map(|f| f.display().to_string())
                .unwrap_or_default();
            if st.installed() {
                println!("  {name}: installed in {file}");
            } else {
                println!("  {name}: not installed ({file})");
            }
            for p in &st.problems {
                println!("    problem: {p}");
            }
        }
        println!("  last run: {}", describe(of.last.as_ref(), &zone));
        println!(
            "  last import: {}",
            describe(of.last_import.as_ref(), &zone)
        );
        if let Some(f) = of.failing.last() {
            println!(
                "  FAILING: {} call(s) failed since the last that did not; the last: {}",
                of.failing.len(),
                describe(Some(f), &zone)
            );
        }
    }
    if cli.json {
        println!(
            "{}",
            json!({"ok": true, "agents": out, "log": runs::log_file(&hooks_dir()).display().to_string()})
        );
    }
    Ok(())
}

/// Each agent whose hook fails (its calls since the last that did not),
/// in words, for `sessions` and `doctor` to warn of.
pub(crate) fn failing_hooks(zone: &Zone) -> Vec<String> {
    let runs = runs::recent(&hooks_dir());
    Agent::ALL
        .iter()
        .filter_map(|agent| {
            let of = runs::of_agent(&runs, agent.name());
            let last = of.failing.last()?;
            Some(format!(
                "{}'s hook failed {} time(s) since it last worked, so its sessions may be behind; the last: {} (`ctxlog hooks status`; the log: {})",
                agent.name(),
                of.failing.len(),
                describe(Some(last), zone),
                runs::log_file(&hooks_dir()).display()
            ))
        })
        .collect()
}

/// One call of the log, in a few words.
fn describe(run: Option<&Run>, zone: &Zone) -> String {
    let Some(r) = run else {
        return "never".into();
    };
    let moment = match (&r.hook, &r.trigger) {
        (Some(h), Some(t)) => format!("{h} ({t})"),
        (Some(h), None) => h.clone(),
        _ => "?".into(),
    };
    let what = match (&r.error, r.new_events) {
        (Some(e), _) => format!("failed: {e}"),
        (None, Some(n)) => format!("{} · {n} new events · {} ms", r.result, r.ms),
        (None, None) => format!("{} · {} ms", r.result, r.ms),
    };
    format!("{} at {moment}: {what}", zone.second(r.at))
}
