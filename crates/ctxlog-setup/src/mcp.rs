//! `ctxlog mcp install` and `uninstall`: the agent's own MCP configuration,
//! written as the agent itself writes it (`claude mcp add`, `codex mcp
//! add`, OpenCode's `mcp` key), idempotently, everything else in the file
//! kept; a file written anew keeps the old one's permissions and replaces
//! it at once (never half written).

use crate::files::{write_replacing, Homes, InstallError, Written};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The name the server is registered under.
pub const SERVER_NAME: &str = "ctxlog";

/// An agent that starts MCP servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code: `.mcp.json` (project) or `~/.claude.json` (user).
    ClaudeCode,
    /// Codex: `.codex/config.toml` (project) or `$CODEX_HOME/config.toml`.
    Codex,
    /// OpenCode: `opencode.json` (project) or
    /// `$XDG_CONFIG_HOME/opencode/opencode.json`.
    OpenCode,
}

/// For this project only, or for every session of the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The project directory's configuration.
    Project,
    /// The user's configuration.
    User,
}

impl Homes {
    /// The file `agent` reads its servers of `scope` from.
    pub fn mcp_file(&self, agent: Agent, scope: Scope) -> PathBuf {
        match (agent, scope) {
            (Agent::ClaudeCode, Scope::Project) => self.project.join(".mcp.json"),
            (Agent::ClaudeCode, Scope::User) => self
                .claude_config_dir
                .clone()
                .unwrap_or_else(|| self.home.clone())
                .join(".claude.json"),
            (Agent::Codex, Scope::Project) => self.project.join(".codex/config.toml"),
            (Agent::Codex, Scope::User) => self
                .codex_home
                .clone()
                .unwrap_or_else(|| self.home.join(".codex"))
                .join("config.toml"),
            (Agent::OpenCode, Scope::Project) => self.project.join("opencode.json"),
            (Agent::OpenCode, Scope::User) => self
                .xdg_config_home
                .clone()
                .unwrap_or_else(|| self.home.join(".config"))
                .join("opencode/opencode.json"),
        }
    }
}

/// The command an agent runs to start the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCommand {
    /// The program (the absolute path of `ctxlog`).
    pub program: String,
    /// Its arguments (`mcp`, with `--db` before it when the store is not
    /// the default).
    pub args: Vec<String>,
}

/// Registers `command` with `agent` for `scope`.
pub fn install(
    agent: Agent,
    scope: Scope,
    homes: &Homes,
    command: &ServerCommand,
) -> Result<Written, InstallError> {
    edit(agent, &homes.mcp_file(agent, scope), Some(command))
}

/// Whether `agent`'s configuration of `scope` starts ctxlog's server
/// (a file that does not read says no).
pub fn installed(agent: Agent, scope: Scope, homes: &Homes) -> bool {
    let file = homes.mcp_file(agent, scope);
    let Ok(text) = std::fs::read_to_string(&file) else {
        return false;
    };
    match agent {
        Agent::Codex => text
            .parse::<toml_edit::DocumentMut>()
            .ok()
            .and_then(|d| d.get("mcp_servers")?.get(SERVER_NAME).map(|_| ()))
            .is_some(),
        Agent::ClaudeCode | Agent::OpenCode => {
            let key = if agent == Agent::ClaudeCode {
                "mcpServers"
            } else {
                "mcp"
            };
            serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|d| d.get(key)?.get(SERVER_NAME).map(|_| ()))
                .is_some()
        }
    }
}

/// Removes the server from `agent`'s configuration of `scope`.
pub fn uninstall(agent: Agent, scope: Scope, homes: &Homes) -> Result<Written, InstallError> {
    edit(agent, &homes.mcp_file(agent, scope), None)
}

fn edit(
    agent: Agent,
    file: &Path,
    command: Option<&ServerCommand>,
) -> Result<Written, InstallError> {
    let io = |source| InstallError::Io {
        file: file.to_owned(),
        source,
    };
    if file.is_relative() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "not an absolute path: is HOME set?",
        )));
    }
    let before = match std::fs::read_to_string(file) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    if before.is_none() && command.is_none() {
        return Ok(Written {
            file: file.to_owned(),
            changed: false,
        });
    }
    let after = match agent {
        Agent::Codex => edit_toml(file, before.as_deref().unwrap_or(""), command)?,
        Agent::ClaudeCode | Agent::OpenCode => {
            edit_json(agent, file, before.as_deref().unwrap_or("{}"), command)?
        }
    };
    let changed = before.as_deref() != Some(after.as_str());
    if changed {
        write_replacing(file, &after).map_err(io)?;
    }
    Ok(Written {
        file: file.to_owned(),
        changed,
    })
}

/// The entry of the server in a JSON configuration.
fn json_entry(agent: Agent, c: &ServerCommand) -> Value {
    match agent {
        Agent::ClaudeCode => {
            json!({ "type": "stdio", "command": c.program, "args": c.args, "env": {} })
        }
        _ => {
            let mut argv = vec![c.program.clone()];
            argv.extend(c.args.iter().cloned());
            json!({ "type": "local", "command": argv, "enabled": true })
        }
    }
}

fn edit_json(
    agent: Agent,
    file: &Path,
    text: &str,
    command: Option<&ServerCommand>,
) -> Result<String, InstallError> {
    let unreadable = |why: String| InstallError::Unreadable {
        file: file.to_owned(),
        what: "a JSON object",
        why,
    };
    let mut doc: Value = serde_json::from_str(text).map_err(|e| unreadable(e.to_string()))?;
    let key = if agent == Agent::ClaudeCode {
        "mcpServers"
    } else {
        "mcp"
    };
    let Some(root) = doc.as_object_mut() else {
        return Err(unreadable("it is not an object".into()));
    };
    match command {
        Some(c) => {
            let servers = root.entry(key).or_insert_with(|| json!({}));
            let Some(servers) = servers.as_object_mut() else {
                return Err(unreadable(format!("its {key:?} is not an object")));
            };
            // An entry already there keeps what else it says (its `env`).
            let mut entry = json_entry(agent, c);
            if let (Some(old), Some(new)) = (
                servers.get(SERVER_NAME).and_then(Value::as_object),
                entry.as_object_mut(),
            ) {
                for (k, v) in old {
                    new.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            servers.insert(SERVER_NAME.to_owned(), entry);
        }
        None => {
            if let Some(servers) = root.get_mut(key).and_then(Value::as_object_mut) {
                servers.remove(SERVER_NAME);
            }
        }
    }
    let mut out = serde_json::to_string_pretty(&doc).map_err(|e| unreadable(e.to_string()))?;
    out.push('\n');
    // Unchanged in meaning: the file is left as it was written.
    if serde_json::from_str::<Value>(text).ok().as_ref() == Some(&doc) {
        return Ok(text.to_owned());
    }
    Ok(out)
}

fn edit_toml(
    file: &Path,
    text: &str,
    command: Option<&ServerCommand>,
) -> Result<String, InstallError> {
    use toml_edit::{value, Array, DocumentMut, Item, Table};
    let unreadable = |why: String| InstallError::Unreadable {
        file: file.to_owned(),
        what: "Codex's config.toml",
        why,
    };
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| unreadable(e.to_string()))?;
    match command {
        Some(c) => {
            let servers = doc.entry("mcp_servers").or_insert_with(|| {
                let mut t = Table::new();
                t.set_implicit(true);
                Item::Table(t)
            });
            let Some(servers) = servers.as_table_mut() else {
                return Err(unreadable("its mcp_servers is not a table".into()));
            };
            // An entry already there keeps what else it says (its `env`).
            let entry = match servers.get_mut(SERVER_NAME).and_then(Item::as_table_mut) {
                Some(t) => t,
                None => {
                    servers.insert(SERVER_NAME, Item::Table(Table::new()));
                    servers
                        .get_mut(SERVER_NAME)
                        .and_then(Item::as_table_mut)
                        .ok_or_else(|| unreadable("its mcp_servers.ctxlog is not a table".into()))?
                }
            };
            let mut args = Array::new();
            for a in &c.args {
                args.push(a.as_str());
            }
            let same_args = entry.get("args").and_then(Item::as_array).is_some_and(|a| {
                a.iter()
                    .map(|v| v.as_str())
                    .eq(c.args.iter().map(|a| Some(a.as_str())))
            });
            if entry.get("command").and_then(Item::as_str) != Some(c.program.as_str()) {
                entry.insert("command", value(c.program.clone()));
            }
            if !same_args {
                entry.insert("args", value(args));
            }
            // Every tool of this server only reads: no approval to ask.
            if entry
                .get("default_tools_approval_mode")
                .and_then(Item::as_str)
                != Some("approve")
            {
                entry.insert("default_tools_approval_mode", value("approve"));
            }
        }
        None => {
            if let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_mut) {
                servers.remove(SERVER_NAME);
            }
        }
    }
    Ok(doc.to_string())
}
