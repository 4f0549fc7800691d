//! Malformed input, generated from real recordings (`../shared/sessions`,
//! skipped with a message when absent) and the OpenCode fixture: every case
//! is refused with exit 2 and a message naming the file, the line (or JSON
//! path) and the field or id, and the store is left as it was. Unusual but
//! valid input (CRLF, no final newline, a last line still being written) is
//! accepted.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

mod common;
use common::ctxlog_at as ctxlog;

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("malformed")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn shared(rel: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/sessions")
        .join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipped: {} is absent", p.display());
        None
    }
}

fn read_lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_lines(p: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(p, text).unwrap();
}

/// The index of the first line `f` accepts.
fn find(lines: &[Value], f: impl Fn(&Value) -> bool) -> usize {
    lines.iter().position(f).expect("a line of that kind")
}

/// One malformed file: its name, its lines, and what the error must say
/// (besides the file): the 1-based line, and words naming the field or id.
struct Case {
    name: String,
    lines: Vec<Value>,
    line: usize,
    says: Vec<String>,
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

/// A store holding one session, and what `verify` says of it.
fn store(d: &Path) -> (PathBuf, Value) {
    let db = d.join("store");
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sessions/opencode/compacted-and-pruned.json");
    let o = ctxlog(&db, &["import", fixture.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (db.clone(), verified(&db))
}

fn verified(db: &Path) -> Value {
    let o = ctxlog(db, &["--json", "verify"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    v["heads"].clone()
}

/// Each case is refused with exit 2, named, and leaves the store as it was.
fn refuse_all(d: &Path, format: &str, cases: Vec<Case>) {
    let (db, before) = store(d);
    for c in cases {
        let file = d.join(format!("{}.jsonl", c.name));
        write_lines(&file, &c.lines);
        let o = ctxlog(&db, &["import", file.to_str().unwrap(), "--format", format]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", c.name);
        let at = format!("{}:{}:", file.display(), c.line);
        assert!(err.contains(&at), "{}: not located at {at}: {err}", c.name);
        for w in &c.says {
            assert!(
                err.contains(w.as_str()),
                "{}: does not say {w:?}: {err}",
                c.name
            );
        }
    }
    assert_eq!(verified(&db), before, "a refused import changed the store");
}

/// Sets `pointer` of line `i` to `value`.
fn with(lines: &[Value], i: usize, pointer: &str, value: Value) -> Vec<Value> {
    let mut out = lines.to_vec();
    *out[i]
        .pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer}")) = value;
    out
}

fn wrong_counts(lines: &[Value], i: usize, pointer: &str, field: &str, name: &str) -> Vec<Case> {
    [
        ("string", json!("12")),
        ("negative", json!(-3)),
        ("float", json!(1.5)),
        ("huge", json!(1e30)),
    ]
    .into_iter()
    .map(|(kind, v)| Case {
        name: format!("{name}-{kind}"),
        lines: with(lines, i, pointer, v),
        line: i + 1,
        says: words(&[field]),
    })
    .collect()
}

#[test]
fn malformed_codex_rollouts_are_refused_by_line_and_field() {
    let Some(p) =
        shared("codex/rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl")
    else {
        return;
    };
    let d = dir("codex");
    let lines = read_lines(&p);
    let usage = find(&lines, |v| {
        v.pointer("/payload/info/last_token_usage")
            .is_some_and(Value::is_object)
    });
    let call = find(&lines, |v| v["payload"]["type"] == "function_call");
    let mut cases = wrong_counts(
        &lines,
        usage,
        "/payload/info/last_token_usage/input_tokens",
        "input_tokens",
        "codex-tokens",
    );
    cases.push(Case {
        name: "codex-usage-string".into(),
        lines: with(&lines, usage, "/payload/info/last_token_usage", json!("x")),
        line: usage + 1,
        says: words(&["last_token_usage"]),
    });
    cases.push(Case {
        name: "codex-window-string".into(),
        lines: with(
            &lines,
            usage,
            "/payload/info/model_context_window",
            json!("big"),
        ),
        line: usage + 1,
        says: words(&["model_context_window"]),
    });
    let mut repeated = lines.clone();
    repeated.insert(call + 1, lines[call].clone());
    let call_id = lines[call]["payload"]["call_id"].as_str().unwrap();
    cases.push(Case {
        name: "codex-repeated-call".into(),
        lines: repeated,
        line: call + 2,
        says: words(&["call_id", call_id, "already made"]),
    });
    let mut second = lines.clone();
    second.insert(
        1,
        with(&lines, 0, "/payload/id", json!("another-session"))[0].clone(),
    );
    cases.push(Case {
        name: "codex-second-meta".into(),
        lines: second,
        line: 2,
        says: words(&["second `session_meta`", "another-session"]),
    });
    cases.push(Case {
        name: "codex-empty-id".into(),
        lines: with(&lines, 0, "/payload/id", json!("")),
        line: 1,
        says: words(&["payload.id"]),
    });
    refuse_all(&d, "codex", cases);
}

#[test]
fn malformed_claude_code_transcripts_are_refused_by_line_and_field() {
    let Some(p) = shared("claude-code/full-session.jsonl") else {
        return;
    };
    let d = dir("claude-code");
    let lines = read_lines(&p);
    let usage = find(&lines, |v| {
        v["type"] == "assistant" && v.pointer("/message/usage/input_tokens").is_some()
    });
    let mut cases = wrong_counts(
        &lines,
        usage,
        "/message/usage/input_tokens",
        "message.usage.input_tokens",
        "claude-tokens",
    );
    cases.push(Case {
        name: "claude-usage-string".into(),
        lines: with(&lines, usage, "/message/usage", json!("x")),
        line: usage + 1,
        says: words(&["usage"]),
    });
    let tool_uses: Vec<(usize, usize)> = lines
        .iter()
        .enumerate()
        .filter(|(_, v)| v["type"] == "assistant")
        .flat_map(|(i, v)| {
            let blocks = v["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| b["type"] == "tool_use")
                .map(|(j, _)| (i, j))
                .collect::<Vec<_>>()
        })
        .collect();
    let (i0, j0) = tool_uses[0];
    let (i1, j1) = *tool_uses.iter().find(|(i, _)| *i != i0).unwrap();
    let first_id = lines[i0]["message"]["content"][j0]["id"].clone();
    cases.push(Case {
        name: "claude-reused-tool-use-id".into(),
        lines: with(
            &lines,
            i1,
            &format!("/message/content/{j1}/id"),
            first_id.clone(),
        ),
        line: i1 + 1,
        says: words(&["used twice", first_id.as_str().unwrap()]),
    });
    refuse_all(&d, "claude-code", cases);
}

#[test]
fn malformed_pi_sessions_are_refused_by_line_and_field() {
    let Some(p) = shared("pi/large-session.jsonl") else {
        return;
    };
    let d = dir("pi");
    let lines = read_lines(&p);
    let usage = find(&lines, |v| v.pointer("/message/usage/input").is_some());
    let mut cases = wrong_counts(&lines, usage, "/message/usage/input", "input", "pi-tokens");
    cases.push(Case {
        name: "pi-usage-string".into(),
        lines: with(&lines, usage, "/message/usage", json!("x")),
        line: usage + 1,
        says: words(&["usage"]),
    });
    cases.push(Case {
        name: "pi-timestamp-string".into(),
        lines: with(&lines, usage, "/message/timestamp", json!("yesterday")),
        line: usage + 1,
        says: words(&["timestamp"]),
    });
    cases.push(Case {
        name: "pi-empty-id".into(),
        lines: with(&lines, 0, "/id", json!("")),
        line: 1,
        says: words(&["`id`"]),
    });
    refuse_all(&d, "pi", cases);
}

/// OpenCode exports are one JSON document: errors name the JSON path.
#[test]
fn malformed_opencode_exports_are_refused_by_json_path() {
    let d = dir("opencode");
    let (db, before) = store(&d);
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sessions/opencode/compacted-and-pruned.json");
    let export: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut e = export.clone();
        f(&mut e);
        e
    };
    let tools: Vec<(usize, usize)> = export["messages"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .flat_map(|(i, m)| {
            m["parts"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .filter(|(_, p)| p["type"] == "tool")
                .map(move |(j, _)| (i, j))
        })
        .collect();
    let step = export["messages"]
        .as_array()
        .unwrap()
        .iter()
        .position(|m| m["info"]["tokens"].is_object())
        .unwrap();
    let cases: Vec<(&str, Value, &[&str])> = vec![
        (
            "no-messages",
            edit(&|e| {
                e.as_object_mut().unwrap().remove("messages");
            }),
            &["messages: missing"],
        ),
        (
            "duplicate-message-id",
            edit(&|e| e["messages"][2]["info"]["id"] = e["messages"][1]["info"]["id"].clone()),
            &["messages[2].info.id", "used twice"],
        ),
        (
            "duplicate-part-id",
            edit(&|e| {
                e["messages"][1]["parts"][1]["id"] = e["messages"][0]["parts"][0]["id"].clone()
            }),
            &["messages[1].parts[1].id", "used twice"],
        ),
        (
            "duplicate-call-id",
            edit(&|e| {
                let (i, j) = tools[1];
                let (i0, j0) = tools[0];
                e["messages"][i]["parts"][j]["callID"] =
                    e["messages"][i0]["parts"][j0]["callID"].clone();
            }),
            &["tool call id", "used twice"],
        ),
        (
            "tokens-string",
            edit(&|e| e["messages"][step]["info"]["tokens"]["input"] = json!("12")),
            &["`tokens.input`", "the string \"12\""],
        ),
        (
            "cost-negative",
            edit(&|e| e["messages"][step]["info"]["cost"] = json!(-1)),
            &["`cost`", "-1"],
        ),
        (
            "created-float",
            edit(&|e| e["messages"][0]["info"]["time"]["created"] = json!(1.5)),
            &["messages[0].info", "`time.created`"],
        ),
    ];
    for (name, e, says) in cases {
        let file = d.join(format!("{name}.json"));
        std::fs::write(&file, serde_json::to_string_pretty(&e).unwrap()).unwrap();
        let o = ctxlog(
            &db,
            &["import", file.to_str().unwrap(), "--format", "opencode"],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(&format!("{}: ", file.display())),
            "{name}: {err}"
        );
        for w in says {
            assert!(err.contains(w), "{name}: does not say {w:?}: {err}");
        }
    }
    assert_eq!(verified(&db), before, "a refused import changed the store");
    // A byte-order mark before the document is accepted.
    let bom = d.join("bom.json");
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend_from_slice(export.to_string().as_bytes());
    std::fs::write(&bom, bytes).unwrap();
    let o = ctxlog(&d.join("bom-store"), &["import", bom.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A line longer than the limit is refused without reading it whole; a last
/// line still being written is left for the next import; CRLF line ends and
/// a missing final newline import as the plain file does.
#[test]
fn long_unfinished_and_unusual_lines() {
    let Some(p) =
        shared("codex/rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl")
    else {
        return;
    };
    let d = dir("lines");
    let text = std::fs::read_to_string(&p).unwrap();
    let plain = d.join("plain");
    let o = ctxlog(&plain, &["--json", "import", p.to_str().unwrap()]);
    assert!(o.status.success());
    let events = |db: &Path| -> Value {
        let o = ctxlog(db, &["--json", "sessions"]);
        serde_json::from_slice::<Value>(&o.stdout).unwrap()["sessions"].clone()
    };
    let expected = events(&plain);
    for (name, content) in [
        ("crlf", text.replace('\n', "\r\n")),
        ("no-final-newline", text.trim_end().to_owned()),
    ] {
        let file = d.join(format!("{name}.jsonl"));
        std::fs::write(&file, content).unwrap();
        let db = d.join(format!("{name}-store"));
        let o = ctxlog(&db, &["import", file.to_str().unwrap()]);
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(events(&db), expected, "{name}");
    }
    // Cut inside the last line, and inside a UTF-8 character.
    let cut_at = text.trim_end().rfind('\n').unwrap() + 40;
    let mut bytes = text.as_bytes()[..cut_at].to_vec();
    bytes.extend_from_slice(&"é".as_bytes()[..1]);
    let file = d.join("unfinished.jsonl");
    std::fs::write(&file, bytes).unwrap();
    let db = d.join("unfinished-store");
    let o = ctxlog(&db, &["import", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let last = text.trim_end().lines().count();
    assert!(err.contains(&format!("line {last} is unfinished")), "{err}");
    // Not the last line: bad JSON is refused.
    let mut broken: Vec<&str> = text.lines().collect();
    broken[3] = "{\"timestamp\": ";
    let file = d.join("broken.jsonl");
    std::fs::write(&file, broken.join("\n") + "\n").unwrap();
    let o = ctxlog(&d.join("broken-store"), &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("{}:4: not JSON", file.display())));
    // Nesting deeper than the parser's limit: refused, not a stack overflow.
    let mut deep: Vec<&str> = text.lines().collect();
    let nested = format!(
        "{{\"timestamp\":\"2025-09-25T08:02:05.000Z\",\"type\":\"event_msg\",\"payload\":{}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    deep.insert(2, &nested);
    let file = d.join("deep.jsonl");
    std::fs::write(&file, deep.join("\n") + "\n").unwrap();
    let o = ctxlog(&d.join("deep-store"), &["import", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(":3: not JSON: recursion limit exceeded"),
        "{err}"
    );
    // Longer than the limit.
    let o = ctxlog(
        &d.join("long-store"),
        &["import", p.to_str().unwrap(), "--max-line-bytes", "1000"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("longer than 1000 bytes"), "{err}");
}

/// Input that was once accepted leniently: an OpenCode export without its
/// `info` (its description was dropped silently), a Claude Code line whose
/// `uuid` an earlier line used, a directory named with no recording in it.
/// Each is refused by name (exit 2) and leaves the store as it was.
#[test]
fn what_was_accepted_leniently_is_refused_by_name() {
    let d = dir("lenient");
    let (db, before) = store(&d);
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sessions");

    let export: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("opencode/compacted-and-pruned.json")).unwrap(),
    )
    .unwrap();
    let no_info = d.join("no-info.json");
    std::fs::write(
        &no_info,
        json!({"messages": export["messages"]}).to_string(),
    )
    .unwrap();

    let lines = read_lines(&fixtures.join("claude-code/edge-cases.jsonl"));
    let first = find(&lines, |v| v["uuid"].is_string());
    let later = first
        + 1
        + lines[first + 1..]
            .iter()
            .position(|v| v["uuid"].is_string())
            .unwrap();
    let repeated = with(&lines, later, "/uuid", lines[first]["uuid"].clone());
    let uuid_file = d.join("repeated-uuid.jsonl");
    write_lines(&uuid_file, &repeated);

    let empty = d.join("no-recordings");
    std::fs::create_dir_all(empty.join("sub")).unwrap();
    std::fs::write(empty.join("notes.txt"), "not a recording").unwrap();

    let uuid_at = format!("{}:{}:", uuid_file.display(), later + 1);
    let uuid_first = format!("line {}", first + 1);
    for (path, says) in [
        (
            &no_info,
            vec![format!("{}: info", no_info.display()), "missing".into()],
        ),
        (&uuid_file, vec![uuid_at, uuid_first, "uuid".into()]),
        (
            &empty,
            vec![empty.display().to_string(), "no recording".into()],
        ),
    ] {
        let o = ctxlog(&db, &["import", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", path.display());
        for w in &says {
            assert!(err.contains(w.as_str()), "does not say {w:?}: {err}");
        }
    }
    assert_eq!(verified(&db), before, "a refused import changed the store");
}

/// A recording imported under another agent's format is refused at its
/// first line, naming the format it is of, never taken for a transcript
/// with nothing in it yet (a Codex rollout named as Claude Code said "no
/// session written yet" and exited 0).
#[test]
fn a_recording_named_as_another_format_is_refused_at_its_first_line() {
    let d = dir("wrong-format");
    let db = d.join("store");
    let fixtures = common::root().join("fixtures/sessions");
    for (file, named, is) in [
        ("codex/edge-cases.jsonl", "claude-code", "codex"),
        ("pi/edge-cases.jsonl", "claude-code", "pi"),
        ("claude-code/edge-cases.jsonl", "codex", ""),
        ("claude-code/edge-cases.jsonl", "pi", ""),
    ] {
        let path = fixtures.join(file);
        let out = ctxlog(&db, &["import", "--format", named, path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file} as {named}: {err}");
        assert!(err.contains(&format!("{}:1:", path.display())), "{err}");
        if !is.is_empty() {
            assert!(err.contains(&format!("--format {is}")), "{err}");
        }
        assert!(!db.join("db").exists(), "a refused import made a store");
    }
}

/// A line that is not JSON is named by its line and the column inside it
/// (it said "line 2 column 0" of a one-line value cut short).
#[test]
fn a_line_that_is_not_json_names_its_column() {
    let d = dir("not-json-column");
    let fixture =
        std::fs::read_to_string(common::root().join("fixtures/sessions/pi/edge-cases.jsonl"))
            .unwrap();
    let mut lines: Vec<&str> = fixture.lines().collect();
    let cut = &lines[1][..40];
    lines[1] = cut;
    let file = d.join("cut.jsonl");
    std::fs::write(&file, lines.join("\r\n") + "\r\n").unwrap();
    let out = ctxlog(&d.join("store"), &["import", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cut.jsonl:2: not JSON: EOF while parsing") && err.contains("at column 40"),
        "{err}"
    );
    assert!(!err.contains("line 2 column"), "{err}");
}
