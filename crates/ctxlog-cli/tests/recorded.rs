//! The commands on recorded sessions, end to end through the binary:
//! import (every format), sessions, replay, export, simulate, their JSON
//! contracts, their error paths and exit codes.

use std::path::PathBuf;
use std::process::{Command, Output};

mod common;

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn fresh(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ctxlog-rec-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_dir_all(&p);
    let _ = std::fs::remove_file(&p);
    p
}

fn fixture(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sessions")
        .join(rel)
        .to_str()
        .unwrap()
        .to_owned()
}

const OPENCODE: &str = "opencode/compacted-and-pruned.json";
const OC_SOURCE: &str = "ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v";

#[test]
fn import_every_format_then_list_replay_and_resolve_source_ids() {
    let db = fresh("import-all");
    let d = db.to_str().unwrap();
    let cases = [
        (OPENCODE, "opencode", OC_SOURCE, (15, 7, 6)),
        (
            "claude-code/edge-cases.jsonl",
            "claude-code",
            "7f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f",
            // its last step's call has no result: that step is stored,
            // open, its end waiting; its isMeta line is a message (Claude
            // Code sends it)
            (12, 4, 4),
        ),
        (
            "codex/edge-cases.jsonl",
            "codex",
            "01997e76-d124-7592-9cac-2ec05abbca08",
            // its last step (a call and its output) is open: stored, with
            // its usage, its end waiting for a later line
            (11, 5, 5),
        ),
        (
            "pi/edge-cases.jsonl",
            "pi",
            "5e1f0c2a-9b8d-4e7f-a6c5-b4d3e2f1a0b9",
            (10, 3, 4),
        ),
    ];
    for (rel, format, source, (messages, tools, steps)) in cases {
        let f = fixture(rel);
        let doc = common::json_of(&ok(common::run(&["import", &f, "--json", "--db", d])));
        for key in [
            "session",
            "format",
            "source_session",
            "messages",
            "tool_calls",
            "steps",
            "events",
        ] {
            assert!(!doc[key].is_null(), "{rel}: {key} missing in {doc}");
        }
        assert_eq!(doc["format"], format, "{rel}");
        assert_eq!(doc["source_session"], source, "{rel}");
        assert_eq!(
            (
                doc["messages"].as_u64(),
                doc["tool_calls"].as_u64(),
                doc["steps"].as_u64()
            ),
            (Some(messages), Some(tools), Some(steps)),
            "{rel}"
        );
        // --format given explicitly, --db before the command: deduplicated
        let again = common::json_of(&ok(common::run(&[
            "--db", d, "--json", "import", &f, "--format", format,
        ])));
        assert_eq!(again["session"], doc["session"]);
        assert_eq!(again["already_imported"], true, "{rel}");
        // replay by ctxlog id and by source id: the same digest
        let session = doc["session"].as_str().unwrap();
        let r1 = common::json_of(&ok(common::run(&["replay", session, "--json", "--db", d])));
        let r2 = common::json_of(&ok(common::run(&["--db", d, "replay", source, "--json"])));
        assert_eq!(r1, r2, "{rel}");
        assert_eq!(r1["events"], doc["events"]);
        assert_eq!(r1["head"], doc["events"]);
        assert_eq!(r1["digest"].as_str().unwrap().len(), 64);
        assert_eq!(
            r1.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["derived", "digest", "events", "head", "ok", "session"]
        );
        // What the replay re-derived agrees with what the import counted.
        assert_eq!(r1["derived"]["messages"], doc["messages"], "{rel}");
        assert_eq!(r1["derived"]["steps"], doc["steps"], "{rel}");
        // window and audit accept the source id too
        ok(common::run(&["window", source, "--db", d]));
        ok(common::run(&["audit", source, "--db", d]));
    }
    let list = common::json_of(&ok(common::run(&["sessions", "--json", "--db", d])));
    let sessions = list["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 4);
    let oc = sessions
        .iter()
        .find(|s| s["source_session"] == OC_SOURCE)
        .unwrap();
    assert_eq!(oc["title"], "Fix failing parser test");
    assert_eq!(
        (oc["compactions"].as_u64(), oc["pruned_parts"].as_u64()),
        (Some(1), Some(1))
    );
    // human table: a header, one row per session within 100 columns, no
    // colour when piped; each row's short id names its session
    let human = common::ctxlog()
        .args(["sessions", "--db", d])
        .env("COLUMNS", "100")
        .output()
        .expect("run ctxlog");
    let human = ok(human);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.starts_with("ID "), "{text}");
    assert_eq!(text.lines().count(), 5, "{text}");
    assert!(!text.contains('\x1b'), "no escape codes when piped");
    assert!(text.contains("Fix failing"), "the title shows: {text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{line:?} is wider than 100");
    }
    // The table's rows are the JSON's, in the same order: each short id
    // names its own row's session.
    for (line, listed) in text.lines().skip(1).zip(sessions) {
        let id = line.split_whitespace().next().unwrap();
        let r = common::json_of(&ok(common::run(&["replay", id, "--json", "--db", d])));
        assert_eq!(r["session"], listed["session"], "{id} names its own row");
    }
    // audit as a table
    let audit = ok(common::run(&["audit", OC_SOURCE, "--db", d]));
    let text = String::from_utf8_lossy(&audit.stdout);
    assert!(
        text.contains("parts_pruned") && text.contains("summary_completed"),
        "{text}"
    );
}

#[test]
fn export_import_export_import_keeps_the_digest() {
    let (a, b, c) = (fresh("rt-a"), fresh("rt-b"), fresh("rt-c"));
    let (e1, e2) = (fresh("rt-1.json"), fresh("rt-2.json"));
    let s = |p: &PathBuf| p.to_str().unwrap().to_owned();
    ok(common::run(&["import", &fixture(OPENCODE), "--db", &s(&a)]));
    ok(common::run(&[
        "export",
        OC_SOURCE,
        "--format",
        "opencode",
        "--out",
        &s(&e1),
        "--db",
        &s(&a),
    ]));
    ok(common::run(&["import", &s(&e1), "--db", &s(&b)]));
    // stdout is the default output
    let out = ok(common::run(&["export", OC_SOURCE, "--db", &s(&b)]));
    std::fs::write(&e2, &out.stdout).unwrap();
    ok(common::run(&["import", &s(&e2), "--db", &s(&c)]));
    let digest = |db: &PathBuf| {
        common::json_of(&ok(common::run(&[
            "replay",
            OC_SOURCE,
            "--json",
            "--db",
            &s(db),
        ])))["digest"]
            .clone()
    };
    assert_eq!(digest(&b), digest(&c));
    assert_eq!(digest(&a), digest(&b));
    assert_eq!(std::fs::read(&e1).unwrap(), out.stdout);
    // the export is an OpenCode export: info + messages
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["info"]["id"], OC_SOURCE);
    assert_eq!(v["messages"].as_array().unwrap().len(), 15);
}

#[test]
fn simulate_prints_the_decisions_contract() {
    let f = fixture(OPENCODE);
    let run = |extra: &[&str]| {
        let mut args = vec!["simulate", f.as_str(), "--json"];
        args.extend_from_slice(extra);
        common::json_of(&ok(common::run(&args)))
    };
    let doc = run(&[
        "--policy",
        "opencode-1.17",
        "--prune",
        "true",
        "--prune-protect",
        "500",
        "--prune-minimum",
        "200",
    ]);
    let d = doc["decisions"].as_array().unwrap();
    assert_eq!(
        d[0],
        serde_json::json!({
            "kind": "prune",
            "after": "msg_f5535e100001Dd1Tk2Nn3Zz4Rr",
            "call_ids": ["toolu_01Nc8cHPow5epgXnpMZT5HN1"],
            "tokens": 1721,
        })
    );
    assert_eq!(d[1]["kind"], "compaction");
    assert_eq!(d[1]["after"], "msg_f553e1c52001Ab3Cd4Ef5Gh6Ij");
    assert_eq!(d[1]["auto"], true);
    assert_eq!(d[1]["count"], 169_012);
    assert_eq!(d[1]["usable"], 168_000);
    assert_eq!(d[2]["kind"], "summary");
    assert_eq!(d[3]["kind"], "continue");
    // The recording's own continue message is left out, so when the last
    // turn ends the seed's walk counts two user turns at the new marker and
    // reaches the outputs before it (upstream's prune-past-a-fresh-pivot).
    assert_eq!(d[4]["kind"], "prune");
    assert_eq!(d.len(), 5, "{doc}");
    // the same run in another process: the same bytes
    assert_eq!(
        doc,
        run(&[
            "--policy",
            "opencode-1.17",
            "--prune",
            "true",
            "--prune-protect",
            "500",
            "--prune-minimum",
            "200"
        ])
    );
    // the seed preset counts input + cache read + output: 159,892 fits 168,000
    assert_eq!(run(&[])["decisions"], serde_json::json!([]));
    // auto off: no compaction; a huge context: none either
    let off = run(&["--policy", "opencode-1.17", "--auto", "false"]);
    assert_eq!(off["decisions"], serde_json::json!([]));
    let big = run(&["--policy", "opencode-1.17", "--context", "1000000"]);
    assert_eq!(big["decisions"], serde_json::json!([]));
    // a small window: the first overflowing step, by its source id
    let small = run(&["--context", "20000", "--output", "4000"]);
    assert_eq!(small["decisions"][0]["kind"], "compaction");
    assert_eq!(small["decisions"][0]["usable"], 16_000);
    // --model swaps the table entry; a step id with no id is line:N (Codex)
    let codex = fixture("codex/edge-cases.jsonl");
    let doc = common::json_of(&ok(common::run(&[
        "simulate",
        &codex,
        "--json",
        "--context",
        "6000",
        "--output",
        "1000",
    ])));
    assert_eq!(doc["decisions"][0]["after"], "line:13");
    assert_eq!(doc["decisions"][0]["count"], 6088);
    // human output: a table
    let human = ok(common::run(&["simulate", &f, "--policy", "opencode-1.17"]));
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("DECISION") && text.contains("compaction"),
        "{text}"
    );
}

#[test]
fn errors_are_named_and_exit_2_for_bad_input_1_for_failures() {
    let db = fresh("errors");
    let d = db.to_str().unwrap();
    let code = |args: &[&str]| common::run(args).status.code();
    let stderr = |args: &[&str]| String::from_utf8_lossy(&common::run(args).stderr).into_owned();
    // missing file, unknown format, truncated JSON (JSONL and OpenCode)
    assert_eq!(code(&["import", "/nonexistent.jsonl", "--db", d]), Some(2));
    let junk = fresh("junk.txt");
    std::fs::write(&junk, "hello\n").unwrap();
    let j = junk.to_str().unwrap();
    assert_eq!(code(&["import", j, "--db", d]), Some(2));
    assert!(stderr(&["import", j, "--db", d]).contains("unknown format"));
    let text = std::fs::read_to_string(fixture("codex/edge-cases.jsonl")).unwrap();
    let cut = fresh("cut.jsonl");
    std::fs::write(&cut, &text[..text.len() - 30]).unwrap();
    let c = cut.to_str().unwrap();
    // A last line cut short is still being written: left for the next
    // import, not an error (a bad line before the last is: see malformed.rs).
    let growing = fresh("errors-growing");
    let err = stderr(&["import", c, "--db", growing.to_str().unwrap()]);
    assert!(err.contains("cut.jsonl: line 30 is unfinished"), "{err}");
    let oc = std::fs::read_to_string(fixture(OPENCODE)).unwrap();
    let cut2 = fresh("cut.json");
    std::fs::write(&cut2, &oc[..oc.len() / 3]).unwrap();
    let c2 = cut2.to_str().unwrap();
    assert_eq!(
        code(&["import", c2, "--db", d, "--format", "opencode"]),
        Some(2)
    );
    let mut v: serde_json::Value = serde_json::from_str(&oc).unwrap();
    v["messages"][1]["parts"][2]["state"]["status"] = "exploded".into();
    let wrong = fresh("wrong.json");
    std::fs::write(&wrong, v.to_string()).unwrap();
    let err = stderr(&["import", wrong.to_str().unwrap(), "--db", d]);
    assert!(err.contains("messages[1].parts[2].state.status"), "{err}");
    // the wrong --format: named, exit 2
    assert_eq!(
        code(&["import", &fixture(OPENCODE), "--format", "codex", "--db", d]),
        Some(2)
    );
    // nothing of all that was written: not even the store
    assert!(!std::path::Path::new(d).join("db").exists());
    assert_eq!(code(&["verify", "--db", d]), Some(2));
    // a different recording with the same session id: refused, nothing written
    ok(common::run(&[
        "import",
        &fixture("pi/edge-cases.jsonl"),
        "--db",
        d,
    ]));
    let pi = std::fs::read_to_string(fixture("pi/edge-cases.jsonl")).unwrap();
    let other = fresh("other-pi.jsonl");
    std::fs::write(&other, pi.replace("Go on, port it.", "Something else.")).unwrap();
    let o = other.to_str().unwrap();
    assert_eq!(code(&["import", o, "--db", d]), Some(2));
    assert!(stderr(&["import", o, "--db", d]).contains("already stored with different events"));
    assert!(stderr(&["import", o, "--db", d]).contains("import it with --replace"));
    // --replace: the edited file is the session's new version; the old one
    // stays readable by its ctxlog id, and the recording's id names the new.
    let listed = |d: &str| {
        common::json_of(&ok(common::run(&["sessions", "--json", "--db", d])))["sessions"].clone()
    };
    let old = listed(d)[0]["session"].as_str().unwrap().to_owned();
    let old_export = ok(common::run(&["export", &old, "--db", d])).stdout;
    let replaced = common::json_of(&ok(common::run(&[
        "import",
        o,
        "--replace",
        "--json",
        "--db",
        d,
    ])));
    assert_eq!(replaced["replaced"], old.as_str(), "{replaced}");
    let new = replaced["session"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    let after = listed(d);
    assert_eq!(after.as_array().unwrap().len(), 2, "{after}");
    let row = |s: &str| {
        after
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["session"] == s)
            .unwrap()
            .clone()
    };
    assert_eq!(row(&old)["replaced_by"], new.as_str());
    assert_eq!(row(&new)["replaced_by"], serde_json::Value::Null);
    let old_export_after = ok(common::run(&["export", &old, "--db", d])).stdout;
    assert_eq!(
        old_export_after, old_export,
        "the old version reads as it was"
    );
    let source = row(&new)["source_session"].as_str().unwrap().to_owned();
    let by_source = common::json_of(&ok(common::run(&["replay", &source, "--json", "--db", d])));
    assert_eq!(by_source["session"], new.as_str(), "{by_source}");
    // Again, with or without --replace: nothing new.
    for flags in [&["--replace"][..], &[]] {
        let again = common::json_of(&ok(common::run(
            &[&["import", o, "--json", "--db", d][..], flags].concat(),
        )));
        assert_eq!(
            (again["session"].as_str(), again["new_events"].as_u64()),
            (Some(new.as_str()), Some(0)),
            "{again}"
        );
    }
    // The original file now differs from the newest version: refused, and
    // --replace stores it as a third.
    let original = fixture("pi/edge-cases.jsonl");
    assert_eq!(code(&["import", &original, "--db", d]), Some(2));
    let third = common::json_of(&ok(common::run(&[
        "import",
        &original,
        "--replace",
        "--json",
        "--db",
        d,
    ])));
    assert_eq!(third["replaced"], new.as_str(), "{third}");
    assert_eq!(listed(d).as_array().unwrap().len(), 3);
    // Standard input cannot be read again as a newer version.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .args(["import", "-", "--replace", "--db", d])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        pi.replace("Go on, port it.", "Yet another.").as_bytes(),
    )
    .unwrap();
    let piped = child.wait_with_output().unwrap();
    assert_eq!(piped.status.code(), Some(2));
    // (Reported in the summary table of a many-input import.)
    assert!(String::from_utf8_lossy(&piped.stdout).contains("standard input cannot be read again"));
    assert_eq!(listed(d).as_array().unwrap().len(), 3, "nothing written");
    // a recording that grew since: only the new events are appended
    let lines: Vec<&str> = pi.lines().collect();
    let grow = fresh("grow.jsonl");
    std::fs::write(&grow, lines[..6].join("\n")).unwrap();
    let g = grow.to_str().unwrap();
    let db2 = fresh("grow-db");
    let d2 = db2.to_str().unwrap();
    let first = common::json_of(&ok(common::run(&["import", g, "--json", "--db", d2])));
    let full = common::json_of(&ok(common::run(&[
        "import",
        &fixture("pi/edge-cases.jsonl"),
        "--json",
        "--db",
        d2,
    ])));
    assert_eq!(first["session"], full["session"]);
    // What happened since, and the session's new description (the model
    // changed at line 7), which stands after them; the first stays.
    assert_eq!(
        full["new_events"].as_u64().unwrap() + first["events"].as_u64().unwrap(),
        full["events"].as_u64().unwrap() + 1
    );
    // unknown sessions
    assert_eq!(code(&["replay", "no-such-session", "--db", d]), Some(2));
    assert_eq!(code(&["export", "no-such-session", "--db", d]), Some(2));
    assert_eq!(code(&["window", "no-such-session", "--db", d]), Some(2));
    // bad options and usage
    assert_eq!(
        code(&["simulate", &fixture(OPENCODE), "--policy", "nope"]),
        Some(2)
    );
    assert_eq!(
        code(&["simulate", &fixture(OPENCODE), "--auto", "maybe"]),
        Some(2)
    );
    assert_eq!(code(&["export"]), Some(2));
    assert_eq!(
        code(&["import", &fixture(OPENCODE), "--format", "word"]),
        Some(2)
    );
    // a path that is not a store: bad input for a read (exit 2); a store
    // that cannot be created there is a failure (exit 1)
    let file_db = fresh("not-a-dir");
    std::fs::write(&file_db, "x").unwrap();
    let f = file_db.to_str().unwrap();
    assert_eq!(code(&["sessions", "--db", f]), Some(2));
    assert_eq!(code(&["import", &fixture(OPENCODE), "--db", f]), Some(1));
    // --json errors are one JSON document too
    let out = common::run(&["replay", "no-such-session", "--json", "--db", d]);
    assert_eq!(common::json_of(&out)["ok"], false);
}

#[test]
fn help_has_an_example_for_every_command() {
    for cmd in [
        "demo",
        "generate",
        "replay-events",
        "presets",
        "stress",
        "verify",
        "import",
        "sessions",
        "replay",
        "export",
        "simulate",
        "window",
        "audit",
        "compact",
        "bench",
    ] {
        let out = ok(common::run(&[cmd, "--help"]));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Example"), "{cmd} --help: {text}");
    }
    let out = ok(common::run(&["--help"]));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("$XDG_DATA_HOME/ctxlog") && help.contains("CTXLOG_DB"),
        "{help}"
    );
}

/// Runs ctxlog with its stdout already closed by the reader (what
/// `ctxlog sessions | head -1` does once `head` has its line).
fn with_closed_stdout(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .args(args)
        .stdout(writer)
        .output()
        .expect("run ctxlog")
}

#[test]
fn a_closed_stdout_ends_quietly_with_exit_0() {
    let db = fresh("closed-stdout");
    let db = db.to_str().unwrap();
    ok(common::run(&["--db", db, "import", &fixture(OPENCODE)]));
    for args in [
        vec!["--db", db, "sessions"],
        vec!["--db", db, "sessions", "--json"],
        vec!["--db", db, "export", "ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v"],
        vec!["--db", db, "audit", "ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v"],
        vec!["demo"],
    ] {
        let out = with_closed_stdout(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// The audit JSON carries the agent's own ids beside ctxlog's: the call id
/// of a pruned tool part, the message ids of a compaction.
#[test]
fn the_audit_names_the_agents_own_ids() {
    let db = fresh("audit-source-ids");
    let d = db.to_str().unwrap();
    ok(common::run(&["import", &fixture(OPENCODE), "--db", d]));
    let a = common::json_of(&ok(common::run(&["audit", OC_SOURCE, "--json", "--db", d])));
    let entries = a["entries"].as_array().unwrap();
    let of = |kind: &str| {
        entries
            .iter()
            .find(|e| e["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {a}"))
    };
    let pruned = of("parts_pruned");
    assert_eq!(
        pruned["source_ids"],
        serde_json::json!(["toolu_01Nc8cHPow5epgXnpMZT5HN1"])
    );
    assert_eq!(
        pruned["ids"].as_array().unwrap().len(),
        pruned["source_ids"].as_array().unwrap().len()
    );
    assert_eq!(
        of("compaction_requested")["source_ids"],
        serde_json::json!(["msg_f553f9a10001Cm1Pa2Ct3Io4N5"])
    );
    assert_eq!(
        of("compaction_started")["source_ids"][1],
        "msg_f553f9a1c001Sm1Ry2Zz3Aa4Bb"
    );
}
