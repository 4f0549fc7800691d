//! `ctxlog usage` against the recordings' own figures, and against
//! ccusage (pinned, installed from npm) on the same Claude Code files.
//!
//! Needs `../shared/sessions` (skipped with a message when absent); the
//! ccusage comparison also needs the npm registry (skipped when it cannot
//! be reached).

mod common;

use common::{ctxlog_at, root, succeeds};
use ctxlog_differential::npm;
use ctxlog_testkit::TempDir;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// ccusage's last release written in JavaScript (later ones need a native
/// binary the registry mirror may not carry); its `daily --json` output
/// is documented in its README.
const CCUSAGE: (&str, &str) = ("ccusage", "17.2.1");

/// The list price of claude-sonnet-4-5's output tokens, dollars per token
/// (LiteLLM's, the table both use).
const SONNET_OUTPUT_PER_TOKEN: f64 = 15.0 / 1_000_000.0;

/// The recorded sessions of one agent, or `None` (with a message).
fn shared(agent: &str) -> Option<Vec<PathBuf>> {
    let dir = root().join("../shared/sessions").join(agent);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("SKIPPED: {} is absent", dir.display());
        return None;
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    Some(files)
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("JSON output")
}

/// A store with `files` imported.
fn imported(files: &[PathBuf]) -> (TempDir, PathBuf) {
    let dir = TempDir::new("usage");
    let db = dir.join("db");
    for f in files {
        succeeds(&db, &["import", f.to_str().unwrap()]);
    }
    (dir, db)
}

fn n(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

#[test]
fn usage_by_day_agrees_with_ccusage_on_the_same_claude_code_files() {
    let Some(files) = shared("claude-code") else {
        return;
    };
    let (package, version) = CCUSAGE;
    let dir = match npm::install(package, version) {
        Ok(dir) => dir,
        Err(ctxlog_differential::drive::DriveError::Unreachable(why)) => {
            eprintln!("SKIPPED: the ccusage comparison needs the npm registry: {why}");
            return;
        }
        Err(e) => panic!("installing {package}@{version} failed: {e}"),
    };
    let cli = dir.join("node_modules/ccusage/dist/index.js");
    assert!(cli.exists(), "{} has no dist/index.js", dir.display());

    // ccusage reads `<CLAUDE_CONFIG_DIR>/projects/<project>/<session>.jsonl`.
    let home = TempDir::new("ccusage-home");
    let project = home.join("projects/-home-ada-src-app");
    std::fs::create_dir_all(&project).unwrap();
    for f in &files {
        std::fs::copy(f, project.join(f.file_name().unwrap())).unwrap();
    }
    let out = Command::new("node")
        .arg(&cli)
        .args(["daily", "--json", "--offline", "--timezone", "UTC"])
        .env("CLAUDE_CONFIG_DIR", home.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("run ccusage");
    assert!(
        out.status.success(),
        "ccusage: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs = json_of(&out.stdout);
    let theirs = theirs["daily"].as_array().expect("ccusage's daily rows");

    let (_dir, db) = imported(&files);
    let ours = json_of(&succeeds(
        &db,
        &[
            "usage", "--by", "day", "--agent", "claude", "--utc", "--json",
        ],
    ));
    assert_eq!(ours["ok"], true, "{ours}");
    let groups = ours["groups"].as_array().unwrap();
    let days = |rows: &[Value], key: &str| -> Vec<String> {
        rows.iter()
            .map(|r| r[key].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(days(groups, "key"), days(theirs, "date"), "the same days");
    for (o, t) in groups.iter().zip(theirs) {
        let day = &o["key"];
        // The prompt side is the same: one count per response, as both
        // take Claude Code's repeated usage lines once.
        assert_eq!(n(o, "input"), n(t, "inputTokens"), "{day}: input");
        assert_eq!(
            n(o, "cache_read"),
            n(t, "cacheReadTokens"),
            "{day}: cache read"
        );
        assert_eq!(
            n(o, "cache_write"),
            n(t, "cacheCreationTokens"),
            "{day}: cache write"
        );
        // Output: ccusage keeps a response's first line, whose count is
        // often the streaming placeholder; ctxlog keeps the largest the
        // file gives (the final count where the file has it).
        let extra_output = n(o, "output") - n(t, "outputTokens");
        assert_eq!(
            n(o, "total"),
            n(t, "totalTokens") + extra_output,
            "{day}: the totals differ by the output only"
        );
        // Both price claude-sonnet-4-5 from LiteLLM's table: the costs
        // differ by exactly that output.
        assert_eq!(o["cost_estimated"], true, "{day}: no cost is recorded");
        let ours = o["cost_usd"].as_f64().unwrap();
        let theirs = t["totalCost"].as_f64().unwrap();
        let want = theirs + extra_output as f64 * SONNET_OUTPUT_PER_TOKEN;
        assert!(
            (ours - want).abs() < 2e-6,
            "{day}: ctxlog ${ours} vs ccusage ${theirs} + {extra_output} output tokens"
        );
    }
}

/// Sums `f` over the steps of `session`'s timeline.
fn timeline_sum(db: &Path, session: &str, f: impl Fn(&Value) -> u64) -> (u64, u64) {
    let t = json_of(&succeeds(db, &["timeline", session, "--json"]));
    let steps = t["steps"].as_array().unwrap();
    (steps.iter().map(&f).sum(), steps.len() as u64)
}

#[test]
fn usage_agrees_with_each_recording_and_its_recorded_cost() {
    let Some(mut files) = shared("pi") else {
        return;
    };
    files.extend(shared("codex").unwrap_or_default());
    files.extend(shared("claude-code").unwrap_or_default());
    let (_dir, db) = imported(&files);
    let by_session = json_of(&succeeds(&db, &["usage", "--by", "session", "--json"]));
    let groups = by_session["groups"].as_array().unwrap();
    assert_eq!(groups.len(), files.len(), "{by_session}");
    let mut all = 0;
    for g in groups {
        let session = g["key"].as_str().unwrap();
        // The session's steps, as its timeline shows them (no compaction
        // in these recordings, so no summary call adds to them).
        let (total, steps) = timeline_sum(&db, session, |s| n(&s["tokens"], "total"));
        assert_eq!((n(g, "total"), n(g, "steps")), (total, steps), "{session}");
        assert_eq!(n(g, "compactions"), 0, "{session}");
        all += total;
    }
    assert_eq!(n(&by_session["total"], "total"), all, "the total row");

    // pi records each answer's cost: usage gives it, unestimated.
    let pi_file = files
        .iter()
        .find(|f| f.to_string_lossy().contains("/pi/"))
        .unwrap();
    let mut recorded = 0.0;
    for line in std::fs::read_to_string(pi_file).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if let Some(c) = v["message"]["usage"]["cost"]["total"].as_f64() {
            recorded += c;
        }
    }
    let by_agent = json_of(&succeeds(&db, &["usage", "--by", "agent", "--json"]));
    let pi = by_agent["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "pi")
        .expect("a pi row");
    assert_eq!(pi["cost_estimated"], false, "{pi}");
    assert!(
        (pi["cost_usd"].as_f64().unwrap() - recorded).abs() < 1e-4,
        "pi recorded ${recorded}: {pi}"
    );
    // The list shows the same cost.
    let listed = json_of(&succeeds(&db, &["sessions", "--agent", "pi", "--json"]));
    let cost = listed["sessions"][0]["cost_usd"].as_f64().unwrap();
    assert!((cost - recorded).abs() < 1e-4, "{listed}");

    // Filters: a day with nothing, an unknown agent, a bad date.
    let none = json_of(&succeeds(
        &db,
        &["usage", "--since", "2030-01-01", "--json"],
    ));
    assert_eq!(none["groups"], serde_json::json!([]), "{none}");
    let bad = ctxlog_at(&db, &["usage", "--since", "26/11/2026", "--json"]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = json_of(&bad.stdout);
    assert_eq!(bad["ok"], false);
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--since \"26/11/2026\": not a date"),
        "{bad}"
    );
}

/// `usage --by model` names a model once, whatever date snapshot a call
/// used (`claude-sonnet-4-5-20250929` was a row of its own), and a request
/// aborted before it reported any usage makes no row for its model.
#[test]
fn usage_by_model_groups_snapshots_and_leaves_out_models_never_used() {
    let dir = TempDir::created("usage-models");
    let fixture = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/sessions/pi/edge-cases.jsonl"),
    )
    .unwrap();
    let line = |at: &str, ms: u64, model: &str, usage: &str, stop: &str| {
        format!(
            "{{\"type\": \"message\", \"timestamp\": \"{at}\", \"message\": {{\"role\": \"assistant\", \"content\": [{{\"type\": \"text\", \"text\": \"ok\"}}], \"api\": \"anthropic-messages\", \"provider\": \"anthropic\", \"model\": \"{model}\", \"usage\": {usage}, \"stopReason\": \"{stop}\", \"timestamp\": {ms}}}}}\n"
        )
    };
    let file = dir.join("models.jsonl");
    let text = fixture
        + &line(
            "2025-11-20T23:42:00.000Z",
            1_763_682_120_000,
            "claude-sonnet-4-5-20250929",
            "{\"input\": 10, \"output\": 5, \"cacheRead\": 0, \"cacheWrite\": 0}",
            "stop",
        )
        + &line(
            "2025-11-20T23:43:00.000Z",
            1_763_682_180_000,
            "claude-opus-4-1",
            "{\"input\": 0, \"output\": 0, \"cacheRead\": 0, \"cacheWrite\": 0}",
            "aborted",
        );
    std::fs::write(&file, text).unwrap();
    let db = dir.join("store");
    common::succeeds(&db, &["import", file.to_str().unwrap()]);
    let out = json_of(&common::succeeds(
        &db,
        &["usage", "--by", "model", "--json"],
    ));
    let keys: Vec<&str> = out["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["claude-sonnet-4-5", "gpt-5.1-codex"], "{out}");
}
