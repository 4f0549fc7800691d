//! `ctxlog hook` on its own, fed as the agents feed it: the session
//! brought in and the moment recorded (audit, timeline, sessions), the
//! import going on detached past the budget, bad input and a broken
//! recording never reaching the agent (exit 0, nothing printed) but told
//! by `hooks status`, `sessions` and `doctor`, and a PostgreSQL store
//! given as `CTXLOG_DB`, its password never written down.

mod common;
mod hooks;

use common::root;
use hooks::Hooked;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn claude_fixture() -> std::path::PathBuf {
    root().join("fixtures/sessions/claude-code/edge-cases.jsonl")
}

/// Runs `command` with `payload` on its standard input.
fn fed(mut command: Command, payload: &[u8]) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    child.wait_with_output().unwrap()
}

/// `ctxlog hook claude-code` on `hooked`'s store, as the agent runs it:
/// exit 0 and nothing printed, whatever happens.
fn hook(hooked: &Hooked, payload: &[u8], extra: &[&str]) {
    let mut args = vec!["hook", "claude-code"];
    args.extend_from_slice(extra);
    let out = fed(
        hooked.ctxlog(Path::new(env!("CARGO_BIN_EXE_ctxlog")), &args),
        payload,
    );
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
}

fn payload(event: &str, transcript: &Path, trigger: Option<&str>) -> Vec<u8> {
    let mut p = json!({
        "session_id": "7f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f",
        "transcript_path": transcript,
        "cwd": "/home/dev/proj",
        "hook_event_name": event,
    });
    if let Some(t) = trigger {
        p["trigger"] = json!(t);
    }
    p.to_string().into_bytes()
}

#[test]
fn a_hook_brings_the_session_in_and_records_the_moment() {
    let dir = ctxlog_testkit::TempDir::created("hook-capture");
    let hooked = Hooked::new(dir.path(), &dir.join("home"));
    // The recording as it stood at the turn's end, then grown.
    let transcript = dir.join("t.jsonl");
    let whole = std::fs::read_to_string(claude_fixture()).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    std::fs::write(&transcript, lines[..12].join("\n") + "\n").unwrap();
    hook(&hooked, &payload("Stop", &transcript, None), &[]);
    hooked.settle();
    let early = hooked.stored("7f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f");
    std::fs::write(&transcript, &whole).unwrap();
    // Past its budget (none), the import goes on detached.
    hook(
        &hooked,
        &payload("PreCompact", &transcript, Some("auto")),
        &["--budget", "0"],
    );
    hooked.settle();
    let stored = hooked.stored("7f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f");
    assert!(
        stored["events"].as_u64() > early["events"].as_u64(),
        "{early} {stored}"
    );
    assert_eq!(
        stored["captured"]["what"], "captured at PreCompact (auto)",
        "{stored}"
    );
    let results: Vec<Value> = hooked.runs().iter().map(|r| r["result"].clone()).collect();
    assert!(results.contains(&json!("detached")), "{results:?}");
    assert_eq!(
        results.iter().filter(|r| **r == "stored").count(),
        2,
        "{results:?}"
    );

    let session = stored["session"].as_str().unwrap();
    let audit = hooked.json(&["audit", session]);
    let captured: Vec<&Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "captured")
        .collect();
    assert_eq!(captured.len(), 2, "{audit}");
    assert_eq!(captured[0]["seq"], early["events"], "{audit}");
    assert!(
        captured[1]["what"]
            .as_str()
            .unwrap()
            .starts_with("captured at PreCompact (auto)"),
        "{audit}"
    );
    let timeline = hooked.json(&["timeline", session]);
    let said: Vec<String> = timeline["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["events"].as_array().unwrap().iter())
        .filter(|e| e["kind"] == "captured")
        .map(|e| e["what"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(said, ["captured at Stop", "captured at PreCompact (auto)"]);
    // Importing the recording by hand adds nothing.
    hooked.check_final(&transcript);
}

#[test]
fn what_goes_wrong_is_told_to_the_user_never_to_the_agent() {
    let dir = ctxlog_testkit::TempDir::created("hook-wrong");
    let hooked = Hooked::new(dir.path(), &dir.join("home"));
    // An input left open: the hook does not wait for it past a second.
    let mut open = hooked
        .ctxlog(
            Path::new(env!("CARGO_BIN_EXE_ctxlog")),
            &["hook", "claude-code"],
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // (`wait` would close its input first.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(status) = open.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the hook waits for its input"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success());
    drop(open.stdin.take());
    // Not JSON; a recording not written yet (waiting); a broken one.
    hook(&hooked, b"{not json", &[]);
    hook(
        &hooked,
        &payload("SessionStart", &dir.join("none.jsonl"), Some("startup")),
        &[],
    );
    let broken = dir.join("broken.jsonl");
    std::fs::write(&broken, "{\"type\":\"user\",\"message\":\n").unwrap();
    hook(&hooked, &payload("Stop", &broken, None), &[]);
    hooked.settle();
    let runs = hooked.runs();
    let imports: Vec<(&str, Option<&str>)> = runs
        .iter()
        .filter(|r| r["result"] != "returned" && r["result"] != "detached")
        .map(|r| (r["result"].as_str().unwrap(), r["error"].as_str()))
        .collect();
    assert_eq!(imports.len(), 4, "{runs:#?}");
    let said = |n: usize, what: &str| {
        assert_eq!(imports[n].0, "failed", "{imports:?}");
        assert!(imports[n].1.unwrap().contains(what), "{imports:?}");
    };
    said(0, "did not end");
    said(1, "not JSON");
    assert_eq!(imports[2], ("waiting", None));
    said(3, "broken.jsonl");
    // The hooks' log lives beside the default store, never in it: the
    // user's default store is still "none yet".
    let out = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .arg("sessions")
        .env("HOME", &hooked.home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("CTXLOG_DB")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no sessions yet"),
        "{out:?}"
    );
    let status = hooked.json(&["hooks", "status", "--agent", "claude-code"]);
    assert_eq!(
        status["agents"][0]["failing"].as_array().unwrap().len(),
        1,
        "{status}"
    );
    let out = hooked
        .ctxlog(Path::new(env!("CARGO_BIN_EXE_ctxlog")), &["doctor"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("claude-code's hook failed"), "{text}");
    // Once a call works again, nothing is failing.
    hook(&hooked, &payload("Stop", &claude_fixture(), None), &[]);
    hooked.settle();
    let status = hooked.json(&["hooks", "status", "--agent", "claude-code"]);
    assert!(
        status["agents"][0]["failing"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{status}"
    );
    let out = hooked
        .ctxlog(Path::new(env!("CARGO_BIN_EXE_ctxlog")), &["sessions"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("failed"),
        "{out:?}"
    );
}

#[test]
fn a_hook_writes_to_postgres_named_in_its_environment() {
    let Some(pg) = ctxlog_testkit::PgDatabase::create("cli_hook") else {
        return;
    };
    let (url, password) = (pg.url(), pg.password().expect("a password"));
    let dir = ctxlog_testkit::TempDir::created("hook-pg");
    let home = dir.join("home");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxlog"));
    command
        .args(["hook", "claude-code"])
        .env("CTXLOG_DB", url)
        .env("HOME", &home)
        .env_remove("XDG_DATA_HOME");
    let out = fed(command, &payload("Stop", &claude_fixture(), None));
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    // The detached import names no store on its command line: wait for
    // its line in the log.
    let file = home.join(".local/share/ctxlog-hooks/log.jsonl");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let log = loop {
        let log = std::fs::read_to_string(&file).unwrap_or_default();
        if log.contains("\"result\":\"stored\"") || std::time::Instant::now() > deadline {
            break log;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(
        !log.contains(&password),
        "the hooks' log holds the password: {log}"
    );
    assert!(log.contains("\"result\":\"stored\""), "{log}");
    let listed = common::ctxlog_at(Path::new(url), &["--json", "sessions"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        listed["sessions"][0]["captured"]["what"], "captured at Stop",
        "{listed}"
    );
}
