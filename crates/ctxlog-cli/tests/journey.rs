//! Day two, as a user lives it: a home laid out as the four agents keep
//! their sessions (one recording of each, from `fixtures/`, in three
//! projects), then `import --discover`, `sessions` at 50, 60, 100 and 200
//! columns, `usage` by day and by project, `timeline`, `report`,
//! `simulate --keep`, and `sessions` again. Checks the rows and the
//! figures, not only that the commands succeed.

mod common;

use common::{ctxlog_home, root};
use ctxlog_testkit::TempDir;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Each agent's fixture, where it goes under the home, the project
/// directory it is moved to, and its first prompt (the title it gets).
const RECORDINGS: [(&str, &str, &str, &str); 4] = [
    (
        "claude-code/edge-cases.jsonl",
        ".claude/projects/-home-ada-src-webapp/7f1c2d3e.jsonl",
        "/home/ada/src/webapp",
        "Find every handler that can fail and list them. ✓ ünïcödé",
    ),
    (
        "codex/edge-cases.jsonl",
        ".codex/sessions/2025/09/25/rollout-2025-09-25T01-00-00-01997e76.jsonl",
        "/home/ada/src/api",
        "List the pages and find the one that fetches teams.",
    ),
    (
        "pi/edge-cases.jsonl",
        ".pi/agent/sessions/--home-ada-work-tool--/5e1f0c2a.jsonl",
        "/home/ada/work/tool",
        "Read the theme docs and port the selector.",
    ),
    (
        "opencode/compacted-and-pruned.json",
        ".local/share/opencode/storage",
        "/home/ada/src/webapp",
        "Fix failing parser test",
    ),
];

/// The directory every fixture was recorded in.
const FIXTURE_DIRECTORY: &str = "/home/dev/proj";

/// A home holding one recording of each agent, each moved to its project.
fn home(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    for (fixture, at, project, _) in RECORDINGS {
        let text = std::fs::read_to_string(root().join("fixtures/sessions").join(fixture))
            .unwrap()
            .replace(FIXTURE_DIRECTORY, project);
        let at = home.join(at);
        if fixture.starts_with("opencode/") {
            common::write_storage(&at, &serde_json::from_str(&text).unwrap());
        } else {
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        }
    }
    home
}

struct User {
    home: PathBuf,
    db: PathBuf,
}

impl User {
    /// `ctxlog args` in a terminal `columns` wide (`None`: piped), which
    /// must succeed.
    fn run(&self, columns: Option<usize>, args: &[&str]) -> String {
        let mut c = ctxlog_home(&self.home, &self.db, args);
        c.env("TZ", "UTC");
        if let Some(n) = columns {
            c.env("COLUMNS", n.to_string());
        }
        let out: Output = c.output().expect("run ctxlog");
        assert!(
            out.status.success(),
            "ctxlog {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let text = self.run(None, &all);
        let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(doc["ok"], true, "{args:?}: {doc}");
        doc
    }
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn day_two_list_usage_timeline_report_and_simulations() {
    let dir = TempDir::new("journey");
    let user = User {
        home: home(dir.path()),
        db: dir.join("store"),
    };

    // Discover: the four sessions.
    let found = user.json(&["import", "--discover"]);
    assert_eq!(n(&found["imported"]), 4, "{found}");

    // The list: a title and a project for every session.
    let listed = user.json(&["sessions"]);
    let rows = listed["sessions"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 4, "{listed}");
    for (_, _, project, title) in RECORDINGS {
        let row = rows
            .iter()
            .find(|r| r["title"] == title)
            .unwrap_or_else(|| panic!("no session titled {title:?}: {listed}"));
        let last_two = project.rsplitn(3, '/').take(2).collect::<Vec<_>>();
        let want = format!("{}/{}", last_two[1], last_two[0]);
        assert_eq!(row["project"], want.as_str(), "{row}");
        assert_eq!(row["directory"], project, "{row}");
        assert!(row["simulation"].is_null(), "{row}");
    }
    // pi and OpenCode record their cost; Claude Code and Codex do not.
    let cost = |agent: &str| {
        rows.iter()
            .find(|r| r["agent"].as_str().unwrap().starts_with(agent))
            .map(|r| r["cost_usd"].clone())
            .unwrap()
    };
    assert!(cost("pi").as_f64().unwrap() > 0.0);
    assert!(cost("opencode").as_f64().unwrap() > 0.0);
    assert!(cost("claude-code").is_null() && cost("codex").is_null());

    // The table at four widths.
    let wide = user.run(Some(200), &["sessions"]);
    let header = wide.lines().next().unwrap();
    for column in [
        "ID",
        "DATE (UTC)",
        "AGENT",
        "MODEL",
        "PROJECT",
        "STEPS",
        "PEAK",
        "COST",
        "COMP",
        "PRUNE",
        "TITLE",
    ] {
        assert!(header.contains(column), "{header}");
    }
    for (_, _, _, title) in RECORDINGS {
        assert!(
            wide.contains(title),
            "the whole title at 200 columns: {wide}"
        );
    }
    assert!(
        wide.contains("src/webapp") && wide.contains("work/tool"),
        "{wide}"
    );
    for width in [60, 100, 200] {
        let table = user.run(Some(width), &["sessions"]);
        assert_eq!(
            table.lines().count(),
            5,
            "a header and 4 rows at {width}: {table}"
        );
        for line in table.lines() {
            assert!(
                line.chars().count() <= width,
                "{line:?} is wider than {width}"
            );
        }
        let header = table.lines().next().unwrap();
        assert!(
            header.starts_with("ID ") && header.ends_with("TITLE"),
            "{header}"
        );
        // The titles give way, never the ids.
        for row in &rows {
            let name = row["source_session"].as_str().unwrap();
            assert!(
                table
                    .lines()
                    .any(|l| name.starts_with(l.split_whitespace().next().unwrap())),
                "{name} at {width}: {table}"
            );
        }
    }
    let narrow = user.run(Some(50), &["sessions"]);
    assert!(
        !narrow.starts_with("ID "),
        "compact under 60 columns: {narrow}"
    );
    assert_eq!(
        narrow.split("\n\n").count(),
        4,
        "a block per session: {narrow}"
    );
    for line in narrow.lines() {
        assert!(line.chars().count() <= 50, "{line:?}");
    }
    assert!(narrow.contains("Fix failing parser test"), "{narrow}");

    // Usage by day and by project agrees with the sessions' own steps.
    let mut steps_by_session = BTreeMap::new();
    let mut total_by_session = BTreeMap::new();
    for row in &rows {
        let id = row["session"].as_str().unwrap();
        let t = user.json(&["timeline", id]);
        let steps = t["steps"].as_array().unwrap();
        total_by_session.insert(
            id.to_owned(),
            steps.iter().map(|s| n(&s["tokens"]["total"])).sum::<u64>(),
        );
        steps_by_session.insert(id.to_owned(), n(&row["steps"]));
        assert_eq!(steps.len() as u64, n(&row["steps"]), "{id}");
    }
    let by_day = user.json(&["usage", "--by", "day"]);
    let days = by_day["groups"].as_array().unwrap();
    assert!(!days.is_empty());
    for d in days {
        let key = d["key"].as_str().unwrap();
        assert!(key.len() == 10 && key.as_bytes()[4] == b'-', "{key}");
    }
    // The summaries' calls count too: at least the steps' totals.
    let steps_total: u64 = total_by_session.values().sum();
    let all_steps: u64 = steps_by_session.values().sum();
    assert_eq!(n(&by_day["total"]["steps"]), all_steps, "{by_day}");
    assert!(n(&by_day["total"]["total"]) >= steps_total, "{by_day}");
    assert_eq!(
        days.iter().map(|d| n(&d["total"])).sum::<u64>(),
        n(&by_day["total"]["total"]),
        "the total row is the sum of the days"
    );
    let by_project = user.json(&["usage", "--by", "project"]);
    let projects: BTreeMap<String, Value> = by_project["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["key"].as_str().unwrap().to_owned(), g.clone()))
        .collect();
    assert_eq!(
        projects.keys().collect::<Vec<_>>(),
        ["src/api", "src/webapp", "work/tool"],
        "{by_project}"
    );
    let steps_of = |agents: &[&str]| -> u64 {
        rows.iter()
            .filter(|r| {
                agents
                    .iter()
                    .any(|a| r["agent"].as_str().unwrap().starts_with(a))
            })
            .map(|r| n(&r["steps"]))
            .sum()
    };
    assert_eq!(
        n(&projects["src/webapp"]["steps"]),
        steps_of(&["claude-code", "opencode"])
    );
    assert_eq!(n(&projects["src/api"]["steps"]), steps_of(&["codex"]));
    // pi's project: the cost its first answer recorded, and estimates for
    // the answers that recorded none (the fixture's later ones).
    let tool = &projects["work/tool"];
    assert_eq!(tool["cost_estimated"], true, "{tool}");
    assert!(
        tool["cost_usd"].as_f64().unwrap() > cost("pi").as_f64().unwrap(),
        "{tool}"
    );
    // Claude Code's and Codex's are estimated from list prices.
    assert_eq!(projects["src/api"]["cost_estimated"], true);
    let text = user.run(Some(120), &["usage", "--by", "project"]);
    assert!(text.lines().any(|l| l.starts_with("TOTAL")), "{text}");
    assert!(text.contains("~$"), "an estimate is marked: {text}");

    // The timeline and the report of each session.
    // Every line fits: the heading goes on over lines at its ` · `, the
    // WHAT of a step and of an audit line over the next lines (they went
    // past 60 columns, and an audit's WHAT was cut at 80).
    for row in &rows {
        let id = row["session"].as_str().unwrap();
        for width in [60, 100] {
            let table = user.run(Some(width), &["timeline", id]);
            let header = table.lines().find(|l| l.starts_with("SEQ")).unwrap();
            assert!(header.contains("TOTAL"), "{table}");
            for line in table.lines().filter(|l| !l.contains(" · peak ")) {
                assert!(line.chars().count() <= width, "{line:?} at {width}");
            }
        }
        let audit = user.run(Some(80), &["audit", id]);
        for line in audit.lines() {
            assert!(line.chars().count() <= 80, "{line:?}");
        }
        assert!(!audit.contains('…'), "{audit}");
    }
    // The column the list is sorted by is never left out to fit.
    let by_peak = user.run(Some(80), &["sessions", "--sort", "peak", "--desc"]);
    assert!(
        by_peak.lines().next().unwrap().contains("PEAK"),
        "{by_peak}"
    );
    let page = dir.join("report.html");
    let opencode = rows
        .iter()
        .find(|r| r["agent"].as_str().unwrap().starts_with("opencode"))
        .unwrap();
    user.run(
        None,
        &[
            "report",
            opencode["session"].as_str().unwrap(),
            "--out",
            page.to_str().unwrap(),
        ],
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg id=\"chart\""), "the page has its chart");

    // A what-if, kept: the list stays the recordings', the simulation is
    // listed apart.
    let claude = rows
        .iter()
        .find(|r| r["agent"].as_str().unwrap().starts_with("claude-code"))
        .unwrap();
    let file = user.home.join(RECORDINGS[0].1);
    user.run(
        None,
        &[
            "simulate",
            file.to_str().unwrap(),
            "--policy",
            "opencode-1.17",
            "--keep",
        ],
    );
    let again = user.json(&["sessions"]);
    assert_eq!(
        again["sessions"], listed["sessions"],
        "the list is unchanged"
    );
    let kept = user.json(&["sessions", "--simulations"]);
    let kept = kept["sessions"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0]["simulation"]["of"], claude["source_session"]);
    assert_eq!(kept[0]["simulation"]["policy"], "opencode-1.17");
    let simulations = user.run(Some(100), &["sessions", "--simulations"]);
    let row = simulations.lines().nth(1).unwrap();
    assert!(
        row.starts_with("7f1c2d3e@opencode-1.17 "),
        "its id names the policy: {simulations}"
    );
    // Usage leaves the simulation out: it never called a model.
    let after = user.json(&["usage", "--by", "day"]);
    assert_eq!(after["total"], by_day["total"]);
}
