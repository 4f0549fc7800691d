//! `ctxlog hooks install`, `uninstall` and `status`: each agent's own way
//! of calling `ctxlog hook` at the moments that matter (a session's start,
//! a prompt, a turn's end, before and after a compaction, the session's
//! end): command hooks in Claude Code's `settings.json` ([`claude_code`])
//! and Codex's `hooks.json`, trusted in its `config.toml` ([`codex`]); a
//! plugin file for OpenCode and an extension file for pi ([`plugin`]).
//!
//! An install adds ctxlog's entries after the user's own and never touches
//! those; installing again changes nothing. What an install wrote is
//! remembered ([`record`]): an uninstall of a file nobody changed since
//! puts back the very bytes that were there before (or removes the file it
//! made); a file changed since loses ctxlog's entries only.
//!
//! Files:
//! - `json_hooks.rs`: The hooks shape Claude Code's `settings.json` and
//!   Codex's `hooks.json` share.

pub mod claude_code;
pub mod codex;
mod json_hooks;
pub mod plugin;
mod record;

use crate::files::{Homes, InstallError, Written};
use crate::mcp::Scope;
use std::path::{Path, PathBuf};

/// An agent that calls `ctxlog hook`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Agent {
    /// Claude Code.
    ClaudeCode,
    /// Codex CLI.
    Codex,
    /// OpenCode.
    OpenCode,
    /// pi.
    Pi,
}

impl Agent {
    /// Every agent, in the order a status lists them.
    pub const ALL: [Agent; 4] = [Agent::ClaudeCode, Agent::Codex, Agent::OpenCode, Agent::Pi];

    /// Its name, as `ctxlog hook NAME` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::OpenCode => "opencode",
            Agent::Pi => "pi",
        }
    }
}

/// The command the agent runs: `ctxlog` by its absolute path, with
/// `--db DIR` when the store is not the default, then `hook AGENT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCommand {
    /// The program.
    pub program: String,
    /// Its arguments before `hook AGENT` (`--db DIR`).
    pub options: Vec<String>,
}

impl HookCommand {
    /// The whole argument vector for `agent`.
    pub fn argv(&self, agent: Agent) -> Vec<String> {
        let mut argv = vec![self.program.clone()];
        argv.extend(self.options.iter().cloned());
        argv.push("hook".into());
        argv.push(agent.name().into());
        argv
    }

    /// The same as one shell command line (each word quoted when it needs
    /// to be).
    pub fn shell(&self, agent: Agent) -> String {
        self.argv(agent)
            .iter()
            .map(|w| shell_word(w))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `word` as a shell reads it back: as is when it holds only safe
/// characters, else in single quotes.
fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:=@%+,-".contains(&b));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The words of a command line written by [`HookCommand::shell`] (single
/// quotes, and the `'\''` within them); `None` for anything else.
fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' if in_word => {
                words.push(std::mem::take(&mut word));
                in_word = false;
            }
            ' ' => {}
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next()?);
            }
            '"' | '$' | '`' | ';' | '&' | '|' | '<' | '>' => return None,
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// Whether `line` is a command ctxlog installed for `agent`: a program
/// named `ctxlog…` run as `… hook AGENT`.
pub fn is_ours(line: &str, agent: Agent) -> bool {
    let Some(words) = shell_words(line) else {
        return false;
    };
    let program_is_ctxlog = words.first().is_some_and(|p| {
        Path::new(p)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("ctxlog"))
    });
    program_is_ctxlog && words.len() >= 3 && words[words.len() - 2..] == ["hook", agent.name()]
}

/// What is installed for one agent and scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The files ctxlog's entries are in (or would be).
    pub files: Vec<PathBuf>,
    /// The commands of ctxlog's entries found there.
    pub commands: Vec<String>,
    /// What keeps them from running, in words (a Codex hook not trusted, a
    /// program that is not there).
    pub problems: Vec<String>,
}

impl Status {
    /// Whether ctxlog's entries are there.
    pub fn installed(&self) -> bool {
        !self.commands.is_empty()
    }
}

/// Installs `command` for `agent` in its configuration of `scope`;
/// `records` is the directory where what was written is remembered.
pub fn install(
    agent: Agent,
    scope: Scope,
    homes: &Homes,
    command: &HookCommand,
    records: &Path,
) -> Result<Vec<Written>, InstallError> {
    match agent {
        Agent::ClaudeCode => claude_code::install(scope, homes, command, records),
        Agent::Codex => codex::install(scope, homes, command, records),
        Agent::OpenCode | Agent::Pi => plugin::install(agent, scope, homes, command, records),
    }
}

/// Removes what [`install`] added for `agent` in `scope`.
pub fn uninstall(
    agent: Agent,
    scope: Scope,
    homes: &Homes,
    records: &Path,
) -> Result<Vec<Written>, InstallError> {
    match agent {
        Agent::ClaudeCode => claude_code::uninstall(scope, homes, records),
        Agent::Codex => codex::uninstall(scope, homes, records),
        Agent::OpenCode | Agent::Pi => plugin::uninstall(agent, scope, homes, records),
    }
}

/// What is installed for `agent` in `scope`.
pub fn status(agent: Agent, scope: Scope, homes: &Homes) -> Result<Status, InstallError> {
    let mut status = match agent {
        Agent::ClaudeCode => claude_code::status(scope, homes),
        Agent::Codex => codex::status(scope, homes),
        Agent::OpenCode | Agent::Pi => plugin::status(agent, scope, homes),
    }?;
    for c in &status.commands.clone() {
        if let Some(program) = shell_words(c)
            .and_then(|w| w.into_iter().next())
            .or_else(|| plugin::program_of(c))
        {
            if !Path::new(&program).exists() {
                status
                    .problems
                    .push(format!("{program} is not there: install again"));
            }
        }
    }
    status.problems.dedup();
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_reads_back_as_its_words_and_is_told_ours() {
        let c = HookCommand {
            program: "/opt/my tools/ctxlog".into(),
            options: vec!["--db".into(), "/tmp/it's here".into()],
        };
        let line = c.shell(Agent::Codex);
        assert_eq!(
            line,
            r"'/opt/my tools/ctxlog' --db '/tmp/it'\''s here' hook codex"
        );
        assert_eq!(shell_words(&line).unwrap(), c.argv(Agent::Codex));
        assert!(is_ours(&line, Agent::Codex));
        assert!(!is_ours(&line, Agent::ClaudeCode));
        assert!(!is_ours("/usr/bin/notify hook codex", Agent::Codex));
        assert!(!is_ours("ctxlog hook codex; rm -rf ~", Agent::Codex));
    }
}
