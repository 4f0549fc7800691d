//! The views made for reading, end to end through the binary: `timeline`
//! on every recorded format and on kept simulations, `simulate` with
//! several policies, `--keep` and `--report`, `sessions` filters and
//! order, the `window` header, `compact`'s before and after, `replay`'s
//! re-derived figures, the Markdown export and short session names.

mod common;

use common::ctxlog_at;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> String {
    common::root()
        .join("fixtures/sessions")
        .join(rel)
        .display()
        .to_string()
}

fn codex_file() -> &'static str {
    static FILE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FILE.get_or_init(|| fixture("codex/edge-cases.jsonl"))
}

fn store(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ctxlog-views-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The text output of `args`, tables fitted to a 100-column terminal.
fn text(db: &Path, args: &[&str]) -> String {
    let out = common::ctxlog_on(db, args)
        .env("COLUMNS", "100")
        .output()
        .expect("run ctxlog");
    String::from_utf8(common::ok(out).stdout).unwrap()
}

/// The recordings: the checked-in fixtures of every format, and the real
/// sessions when `../shared/sessions` is there.
fn recordings() -> Vec<String> {
    let mut files: Vec<String> = [
        "opencode/compacted-and-pruned.json",
        "claude-code/edge-cases.jsonl",
        "codex/edge-cases.jsonl",
        "pi/edge-cases.jsonl",
    ]
    .iter()
    .map(|f| fixture(f))
    .collect();
    let shared = common::root().join("../shared/sessions");
    match std::fs::read_dir(&shared) {
        Ok(dirs) => {
            let mut found: Vec<String> = dirs
                .flatten()
                .filter(|d| d.path().is_dir())
                .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
                .map(|f| f.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl" || e == "json"))
                .map(|p| p.display().to_string())
                .collect();
            found.sort();
            files.extend(found);
        }
        Err(_) => eprintln!("../shared/sessions is absent: only the fixtures"),
    }
    files
}

/// `timeline --json` of every recording: one row per step the import
/// counted, the tokens as recorded, the percentage of the usable budget,
/// and the lifecycle events where they happened.
#[test]
fn timeline_has_a_row_per_recorded_step_on_every_format() {
    let db = store("timeline");
    for file in recordings() {
        let imported = common::json_at(&db, &["import", &file]);
        let session = imported["session"].as_str().unwrap();
        let t = common::json_at(&db, &["timeline", session]);
        for key in ["session", "policy", "limits", "steps"] {
            assert!(t.get(key).is_some(), "{file}: {key}");
        }
        let steps = t["steps"].as_array().unwrap();
        // and the last step whose end is not recorded yet, open.
        let open = steps.iter().filter(|s| s["open"] == true).count();
        assert!(open <= 1 && (open == 0 || steps.last().unwrap()["open"] == true));
        assert_eq!(
            steps.len() as u64,
            imported["steps"].as_u64().unwrap(),
            "{file}: a row per step the import counted"
        );
        let mut last_seq = 0;
        for s in steps {
            let seq = s["seq"].as_u64().unwrap();
            assert!(seq > last_seq, "{file}: rows in log order");
            last_seq = seq;
            let tok = &s["tokens"];
            let sum: u64 = ["input", "output", "reasoning", "cache_read", "cache_write"]
                .iter()
                .map(|k| tok[k].as_u64().unwrap())
                .sum();
            if tok["total_reported"] == false {
                assert_eq!(
                    tok["total"].as_u64().unwrap(),
                    sum,
                    "{file}: computed total"
                );
            }
            if let (Some(u), Some(p)) = (s["usable"].as_u64(), s["percent"].as_f64()) {
                let want = tok["total"].as_u64().unwrap() as f64 * 100.0 / u as f64;
                assert!((p - want).abs() <= 0.005 + 1e-9, "{file}: {p} vs {want}");
                // None where the policy never compacts after the step's
                // model (Claude Code 2.1 on claude-sonnet-4-5).
                assert!(s["threshold"].as_u64().is_none_or(|t| t <= u));
            }
            assert!(s["window_estimate"].is_u64());
            assert!(s["events"].is_array());
        }
        // The page of every recording: a point per step.
        let page = db.with_extension("html");
        common::json_at(&db, &["report", session, "--out", page.to_str().unwrap()]);
        let html = std::fs::read_to_string(&page).unwrap();
        assert_eq!(
            html.matches("<circle class=\"pt").count(),
            steps.len(),
            "{file}"
        );
        let _ = std::fs::remove_file(&page);
        // The audit's entries are all in the timeline, each after its step.
        let audit = common::json_at(&db, &["audit", session]);
        let entries = audit["entries"].as_array().unwrap();
        let events: Vec<&Value> = steps
            .iter()
            .flat_map(|s| s["events"].as_array().unwrap())
            .collect();
        if !steps.is_empty() {
            assert_eq!(events.len(), entries.len(), "{file}: every audit entry");
        }
        for (i, s) in steps.iter().enumerate() {
            let next = steps.get(i + 1).map(|n| n["seq"].as_u64().unwrap());
            for e in s["events"].as_array().unwrap() {
                let seq = e["seq"].as_u64().unwrap();
                assert!(
                    next.is_none_or(|n| seq < n),
                    "{file}: an event after the next step"
                );
                assert!(
                    i == 0 || seq >= s["seq"].as_u64().unwrap(),
                    "{file}: an event before its step"
                );
            }
        }
    }
    // The OpenCode fixture was pruned and compacted by OpenCode: both show.
    let t = common::json_at(&db, &["timeline", "ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v"]);
    let kinds: Vec<&str> = t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["events"].as_array().unwrap())
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"parts_pruned"), "{kinds:?}");
    assert!(kinds.contains(&"summary_completed"), "{kinds:?}");
    // The table fits 100 columns.
    let table = text(&db, &["timeline", "ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v"]);
    for line in table
        .lines()
        .skip(1)
        .filter(|l| !l.contains(" steps · peak"))
    {
        assert!(line.chars().count() <= 100, "{line:?}");
    }
    let _ = std::fs::remove_dir_all(&db);
}

/// `simulate` with two presets keeps both simulations, whose timelines,
/// windows and audits read like any session; keeping again stores nothing
/// new; `--report` writes the page with the recording and both.
#[test]
fn simulate_compares_policies_keeps_them_and_reports_them() {
    let db = store("simulate");
    let file = fixture("opencode/compacted-and-pruned.json");
    let page = db.with_extension("html");
    let page_arg = page.display().to_string();
    let args = [
        "simulate",
        &file,
        "--policy",
        "opencode-1.17,claude-code",
        "--context",
        "180k",
        "--keep",
        "--report",
        &page_arg,
    ];
    common::json_at(&db, &["import", &file]);
    let doc = common::json_at(&db, &args);
    let sims = doc["simulations"].as_array().unwrap();
    assert_eq!(sims.len(), 2);
    assert_eq!(
        doc["recorded"]["policy"], "opencode-1.17",
        "the agent's, not one under test"
    );
    for sim in sims {
        assert_eq!(sim["limits"]["context"], 180_000, "--context 180k");
        let name = sim["kept"].as_str().unwrap();
        let policy = sim["policy"]["name"].as_str().unwrap();
        assert_eq!(name, format!("ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v@{policy}"));
        let t = common::json_at(&db, &["timeline", name]);
        assert_eq!(t["policy"], policy);
        let summaries = sim["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"] == "summary")
            .count();
        let completed = t["steps"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["events"].as_array().unwrap())
            .filter(|e| e["kind"] == "summary_completed")
            .count();
        assert_eq!(
            completed, summaries,
            "{name}: the kept session's compactions"
        );
        let peak = t["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["tokens"]["total"].as_u64().unwrap())
            .max();
        assert_eq!(sim["peak_tokens"].as_u64(), peak);
        common::json_at(&db, &["window", name]);
        common::json_at(&db, &["audit", name]);
    }
    // With the simulations kept, every short id still names its own row,
    // and the recording's 8-character prefix names the recording.
    // Kept simulations are listed apart from the recordings.
    for (args, count) in [
        (&["sessions"][..], 1),
        (&["sessions", "--simulations"][..], 2),
    ] {
        let table = text(&db, args);
        let listed = common::json_at(&db, args);
        let listed = listed["sessions"].as_array().unwrap();
        assert_eq!(listed.len(), count, "{args:?}: {listed:?}");
        for (line, row) in table.lines().skip(1).zip(listed) {
            let id = line.split_whitespace().next().unwrap();
            let r = common::json_at(&db, &["replay", id]);
            assert_eq!(r["session"], row["session"], "{id} names its own row");
            assert!(line.chars().count() <= 100, "{line:?}");
            assert_eq!(row["simulation"].is_null(), count == 1, "{row}");
        }
    }
    let t = common::json_at(&db, &["timeline", "ses_0a3f9c1e"]);
    assert_eq!(
        t["policy"], "opencode-1.17",
        "the recording, under its agent's preset"
    );
    let before = common::json_at(&db, &["sessions"]);
    let again = common::json_at(&db, &args);
    assert_eq!(
        again["simulations"], doc["simulations"],
        "the same simulation"
    );
    assert_eq!(
        common::json_at(&db, &["sessions"]),
        before,
        "keeping again stores nothing new"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    for label in ["recorded (", "opencode-1.17", "claude-code"] {
        assert!(html.contains(label), "the page shows {label}");
    }
    assert!(
        html.contains("data-curve=\"2\" data-step="),
        "the second simulation's points"
    );
    // The human output: limits, usable, peak, and the comparison table.
    let human = text(&db, &["simulate", &file, "--policy", "opencode-1.17,codex"]);
    for want in [
        "limits: context",
        "usable",
        "peak",
        "POLICY",
        "COMPACTS AT",
        "codex",
    ] {
        assert!(human.contains(want), "{want} in {human}");
    }
    // An unknown model warns that its limits are assumed, unless --context
    // says how large the window is.
    let warns = |extra: &[&str]| {
        let mut a = vec!["simulate", codex_file(), "--model", "no-such-model"];
        a.extend_from_slice(extra);
        let o = common::ok(ctxlog_at(&db, &a));
        String::from_utf8_lossy(&o.stderr).contains("not in the limits table")
    };
    assert!(warns(&[]));
    assert!(!warns(&["--context", "100k"]));
    // Bad values are exit 2 with what was wrong.
    for (bad, says) in [
        (&["--context", "12q"][..], "not a token count"),
        (
            &["--policy", "opencode-1.17,nope"][..],
            "unknown policy preset \"nope\"",
        ),
        (&["--policy", "codex,codex"][..], "given twice"),
        (&["--threshold", "0"][..], "0"),
        (
            &["--policy-file", "/nonexistent/policy.json"][..],
            "/nonexistent/policy.json",
        ),
    ] {
        let mut a = vec!["simulate", file.as_str()];
        a.extend_from_slice(bad);
        let o = ctxlog_at(&db, &a);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{bad:?}: {err}");
    }
    // A policy file's threshold out of range names the file and field.
    let bad = db.with_extension("policy.json");
    let mut p: Value = serde_json::from_str(&text(&db, &["presets"]))
        .map(|v: Value| v[0].clone())
        .unwrap();
    p["threshold_percent"] = Value::from(0);
    std::fs::write(&bad, p.to_string()).unwrap();
    let o = ctxlog_at(
        &db,
        &["simulate", &file, "--policy-file", bad.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("threshold_percent") && err.contains("policy.json"),
        "{err}"
    );
    let _ = std::fs::remove_file(&bad);
    // The threshold knob: at 50 % the first compaction fires at a lower
    // count than at 65 %, each at or past its share of the usable budget
    // (the Codex fixture's steps grow 3816, 6152, 6420, 6690 tokens; the
    // preset checks before each request, so the 6152 step's count adds
    // Codex's estimate of the tool output after it: 16 tokens, its bytes and
    // its call id's over 4, rounded up).
    let codex = fixture("codex/edge-cases.jsonl");
    let first = |threshold: &str| {
        let d = common::json_at(
            &db,
            &[
                "simulate",
                &codex,
                "--policy",
                "codex",
                "--context",
                "10k",
                "--threshold",
                threshold,
            ],
        );
        let c = d["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["kind"] == "compaction")
            .cloned()
            .unwrap_or_else(|| panic!("a compaction at {threshold} %"));
        (c["count"].as_u64().unwrap(), c["usable"].as_u64().unwrap())
    };
    let ((half, usable), (more, _)) = (first("50"), first("65"));
    assert_eq!(usable, 10_000);
    assert_eq!((half, more), (6168, 6690));
    let _ = std::fs::remove_dir_all(&db);
    let _ = std::fs::remove_file(&page);
}

/// `sessions` filters by agent and date, orders, and fits 100 columns;
/// short ids resolve; an ambiguous prefix says so.
#[test]
fn sessions_filter_sort_and_resolve_short_ids() {
    let db = store("sessions");
    for f in [
        "opencode/compacted-and-pruned.json",
        "claude-code/edge-cases.jsonl",
        "codex/edge-cases.jsonl",
        "pi/edge-cases.jsonl",
    ] {
        common::json_at(&db, &["import", &fixture(f)]);
    }
    let all = common::json_at(&db, &["sessions"]);
    let rows = all["sessions"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    let dates: Vec<u64> = rows
        .iter()
        .map(|r| r["started_at"].as_u64().unwrap())
        .collect();
    assert!(dates.windows(2).all(|w| w[0] <= w[1]), "oldest first");
    for r in rows {
        for k in [
            "date",
            "agent",
            "model",
            "title",
            "steps",
            "peak_tokens",
            "compactions",
            "pruned_parts",
        ] {
            assert!(r.get(k).is_some(), "{k}");
        }
    }
    let desc = common::json_at(&db, &["sessions", "--sort", "steps", "--desc"]);
    let steps: Vec<u64> = desc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["steps"].as_u64().unwrap())
        .collect();
    assert!(steps.windows(2).all(|w| w[0] >= w[1]), "{steps:?}");
    let codex = common::json_at(&db, &["sessions", "--agent", "CODEX"]);
    let codex = codex["sessions"].as_array().unwrap();
    assert_eq!(codex.len(), 1);
    assert!(codex[0]["agent"].as_str().unwrap().starts_with("codex"));
    // --since / --until by day: the first session's day alone.
    let first_day = rows[0]["date"].as_str().unwrap()[..10].to_owned();
    let day = common::json_at(
        &db,
        &["sessions", "--since", &first_day, "--until", &first_day],
    );
    let day = day["sessions"].as_array().unwrap();
    assert!(!day.is_empty());
    assert!(day
        .iter()
        .all(|r| r["date"].as_str().unwrap().starts_with(&first_day)));
    let o = ctxlog_at(&db, &["sessions", "--since", "the day before"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--since \"the day before\""));
    let table = text(&db, &["sessions"]);
    for line in table.lines() {
        assert!(line.chars().count() <= 100, "{line:?}");
    }
    // Two sessions whose ids share a prefix: the prefix is ambiguous.
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["session"].as_str().unwrap())
        .collect();
    // (The fixtures' ctxlog ids are UUID v7 of their first times: two of
    // them start alike for at least 4 characters.)
    let shared = ids
        .iter()
        .flat_map(|a| ids.iter().filter(move |b| *b != a).map(move |b| (a, b)))
        .map(|(a, b)| {
            (
                a,
                a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count(),
            )
        })
        .max_by_key(|(_, n)| *n)
        .filter(|(_, n)| *n >= 4)
        .expect("two fixture ids share a prefix of 4 or more");
    let o = ctxlog_at(&db, &["replay", &shared.0[..shared.1]]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("names"));
    let o = ctxlog_at(&db, &["replay", &ids[0][..3]]);
    assert_eq!(o.status.code(), Some(2), "3 characters name nothing");
    let _ = std::fs::remove_dir_all(&db);
}

/// `window`'s header, `compact`'s before and after, `replay`'s re-derived
/// figures and the Markdown export, on the compacted and pruned fixture.
#[test]
fn window_compact_replay_and_markdown_say_what_they_show() {
    let db = store("reading");
    let s = common::json_at(
        &db,
        &["import", &fixture("opencode/compacted-and-pruned.json")],
    );
    let session = s["session"].as_str().unwrap().to_owned();
    let w = text(&db, &["window", &session]);
    let head: Vec<&str> = w.lines().take(3).collect();
    assert!(
        head[0].contains("after seq") && head[0].contains("policy"),
        "{head:?}"
    );
    assert!(
        head[1].contains("recorded:") && head[1].contains("usable"),
        "{head:?}"
    );
    assert!(head[2].contains("system prompt"), "{head:?}");

    let r = common::json_at(&db, &["replay", &session]);
    assert_eq!(r["derived"]["compactions"]["completed"], 1);
    assert_eq!(r["derived"]["pruned"]["parts"], 1);
    assert!(r["derived"]["window"]["pivot"].is_string());

    let md = text(&db, &["export", &session, "--format", "markdown"]);
    for want in [
        "# Fix failing parser test",
        "### Compaction (automatic, completed)",
        "**Summary**",
        "Output cleared by a prune at seq",
        "[Old tool result content cleared]",
        "The model's window starts here now",
    ] {
        assert!(md.contains(want), "{want:?} in the Markdown");
    }
    let fences = md.lines().filter(|l| l.starts_with("```")).count();
    assert_eq!(fences % 2, 0, "every fence closes");

    let c = common::json_at(&db, &["compact", &session]);
    let (before, after) = (
        c["window_tokens_before"].as_u64().unwrap(),
        c["window_tokens_after"].as_u64().unwrap(),
    );
    assert!(
        after < before,
        "compaction saved tokens: {before} -> {after}"
    );
    let human = text(&db, &["compact", &session]);
    assert!(human.contains("saved"), "{human}");
    let _ = std::fs::remove_dir_all(&db);
}

/// Every preset, the agents' included, prints with its threshold.
#[test]
fn presets_include_the_agents_with_a_threshold() {
    let db = store("presets");
    let out = String::from_utf8(common::ok(ctxlog_at(&db, &["presets"])).stdout).unwrap();
    let presets: Vec<Value> = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = presets
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "opencode-seed",
            "opencode-1.17",
            "opencode-1.18",
            "claude-code-2.1",
            "codex-0.169",
            "pi-0.73",
            "goose"
        ]
    );
    assert!(presets.iter().all(|p| p["threshold_percent"].is_u64()));
    // An agent's plain name is its latest measured version.
    let simulated = common::json_at(
        &db,
        &[
            "simulate",
            &fixture("pi/edge-cases.jsonl"),
            "--policy",
            "pi",
        ],
    );
    assert!(simulated.to_string().contains("pi-0.73"), "{simulated}");
}

/// A session stored under another policy (by an older ctxlog, or with
/// `--policy`) is the same session when imported again: it keeps its policy.
#[test]
fn importing_again_keeps_the_stored_policy() {
    let db = store("policy");
    let file = fixture("claude-code/edge-cases.jsonl");
    let first = common::json_at(&db, &["import", &file, "--policy", "opencode-seed"]);
    let again = common::json_at(&db, &["import", &file]);
    assert_eq!(again["session"], first["session"]);
    assert_eq!(again["already_imported"], true);
    let t = common::json_at(&db, &["timeline", first["session"].as_str().unwrap()]);
    assert_eq!(t["policy"], "opencode-seed");
    // A fresh store labels it with its agent's preset.
    let fresh = store("policy-fresh");
    common::json_at(&fresh, &["import", &file]);
    let t = common::json_at(&fresh, &["timeline", first["session"].as_str().unwrap()]);
    assert_eq!(t["policy"], "claude-code-2.1");
    let _ = std::fs::remove_dir_all(&db);
    let _ = std::fs::remove_dir_all(&fresh);
}

/// `window --format` shows a session as its agent sends it: pi's summary
/// as one user message in the Messages API, Claude Code's joined user
/// messages, Codex's Responses API input.
#[test]
fn window_formats_show_what_each_agent_sends() {
    let db = store("window-formats");
    let cases = [
        ("pi/edge-cases.jsonl", "anthropic", "messages"),
        ("claude-code/edge-cases.jsonl", "claude-code", "messages"),
        ("codex/edge-cases.jsonl", "responses", "input"),
    ];
    for (file, format, key) in cases {
        let imported = common::json_at(&db, &["import", &fixture(file)]);
        let session = imported["session"].as_str().unwrap();
        let w = common::json_at(&db, &["window", session, "--format", format]);
        assert_eq!(w["format"], format, "{file}");
        let items = w[key].as_array().unwrap_or_else(|| panic!("{file}: {w}"));
        assert!(!items.is_empty(), "{file}");
        match format {
            "anthropic" => {
                assert_eq!(items[0]["role"], "user");
                let first = items[0]["content"][0]["text"].as_str().unwrap();
                assert!(
                    first.starts_with("The conversation history before this point was compacted")
                );
            }
            "claude-code" => {
                assert_eq!(items[0]["role"], "user", "the summary is a user message");
                let roles: Vec<&str> = items.iter().map(|m| m["role"].as_str().unwrap()).collect();
                assert!(
                    roles.windows(2).all(|p| p[0] != "user" || p[1] != "user"),
                    "consecutive user messages are joined: {roles:?}"
                );
            }
            _ => assert!(items.iter().any(|i| i["type"] == "function_call")),
        }
    }
    let _ = std::fs::remove_dir_all(&db);
}

/// The Markdown transcript is headed by the title `sessions` and `report`
/// show (for a pi session, its first prompt; it was the session's uuid),
/// leaves code alone when redacting (`const apiKey = await getKey(…)` lost
/// its code), and says how many of the secrets it redacted it shows (it
/// counted those in the parts of long outputs it cuts as if shown).
#[test]
fn markdown_is_titled_and_counts_the_secrets_it_shows() {
    let db = store("markdown-title");
    let dir = db.with_extension("in");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut lines: Vec<Value> = std::fs::read_to_string(fixture("pi/edge-cases.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let token = |n: usize| format!("ghp_{}", n.to_string().repeat(36));
    let output = format!(
        "const apiKey = await getApiKeyForModel(model);\nexport GITHUB_TOKEN={}\n{}{}",
        token(0),
        "filler line\n".repeat(300),
        (1..10)
            .map(|n| format!("key{n}: {}\n", token(n)))
            .collect::<String>()
    );
    for l in &mut lines {
        if l["message"]["toolCallId"] == "toolu_pi_read" {
            l["message"]["content"][0]["text"] = Value::String(output.clone());
        }
    }
    let file = dir.join("secrets.jsonl");
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&file, text.join("\n") + "\n").unwrap();
    common::ok(ctxlog_at(&db, &["import", file.to_str().unwrap()]));
    let out = common::ok(ctxlog_at(
        &db,
        &["export", "5e1f0c2a", "--format", "markdown", "--redact"],
    ));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.starts_with("# Read the theme docs and port the selector.\n"),
        "{md}"
    );
    assert!(
        md.contains("const apiKey = await getApiKeyForModel(model);"),
        "{md}"
    );
    assert_eq!(md.matches("[REDACTED github-token]").count(), 1, "{md}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("redacted 10 secrets") && err.contains("the transcript shows 1 of them"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Claude Code 2.1 has no threshold for claude-sonnet-4-5 (it compacts only
/// when the provider refuses a prompt): `simulate`, `timeline` and the
/// report show none (they said "compacts at 167000" and drew its line).
#[test]
fn a_policy_with_no_threshold_for_the_model_shows_none() {
    let db = store("no-threshold");
    let file = fixture("claude-code/edge-cases.jsonl");
    let said = text(&db, &["simulate", &file, "--policy", "claude-code"]);
    assert!(said.contains("never compacts on a threshold"), "{said}");
    // Its steps as `sessions` counts them (it left out the one whose end
    // the recording does not hold yet).
    assert!(said.contains(": 3 turns, 4 steps,"), "{said}");
    let simulated = common::json_at(&db, &["simulate", &file, "--policy", "claude-code"]);
    assert_eq!(simulated["steps"], 4, "{simulated}");
    assert!(!said.contains("compacts at 167"), "{said}");
    common::ok(ctxlog_at(&db, &["import", &file]));
    let listed = common::json_at(&db, &["sessions"]);
    assert_eq!(listed["sessions"][0]["steps"], 4, "{listed}");
    let timeline = text(&db, &["timeline", "7f1c2d3e"]);
    let heading: String = timeline
        .lines()
        .take_while(|l| !l.starts_with("SEQ"))
        .collect();
    assert!(heading.ends_with("threshold never"), "{timeline}");
    let rows = common::json_at(&db, &["timeline", "7f1c2d3e"]);
    for step in rows["steps"].as_array().unwrap() {
        assert!(step["threshold"].is_null(), "{step}");
    }
    let page = db.with_extension("html");
    common::ok(ctxlog_at(
        &db,
        &["report", "7f1c2d3e", "--out", page.to_str().unwrap()],
    ));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("class=\"threshold\" stroke"),
        "a threshold line was drawn"
    );
    let _ = std::fs::remove_file(&page);
}

/// `window --at` after a step that reported no usage (pi records none for
/// its summaries; an aborted call) says the usage is not recorded, never
/// "0 tokens at the last step".
#[test]
fn window_after_a_step_without_usage_says_not_recorded() {
    let db = store("window-no-usage");
    common::ok(ctxlog_at(&db, &["import", &fixture("pi/edge-cases.jsonl")]));
    for (at, why) in [("28", "a summary"), ("16", "reported no usage")] {
        let said = text(&db, &["window", "5e1f0c2a", "--at", at]);
        let header = said.lines().nth(1).unwrap();
        assert!(
            header.starts_with("recorded: not recorded at the last step"),
            "{header}"
        );
        assert!(
            header.contains(why) && !header.contains("0 tokens"),
            "{header}"
        );
    }
    // Nor does the report's usable line pass through it (a step on a model
    // selected for a moment drew a spike to that model's budget).
    let page = db.with_extension("html");
    common::ok(ctxlog_at(
        &db,
        &["report", "5e1f0c2a", "--out", page.to_str().unwrap()],
    ));
    let html = std::fs::read_to_string(&page).unwrap();
    let points = html
        .split("class=\"usable\" points=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    assert_eq!(points.split_whitespace().count(), 3, "{points}");
    let _ = std::fs::remove_file(&page);
}

/// `simulate` takes a stored session as it takes its file (it took only a
/// file): the same simulations, and a name that is neither is refused.
#[test]
fn simulate_takes_a_stored_session() {
    let db = store("simulate-stored");
    let file = fixture("codex/edge-cases.jsonl");
    common::ok(ctxlog_at(&db, &["import", &file]));
    let args = ["--policy", "opencode-1.17,claude-code", "--context", "20k"];
    let from_file = common::json_at(&db, &[&["simulate", file.as_str()][..], &args].concat());
    let from_store = common::json_at(&db, &[&["simulate", "01997e76"][..], &args].concat());
    assert_eq!(from_file["simulations"], from_store["simulations"]);
    assert_eq!(from_file["steps"], from_store["steps"]);
    assert_eq!(from_file["source_session"], from_store["source_session"]);
    let none = ctxlog_at(&db, &["simulate", "no-such-thing"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("no such file, and not a stored session")
    );
}

/// Every name `sessions` shows names its own session: versions of one
/// recording, and the copies compacted by hand of each, share their
/// recording's id (two rows showed `5e1f0c2a@manual`, the second could not
/// be named), so they are shown by their ctxlog ids. A mistyped id is
/// answered with the nearest names.
#[test]
fn every_shown_name_names_its_own_session() {
    let db = store("shown-names");
    let file = db.with_extension("jsonl");
    let fixture = std::fs::read_to_string(fixture("pi/edge-cases.jsonl")).unwrap();
    std::fs::write(&file, &fixture).unwrap();
    let f = file.to_str().unwrap();
    common::ok(ctxlog_at(&db, &["import", f]));
    common::ok(ctxlog_at(&db, &["compact", "5e1f0c2a"]));
    std::fs::write(
        &file,
        fixture.replace("Now add a test.", "Now add two tests."),
    )
    .unwrap();
    common::ok(ctxlog_at(&db, &["import", "--replace", f]));
    common::ok(ctxlog_at(&db, &["compact", "5e1f0c2a"]));
    let listed = text(&db, &["sessions"]);
    let names: Vec<&str> = listed
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names.len(), 4, "{listed}");
    let mut named = std::collections::BTreeSet::new();
    for name in &names {
        let replayed = common::json_at(&db, &["replay", name]);
        assert!(
            named.insert(replayed["session"].to_string()),
            "{name} names another row's session: {listed}"
        );
    }
    let typo = ctxlog_at(&db, &["timeline", "5e1f0c2b"]);
    assert_eq!(typo.status.code(), Some(2));
    let err = String::from_utf8_lossy(&typo.stderr);
    assert!(err.contains("did you mean 5e1f0c2a"), "{err}");
    let _ = std::fs::remove_file(&file);
}
