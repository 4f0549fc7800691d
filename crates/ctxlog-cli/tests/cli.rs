//! End-to-end tests of the `ctxlog` binary: the Quick start's demo, the
//! cross-process digest, and bad input (named, exit 2).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ctxlog-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn demo_imports_audits_and_simulates_the_embedded_fixture_deterministically() {
    let a = common::run(&["demo", "--json"]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let b = common::run(&["--json", "demo"]);
    assert_eq!(a.stdout, b.stdout, "byte-identical across processes");
    let a = common::json_of(&a);
    assert_eq!(a["import"]["format"], "opencode");
    assert_eq!(
        a["import"]["source_session"],
        "ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v"
    );
    let kinds: Vec<&str> = a["audit"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "parts_pruned",
            "compaction_requested",
            "compaction_started",
            "summary_completed",
            "continue"
        ]
    );
    let decisions: Vec<&str> = a["simulation"]["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    // The recording's own continue message is left out (the simulation
    // decides its own), so the turn after the compaction ends with a prune.
    assert_eq!(
        decisions,
        ["prune", "compaction", "summary", "continue", "prune"]
    );
    // the human output names the same digest and prints the audit table
    let human = common::run(&["demo"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains(a["digest"].as_str().unwrap()), "{text}");
    assert!(
        text.contains("SEQ") && text.contains("compaction_requested"),
        "{text}"
    );
}

#[test]
fn generate_runs_the_lifecycle_and_is_deterministic_across_processes() {
    let a = common::run(&["generate", "--json"]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let b = common::run(&["--json", "generate"]);
    let (a, b) = (common::json_of(&a), common::json_of(&b));
    assert_eq!(a["digest"], b["digest"]);
    assert_eq!(a["digest"].as_str().unwrap().len(), 64);
    assert!(a["compactions"]["completed"].as_u64().unwrap() >= 1, "{a}");
    let kinds: Vec<&str> = a["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"parts_pruned"), "{kinds:?}");
    assert!(kinds.contains(&"summary_completed"), "{kinds:?}");
    // the human output names the same digest
    let human = common::run(&["generate"]);
    assert!(String::from_utf8_lossy(&human.stdout).contains(a["digest"].as_str().unwrap()));
}

#[test]
fn replaying_written_events_gives_the_demo_digest() {
    let file = tmp("events.jsonl");
    let demo = common::run(&[
        "generate",
        "--json",
        "--seed",
        "11",
        "--policy",
        "opencode-1.17",
        "--events-out",
        file.to_str().unwrap(),
    ]);
    assert!(demo.status.success());
    let replay = common::run(&["replay-events", "--json", file.to_str().unwrap()]);
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    assert_eq!(
        common::json_of(&demo)["digest"],
        common::json_of(&replay)["digest"]
    );
    assert_eq!(common::json_of(&replay)["policy"], "opencode-1.17");
}

#[test]
fn bad_input_is_named_and_exits_2() {
    let file = tmp("bad.jsonl");
    let demo = common::run(&["generate", "--events-out", file.to_str().unwrap()]);
    assert!(demo.status.success());
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();

    // a sequence gap: drop line 5
    lines.remove(4);
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = common::run(&["replay-events", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.jsonl:5") && err.contains("sequence gap: expected seq 5, got 6"),
        "{err}"
    );

    // malformed JSON on line 3
    let mut broken: Vec<String> = text.lines().map(String::from).collect();
    broken[2].truncate(20);
    std::fs::write(&file, broken.join("\n")).unwrap();
    let out = common::run(&["--json", "replay-events", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(common::json_of(&out)["ok"], false);
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.jsonl:3: not an event"));

    // unknown preset, missing file, bad policy file
    assert_eq!(
        common::run(&["generate", "--policy", "nope"]).status.code(),
        Some(2)
    );
    assert_eq!(
        common::run(&["replay-events", "/nonexistent/x.jsonl"])
            .status
            .code(),
        Some(2)
    );
    let policy = tmp("policy.json");
    std::fs::write(&policy, "{\"name\": 3}").unwrap();
    let out = common::run(&["generate", "--policy-file", policy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("policy.json: not a policy"));
    // usage errors are exit 2 too
    assert_eq!(common::run(&["no-such-command"]).status.code(), Some(2));
}

#[test]
fn presets_round_trip_as_policy_files() {
    let out = common::run(&["presets"]);
    let presets = common::json_of(&out);
    let seed = &presets[0];
    assert_eq!(seed["name"], "opencode-seed");
    assert_eq!(seed["prune_protect"], 40_000);
    // a preset edited and fed back as a policy file is used
    let mut custom = seed.clone();
    custom["name"] = "tight".into();
    custom["prune_protect"] = 5_000.into();
    custom["prune_minimum"] = 1_000.into();
    let file = tmp("tight.json");
    std::fs::write(&file, custom.to_string()).unwrap();
    let out = common::run(&[
        "generate",
        "--json",
        "--policy-file",
        file.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = common::json_of(&out);
    assert_eq!(doc["policy"], "tight");
    assert!(doc["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["what"].as_str().unwrap().contains("policy tight")));
}

#[test]
fn stress_then_verify_report_the_same_heads_with_db_before_or_after_the_command() {
    let db = tmp("stress-db");
    let _ = std::fs::remove_dir_all(&db);
    let out = common::run(&[
        "--db",
        db.to_str().unwrap(),
        "stress",
        "--sessions",
        "3",
        "--events",
        "25",
        "--batch",
        "4",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut last: std::collections::BTreeMap<String, u64> = Default::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!((f.len(), f[0]), (3, "ACK"), "{line}");
        last.insert(f[1].to_owned(), f[2].parse().unwrap());
    }
    assert_eq!(
        text.lines().count(),
        3 * 7,
        "25 events in batches of 4 is 7 appends per session"
    );
    assert!(last.values().all(|&q| q == 25));
    let out = common::run(&["verify", "--json", "--db", db.to_str().unwrap()]);
    assert!(out.status.success());
    let report = common::json_of(&out);
    assert_eq!(report["ok"], true);
    assert_eq!(report["sessions"], 3);
    assert_eq!(report["events"], 75);
    assert_eq!(report["errors"].as_array().unwrap().len(), 0);
    for (session, seq) in &last {
        assert_eq!(
            report["heads"][session], *seq,
            "verify names sessions as the ACK lines do"
        );
    }
    // damage one record: verify says where and exits 1. The value under
    // seq 1 of a session holds the records of its first append (4 here):
    // one of them, never the head (whose loss the witness reports too).
    let damaged: (String, u64);
    {
        let store_db = sled::open(&db).unwrap();
        let events = store_db.open_tree("events").unwrap();
        let session = uuid::Uuid::parse_str(last.keys().next().unwrap()).unwrap();
        let mut k = session.as_bytes().to_vec();
        k.extend_from_slice(&1u64.to_be_bytes());
        let v = events.get(&k).unwrap().unwrap();
        assert_eq!(v[0], 2, "the first append's 4 records are packed");
        let mut v = v.to_vec();
        let n = v.len();
        v[n / 2] ^= 0xff;
        events.insert(&k, v).unwrap();
        store_db.flush().unwrap();
        damaged = (
            uuid::Uuid::from_slice(&k[..16]).unwrap().to_string(),
            u64::from_be_bytes(k[16..24].try_into().unwrap()),
        );
    }
    let out = common::run(&["--json", "verify", "--db", db.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let report = common::json_of(&out);
    assert_eq!(report["ok"], false);
    assert_eq!(report["errors"].as_array().unwrap().len(), 1, "{report}");
    let err = &report["errors"][0];
    assert_eq!(err["session"], damaged.0, "{err}");
    let seq = err["seq"].as_u64().unwrap();
    assert!((damaged.1..damaged.1 + 4).contains(&seq), "{err}");
    let human = common::run(&["verify", "--db", db.to_str().unwrap()]);
    assert_eq!(human.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&human.stdout).contains("NOT OK"));
    // a path that is not a store is bad input (exit 2)
    std::fs::write(tmp("not-a-dir"), "x").unwrap();
    assert_eq!(
        common::run(&["verify", "--db", tmp("not-a-dir").to_str().unwrap()])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        common::run(&["stress", "--events", "0", "--db", db.to_str().unwrap()])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn window_audit_and_compact_on_a_stored_session() {
    let db = tmp("engine-db");
    let _ = std::fs::remove_dir_all(&db);
    let d = db.to_str().unwrap();
    let out = common::run(&[
        "stress",
        "--db",
        d,
        "--sessions",
        "1",
        "--events",
        "600",
        "--batch",
        "50",
        "--seed",
        "11",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let session = text
        .lines()
        .last()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .to_owned();

    // the window, exactly, as JSON
    let w = common::json_of(&common::run(&["window", &session, "--json", "--db", d]));
    let messages = w["messages"].as_array().unwrap();
    assert!(!messages.is_empty());
    for m in messages {
        assert!(m["role"] == "user" || m["role"] == "assistant", "{m}");
        assert!(!m["parts"].as_array().unwrap().is_empty());
    }
    // the audit names what the simulated agent did to its context
    let a = common::json_of(&common::run(&["audit", &session, "--json", "--db", d]));
    let entries = a["entries"].as_array().unwrap();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    // (the simulated session is random: it may or may not have compacted yet)
    assert!(kinds.iter().all(|k| !k.is_empty()));
    for e in entries {
        assert!(
            e["seq"].as_u64().unwrap() >= 1 && e["policy"] == "opencode-seed",
            "{e}"
        );
    }
    // a window in the past differs from the head's once the session has moved on
    let early = common::json_of(&common::run(&[
        "window", &session, "--at", "3", "--json", "--db", d,
    ]));
    assert!(early["messages"].as_array().unwrap().len() <= 1);
    assert_eq!(
        common::run(&["window", &session, "--at", "100000", "--db", d])
            .status
            .code(),
        Some(2)
    );

    // manual compaction: the window becomes the pivot, the audit shows it, no continue
    let c = common::run(&["compact", &session, "--json", "--db", d]);
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    let c = common::json_of(&c);
    assert_eq!(c["ok"], true);
    let w = common::json_of(&common::run(&["window", &session, "--json", "--db", d]));
    let msgs = w["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "{w}");
    assert_eq!(msgs[0]["parts"][0]["text"], "What did we do so far?");
    assert!(msgs[1]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Summary of the conversation so far"));
    assert_eq!(w["pivot"], c["job"]);
    let a = common::json_of(&common::run(&["audit", &session, "--json", "--db", d]));
    let kinds: Vec<&str> = a["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    let from = kinds
        .iter()
        .rposition(|k| *k == "compaction_requested")
        .unwrap();
    let tail = &kinds[from..];
    // requested, started, one attempt per request strategy tried, completed
    assert_eq!(
        tail[..2],
        ["compaction_requested", "compaction_started"],
        "{tail:?}"
    );
    assert_eq!(tail.last(), Some(&"summary_completed"), "{tail:?}");
    assert!(
        tail.len() >= 4
            && tail[2..tail.len() - 1]
                .iter()
                .all(|k| *k == "compaction_attempted"),
        "{tail:?}"
    );
    // the store still verifies
    assert!(common::run(&["verify", "--db", d]).status.success());
    // bad session ids are bad input
    assert_eq!(
        common::run(&["window", "not-a-uuid", "--db", d])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        common::run(&["audit", "00000000-0000-0000-0000-000000000000", "--db", d])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn compact_with_the_openai_summarizer_calls_the_configured_endpoint() {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let (mut len, mut path) = (0usize, String::new());
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if path.is_empty() {
                path = line.clone();
            }
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let answer = r#"{"choices":[{"message":{"content":"Remote summary."},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":3}}"#;
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
            answer.len()
        )
        .unwrap();
        (path, String::from_utf8(body).unwrap())
    });
    let db = tmp("openai-db");
    let _ = std::fs::remove_dir_all(&db);
    let d = db.to_str().unwrap();
    let out = common::run(&[
        "stress",
        "--db",
        d,
        "--sessions",
        "1",
        "--events",
        "40",
        "--seed",
        "12",
    ]);
    let session = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .to_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .args([
            "compact",
            &session,
            "--summarizer",
            "openai",
            "--json",
            "--db",
            d,
        ])
        .env("OPENAI_BASE_URL", &url)
        .env("CTXLOG_COMPACTION_MODEL", "local-model")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (path, body) = server.join().unwrap();
    assert!(path.starts_with("POST /v1/chat/completions "), "{path}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["model"], "local-model");
    assert!(body.get("tools").is_none());
    let w = common::json_of(&common::run(&["window", &session, "--json", "--db", d]));
    assert_eq!(w["messages"][1]["parts"][0]["text"], "Remote summary.");
}

/// A crash between the start and the completion of a compaction: the child
/// is killed with SIGKILL while its summarizer waits on the endpoint; the
/// job is found running on reopen and completes exactly once.
#[test]
fn a_compaction_cut_off_by_sigkill_runs_again_and_completes_once() {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (got_tx, got_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        got_tx.send(()).unwrap();
        // never answer: hold the connection until the child is killed
        std::thread::sleep(std::time::Duration::from_secs(30));
    });
    let db = tmp("crash-db");
    let _ = std::fs::remove_dir_all(&db);
    let d = db.to_str().unwrap();
    let out = common::run(&[
        "stress",
        "--db",
        d,
        "--sessions",
        "1",
        "--events",
        "60",
        "--seed",
        "13",
    ]);
    let session = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .to_owned();
    let before = common::json_of(&common::run(&["audit", &session, "--json", "--db", d]))
        ["entries"]
        .as_array()
        .unwrap()
        .len();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .args(["compact", &session, "--summarizer", "openai", "--db", d])
        .env("OPENAI_BASE_URL", &url)
        .spawn()
        .unwrap();
    got_rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the summarizer called the endpoint");
    child.kill().unwrap(); // SIGKILL, between start and completion
    child.wait().unwrap();
    assert!(common::run(&["verify", "--db", d]).status.success());
    let a = common::json_of(&common::run(&["audit", &session, "--json", "--db", d]));
    let entries = &a["entries"].as_array().unwrap()[before..];
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "compaction_requested",
            "compaction_started",
            "compaction_attempted"
        ],
        "started, never completed"
    );
    let job = entries[0]["ids"][0].as_str().unwrap().to_owned();
    // reopen: the same job runs again and completes
    let c = common::json_of(&common::run(&["compact", &session, "--json", "--db", d]));
    assert_eq!(c["job"], job.as_str());
    let a = common::json_of(&common::run(&["audit", &session, "--json", "--db", d]));
    let completed: Vec<&serde_json::Value> = a["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "summary_completed")
        .collect();
    assert_eq!(
        completed
            .iter()
            .filter(|e| e["ids"][0] == job.as_str())
            .count(),
        1
    );
    let w = common::json_of(&common::run(&["window", &session, "--json", "--db", d]));
    assert_eq!(w["pivot"], job.as_str());
    // a completed job never runs twice: the next compact is a new job
    let c2 = common::json_of(&common::run(&["compact", &session, "--json", "--db", d]));
    assert_ne!(c2["job"], job.as_str());
}

#[test]
fn import_a_real_claude_code_session_once_and_refuse_bad_input_without_writing() {
    let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/sessions/claude-code/full-session.jsonl");
    if !real.exists() {
        eprintln!("skipping: ../shared/sessions is absent");
        return;
    }
    let db = tmp("import-db");
    let _ = std::fs::remove_dir_all(&db);
    let d = db.to_str().unwrap();
    let first = common::run(&["import", real.to_str().unwrap(), "--json", "--db", d]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let first = common::json_of(&first);
    assert_eq!(first["format"], "claude-code");
    assert_eq!(
        first["source_session"],
        "cfa1e878-62b5-4e40-b281-bbf9b250d766"
    );
    assert_eq!(
        (
            first["tool_calls"].as_u64(),
            first["already_imported"].as_bool()
        ),
        (Some(23), Some(false))
    );
    // a second import is deduplicated: same session, nothing added
    let again = common::json_of(&common::run(&[
        "--json",
        "import",
        real.to_str().unwrap(),
        "--format",
        "claude-code",
        "--db",
        d,
    ]));
    assert_eq!(again["session"], first["session"]);
    assert_eq!(again["already_imported"], true);
    // The store holds the session's events, and in its description stream
    // its description, the stop reason of each of its 9 finished steps (the
    // tenth waits for a tool result) and the mark of an import in more than
    // one append (its events, then its descriptions).
    let v = common::json_of(&common::run(&["verify", "--json", "--db", d]));
    assert_eq!(first["steps"], 10);
    assert_eq!(v["events"], first["events"].as_u64().unwrap() + 1 + 9 + 1);
    assert_eq!(v["sessions"], 1);
    // the imported session has a window and an audit
    let session = first["session"].as_str().unwrap();
    let w = common::json_of(&common::run(&["window", session, "--json", "--db", d]));
    assert!(!w["messages"].as_array().unwrap().is_empty());
    // truncated JSON: exit 2, file and line named, nothing written
    let bad = tmp("bad-claude.jsonl");
    let text = std::fs::read_to_string(&real).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let cut = &lines[5][..lines[5].len() / 2];
    lines[5] = cut;
    std::fs::write(&bad, lines.join("\n").replace("cfa1e878", "dfa1e878")).unwrap();
    let out = common::run(&["import", bad.to_str().unwrap(), "--db", d]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad-claude.jsonl:6: not JSON"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = common::json_of(&common::run(&["verify", "--json", "--db", d]));
    assert_eq!(v["sessions"], 1, "nothing of the bad file was stored");
}

/// A bench that stops making progress ends with exit 3 and names its stage,
/// instead of running forever (here: a limit of 0 s, and no `gdb` on the
/// path, so no stacks).
#[test]
fn a_stalled_bench_names_its_stage_and_ends() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stalled-bench");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .args(["bench", "--quick"])
        .env("CTXLOG_BENCH_STALL_SECS", "0")
        .env("PATH", "")
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("stage 1 of 15 made no progress in 0s"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A read-only command on a path that is not a store exits 2 naming it,
/// and creates nothing.
#[test]
fn read_only_commands_on_a_missing_store_create_nothing() {
    let missing = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-such-store/deeper");
    let _ = std::fs::remove_dir_all(missing.parent().unwrap());
    for args in [
        vec!["sessions"],
        vec!["verify"],
        vec!["replay", "x"],
        vec!["window", "x"],
        vec!["audit", "x"],
        vec!["export", "x"],
        vec!["compact", "x"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
            .arg("--db")
            .arg(&missing)
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("no store yet") && err.contains("ctxlog import --discover"),
            "{args:?}: {err}"
        );
        assert!(
            !missing.parent().unwrap().exists(),
            "{args:?} created the path"
        );
    }
}

/// A store its reader cannot write (here: its owner's, `nobody`, with
/// every write permission taken away) is read through a copy: sessions and
/// verify work, and the store is left as it was. Needs root and
/// `runuser`; skipped otherwise.
#[test]
fn a_store_that_cannot_be_written_is_still_read_and_verified() {
    let runuser = std::path::Path::new("/usr/sbin/runuser");
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false);
    if !root || !runuser.exists() {
        eprintln!("SKIPPED: needs root and runuser to read as another user");
        return;
    }
    let dir = PathBuf::from("/tmp").join(format!("ctxlog-ro-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sessions/opencode/compacted-and-pruned.json");
    let d = dir.to_str().unwrap();
    assert!(
        common::run(&["--db", d, "import", fixture.to_str().unwrap()])
            .status
            .success()
    );
    let before: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| (e.path(), std::fs::read(e.path()).unwrap()))
        .collect();
    // The store is nobody's, which may read it (and run a copy of the
    // binary beside it); none but root may write it.
    let bin = dir.with_extension("bin");
    std::fs::copy(env!("CARGO_BIN_EXE_ctxlog"), &bin).unwrap();
    let _ = Command::new("chown").args(["-R", "nobody", d]).status();
    let _ = Command::new("chmod").args(["-R", "a-w,u+rX", d]).status();
    let _ = Command::new("chmod").arg("a+rx").arg(&bin).status();
    let bin = bin.to_str().unwrap();
    for args in [vec!["verify"], vec!["sessions"]] {
        let out = Command::new(runuser)
            .args(["-u", "nobody", "--", bin, "--db", d])
            .args(&args)
            .output()
            .unwrap();
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{args:?}: {o}{e}");
        assert!(
            e.contains("cannot be written: reading a copy"),
            "{args:?}: {e}"
        );
        if args == ["verify"] {
            assert!(o.contains(d) && o.contains("ok"), "{o}");
        }
    }
    for (path, bytes) in before {
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "{} changed",
            path.display()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(bin);
}

/// Day-two papercuts: a short prefix says how long a prefix must be, a
/// report path that cannot be written is refused before anything is
/// simulated or kept, one recording is "1 recording", and no help shows a
/// Rust path.
#[test]
fn short_prefixes_bad_page_paths_plurals_and_help() {
    let dir = ctxlog_testkit::TempDir::new("cli-papercuts");
    let db = dir.path().display().to_string();
    let recordings = ctxlog_testkit::TempDir::created("cli-papercuts-in");
    let fixture = common::root().join("fixtures/sessions/claude-code/edge-cases.jsonl");
    std::fs::copy(&fixture, recordings.join("a.jsonl")).unwrap();
    let imported = common::run(&["--db", &db, "import", recordings.path().to_str().unwrap()]);
    assert!(imported.status.success());
    let said = String::from_utf8_lossy(&imported.stdout);
    assert!(said.contains("1 recording: 1 imported"), "{said}");

    let short = common::run(&["--db", &db, "timeline", "7f1"]);
    assert_eq!(short.status.code(), Some(2));
    let err = String::from_utf8_lossy(&short.stderr);
    assert!(err.contains("from 4 characters on"), "{err}");

    let before = common::json_of(&common::run(&["--db", &db, "sessions", "--json"]));
    let fixture = fixture.to_str().unwrap();
    let refused = common::run(&[
        "--db",
        &db,
        "simulate",
        fixture,
        "--policy",
        "codex",
        "--keep",
        "--report",
        "/nonexistent/r.html",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("/nonexistent/r.html") && err.contains("nothing was done"),
        "{err}"
    );
    let after = common::json_of(&common::run(&["--db", &db, "sessions", "--json"]));
    assert_eq!(before["sessions"], after["sessions"], "nothing was kept");
    // `report` refuses such a path the same way (it exited 1), and `-` is
    // standard output (it wrote a file named `-`).
    let refused = common::run(&[
        "--db",
        &db,
        "report",
        "ses_0a3f",
        "--out",
        "/nonexistent/r.html",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let to_stdout = common::ctxlog()
        .current_dir(recordings.path())
        .args(["--db", &db, "report", "7f1c2d3e", "--out", "-"])
        .output()
        .unwrap();
    assert!(to_stdout.status.success());
    assert!(String::from_utf8_lossy(&to_stdout.stdout).starts_with("<!doctype html>"));
    assert!(
        !recordings.join("-").exists(),
        "a file named `-` was written"
    );

    let help = common::run(&["--help"]);
    let commands: Vec<String> = String::from_utf8_lossy(&help.stdout)
        .lines()
        .filter_map(|l| {
            l.strip_prefix("  ")?
                .split_whitespace()
                .next()
                .map(str::to_owned)
        })
        .filter(|c| c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '-'))
        .collect();
    assert!(commands.len() > 10, "{commands:?}");
    for c in commands {
        let out = common::run(&[&c, "--help"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !text.contains("ctxlog_") && !text.contains("::"),
            "`{c} --help` shows a Rust path:\n{text}"
        );
    }
}

/// `completions bash` makes bash ask ctxlog what completes a word: stored
/// sessions (they did not complete), preset names and commands, in a real
/// bash; completing on a store that does not exist creates nothing.
#[test]
fn bash_completes_sessions_presets_and_commands() {
    let dir = ctxlog_testkit::TempDir::new("cli-completion");
    let db = dir.path().join("store");
    let fixture = common::root().join("fixtures/sessions/pi/edge-cases.jsonl");
    let d = db.to_str().unwrap();
    assert!(
        common::run(&["--db", d, "import", fixture.to_str().unwrap()])
            .status
            .success()
    );
    let complete = |store: &Path, words: &[&str]| -> Vec<String> {
        let line = words.join(" ");
        let script = format!(
            "source <('{}' completions bash) && COMP_WORDS=({line}) && COMP_CWORD={} && COMP_TYPE=9 && _clap_complete_ctxlog ctxlog '{}' '{}' && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            env!("CARGO_BIN_EXE_ctxlog"),
            words.len() - 1,
            words[words.len() - 1],
            words[words.len() - 2],
        );
        let out = Command::new("bash")
            .args(["-c", &script])
            .env("CTXLOG_DB", store)
            .output()
            .expect("bash runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        complete(&db, &["ctxlog", "timeline", "5e1"]),
        ["5e1f0c2a-9b8d-4e7f-a6c5-b4d3e2f1a0b9"]
    );
    let presets = complete(&db, &["ctxlog", "simulate", "x", "--policy", "codex"]);
    assert!(presets.iter().any(|p| p == "codex-0.169"), "{presets:?}");
    assert_eq!(complete(&db, &["ctxlog", "timel"]), ["timeline"]);
    let missing = dir.path().join("no-store");
    assert!(complete(&missing, &["ctxlog", "timeline", "5e1"]).is_empty());
    assert!(!missing.exists(), "completing made a store");
}
