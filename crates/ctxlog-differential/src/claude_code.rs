//! The real Claude Code, pinned, installed from the npm registry and driven
//! offline in print mode.
//!
//! [`install`] puts `@anthropic-ai/claude-code@VERSION` (whose postinstall
//! puts the native binary in place) into the npm cache ([`crate::npm`]).
//! [`Sandbox`] gives each run its own home and project folder outside any
//! git repository (Claude Code puts `git status` into its context inside
//! one), the base URL of the scripted Anthropic Messages server, the proxy
//! variables pointing at it, and Claude Code's network features off. Each
//! prompt is one `claude -p` process; later ones continue the session with
//! `--resume`.

use crate::drive::{failed, DriveError};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The pinned Claude Code version the differential tests run against.
pub const VERSION: &str = "2.1.328";
/// Its npm package.
pub const PACKAGE: &str = "@anthropic-ai/claude-code";

/// Installs the pinned Claude Code when missing; its binary.
pub fn install() -> Result<PathBuf, DriveError> {
    let dir = crate::npm::install_dir(PACKAGE, VERSION);
    let bin = dir
        .join("node_modules")
        .join(PACKAGE)
        .join("bin/claude.exe");
    if version_of(&bin).as_deref() == Some(VERSION) {
        return Ok(bin);
    }
    crate::npm::install(PACKAGE, VERSION)?;
    match version_of(&bin) {
        Some(v) if v == VERSION => Ok(bin),
        other => Err(DriveError::Install(format!(
            "{PACKAGE}: {} reports version {other:?}, not {VERSION}",
            bin.display()
        ))),
    }
}

/// The version `claude --version` prints (`2.1.328 (Claude Code)`).
fn version_of(bin: &Path) -> Option<String> {
    let out = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().next().map(str::to_owned)
}

/// One run's private home and project folder.
pub struct Sandbox {
    root: PathBuf,
    bin: PathBuf,
    origin: String,
    model: String,
    env: Vec<(String, String)>,
}

impl Sandbox {
    /// Creates the folders under `root` (which must lie outside any git
    /// repository) for a session of `model` against `origin` (the scripted
    /// server, `http://127.0.0.1:PORT`); `env` adds settings such as
    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`.
    pub fn new(
        bin: PathBuf,
        root: PathBuf,
        origin: &str,
        model: &str,
        env: &[(&str, &str)],
    ) -> Result<Sandbox, DriveError> {
        for d in ["home", "project", "tmp"] {
            fs::create_dir_all(root.join(d))?;
        }
        Ok(Sandbox {
            root,
            bin,
            origin: origin.to_owned(),
            model: model.to_owned(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        })
    }

    /// The run's folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `claude -p PROMPT` (continuing `resume` when given); the result
    /// object it prints.
    pub fn prompt(&self, prompt: &str, resume: Option<&str>) -> Result<Value, DriveError> {
        let mut c = Command::new(&self.bin);
        c.current_dir(self.root.join("project"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("TMPDIR", self.root.join("tmp"))
            .env("TERM", "dumb")
            // Root may skip permissions only in a sandbox.
            .env("IS_SANDBOX", "1")
            .env("ANTHROPIC_BASE_URL", &self.origin)
            .env("ANTHROPIC_API_KEY", "scripted-dummy-key")
            .env("HTTPS_PROXY", &self.origin)
            .env("HTTP_PROXY", &self.origin)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.args(["-p", prompt, "--output-format", "json", "--model"])
            .arg(&self.model)
            .arg("--dangerously-skip-permissions");
        if let Some(id) = resume {
            c.args(["--resume", id]);
        }
        let out = c.stdin(Stdio::null()).output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(failed(
                format!("claude -p {prompt:?}"),
                format!(
                    "{}: {text} {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ),
            ));
        }
        serde_json::from_str(text.trim())
            .map_err(|e| failed(format!("claude -p {prompt:?}: its JSON"), e))
    }

    /// The transcript of `session` Claude Code wrote.
    pub fn transcript(&self, session: &str) -> Result<PathBuf, DriveError> {
        let projects = self.root.join("home/.claude/projects");
        for e in fs::read_dir(&projects)?.flatten() {
            let p = e.path().join(format!("{session}.jsonl"));
            if p.is_file() {
                return Ok(p);
            }
        }
        Err(failed(
            "the transcript",
            format!("no {session}.jsonl under {}", projects.display()),
        ))
    }
}
