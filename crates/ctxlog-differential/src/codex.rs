//! The real Codex CLI, pinned, installed from the npm registry and driven
//! offline with `codex exec`.
//!
//! [`install`] puts `@openai/codex@VERSION` (a Node wrapper and its native
//! binary) into the npm cache ([`crate::npm`]). [`Sandbox`] gives each run
//! its own `CODEX_HOME` whose `config.toml` names one provider, the
//! scripted server's Responses API (`wire_api = "responses"`), with
//! approvals off, full access, and the configured context window and
//! auto-compact limit. Each prompt is one `codex exec --json`; later ones
//! continue the thread with `exec resume`.

use crate::drive::{failed, DriveError};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The pinned Codex version the differential tests run against.
pub const VERSION: &str = "0.169.0";
/// Its npm package.
pub const PACKAGE: &str = "@openai/codex";
/// The model id the sandbox configures (unknown to Codex: it runs on its
/// fallback model metadata).
pub const MODEL: &str = "scripted";

/// Installs the pinned Codex when missing; its `bin/codex.js`.
pub fn install() -> Result<PathBuf, DriveError> {
    let dir = crate::npm::install_dir(PACKAGE, VERSION);
    let js = dir.join("node_modules").join(PACKAGE).join("bin/codex.js");
    if version_of(&js).as_deref() == Some(VERSION) {
        return Ok(js);
    }
    crate::npm::install(PACKAGE, VERSION)?;
    match version_of(&js) {
        Some(v) if v == VERSION => Ok(js),
        other => Err(DriveError::Install(format!(
            "{PACKAGE}: {} reports version {other:?}, not {VERSION}",
            js.display()
        ))),
    }
}

/// The version `codex --version` prints (`codex-cli 0.169.0`).
fn version_of(js: &Path) -> Option<String> {
    let out = Command::new("node")
        .arg(js)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().nth(1).map(str::to_owned)
}

/// The window settings a sandbox configures.
#[derive(Debug, Clone, Copy)]
pub struct ModelConfig {
    /// `model_context_window`.
    pub context: u64,
    /// `model_auto_compact_token_limit`, when set.
    pub auto_compact_limit: Option<u64>,
}

/// One run's private `CODEX_HOME` and project folder.
pub struct Sandbox {
    root: PathBuf,
    js: PathBuf,
}

impl Sandbox {
    /// Creates the folders under `root` and the config pointing at
    /// `base_url` (the scripted server, `http://127.0.0.1:PORT/v1`).
    pub fn new(
        js: PathBuf,
        root: PathBuf,
        base_url: &str,
        model: ModelConfig,
    ) -> Result<Sandbox, DriveError> {
        for d in ["home/.codex", "project", "tmp"] {
            fs::create_dir_all(root.join(d))?;
        }
        let limit = model
            .auto_compact_limit
            .map(|l| format!("model_auto_compact_token_limit = {l}\n"))
            .unwrap_or_default();
        let config = format!(
            "model = \"{MODEL}\"\nmodel_provider = \"scripted\"\napproval_policy = \"never\"\n\
             sandbox_mode = \"danger-full-access\"\nmodel_context_window = {}\n{limit}\n\
             [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{base_url}\"\n\
             wire_api = \"responses\"\nenv_key = \"SCRIPTED_API_KEY\"\n",
            model.context
        );
        fs::write(root.join("home/.codex/config.toml"), config)?;
        Ok(Sandbox { root, js })
    }

    /// The run's folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `codex exec PROMPT` (`exec resume THREAD PROMPT` when continuing);
    /// the thread id.
    pub fn exec(&self, prompt: &str, resume: Option<&str>) -> Result<String, DriveError> {
        let mut c = self.command();
        c.args(["exec", "--skip-git-repo-check", "--json"]);
        if let Some(thread) = resume {
            c.args(["resume", thread]);
        }
        let out = c.arg(prompt).stdin(Stdio::null()).output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let log = self.root.join("exec.log");
        let mut all = fs::read_to_string(&log).unwrap_or_default();
        all.push_str(&text);
        all.push_str(&String::from_utf8_lossy(&out.stderr));
        fs::write(&log, all)?;
        let thread = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["type"] == "thread.started")
            .and_then(|v| v["thread_id"].as_str().map(str::to_owned));
        match (thread, resume) {
            (Some(t), _) => Ok(t),
            (None, Some(t)) => Ok(t.to_owned()),
            (None, None) => Err(failed(
                format!("codex exec {prompt:?}"),
                format!("{}: no thread started: {text}", out.status),
            )),
        }
    }

    /// A command for Codex with the sandbox's environment.
    fn command(&self) -> Command {
        let mut c = Command::new("node");
        c.arg(&self.js)
            .current_dir(self.root.join("project"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("CODEX_HOME", self.root.join("home/.codex"))
            .env("TMPDIR", self.root.join("tmp"))
            .env("TERM", "dumb")
            .env("SCRIPTED_API_KEY", "scripted-dummy-key");
        c
    }

    /// A manual compaction of `thread`, as Codex's app-server runs one
    /// (`thread/compact/start` over JSON-RPC on stdio), waited for until
    /// its turn completes.
    pub fn compact(&self, thread: &str) -> Result<(), DriveError> {
        let mut child = self
            .command()
            .arg("app-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(fs::File::create(self.root.join("app-server.stderr"))?)
            .spawn()?;
        let result = app_server_compact(&mut child, thread);
        drop(child.stdin.take());
        let _ = child.kill();
        let _ = child.wait();
        result
    }

    /// The rollout of `thread` Codex wrote.
    pub fn rollout(&self, thread: &str) -> Result<PathBuf, DriveError> {
        let mut dirs = vec![self.root.join("home/.codex/sessions")];
        while let Some(d) = dirs.pop() {
            for e in fs::read_dir(&d)?.flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(&format!("{thread}.jsonl")))
                {
                    return Ok(p);
                }
            }
        }
        Err(failed(
            "the rollout",
            format!(
                "no rollout of thread {thread} under {}",
                self.root.display()
            ),
        ))
    }
}

/// The JSON-RPC exchange of a manual compaction with a running app-server:
/// `initialize`, `initialized`, `thread/resume`, `thread/compact/start`, then
/// the messages until `turn/completed` (or an error, or 120 s).
fn app_server_compact(child: &mut std::process::Child, thread: &str) -> Result<(), DriveError> {
    use std::io::{BufRead, BufReader, Write};
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| failed("codex app-server", "no stdout"))?;
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                if tx.send(v).is_err() {
                    return;
                }
            }
        }
    });
    let stdin = child
        .stdin
        .as_mut()
        .ok_or_else(|| failed("codex app-server", "no stdin"))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let next = |what: &str| -> Result<Value, DriveError> {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        rx.recv_timeout(left)
            .map_err(|e| failed("codex app-server", format!("waiting for {what}: {e}")))
    };
    let call = |stdin: &mut std::process::ChildStdin, id: u64, method: &str, params: Value| {
        writeln!(
            stdin,
            "{}",
            serde_json::json!({"id": id, "method": method, "params": params})
        )
    };
    let answer = |v: &Value, id: u64| v["id"] == serde_json::json!(id);
    call(
        stdin,
        1,
        "initialize",
        serde_json::json!({"clientInfo": {"name": "ctxlog", "version": "0"}}),
    )?;
    while !answer(&next("initialize")?, 1) {}
    writeln!(stdin, "{}", serde_json::json!({"method": "initialized"}))?;
    call(
        stdin,
        2,
        "thread/resume",
        serde_json::json!({"threadId": thread}),
    )?;
    loop {
        let v = next("thread/resume")?;
        if answer(&v, 2) {
            if v.get("error").is_some() {
                return Err(failed("codex app-server thread/resume", v));
            }
            break;
        }
    }
    call(
        stdin,
        3,
        "thread/compact/start",
        serde_json::json!({"threadId": thread}),
    )?;
    loop {
        let v = next("the compaction's turn/completed")?;
        if answer(&v, 3) && v.get("error").is_some() {
            return Err(failed("codex app-server thread/compact/start", v));
        }
        if v["method"] == "turn/completed" {
            return Ok(());
        }
    }
}
