//! `ctxlog hook AGENT`: the command an agent's hook, plugin or extension
//! runs. It reads the agent's payload on standard input and brings that
//! session into the store, recording the moment it was called for
//! (`ctxlog_app::hooks`). It never harms the agent: the import runs in a
//! process of its own, detached, which the hook waits for at most its
//! budget (200 ms) before it returns; it prints nothing and always exits 0
//! (a failure goes to the hooks' log, which `ctxlog hooks status` and
//! `sessions` show); it holds no lock (the detached import writes through
//! the store's holder, or holds the store itself and serves the next one).

use crate::{Cli, CliError};
use ctxlog_app::hooks::runs::{self, Run};
use ctxlog_app::hooks::{self, Captured, HookAgent, HookCall};
use ctxlog_app::logs::Location;
use ctxlog_core::AgentProcess;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `hook`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct HookArgs {
    /// The agent that calls.
    #[arg(value_enum)]
    pub agent: AgentArg,
    /// How long the agent waits at most, in milliseconds: past it the
    /// import goes on detached and the hook returns.
    #[arg(long, default_value_t = 200)]
    pub budget: u64,
    /// Import here and now (what the detached process runs).
    #[arg(long, hide = true)]
    pub now: bool,
    /// When the agent called, ms since the epoch (given to the detached
    /// process).
    #[arg(long, hide = true)]
    pub at: Option<u64>,
    /// The agent's process and its start (given to the detached process).
    #[arg(long, hide = true, num_args = 2)]
    pub agent_process: Option<Vec<u64>>,
    /// The payload as arguments instead of standard input (for a plugin
    /// that passes arguments): the event as the agent names it.
    #[arg(long)]
    pub event: Option<String>,
    /// With --event: the agent's id of the session.
    #[arg(long, requires = "event")]
    pub session: Option<String>,
    /// With --event: the session's recording.
    #[arg(long, requires = "event")]
    pub transcript: Option<PathBuf>,
    /// With --event: what set the event off (`auto`, `manual`, ...).
    #[arg(long, requires = "event")]
    pub trigger: Option<String>,
}

impl HookArgs {
    /// The payload the arguments give, as the agents' JSON.
    fn payload(&self) -> Option<Vec<u8>> {
        let event = self.event.as_ref()?;
        let payload = serde_json::json!({
            "hook_event_name": event,
            "session_id": self.session,
            "transcript_path": self.transcript,
            "trigger": self.trigger,
        });
        Some(payload.to_string().into_bytes())
    }
}

/// The agents that call `ctxlog hook`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentArg {
    /// Claude Code.
    ClaudeCode,
    /// Codex CLI.
    Codex,
    /// OpenCode.
    Opencode,
    /// pi.
    Pi,
}

impl AgentArg {
    pub(crate) fn agent(self) -> HookAgent {
        match self {
            AgentArg::ClaudeCode => HookAgent::ClaudeCode,
            AgentArg::Codex => HookAgent::Codex,
            AgentArg::Opencode => HookAgent::OpenCode,
            AgentArg::Pi => HookAgent::Pi,
        }
    }
}

/// Where the hooks keep their log and what installs wrote, whichever store
/// they write to: `ctxlog-hooks` in the data directory, beside the default
/// store (`$XDG_DATA_HOME/ctxlog-hooks`, else
/// `~/.local/share/ctxlog-hooks`), never in it: a store directory holds a
/// store or nothing.
pub(crate) fn hooks_dir() -> PathBuf {
    let store = crate::default_store();
    let name = store
        .file_name()
        .map(|n| format!("{}-hooks", n.to_string_lossy()))
        .unwrap_or_else(|| "ctxlog-hooks".into());
    store.with_file_name(name)
}

/// The store as a hook's log names it (a URL without its password).
fn store_name(db: &Location) -> String {
    db.to_string()
}

/// `hook`.
pub(crate) fn hook(cli: &Cli, a: &HookArgs) -> Result<(), CliError> {
    let agent = a.agent.agent();
    let at = a.at.unwrap_or_else(crate::now_ms);
    let started = Instant::now();
    if a.event.is_none() && std::io::stdin().is_terminal() {
        return Err(CliError::BadInput(format!(
            "`ctxlog hook {}` is what {}'s hooks run, with their payload on standard input: `ctxlog hooks install --agent {}` sets it up",
            agent.name(),
            agent.name(),
            agent.name()
        )));
    }
    let mut run = Run {
        at,
        agent: agent.name().to_owned(),
        hook: None,
        trigger: None,
        source_session: None,
        store: store_name(&cli.db),
        result: "failed".into(),
        session: None,
        new_events: None,
        head: None,
        ms: 0,
        error: None,
        otel: None,
    };
    let read = a.payload().map_or_else(read_payload, Ok);
    let call = match &read {
        Ok(payload) => hooks::parse(agent, payload).map_err(|e| e.to_string()),
        Err(why) => Err(why.clone()),
    };
    let (call, payload) = match (call, read) {
        (Ok(call), Ok(payload)) => (call, payload),
        (Err(why), _) | (_, Err(why)) => {
            run.error = Some(why);
            log_run(run, started);
            return Ok(());
        }
    };
    run.hook = Some(call.hook.clone());
    run.trigger = call.trigger.clone();
    run.source_session = call.session.clone();
    if a.now {
        let process = a.agent_process.as_ref().and_then(|p| match p[..] {
            [pid, started] => Some(AgentProcess {
                pid: u32::try_from(pid).ok()?,
                started,
            }),
            _ => None,
        });
        capture_now(cli, &call, process, &mut run);
        log_run(run, started);
        return Ok(());
    }
    let process = hooks::agent_process(
        &call,
        |k| std::env::var(k).ok(),
        std::os::unix::process::parent_id(),
    );
    match detach(cli, a, at, process, &payload) {
        Ok(child) => {
            let ended = wait_within(child, Duration::from_millis(a.budget));
            run.result = if ended { "returned" } else { "detached" }.into();
            log_run(run, started);
        }
        Err(e) => {
            run.error = Some(format!("starting the import: {e}"));
            log_run(run, started);
        }
    }
    Ok(())
}

/// How long the agent's payload may take to arrive whole (the agents
/// write it and close the pipe at once).
const INPUT_WAIT: Duration = Duration::from_secs(1);

/// The payload on standard input, read whole within [`INPUT_WAIT`] (an
/// input left open never holds the agent longer), at most
/// [`hooks::payload::MAX_PAYLOAD_BYTES`].
fn read_payload() -> Result<Vec<u8>, String> {
    let max = hooks::payload::MAX_PAYLOAD_BYTES;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut payload = Vec::new();
        let read = std::io::stdin()
            .take(max as u64 + 1)
            .read_to_end(&mut payload);
        let _ = tx.send(read.map(|_| payload));
    });
    match rx.recv_timeout(INPUT_WAIT) {
        Ok(Ok(p)) if p.len() > max => Err(format!("the hook's input is longer than {max} bytes")),
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(format!("reading the hook's input: {e}")),
        Err(_) => Err(format!(
            "the hook's input did not end within {} s",
            INPUT_WAIT.as_secs()
        )),
    }
}

/// Imports `call`'s session here and records the moment in `run`.
fn capture_now(cli: &Cli, call: &HookCall, process: Option<AgentProcess>, run: &mut Run) {
    let log = match crate::store::open_store(&cli.db) {
        Ok(log) => log,
        Err(e) => {
            run.error = Some(e.to_string());
            return;
        }
    };
    let places = ctxlog_import::discover::Places::from_env();
    match hooks::capture(&log, call, &places, process, run.at) {
        Ok(Captured::Stored {
            session,
            head,
            new_events,
        }) => {
            run.result = "stored".into();
            run.session = Some(session.to_string());
            run.head = Some(head);
            run.new_events = Some(new_events);
            if std::env::var("CTXLOG_OTEL_EXPORT").is_ok_and(|v| v == "1") {
                let ends = call.moment.ends_session();
                run.otel = Some(crate::otel::after_capture(&log, session, head, ends));
            }
        }
        Ok(Captured::NothingYet) => run.result = "waiting".into(),
        Err(e) => run.error = Some(e.to_string()),
    }
}

/// Starts this program again as `hook --now` in a process group of its
/// own, the payload on its standard input, nothing on its output (an agent
/// waits for a hook's output to close).
fn detach(
    cli: &Cli,
    a: &HookArgs,
    at: u64,
    process: Option<AgentProcess>,
    payload: &[u8],
) -> std::io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()?;
    let mut command = Command::new(exe);
    match &cli.db {
        Location::Dir(dir) => {
            command.arg("--db").arg(dir);
        }
        // A URL is shown without its password: the child gets it as it was
        // given, in its environment.
        Location::Postgres(_) => {
            if let Some(url) = given_db() {
                command.env("CTXLOG_DB", url);
            }
        }
    }
    command
        .args(["hook", a.agent.agent().name(), "--now", "--at"])
        .arg(at.to_string());
    if let Some(p) = process {
        command
            .arg("--agent-process")
            .arg(p.pid.to_string())
            .arg(p.started.to_string());
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // A child that died at once is the log's to tell.
        let _ = stdin.write_all(payload);
    }
    Ok(child)
}

/// `--db`'s value as this process was given it (`None`: from
/// `CTXLOG_DB`, which the child inherits).
fn given_db() -> Option<std::ffi::OsString> {
    let mut args = std::env::args_os();
    while let Some(arg) = args.next() {
        if arg == "--db" {
            return args.next();
        }
        if let Some(v) = arg.to_str().and_then(|a| a.strip_prefix("--db=")) {
            return Some(v.into());
        }
    }
    None
}

/// Waits for `child` at most `budget`; whether it ended.
fn wait_within(mut child: std::process::Child, budget: Duration) -> bool {
    let deadline = Instant::now() + budget;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) if Instant::now() >= deadline => return false,
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => return false,
        }
    }
}

/// Writes `run` to the hooks' log; a log that cannot be written is
/// passed over (the agent goes on all the same).
fn log_run(mut run: Run, started: Instant) {
    run.ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    // Nowhere else to say it: the agent is never told.
    let _ = runs::append(&hooks_dir(), &run);
}
