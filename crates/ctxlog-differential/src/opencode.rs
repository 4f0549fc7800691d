//! The real OpenCode, pinned, installed from the npm registry and driven
//! offline.
//!
//! [`install`] puts `opencode-ai@VERSION` into a cache outside git
//! (`$CTXLOG_OPENCODE_CACHE`, else `$XDG_CACHE_HOME/ctxlog`, else
//! `~/.cache/ctxlog`) once. [`Sandbox`] gives each run its own home, XDG
//! folders and project folder, with OpenCode's network features off, and a
//! config whose only provider is the scripted model server
//! (`@ai-sdk/openai-compatible`, bundled in the binary). [`Server`] runs
//! `opencode serve` on a free loopback port and talks to its HTTP API.

use serde_json::{json, Value};
use std::fs;
use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The pinned OpenCode version the differential tests run against.
pub const VERSION: &str = "1.18.33";

/// The provider and model ids the sandbox config declares.
pub const PROVIDER: &str = "local";
/// See [`PROVIDER`].
pub const MODEL: &str = "scripted";

use crate::drive::failed;
pub use crate::drive::DriveError;

/// The cache folder the pinned OpenCode is installed into.
pub fn cache_dir() -> PathBuf {
    crate::npm::install_dir("opencode-ai", VERSION)
}

/// The binary inside an install folder, when present.
fn binary_in(dir: &Path) -> Option<PathBuf> {
    let modules = dir.join("node_modules");
    let wrapper = modules.join("opencode-ai/bin/opencode.exe");
    if wrapper.is_file() {
        return Some(wrapper);
    }
    let mut platform: Vec<PathBuf> = fs::read_dir(&modules)
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin/opencode"))
        .filter(|p| p.is_file())
        .collect();
    platform.sort();
    platform.into_iter().next()
}

/// Installs the pinned OpenCode when missing; returns its binary.
pub fn install() -> Result<PathBuf, DriveError> {
    let dir = cache_dir();
    if let Some(bin) = binary_in(&dir).filter(|b| version_of(b).as_deref() == Some(VERSION)) {
        return Ok(bin);
    }
    crate::npm::install("opencode-ai", VERSION)?;
    let bin = binary_in(&dir)
        .ok_or_else(|| DriveError::Install(format!("no opencode binary under {dir:?}")))?;
    match version_of(&bin) {
        Some(v) if v == VERSION => Ok(bin),
        other => Err(DriveError::Install(format!(
            "{bin:?} reports version {other:?}, not {VERSION}"
        ))),
    }
}

fn version_of(bin: &Path) -> Option<String> {
    let out = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The model's limits and compaction settings a sandbox declares.
#[derive(Debug, Clone, Copy)]
pub struct ModelConfig {
    /// `limit.context`.
    pub context: u64,
    /// `limit.output`.
    pub output: u64,
    /// `compaction.prune`.
    pub prune: bool,
}

/// One run's private home, XDG folders, project folder and config.
pub struct Sandbox {
    root: PathBuf,
    bin: PathBuf,
}

impl Sandbox {
    /// Creates the folders under `root` and writes the config pointing at
    /// `base_url` (the scripted model server).
    pub fn new(
        bin: PathBuf,
        root: PathBuf,
        base_url: &str,
        model: ModelConfig,
    ) -> Result<Sandbox, DriveError> {
        for d in ["home", "config", "data", "cache", "state", "project"] {
            fs::create_dir_all(root.join(d))?;
        }
        let config = json!({
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": false,
            "share": "disabled",
            "model": format!("{PROVIDER}/{MODEL}"),
            "small_model": format!("{PROVIDER}/{MODEL}"),
            "compaction": {"auto": true, "prune": model.prune},
            "provider": {PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": base_url, "apiKey": "scripted"},
                "models": {MODEL: {
                    "name": "Scripted model",
                    "tool_call": true,
                    "limit": {"context": model.context, "output": model.output}
                }}
            }}
        });
        fs::write(
            root.join("project/opencode.json"),
            serde_json::to_vec_pretty(&config).map_err(|e| failed("config", e))?,
        )?;
        Ok(Sandbox { root, bin })
    }

    /// The OpenCode binary.
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// The project folder OpenCode runs in.
    pub fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    /// A command for the binary with the sandbox's environment.
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.bin);
        c.current_dir(self.project())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("XDG_CACHE_HOME", self.root.join("cache"))
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env("TERM", "dumb")
            .stdin(Stdio::null());
        for flag in [
            "OPENCODE_DISABLE_AUTOUPDATE",
            "OPENCODE_DISABLE_MODELS_FETCH",
            "OPENCODE_DISABLE_SHARE",
            "OPENCODE_DISABLE_LSP_DOWNLOAD",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS",
            "OPENCODE_DISABLE_CLAUDE_CODE",
            "OPENCODE_DISABLE_EXTERNAL_SKILLS",
        ] {
            c.env(flag, "1");
        }
        c
    }

    /// `opencode export ID` written to `file` (through a file, never a pipe:
    /// OpenCode cuts a piped export short).
    pub fn export(&self, session: &str, file: &Path) -> Result<Value, DriveError> {
        let out = fs::File::create(file)?;
        let err = fs::File::create(file.with_extension("stderr"))?;
        let status = self
            .command()
            .args(["export", session])
            .stdout(out)
            .stderr(err)
            .status()?;
        let text = fs::read_to_string(file)?;
        if !status.success() {
            return Err(failed(format!("opencode export {session}"), status));
        }
        // Anything before the JSON (a notice line) is not part of it.
        let start = text.find('{').unwrap_or(0);
        serde_json::from_str(&text[start..]).map_err(|e| failed("export JSON", e))
    }

    /// `opencode import FILE`; the output on success (it names the session:
    /// [`imported_session`]), the error text when OpenCode refuses it.
    pub fn import(&self, file: &Path) -> Result<String, DriveError> {
        let out = self
            .command()
            .arg("import")
            .arg(file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() && !text.contains("Error") {
            Ok(text)
        } else {
            Err(failed(format!("opencode import {}", file.display()), text))
        }
    }
}

/// The session id in what `opencode import` printed
/// (`Imported session: ses_…`).
pub fn imported_session(output: &str) -> Option<String> {
    let start = output.find("ses_")?;
    Some(
        output[start..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect(),
    )
}

/// A running `opencode serve`, killed when dropped.
pub struct Server {
    child: Child,
    url: String,
    agent: ureq::Agent,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Server {
    /// Starts `opencode serve` in the sandbox and waits until it is healthy.
    pub fn start(sandbox: &Sandbox) -> Result<Server, DriveError> {
        let port = free_port()?;
        let log = fs::File::create(sandbox.root.join("serve.log"))?;
        let child = sandbox
            .command()
            .args(["serve", "--hostname", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(120))
            .build();
        let mut server = Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
            agent,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let health = ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(2))
                .build()
                .get(&format!("{}/global/health", server.url))
                .call();
            // Refused while it boots; a first request may also stall.
            if health.is_ok() {
                return Ok(server);
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(failed("opencode serve", format!("exited: {status}")));
            }
            if Instant::now() > deadline {
                return Err(failed("opencode serve", "not healthy after 60 s"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `GET path` as JSON.
    pub fn get(&self, path: &str) -> Result<Value, DriveError> {
        let r = self
            .agent
            .get(&format!("{}{path}", self.url))
            .call()
            .map_err(|e| failed(format!("GET {path}"), e))?;
        let text = r
            .into_string()
            .map_err(|e| failed(format!("GET {path}"), e))?;
        serde_json::from_str(&text).map_err(|e| failed(format!("GET {path}"), e))
    }

    /// `POST path` with a JSON body; the answer as JSON (`null` when empty).
    pub fn post(&self, path: &str, body: Value) -> Result<Value, DriveError> {
        let r = self
            .agent
            .post(&format!("{}{path}", self.url))
            .set("Content-Type", "application/json")
            .send_string(&body.to_string())
            .map_err(|e| failed(format!("POST {path}"), e))?;
        let text = r
            .into_string()
            .map_err(|e| failed(format!("POST {path}"), e))?;
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| failed(format!("POST {path}"), e))
    }

    /// Creates a session; its id.
    pub fn create_session(&self) -> Result<String, DriveError> {
        let s = self.post("/session", json!({}))?;
        s.get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| failed("POST /session", format!("no id in {s}")))
    }

    /// Sends one user prompt and waits until the session is idle again.
    pub fn prompt(&self, session: &str, text: &str) -> Result<(), DriveError> {
        self.post(
            &format!("/session/{session}/message"),
            json!({
                "parts": [{"type": "text", "text": text}],
                "model": {"providerID": PROVIDER, "modelID": MODEL},
            }),
        )?;
        self.wait_idle(session)
    }

    /// Asks for a manual compaction and waits until the session is idle.
    pub fn summarize(&self, session: &str) -> Result<(), DriveError> {
        self.post(
            &format!("/session/{session}/summarize"),
            json!({"providerID": PROVIDER, "modelID": MODEL}),
        )?;
        self.wait_idle(session)
    }

    /// Waits until `/session/status` has no busy entry for `session`.
    pub fn wait_idle(&self, session: &str) -> Result<(), DriveError> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let status = self.get("/session/status")?;
            let busy = status
                .get(session)
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str)
                .is_some_and(|t| t != "idle");
            if !busy {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(failed("wait for idle", format!("still {status}")));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
