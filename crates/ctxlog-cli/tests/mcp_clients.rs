//! `ctxlog mcp` against real MCP clients: the official Python SDK (`mcp`
//! on PyPI, pinned) and the MCP Inspector's CLI (npm, pinned). The server
//! is started as an agent starts it, in a project directory whose Claude
//! Code recording it has never seen: it imports the recording itself,
//! finds what the compaction replaced, gives a tool output back whole
//! (its secret redacted, or not with `--no-redact`), pages a long answer
//! by cursor, and says what a compaction replaced.
//!
//! The clients are installed once into `target/` (a venv, an npm prefix);
//! when that cannot be done (no `venv` module, no registry) the tests skip
//! with a message, unless `CTXLOG_REQUIRE_PYTHON=1` or
//! `CTXLOG_REQUIRE_NPM=1` (`.ci/run` sets both).

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned Python SDK.
const PYTHON_SDK: &str = "mcp==2.3.0";
/// The pinned Inspector.
const INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";
/// A secret the recording holds in a tool output.
const SECRET: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";

/// A project directory, a home whose Claude Code recorded one session
/// there (the built-in recording, moved into the project), and an empty
/// store.
struct Setup {
    root: PathBuf,
    project: PathBuf,
    home: PathBuf,
    db: PathBuf,
}

impl Setup {
    fn new(name: &str) -> Setup {
        let root = std::env::temp_dir().join(format!("ctxlog-mcp-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let project = root.join("work/proj");
        let home = root.join("home");
        std::fs::create_dir_all(&project).unwrap();
        let project_text = project.display().to_string();
        let folder: String = project_text
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let claude = home.join(".claude/projects").join(folder);
        std::fs::create_dir_all(&claude).unwrap();
        let fixture = std::fs::read_to_string(
            common::root().join("fixtures/sessions/claude-code/edge-cases.jsonl"),
        )
        .unwrap()
        .replace("/home/dev/proj", &project_text)
        .replace(
            "fn handler_0() -> Result<(), Error>",
            &format!("fn handler_0() -> Result<(), Error> // token {SECRET}"),
        );
        std::fs::write(
            claude.join("7f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f.jsonl"),
            fixture,
        )
        .unwrap();
        let db = root.join("store");
        Setup {
            root,
            project,
            home,
            db,
        }
    }

    /// The command an agent would run, with `extra` server options.
    fn server(&self, extra: &[&str]) -> Vec<String> {
        let mut argv = vec![
            env!("CARGO_BIN_EXE_ctxlog").to_owned(),
            "--db".to_owned(),
            self.db.display().to_string(),
            "mcp".to_owned(),
        ];
        argv.extend(extra.iter().map(|s| s.to_string()));
        argv
    }

    /// A client process run in the project, with the home of the setup.
    fn client(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.current_dir(&self.project)
            .env("HOME", &self.home)
            .env_remove("CTXLOG_DB")
            .env_remove("XDG_DATA_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("CLAUDE_CODE_SESSION_ID");
        c
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// The venv holding the pinned SDK; `None` (skipped) when it cannot be
/// made.
fn python_sdk() -> Option<PathBuf> {
    let venv = common::root().join("target/mcp-venv");
    let python = venv.join("bin/python");
    let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
    let made = python.exists() || ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    let installed = made
        && ok(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            PYTHON_SDK,
        ]));
    if installed {
        return Some(python);
    }
    assert!(
        !required("CTXLOG_REQUIRE_PYTHON"),
        "the MCP Python SDK ({PYTHON_SDK}) could not be installed"
    );
    eprintln!("skipped: the MCP Python SDK ({PYTHON_SDK}) could not be installed");
    None
}

/// Runs the SDK client: `calls` in order against `server`.
fn sdk_calls(setup: &Setup, python: &Path, server: &[String], calls: Value) -> Value {
    let script = common::root().join("crates/ctxlog-cli/tests/mcp/client.py");
    let out = setup
        .client(python)
        .arg(script)
        .arg(calls.to_string())
        .args(server)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "client: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn text_of(result: &Value, i: usize) -> String {
    result["calls"][i]["text"].as_str().unwrap().to_owned()
}

#[test]
fn the_python_sdk_lists_and_calls_every_tool() {
    let Some(python) = python_sdk() else { return };
    let setup = Setup::new("sdk");
    let server = setup.server(&[]);
    let result = sdk_calls(
        &setup,
        &python,
        &server,
        serde_json::json!([
            ["search_history", {"query": "handler_0", "dropped_only": true}],
            ["recall", {"id": "toolu_01Grep"}],
            ["compactions", {}],
            ["search_history", {"query": "nothing-like-this-anywhere"}],
            ["search_history", {"query": "x", "scope": "galaxy"}],
        ]),
    );
    assert_eq!(result["server"], "ctxlog");
    let tools = result["tools"].as_object().unwrap();
    for name in ["search_history", "recall", "compactions"] {
        assert!(tools.contains_key(name), "{tools:?}");
    }
    assert_eq!(
        tools["search_history"]["required"],
        serde_json::json!(["query"])
    );
    // Found in a recording the server imported itself, with its status.
    let found = text_of(&result, 0);
    assert!(found.contains("toolu_01Grep"), "{found}");
    assert!(found.contains("compacted away at seq"), "{found}");
    // Given back whole, the secret replaced by its marker.
    let recalled = text_of(&result, 1);
    assert!(recalled.contains("src/module_2.rs:2"), "{recalled}");
    assert!(!recalled.contains(SECRET), "{recalled}");
    assert!(recalled.contains("REDACTED"), "{recalled}");
    let replaced = text_of(&result, 2);
    assert!(
        replaced.contains("the summary that replaced them"),
        "{replaced}"
    );
    assert!(text_of(&result, 3).starts_with("nothing in this project matches"));
    assert_eq!(result["calls"][4]["error"], true);
    assert!(text_of(&result, 4).contains("galaxy"));

    // As recorded with --no-redact; paged by cursor within --max-bytes.
    let server = setup.server(&["--no-redact", "--max-bytes", "300"]);
    let first = sdk_calls(
        &setup,
        &python,
        &server,
        serde_json::json!([["recall", {"id": "toolu_01Grep"}]]),
    );
    let page = text_of(&first, 0);
    let cursor = page
        .rsplit_once("cursor \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(c, _)| c.to_owned())
        .unwrap_or_else(|| panic!("no cursor: {page}"));
    let second = sdk_calls(
        &setup,
        &python,
        &server,
        serde_json::json!([["recall", {"id": "toolu_01Grep", "cursor": cursor}]]),
    );
    let whole = format!(
        "{}{}",
        page.split("\n\n[… ").next().unwrap(),
        text_of(&second, 0)
    );
    assert!(whole.contains(SECRET), "{whole}");
    assert!(whole.contains("src/module_2.rs:2"), "{whole}");
}

#[test]
fn the_python_sdk_searches_a_postgresql_log_as_a_sled_store() {
    let Some(pg) = ctxlog_testkit::PgDatabase::create("mcp_sdk") else {
        return;
    };
    let Some(python) = python_sdk() else { return };
    let setup = Setup::new("sdk-pg");
    let calls = serde_json::json!([
        ["search_history", {"query": "handler_0", "dropped_only": true}],
        ["recall", {"id": "toolu_01Grep"}],
        ["compactions", {}],
    ]);
    let mut on_pg = setup.server(&[]);
    on_pg[2] = pg.url().to_owned();
    let pg_result = sdk_calls(&setup, &python, &on_pg, calls.clone());
    let found = text_of(&pg_result, 0);
    assert!(found.contains("toolu_01Grep"), "{found}");
    assert!(found.contains("compacted away at seq"), "{found}");
    let recalled = text_of(&pg_result, 1);
    assert!(recalled.contains("src/module_2.rs:2"), "{recalled}");
    assert!(!recalled.contains(SECRET), "{recalled}");
    // What the embedded store answers, word for word.
    let sled_result = sdk_calls(&setup, &python, &setup.server(&[]), calls);
    for i in 0..3 {
        assert_eq!(text_of(&pg_result, i), text_of(&sled_result, i), "call {i}");
    }
}

/// The Inspector's CLI, installed once; `None` (skipped) when npm cannot.
fn inspector() -> Option<PathBuf> {
    let prefix = common::root().join("target/mcp-inspector");
    let bin = prefix.join("node_modules/.bin/mcp-inspector");
    let installed = bin.exists()
        || Command::new("npm")
            .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(INSPECTOR)
            .status()
            .is_ok_and(|s| s.success());
    if installed && bin.exists() {
        return Some(bin);
    }
    assert!(
        !required("CTXLOG_REQUIRE_NPM"),
        "the MCP Inspector ({INSPECTOR}) could not be installed"
    );
    eprintln!("skipped: the MCP Inspector ({INSPECTOR}) could not be installed with npm");
    None
}

#[test]
fn the_inspector_cli_lists_and_calls_the_tools() {
    let Some(bin) = inspector() else { return };
    let setup = Setup::new("inspector");
    let server = setup.server(&[]);
    let run = |extra: &[&str]| -> Value {
        let out = setup
            .client(&bin)
            .arg("--cli")
            .args(&server)
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "inspector {extra:?}: {}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let listed = run(&["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["compactions", "recall", "search_history"]);
    let called = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "search_history",
        "--tool-arg",
        "query=handler_0",
    ]);
    let text = called["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("toolu_01Grep"), "{text}");
    assert_eq!(called["isError"], false);
}
