//! Which process runs a session, so a listing can tell a live session
//! from one whose agent has gone ([`AgentProcess`]). Read from Linux's
//! `/proc`; elsewhere nothing is known and no session is called live.

use super::payload::{HookAgent, HookCall};
use ctxlog_core::AgentProcess;

/// Shells and launchers between an agent and its hook (Codex runs a hook
/// through `$SHELL -lc`): passed over on the way up to the agent.
const LAUNCHERS: &[&str] = &["sh", "bash", "dash", "zsh", "fish", "ksh", "env", "timeout"];

/// How many parents are looked at on the way up.
const MAX_ANCESTORS: usize = 8;

/// The process of the agent that called `call`: the pid its plugin gave,
/// else the one the agent puts in its hooks' environment (`CLAUDE_PID`,
/// `OPENCODE_PID`), else the nearest ancestor of `parent` (the hook's
/// parent) that is not a shell.
pub fn agent_process(
    call: &HookCall,
    env: impl Fn(&str) -> Option<String>,
    parent: u32,
) -> Option<AgentProcess> {
    let named = match call.agent {
        HookAgent::ClaudeCode => env("CLAUDE_PID"),
        HookAgent::OpenCode => env("OPENCODE_PID"),
        HookAgent::Codex | HookAgent::Pi => None,
    };
    let pid = call
        .agent_pid
        .or_else(|| named.and_then(|p| p.trim().parse().ok()))
        .or_else(|| nearest_agent(parent))?;
    let started = stat(pid)?.started;
    Some(AgentProcess { pid, started })
}

/// Whether `process` still runs (the same pid, started at the same tick).
pub fn is_running(process: &AgentProcess) -> bool {
    stat(process.pid).is_some_and(|s| s.started == process.started && s.state != 'Z')
}

/// The nearest of `pid` and its ancestors that is not a launcher.
fn nearest_agent(pid: u32) -> Option<u32> {
    let mut pid = pid;
    for _ in 0..MAX_ANCESTORS {
        let s = stat(pid)?;
        if !LAUNCHERS.contains(&s.name.as_str()) {
            return Some(pid);
        }
        pid = s.parent;
    }
    None
}

/// What `/proc/PID/stat` says of a process.
struct Stat {
    name: String,
    state: char,
    parent: u32,
    started: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    if pid == 0 {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parses `/proc/PID/stat`: the name is between the first `(` and the
/// last `)` (it may hold both); fields 3, 4 and 22 follow.
fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_owned();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    Some(Stat {
        name,
        state: rest.first()?.chars().next()?,
        parent: rest.get(1)?.parse().ok()?,
        started: rest.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_parentheses_and_spaces_is_read_whole() {
        let s =
            parse_stat("77 (a) b (c)) S 12 77 77 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 9876 1 2")
                .unwrap();
        assert_eq!(s.name, "a) b (c)");
        assert_eq!(s.state, 'S');
        assert_eq!(s.parent, 12);
        assert_eq!(s.started, 9876);
    }

    #[test]
    fn this_process_runs_and_is_found_by_its_pid() {
        let me = std::process::id();
        let started = stat(me).expect("/proc").started;
        assert!(is_running(&AgentProcess { pid: me, started }));
        assert!(!is_running(&AgentProcess {
            pid: me,
            started: started + 1
        }));
    }
}
