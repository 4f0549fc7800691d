//! `ctxlog otel export` against a real receiver: Arize Phoenix from PyPI
//! (`phoenix serve` on loopback, its own SQLite, no network), read back
//! through Phoenix's own client (`tests/otel/readback.py`).
//!
//! The fixtures of the four agents and the shared recordings (when
//! `../shared` is there) are exported; Phoenix then holds one trace per
//! session, a `chat` span per model call ctxlog counts (`usage`: steps and
//! summaries), an `execute_tool` span per tool call (by call id, as the
//! OpenCode export lists them), token sums equal to `usage`'s, every
//! compaction with the audit's reason; a second export adds nothing; the
//! OTLP JSON file parses into the protobuf request. A `--follow` started
//! before Phoenix is up delivers once it is, and sends a growing session's
//! new steps as they are imported; `ctxlog hook pi` with
//! `CTXLOG_OTEL_EXPORT=1` sends the spans each call made final, and the
//! rest at the session's end.
//!
//! Phoenix is installed once into `target/phoenix-venv`; when that cannot
//! be done the test skips with a message, unless `CTXLOG_REQUIRE_PYTHON=1`
//! (`.ci/run` sets it).

mod common;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The receiver, pinned.
const PHOENIX: &str = "arize-phoenix==20.26.1";

fn required() -> bool {
    std::env::var("CTXLOG_REQUIRE_PYTHON").is_ok_and(|v| v == "1")
}

/// The venv's python with Phoenix installed; `None` (skipped) when it
/// cannot be made.
fn phoenix_python() -> Option<PathBuf> {
    let venv = common::root().join("target/phoenix-venv");
    let python = venv.join("bin/python");
    let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
    let made = python.exists() || ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    let installed = made
        && (venv.join("bin/phoenix").exists()
            || ok(Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                PHOENIX,
            ])));
    if installed {
        return Some(python);
    }
    assert!(!required(), "Phoenix ({PHOENIX}) could not be installed");
    eprintln!("skipped: Phoenix ({PHOENIX}) could not be installed");
    None
}

/// A `phoenix serve` of this test's own.
struct Phoenix {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Phoenix {
    /// Starts Phoenix on `port` with its data in `dir`, offline.
    fn start(python: &Path, port: u16, dir: &Path) -> Phoenix {
        let log = dir.join("phoenix.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(python.with_file_name("phoenix"))
            .arg("serve")
            .env("HOME", dir)
            .env("PHOENIX_WORKING_DIR", dir)
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", "0")
            .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env("PHOENIX_LOG_MIGRATIONS", "false")
            .env("PHOENIX_DISABLE_AGENT_ASSISTANT", "true")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("phoenix serve starts");
        Phoenix {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    /// Waits until Phoenix answers (it imports for ~15 s).
    fn wait_ready(&mut self) {
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(240) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("phoenix exited ({status}): {}", self.said());
            }
            if ureq::get(&format!("{}/healthz", self.url)).call().is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("phoenix did not answer in 240 s: {}", self.said());
    }

    fn said(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.chars()
            .rev()
            .take(3000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect()
    }

    /// Every span of `project`, read back through Phoenix's client.
    fn spans(&self, python: &Path, project: &str) -> Vec<Value> {
        let script = common::root().join("crates/ctxlog-cli/tests/otel/readback.py");
        let out = Command::new(python)
            .arg(&script)
            .args(["spans", &self.url, project])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
    }

    /// The spans of `project` once `done` says they are all there (Phoenix
    /// inserts in the background).
    fn wait_spans(
        &self,
        python: &Path,
        project: &str,
        done: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let began = Instant::now();
        loop {
            let spans = self.spans(python, project);
            if done(&spans) {
                return spans;
            }
            assert!(
                began.elapsed() < Duration::from_secs(90),
                "{project}: {} spans after 90 s: {}",
                spans.len(),
                self.said()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// `ctxlog` on `db` with no `OTEL_*` variable of the caller's, and the
/// Phoenix project named.
fn ctxlog_otel(db: &Path, args: &[&str], project: &str) -> Command {
    let mut c = common::ctxlog_on(db, args);
    for (k, _) in std::env::vars() {
        if k.starts_with("OTEL_") {
            c.env_remove(k);
        }
    }
    c.env(
        "OTEL_RESOURCE_ATTRIBUTES",
        format!("openinference.project.name={project}"),
    );
    c
}

/// The spans `ctxlog otel export` says it sent.
fn sent(out: &Output) -> usize {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let n = err
        .split('(')
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok());
    n.unwrap_or_else(|| panic!("no span count in {err}"))
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

fn op(span: &Value) -> &str {
    attr(span, "gen_ai.operation.name").as_str().unwrap_or("")
}

/// Every recording the test exports: the fixtures of the four agents and
/// the shared recordings when they are there.
fn recordings() -> Vec<PathBuf> {
    let root = common::root();
    let mut out: Vec<PathBuf> = ["claude-code", "codex", "opencode", "pi"]
        .iter()
        .map(|a| root.join("fixtures/sessions").join(a))
        .collect();
    let shared = root.join("../shared/sessions");
    if shared.is_dir() {
        for a in ["claude-code", "codex", "pi"] {
            out.push(shared.join(a));
        }
    } else {
        eprintln!("../shared/sessions is absent: only the fixtures are exported");
    }
    out
}

/// What ctxlog says of each session, by trace id (the session id in hex):
/// its recording id, model calls, usage and tool call ids, compaction
/// reasons.
struct Expected {
    source: String,
    calls: u64,
    usage: Value,
    tool_calls: BTreeMap<String, usize>,
    compactions: Vec<String>,
}

fn expected(db: &Path) -> BTreeMap<String, Expected> {
    let sessions = common::json_at(db, &["sessions"]);
    let usage = common::json_at(db, &["usage", "--by", "session"]);
    let mut out = BTreeMap::new();
    for row in sessions["sessions"].as_array().unwrap() {
        let id = row["session"].as_str().unwrap();
        let source = row["source_session"].as_str().unwrap().to_owned();
        let groups = usage["groups"].as_array().unwrap();
        let g = groups
            .iter()
            .find(|g| g["key"] == source.as_str())
            .unwrap()
            .clone();
        let calls = g["steps"].as_u64().unwrap() + g["compactions"].as_u64().unwrap();
        let export: Value = serde_json::from_slice(&common::succeeds(db, &["export", id])).unwrap();
        let mut tool_calls = BTreeMap::new();
        for m in export["messages"].as_array().unwrap() {
            for p in m["parts"].as_array().unwrap() {
                if p["type"] == "tool" {
                    *tool_calls
                        .entry(p["callID"].as_str().unwrap().to_owned())
                        .or_insert(0) += 1;
                }
            }
        }
        let audit = common::json_at(db, &["audit", id]);
        let compactions = audit["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "compaction_requested")
            .map(|e| e["what"].as_str().unwrap().to_owned())
            .collect();
        let e = Expected {
            source,
            calls,
            usage: g,
            tool_calls,
            compactions,
        };
        out.insert(id.replace('-', ""), e);
    }
    out
}

/// Phoenix's spans of the recordings hold what ctxlog says of them.
fn check_recordings(spans: &[Value], want: &BTreeMap<String, Expected>) {
    let mut by_trace: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for s in spans {
        by_trace
            .entry(s["context"]["trace_id"].as_str().unwrap())
            .or_default()
            .push(s);
    }
    let traces: BTreeSet<&str> = by_trace.keys().copied().collect();
    let sessions: BTreeSet<&str> = want.keys().map(String::as_str).collect();
    assert_eq!(traces, sessions, "one trace per session");
    for (trace, spans) in &by_trace {
        let w = &want[*trace];
        let who = &w.source;
        let ids: BTreeSet<&str> = spans
            .iter()
            .map(|s| s["context"]["span_id"].as_str().unwrap())
            .collect();
        for s in spans {
            if let Some(parent) = s["parent_id"].as_str() {
                assert!(
                    ids.contains(parent),
                    "{who}: {} has no parent in the trace",
                    s["name"]
                );
            }
        }
        let chats: Vec<&&Value> = spans.iter().filter(|s| op(s) == "chat").collect();
        assert_eq!(
            chats.len() as u64,
            w.calls,
            "{who}: chat spans = model calls"
        );
        let sum = |key: &str| -> u64 { chats.iter().map(|s| attr(s, key).as_u64().unwrap()).sum() };
        let u = |k: &str| w.usage[k].as_u64().unwrap();
        assert_eq!(
            sum("gen_ai.usage.input_tokens"),
            u("input") + u("cache_read") + u("cache_write"),
            "{who}"
        );
        assert_eq!(
            sum("gen_ai.usage.output_tokens"),
            u("output") + u("reasoning"),
            "{who}"
        );
        assert_eq!(
            sum("gen_ai.usage.cache_read.input_tokens"),
            u("cache_read"),
            "{who}"
        );
        assert_eq!(
            sum("gen_ai.usage.cache_write.input_tokens"),
            u("cache_write"),
            "{who}"
        );
        let mut tools = BTreeMap::new();
        for s in spans.iter().filter(|s| op(s) == "execute_tool") {
            let id = attr(s, "gen_ai.tool.call.id").as_str().unwrap().to_owned();
            *tools.entry(id).or_insert(0) += 1;
        }
        assert_eq!(tools, w.tool_calls, "{who}: execute_tool spans by call id");
        let mut reasons: Vec<String> = spans
            .iter()
            .flat_map(|s| s["events"].as_array().unwrap())
            .filter(|e| e["name"] == "ctxlog.compaction_requested")
            .map(|e| e["attributes"]["ctxlog.what"].as_str().unwrap().to_owned())
            .collect();
        reasons.sort();
        let mut want_reasons = w.compactions.clone();
        want_reasons.sort();
        assert_eq!(
            reasons, want_reasons,
            "{who}: every compaction with its reason"
        );
        for s in spans.iter().filter(|s| op(s) == "invoke_agent") {
            assert_eq!(attr(s, "gen_ai.conversation.id"), who.as_str());
        }
    }
}

#[test]
fn phoenix_shows_every_session_as_ctxlog_counts_it_and_follows_a_live_one() {
    let Some(python) = phoenix_python() else {
        return;
    };
    let dir = ctxlog_testkit::TempDir::created("otel-phoenix");
    let (db, live_db) = (dir.join("store"), dir.join("live"));
    for r in recordings() {
        common::succeeds(&db, &["import", r.to_str().unwrap()]);
    }
    // The live store: the first turns of a pi session, followed before
    // Phoenix is up (its requests are refused until then).
    let full = common::pi_recording(8, 6);
    let lines: Vec<&str> = full.lines().collect();
    let growing = dir.join("growing.jsonl");
    std::fs::write(&growing, lines[..1 + 4 * 3].join("\n") + "\n").unwrap();
    common::succeeds(&live_db, &["import", growing.to_str().unwrap()]);
    let port = free_port();
    let endpoint = format!("http://127.0.0.1:{port}/v1/traces");
    let follow = ctxlog_otel(
        &live_db,
        &["otel", "export", "--follow", "--idle", "1"],
        "live",
    )
    .args(["--endpoint", &endpoint])
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(dir.join("follow.log")).unwrap())
    .spawn()
    .unwrap();
    let follow = Killed(follow);
    let phoenix_dir = dir.join("phoenix");
    std::fs::create_dir_all(&phoenix_dir).unwrap();
    let mut phoenix = Phoenix::start(&python, port, &phoenix_dir);
    phoenix.wait_ready();

    let out = ctxlog_otel(
        &db,
        &["otel", "export", "--endpoint", &endpoint],
        "recordings",
    )
    .output()
    .unwrap();
    let n = sent(&out);
    let spans = phoenix.wait_spans(&python, "recordings", |s| s.len() >= n);
    assert_eq!(spans.len(), n, "Phoenix holds every span sent");
    check_recordings(&spans, &expected(&db));

    // Again, gzipped: the same spans, nothing added.
    let again = ctxlog_otel(
        &db,
        &["otel", "export", "--endpoint", &endpoint],
        "recordings",
    )
    .env("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    .output()
    .unwrap();
    assert_eq!(sent(&again), n);
    std::thread::sleep(Duration::from_secs(3));
    let after = phoenix.spans(&python, "recordings");
    let ids = |s: &[Value]| -> BTreeSet<String> {
        s.iter()
            .map(|s| s["context"]["span_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&after), ids(&spans), "a second export adds nothing");

    // The OTLP JSON file parses as the protobuf request, span for span.
    let file = dir.join("traces.jsonl");
    let out = ctxlog_otel(
        &db,
        &["otel", "export", "--file", file.to_str().unwrap()],
        "recordings",
    )
    .output()
    .unwrap();
    assert_eq!(sent(&out), n);
    let script = common::root().join("crates/ctxlog-cli/tests/otel/readback.py");
    let valid = Command::new(&python)
        .arg(&script)
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        valid.status.success(),
        "{}",
        String::from_utf8_lossy(&valid.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&valid.stdout).trim(), n.to_string());

    // Phoenix takes protobuf only: a JSON body is refused for good, and said.
    let refused = ctxlog_otel(
        &db,
        &["otel", "export", "--endpoint", &endpoint],
        "recordings",
    )
    .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("refused the spans: HTTP 415"), "{err}");

    // The follow delivered once Phoenix came up, and sends new steps.
    let chats = |s: &[Value]| s.iter().filter(|s| op(s) == "chat").count();
    let turns = |s: &[Value]| s.iter().filter(|s| op(s) == "invoke_agent").count();
    phoenix.wait_spans(&python, "live", |s| chats(s) == 6 && turns(s) == 3);
    std::fs::write(&growing, &full).unwrap();
    common::succeeds(&live_db, &["import", growing.to_str().unwrap()]);
    let live = phoenix.wait_spans(&python, "live", |s| chats(s) == 12 && turns(s) == 6);
    let tools: BTreeSet<&str> = live
        .iter()
        .filter(|s| op(s) == "execute_tool")
        .map(|s| attr(s, "gen_ai.tool.call.id").as_str().unwrap())
        .collect();
    assert_eq!(tools.len(), 6, "{tools:?}");
    drop(follow);
    hooked(&python, &phoenix, dir.path(), &endpoint);
    let said = std::fs::read_to_string(dir.join("follow.log")).unwrap();
    assert!(
        said.contains("trying again"),
        "the follow said it retried: {said}"
    );
}

/// Calls `ctxlog hook pi` for the pi session of `file` at `event`, with the
/// export on, and waits for its detached import and export to end.
fn hook(db: &Path, dir: &Path, file: &Path, event: &str, endpoint: &str) {
    use std::io::Write;
    let mut payload = serde_json::json!({
        "session_id": "5e1f0c2a-9b8d-4e7f-a6c5-000000000009",
        "transcript_path": file,
        "cwd": "/home/dev/p9",
        "hook_event_name": event,
    });
    if event == "session_shutdown" {
        payload["reason"] = "quit".into();
    }
    let data = dir.join("data");
    let mut child = ctxlog_otel(db, &["hook", "pi", "--budget", "60000"], "hooked")
        .env("XDG_DATA_HOME", &data)
        .env("CTXLOG_OTEL_EXPORT", "1")
        .env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(payload.to_string().as_bytes()).unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// The hooks of a pi session that grows: each call sends what it made
/// final, the session's end the rest, and the hooks' log says so.
fn hooked(python: &Path, phoenix: &Phoenix, dir: &Path, endpoint: &str) {
    let db = dir.join("hooked");
    let full = common::pi_recording(9, 4);
    let lines: Vec<&str> = full.lines().collect();
    let file = dir.join("hooked.jsonl");
    let count = |s: &[Value], what: &str| s.iter().filter(|s| op(s) == what).count();
    std::fs::write(&file, lines[..1 + 4 * 2].join("\n") + "\n").unwrap();
    hook(&db, dir, &file, "turn_end", endpoint);
    // Two turns stored: the first is over (the second began), the second
    // goes on; each's calls and tool calls are over.
    phoenix.wait_spans(python, "hooked", |s| {
        count(s, "invoke_agent") == 1 && count(s, "chat") == 4 && count(s, "execute_tool") == 2
    });
    std::fs::write(&file, &full).unwrap();
    hook(&db, dir, &file, "turn_end", endpoint);
    phoenix.wait_spans(python, "hooked", |s| {
        count(s, "invoke_agent") == 3 && count(s, "chat") == 8 && count(s, "execute_tool") == 4
    });
    hook(&db, dir, &file, "session_shutdown", endpoint);
    let spans = phoenix.wait_spans(python, "hooked", |s| count(s, "invoke_agent") == 4);
    assert_eq!(count(&spans, "chat"), 8, "nothing sent twice");
    let log = std::fs::read_to_string(dir.join("data/ctxlog-hooks/log.jsonl")).unwrap();
    assert!(log.contains("\"otel\":\"sent 1 span to"), "{log}");
}
