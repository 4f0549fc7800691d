//! `search`, `recall` and `index` end to end through the binary, on the
//! built-in recordings: what pruning and compaction took is found and
//! given back byte for byte; filters and bad queries; an index damaged or
//! missing is made again from the log.

mod common;

use common::ctxlog_at;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn store(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ctxlog-search-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let fixtures = common::root().join("fixtures/sessions");
    let mut args = vec!["import".to_owned()];
    for agent in ["opencode", "claude-code", "codex", "pi"] {
        for f in std::fs::read_dir(fixtures.join(agent)).unwrap() {
            args.push(f.unwrap().path().display().to_string());
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ctxlog_at(&dir, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// The output OpenCode recorded for `call` in the built-in fixture.
fn recorded_output(call: &str) -> String {
    let path = common::root().join("fixtures/sessions/opencode/compacted-and-pruned.json");
    let export: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    for m in export["messages"].as_array().unwrap() {
        for p in m["parts"].as_array().unwrap() {
            if p["callID"] == call {
                return p["state"]["output"].as_str().unwrap().to_owned();
            }
        }
    }
    panic!("no call {call}")
}

#[test]
fn what_pruning_and_compaction_took_is_found_and_given_back_whole() {
    let db = store("found");
    let call = "toolu_01Nc8cHPow5epgXnpMZT5HN1";
    // The read of parse.rs: pruned at seq 30, then compacted away at 42.
    let found = common::json_at(&db, &["search", "\"line_14 tokens next\"", "--dropped"]);
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{found}");
    let hit = &hits[0];
    assert_eq!(hit["call_id"], call);
    assert_eq!(hit["tool"], "read");
    assert_eq!(hit["status"]["status"], "compacted");
    assert_eq!(hit["status"]["at"], 42);
    assert_eq!(hit["label"]["agent"], "opencode-1.17.20");
    assert!(hit["snippet"].as_str().unwrap().contains("line_14"));

    let recalled = common::json_at(&db, &["recall", call]);
    let item = &recalled["items"][0];
    assert_eq!(item["item"], "part");
    let output = &item["body"]["Tool"]["state"]["Completed"]["output"];
    assert_eq!(output.as_str().unwrap(), recorded_output(call));

    // Everything the compaction replaced, the summary beside it.
    let compaction = common::json_at(&db, &["recall", "--compaction", "42", "ses_0a3f"]);
    let c = &compaction["compaction"];
    assert_eq!(c["number"], 1);
    assert_eq!(c["summary"]["author"], "summary");
    let replaced = c["messages"].as_array().unwrap();
    assert!(replaced.iter().any(|m| m["parts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["call_id"] == call)));
    assert_eq!(
        common::json_at(&db, &["recall", "--compaction", "last", "ses_0a3f"])["compaction"],
        *c
    );

    // Filters: an agent without the words, a session, prefixes, phrases.
    assert_eq!(
        common::json_at(&db, &["search", "parser", "--agent", "codex"])["hits"],
        Value::Array(vec![])
    );
    let prefixed = common::json_at(
        &db,
        &["search", "pars*", "--session", "ses_0a3f", "--limit", "50"],
    );
    assert!(prefixed["hits"].as_array().unwrap().len() >= 3);
    let excluded = common::json_at(
        &db,
        &[
            "search",
            "pars* -objective",
            "--session",
            "ses_0a3f",
            "--limit",
            "50",
        ],
    );
    assert!(
        excluded["hits"].as_array().unwrap().len() < prefixed["hits"].as_array().unwrap().len()
    );
    let _ = std::fs::remove_dir_all(&db);
}

#[test]
fn bad_queries_and_unknown_ids_are_refused_by_name() {
    let db = store("refused");
    for (args, says) in [
        (vec!["search", "-only -excluded"], "give at least one word"),
        (vec!["search", "\"unclosed"], "a quote is not closed"),
        (
            vec!["recall", "toolu_nothing_like_it"],
            "toolu_nothing_like_it",
        ),
        (
            vec!["recall", "--compaction", "soon", "ses_0a3f"],
            "--compaction",
        ),
        (
            vec!["recall", "--compaction", "-3", "ses_0a3f"],
            "no such compaction",
        ),
    ] {
        let out = ctxlog_at(&db, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&db);
}

/// The parts a search found and their statuses, in part order (scores
/// may differ a little with how the index's segments fell).
fn found(v: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["part"].to_string(), h["status"].to_string()))
        .collect();
    out.sort();
    out
}

#[test]
fn a_damaged_or_missing_index_is_made_again_from_the_log() {
    let db = store("damaged");
    let before = common::json_at(&db, &["search", "parser", "--limit", "50"]);
    assert!(found(&before).len() >= 3);
    // Damage: the index's metadata no longer reads.
    std::fs::write(db.join("search/meta.json"), b"{ not json").unwrap();
    let out = ctxlog_at(&db, &["--json", "search", "parser", "--limit", "50"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("made again from the log"), "{err}");
    let after: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found(&before), found(&after));
    // Damage tantivy panics on (0.27): each field-norm file's table of
    // contents zeroed, so its varints never end. `verify` says damaged,
    // `search` makes it again; neither panics.
    zero_tables_of_contents(&db.join("search"));
    let verify = ctxlog_at(&db, &["verify"]);
    let text = String::from_utf8_lossy(&verify.stdout).into_owned()
        + &String::from_utf8_lossy(&verify.stderr);
    assert!(text.contains("search index: damaged"), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    let out = ctxlog_at(&db, &["--json", "search", "parser", "--limit", "50"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("panicked"), "{err}");
    assert!(err.contains("made again from the log"), "{err}");
    let after: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found(&before), found(&after));
    // Gone entirely: made again without a word.
    std::fs::remove_dir_all(db.join("search")).unwrap();
    assert_eq!(
        found(&common::json_at(
            &db,
            &["search", "parser", "--limit", "50"]
        )),
        found(&before)
    );
    // --rebuild gives the same index.
    let rebuilt = common::json_at(&db, &["index", "--rebuild"]);
    assert_eq!(rebuilt["sessions"], 4);
    assert_eq!(
        found(&common::json_at(
            &db,
            &["search", "parser", "--limit", "50"]
        )),
        found(&before)
    );
    let _ = std::fs::remove_dir_all(&db);
}

#[test]
fn an_index_killed_midway_is_never_damaged_and_the_next_goes_on() {
    let db = std::env::temp_dir().join(format!("ctxlog-search-{}-killed", std::process::id()));
    let _ = std::fs::remove_dir_all(&db);
    // 150,000 events: the index commits once midway (every 100,000).
    let args = [
        "stress",
        "--sessions",
        "3",
        "--events",
        "50000",
        "--batch",
        "5000",
        "--seed",
        "9",
    ];
    common::succeeds(&db, &args);
    let total: u64 = common::json_at(&db, &["verify"])["events"]
        .as_u64()
        .unwrap();
    let mut child = common::ctxlog_on(&db, &["index"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed as soon as its first commit with watermarks is on disk.
    let meta = db.join("search/meta.json");
    let committed =
        || std::fs::read_to_string(&meta).is_ok_and(|m| m.contains("\\\"sessions\\\":{\\\""));
    while !committed() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the index finished before its first commit was seen"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = child.kill();
    assert!(!child.wait().unwrap().success(), "killed midway");
    // Consistent at its last commit: exactly what lies past it lags.
    let health = &common::json_at(&db, &["verify"])["index"];
    assert_eq!(health["state"], "lagging", "{health}");
    assert_eq!(
        health["events"].as_u64().unwrap(),
        total - ctxlog_search::COMMIT_EVERY,
        "{health}"
    );
    // The next goes on from there and ends as a rebuild does.
    let after = common::json_at(&db, &["index"]);
    assert_eq!(after["events"].as_u64(), Some(total));
    assert_eq!(
        common::json_at(&db, &["verify"])["index"]["state"],
        "up_to_date"
    );
    let query = ["search", "error", "--limit", "50"];
    let resumed = found(&common::json_at(&db, &query));
    assert!(!resumed.is_empty());
    common::json_at(&db, &["index", "--rebuild"]);
    assert_eq!(found(&common::json_at(&db, &query)), resumed);
    let _ = std::fs::remove_dir_all(&db);
}

/// Zeroes the table of contents of every field-norm file under `dir`:
/// tantivy's composite file ends with that table, its length (u32), then
/// the footer (JSON, its length as u32, a magic u32).
fn zero_tables_of_contents(dir: &Path) {
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let mut zeroed = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "fieldnorm") {
            continue;
        }
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        let body_end = n - 8 - u32_at(&bytes, n - 8) as usize;
        let table = u32_at(&bytes, body_end - 4) as usize;
        bytes[body_end - 4 - table..body_end - 4].fill(0);
        std::fs::write(&path, bytes).unwrap();
        zeroed += 1;
    }
    assert!(zeroed > 0, "no field-norm file under {}", dir.display());
}
