//! What the hook tests share: a sandbox's store and hooks' log, the
//! hooks installed with this build's `ctxlog hooks install`, and the
//! checks every agent's session must pass.

#![allow(dead_code)] // not every test uses every check

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// One agent run's store and home.
pub struct Hooked {
    /// The store the hooks write to.
    pub db: PathBuf,
    /// The agent's and ctxlog's home.
    pub home: PathBuf,
    /// A folder for scratch stores.
    pub scratch: PathBuf,
    /// The directory the hooks log to (`$XDG_DATA_HOME/ctxlog-hooks`, as
    /// the agent runs them).
    pub data: PathBuf,
}

impl Hooked {
    /// The store and home under `dir`.
    pub fn new(dir: &Path, home: &Path) -> Hooked {
        Hooked {
            db: dir.join("store"),
            home: home.to_owned(),
            scratch: dir.join("scratch"),
            data: home.join(".local/share/ctxlog-hooks"),
        }
    }

    /// The same, the agent's `XDG_DATA_HOME` being `xdg_data`.
    pub fn with_data(mut self, xdg_data: &Path) -> Hooked {
        self.data = xdg_data.join("ctxlog-hooks");
        self
    }

    /// `ctxlog` (the program `program`) as the sandbox's user, on its
    /// store.
    pub fn ctxlog(&self, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.arg("--db")
            .arg(&self.db)
            .args(args)
            .env("HOME", &self.home)
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CTXLOG_DB")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("PI_CODING_AGENT_DIR")
            .env("TZ", "UTC");
        c
    }

    /// Runs `ctxlog args` with this build, which must succeed; its JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self
            .ctxlog(Path::new(env!("CARGO_BIN_EXE_ctxlog")), &all)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "ctxlog {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// `hooks install --agent AGENT` with `program` (this build, or a copy
    /// of it), `env` set as the agent sees it.
    pub fn install(&self, program: &Path, agent: &str, env: &[(&str, &Path)]) {
        let mut c = self.ctxlog(program, &["hooks", "install", "--agent", agent]);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "hooks install: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `hooks uninstall --agent AGENT`, `env` set as for the install;
    /// afterwards each of `files` holds what `before` says it held before
    /// the install, byte for byte (`None`: no file).
    pub fn uninstall(
        &self,
        agent: &str,
        env: &[(&str, &Path)],
        files: &[PathBuf],
        before: &[Option<Vec<u8>>],
    ) {
        let mut c = self.ctxlog(
            Path::new(env!("CARGO_BIN_EXE_ctxlog")),
            &["hooks", "uninstall", "--agent", agent],
        );
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "hooks uninstall: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            &snapshot(files)[..],
            before,
            "{agent}: uninstall gives the configuration back byte for byte: {files:?}"
        );
    }

    /// The hooks' log.
    pub fn runs(&self) -> Vec<Value> {
        let log = self.data.join("log.jsonl");
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits until no detached import of this store runs (their imports
    /// outlive the hook the agent waited for).
    pub fn settle(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let db = self.db.display().to_string();
        while Instant::now() < deadline {
            if !detached_imports_of(&db) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the hooks' imports of {db} did not end in a minute");
    }

    /// Waits until a hook the agent calls on its own time (a plugin's
    /// event) ran for `hook` after `since` (ms since the epoch), then for
    /// its import ([`Hooked::settle`]).
    pub fn wait_for(&self, hook: &str, since: u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let ran = self.runs().iter().any(|r| {
                r["hook"] == hook
                    && r["at"].as_u64().is_some_and(|at| at >= since)
                    && (r["result"] == "returned" || r["result"] == "detached")
            });
            if ran {
                return self.settle();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no {hook} hook ran in a minute: {:#?}", self.runs());
    }

    /// The stored row of the session the agent calls `source`.
    pub fn stored(&self, source: &str) -> Value {
        let listed = self.json(&["sessions"]);
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["source_session"] == source)
            .cloned()
            .unwrap_or_else(|| panic!("no session {source} in the store: {listed}"))
    }

    /// The store holds the session as the recording stands: as many
    /// events as importing the recording now into a new store gives.
    pub fn check_current(&self, recording: &Path, source: &str, turn: &str) {
        self.settle();
        self.compare_current(recording, source, turn);
    }

    /// [`Hooked::check_current`] once the detached imports ended.
    pub fn compare_current(&self, recording: &Path, source: &str, turn: &str) {
        let stored = self.stored(source);
        let fresh = self.scratch.join(format!("fresh-{}", self.runs().len()));
        let out = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
            .arg("--db")
            .arg(&fresh)
            .arg("--json")
            .arg("import")
            .arg(recording)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
            .arg("--db")
            .arg(&fresh)
            .args(["--json", "sessions"])
            .output()
            .unwrap();
        let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
        let want = listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["source_session"] == source)
            .unwrap_or_else(|| panic!("{listed}"))["events"]
            .clone();
        assert_eq!(
            stored["events"], want,
            "after {turn}: the store holds the session up to that turn"
        );
        let _ = std::fs::remove_dir_all(&fresh);
    }

    /// Importing the recording by hand afterwards adds nothing.
    pub fn check_final(&self, recording: &Path) {
        self.settle();
        let out = self.json(&["import", &recording.display().to_string()]);
        match out["files"].as_array() {
            // A database of many sessions: each unchanged.
            Some(files) => assert!(files.iter().all(|f| f["result"] == "unchanged"), "{out}"),
            None => {
                assert_eq!(out["already_imported"], true, "{out}");
                assert_eq!(out["new_events"], 0, "{out}");
            }
        }
    }

    /// The capture at each compaction's `before` moment (the last one
    /// the audit lists before the compaction) holds every message and
    /// part the compaction replaced (`recall --compaction`); returns how
    /// many compactions there are.
    pub fn check_captured_before_compactions(&self, session: &str, before: &str) -> usize {
        let audit = self.json(&["audit", session]);
        let mut captured: Option<u64> = None;
        let mut compactions = 0;
        for e in audit["entries"].as_array().unwrap() {
            let what = e["what"].as_str().unwrap_or("");
            if e["kind"] == "captured" && what.starts_with(&format!("captured at {before}")) {
                captured = e["seq"].as_u64();
            }
            if e["kind"] != "compaction_requested" {
                continue;
            }
            compactions += 1;
            let at = e["seq"].as_u64().unwrap().to_string();
            let recalled = self.json(&["recall", "--compaction", &at, session]);
            let mut last = 0;
            for m in recalled["compaction"]["messages"].as_array().unwrap() {
                last = last.max(m["seq"].as_u64().unwrap());
                for p in m["parts"].as_array().unwrap() {
                    last = last.max(p["seq"].as_u64().unwrap());
                }
            }
            assert!(
                last > 0,
                "the compaction at {at} replaced nothing: {recalled}"
            );
            assert!(
                captured.is_some_and(|c| c >= last),
                "the compaction at seq {at} replaced up to seq {last}, captured before it up to {captured:?}: {audit}"
            );
            captured = None;
        }
        compactions
    }

    /// Prints the hooks' added latency per call, as the hooks measured it
    /// (median and worst; measured, never asserted: the budget holds by
    /// construction and `ctxlog bench --only hooks` tracks it); at least
    /// one call of `agent` returned to it.
    pub fn report_latency(&self, agent: &str) {
        let mut ms: Vec<u64> = self
            .runs()
            .iter()
            .filter(|r| r["agent"] == agent)
            .filter(|r| r["result"] == "returned" || r["result"] == "detached")
            .map(|r| r["ms"].as_u64().unwrap())
            .collect();
        ms.sort_unstable();
        assert!(!ms.is_empty(), "no hook of {agent} ran: {:#?}", self.runs());
        eprintln!(
            "{agent}: the hook returned to the agent in {} ms (median), {} ms (worst) over {} calls",
            ms[ms.len() / 2],
            ms[ms.len() - 1],
            ms.len()
        );
    }

    /// No hook call failed.
    pub fn check_no_failures(&self) {
        let failed: Vec<Value> = self
            .runs()
            .into_iter()
            .filter(|r| r["result"] == "failed")
            .collect();
        assert!(failed.is_empty(), "hooks failed: {failed:#?}");
    }
}

/// Whether a detached `ctxlog hook … --now` of store `db` runs.
fn detached_imports_of(db: &str) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|p| {
        let Ok(cmdline) = std::fs::read(p.path().join("cmdline")) else {
            return false;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        args.contains(&b"--now".as_slice()) && args.contains(&db.as_bytes())
    })
}

/// What each of `files` holds (`None`: no file).
pub fn snapshot(files: &[PathBuf]) -> Vec<Option<Vec<u8>>> {
    files.iter().map(|f| std::fs::read(f).ok()).collect()
}
