//! The real pi coding agent, pinned, installed from the npm registry and
//! driven offline in RPC mode.
//!
//! [`install`] puts `@mariozechner/pi-coding-agent@VERSION` into the npm
//! cache ([`crate::npm`]) once. [`Sandbox`] gives each run its own home,
//! temp and XDG folders and project folder, `PI_OFFLINE=1`, the proxy
//! variables pointing at the model server (which refuses any other host),
//! and `~/.pi/agent/models.json` whose only provider is the scripted
//! server's Anthropic Messages API. [`Rpc`] runs `pi --mode rpc`: one
//! process holds the whole session, as the TUI does; each prompt waits for
//! `agent_end` and then until pi is neither streaming nor compacting.

use crate::drive::{failed, DriveError};
use serde_json::{json, Value};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The pinned pi version the differential tests run against.
pub const VERSION: &str = "0.73.1";
/// Its npm package.
pub const PACKAGE: &str = "@mariozechner/pi-coding-agent";
/// The provider the sandbox declares.
pub const PROVIDER: &str = "scripted";

/// How long one prompt or compaction may take before the run fails.
const WAIT: Duration = Duration::from_secs(180);

/// Installs the pinned pi when missing; its `dist/cli.js`.
pub fn install() -> Result<PathBuf, DriveError> {
    let dir = crate::npm::install_dir(PACKAGE, VERSION);
    let cli = dir.join("node_modules").join(PACKAGE).join("dist/cli.js");
    if cli.is_file() && crate::npm::installed_version(&dir, PACKAGE).as_deref() == Some(VERSION) {
        return Ok(cli);
    }
    crate::npm::install(PACKAGE, VERSION)?;
    match crate::npm::installed_version(&dir, PACKAGE) {
        Some(v) if v == VERSION && cli.is_file() => Ok(cli),
        other => Err(DriveError::Install(format!(
            "{PACKAGE}: installed version {other:?} under {dir:?}, not {VERSION}"
        ))),
    }
}

/// The model a sandbox declares and pi's compaction settings.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// The model id (pi sends it as `model`).
    pub id: String,
    /// `contextWindow`.
    pub context: u64,
    /// `maxTokens`.
    pub output: u64,
    /// `compaction.reserveTokens` (pi's default 16,384 when `None`).
    pub reserve_tokens: Option<u64>,
    /// `compaction.keepRecentTokens` (pi's default 20,000 when `None`).
    pub keep_recent_tokens: Option<u64>,
}

/// One run's private folders and pi's config.
pub struct Sandbox {
    root: PathBuf,
    cli: PathBuf,
    proxy: String,
    model: ModelConfig,
}

impl Sandbox {
    /// Creates the folders under `root` and writes the config pointing at
    /// `origin` (the scripted model server, `http://127.0.0.1:PORT`).
    pub fn new(
        cli: PathBuf,
        root: PathBuf,
        origin: &str,
        model: ModelConfig,
    ) -> Result<Sandbox, DriveError> {
        for d in [
            "home/.pi/agent",
            "tmp",
            "config",
            "data",
            "cache",
            "project",
        ] {
            fs::create_dir_all(root.join(d))?;
        }
        let models = json!({"providers": {PROVIDER: {
            "baseUrl": origin,
            "api": "anthropic-messages",
            "apiKey": "scripted-dummy-key",
            "models": [{
                "id": model.id,
                "name": "Scripted model",
                "reasoning": false,
                "input": ["text"],
                "contextWindow": model.context,
                "maxTokens": model.output,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            }],
        }}});
        let mut compaction = json!({"enabled": true});
        if let Some(r) = model.reserve_tokens {
            compaction["reserveTokens"] = json!(r);
        }
        if let Some(k) = model.keep_recent_tokens {
            compaction["keepRecentTokens"] = json!(k);
        }
        let settings = json!({
            "defaultProvider": PROVIDER,
            "defaultModel": model.id,
            "compaction": compaction,
        });
        let agent = root.join("home/.pi/agent");
        let pretty = |v: &Value| serde_json::to_vec_pretty(v).map_err(|e| failed("config", e));
        fs::write(agent.join("models.json"), pretty(&models)?)?;
        fs::write(agent.join("settings.json"), pretty(&settings)?)?;
        Ok(Sandbox {
            root,
            cli,
            proxy: origin.to_owned(),
            model,
        })
    }

    /// The project folder pi runs in.
    pub fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    /// A `node cli.js` command with the sandbox's environment.
    pub fn command(&self) -> Command {
        let mut c = Command::new("node");
        c.arg(&self.cli)
            .current_dir(self.project())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("TMPDIR", self.root.join("tmp"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("XDG_CACHE_HOME", self.root.join("cache"))
            .env("TERM", "dumb")
            .env("PI_OFFLINE", "1")
            .env("HTTPS_PROXY", &self.proxy)
            .env("HTTP_PROXY", &self.proxy)
            .env("NO_PROXY", "127.0.0.1,localhost");
        c
    }

    /// The session files pi wrote, in name order.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut dirs = vec![self.root.join("home/.pi/agent/sessions")];
        while let Some(d) = dirs.pop() {
            for e in fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    out.push(p);
                }
            }
        }
        out.sort();
        out
    }
}

/// A running `pi --mode rpc`, ended when dropped.
pub struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Every line pi printed, in order.
    pub log: Vec<Value>,
    next_id: u64,
}

impl Drop for Rpc {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Rpc {
    /// Starts pi in RPC mode in the sandbox.
    pub fn start(sandbox: &Sandbox) -> Result<Rpc, DriveError> {
        let stderr = fs::File::create(sandbox.root.join("pi.stderr"))?;
        let mut child = sandbox
            .command()
            .args(["--mode", "rpc", "--provider", PROVIDER, "--model"])
            .arg(&sandbox.model.id)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| failed("pi --mode rpc", "no stdout"))?;
        let stdin = child.stdin.take();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            // RPC framing is LF only (`rpc.md`): split on b'\n'.
            for line in BufReader::new(stdout).split(b'\n').map_while(Result::ok) {
                let v = serde_json::from_slice(&line)
                    .unwrap_or_else(|_| json!({"unparsed": String::from_utf8_lossy(&line)}));
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        Ok(Rpc {
            child,
            stdin,
            lines: rx,
            log: Vec::new(),
            next_id: 0,
        })
    }

    fn send(&mut self, mut command: Value) -> Result<String, DriveError> {
        self.next_id += 1;
        let id = format!("ctxlog-{}", self.next_id);
        command["id"] = json!(id);
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| failed("pi rpc", "stdin closed"))?;
        writeln!(stdin, "{command}")?;
        stdin.flush()?;
        Ok(id)
    }

    /// The next line pi prints, waiting until `deadline`.
    fn next(&mut self, deadline: Instant, waiting_for: &str) -> Result<Value, DriveError> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(v) => {
                self.log.push(v.clone());
                Ok(v)
            }
            Err(RecvTimeoutError::Timeout) => {
                Err(failed("pi rpc", format!("no {waiting_for} in {WAIT:?}")))
            }
            Err(RecvTimeoutError::Disconnected) => Err(failed(
                "pi rpc",
                format!("pi exited while waiting for {waiting_for}"),
            )),
        }
    }

    /// Sends `command` and waits for its response; its `data`.
    pub fn call(&mut self, command: Value) -> Result<Value, DriveError> {
        let what = command["type"].as_str().unwrap_or("command").to_owned();
        let id = self.send(command)?;
        let deadline = Instant::now() + WAIT;
        loop {
            let v = self.next(deadline, &format!("response to {what}"))?;
            if v["type"] == "response" && v["id"] == json!(id) {
                if v["success"] != json!(true) {
                    return Err(failed(format!("pi rpc {what}"), v));
                }
                return Ok(v.get("data").cloned().unwrap_or(Value::Null));
            }
        }
    }

    /// Sends one prompt and waits until pi's run and any compaction after
    /// it are over.
    pub fn prompt(&mut self, text: &str) -> Result<(), DriveError> {
        self.call(json!({"type": "prompt", "message": text}))?;
        let deadline = Instant::now() + WAIT;
        loop {
            let v = self.next(deadline, "agent_end")?;
            if v["type"] == "agent_end" {
                break;
            }
        }
        self.wait_idle().map(|_| ())
    }

    /// RPC `compact` with `instructions`; its data (`summary`,
    /// `firstKeptEntryId`, `tokensBefore`).
    pub fn compact(&mut self, instructions: &str) -> Result<Value, DriveError> {
        let data = self.call(json!({"type": "compact", "customInstructions": instructions}))?;
        self.wait_idle()?;
        Ok(data)
    }

    /// Polls `get_state` until pi is neither streaming nor compacting; the
    /// state. A compaction right after a run, and a retry after an
    /// overflow, are part of the run.
    pub fn wait_idle(&mut self) -> Result<Value, DriveError> {
        let deadline = Instant::now() + WAIT;
        let mut idle_polls = 0;
        loop {
            let state = self.call(json!({"type": "get_state"}))?;
            let busy = state["isStreaming"] == json!(true) || state["isCompacting"] == json!(true);
            // Idle twice in a row, 200 ms apart: a retry scheduled after an
            // overflow compaction starts between the two.
            idle_polls = if busy { 0 } else { idle_polls + 1 };
            if idle_polls >= 2 {
                return Ok(state);
            }
            if Instant::now() > deadline {
                return Err(failed("pi wait for idle", state));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The session file pi writes.
    pub fn session_file(&mut self) -> Result<PathBuf, DriveError> {
        let state = self.call(json!({"type": "get_state"}))?;
        state["sessionFile"]
            .as_str()
            .map(PathBuf::from)
            .ok_or_else(|| failed("pi get_state", format!("no sessionFile in {state}")))
    }
}
