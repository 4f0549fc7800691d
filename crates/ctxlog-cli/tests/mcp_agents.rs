//! `ctxlog mcp` in the real agents, driven offline by a scripted model
//! server, each with the server configured as `ctxlog mcp install` writes
//! it: a tool prints a unique line, a compaction replaces it, and then the
//! scripted model calls ctxlog's search tool; the tool result the agent
//! sends back to the model holds the line verbatim, found in the session's
//! own recording, which the server imported itself. pi has no MCP client.
//!
//! The agents are the pinned ones of `ctxlog-differential`, installed once
//! into its cache; a test skips with a message when the npm registry
//! cannot be reached.

mod common;

use ctxlog_differential::claude_code;
use ctxlog_differential::drive::DriveError;
use ctxlog_differential::model_server::{Api, ModelServer, Reply, Script, Usage};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The line a tool prints, which the compaction replaces.
const LINE: &str = "MIGRATION-7f3a rows affected: 4242";

fn text(t: &str) -> Reply {
    Reply::Text {
        text: t.into(),
        usage: Usage::new(2_000, 20),
    }
}

fn call(id: &str, name: &str, input: Value) -> Reply {
    Reply::ToolCalls {
        calls: vec![(id.into(), name.into(), input)],
        usage: Usage::new(2_000, 20),
    }
}

/// Writes the agent's MCP configuration with this build's `ctxlog mcp
/// install`, the store at `db`, as a user would in `project`.
fn install(agent: &str, db: &Path, project: &Path, home: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .arg("--db")
        .arg(db)
        .args(["mcp", "install", "--agent", agent, "--project"])
        .arg(project)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mcp install: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every text the agent sent back as a tool result, in order.
fn tool_results(requests: &[ctxlog_differential::model_server::Request]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(last) = requests
        .iter()
        .rev()
        .find(|r| r.body["messages"].is_array())
    else {
        return out;
    };
    for m in last.body["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                let text = match &b["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join(""),
                    _ => String::new(),
                };
                out.push(text);
            }
        }
    }
    out
}

fn skipped(agent: &str, e: DriveError) -> Option<PathBuf> {
    match e {
        DriveError::Unreachable(why) => {
            eprintln!("SKIPPED: the {agent} MCP test needs the npm registry: {why}");
            None
        }
        e => panic!("installing {agent} failed: {e}"),
    }
}

#[test]
fn claude_code_finds_what_its_compaction_replaced() {
    let Some(bin) = claude_code::install().map_or_else(|e| skipped("Claude Code", e), Some) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("ctxlog-mcp-claude-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let script = Script {
        agent: VecDeque::from(vec![
            call(
                "toolu_01Migrate",
                "Bash",
                json!({"command": format!("echo '{LINE}'"), "description": "Run the migration"}),
            ),
            text("The migration ran."),
            call(
                "toolu_02Search",
                "mcp__ctxlog__search_history",
                json!({"query": "\"MIGRATION-7f3a\"", "scope": "session"}),
            ),
            text("It printed the row count."),
        ]),
        summary: VecDeque::from(vec![text(
            "<analysis>scripted</analysis>\n<summary>A migration was run.</summary>",
        )]),
    };
    let server = ModelServer::start_api(Api::AnthropicMessages, script).expect("model server");
    // MCP tools are loaded up front (not through ToolSearch) so the
    // scripted model can call one by name.
    let sandbox = claude_code::Sandbox::new(
        bin,
        dir.clone(),
        &server.origin(),
        "claude-sonnet-4-6",
        &[("ENABLE_TOOL_SEARCH", "false")],
    )
    .expect("sandbox");
    let project = std::fs::canonicalize(dir.join("project")).unwrap();
    install(
        "claude-code",
        &dir.join("store"),
        &project,
        &dir.join("home"),
    );
    let first = sandbox
        .prompt("Run the migration.", None)
        .expect("prompt 1");
    let session = first["session_id"]
        .as_str()
        .expect("a session id")
        .to_owned();
    sandbox.prompt("/compact", Some(&session)).expect("compact");
    let last = sandbox
        .prompt("What did the migration print?", Some(&session))
        .expect("prompt 3");
    assert_eq!(last["is_error"], false, "{last}");
    let requests = server.requests();
    let results = tool_results(&requests);
    let found = results
        .iter()
        .find(|t| t.contains("hits for"))
        .unwrap_or_else(|| panic!("no ctxlog tool result in {results:#?}"));
    assert!(found.contains(LINE), "{found}");
    assert!(found.contains("compacted away at seq"), "{found}");
    assert!(found.contains("toolu_01Migrate"), "{found}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every output Codex sent back for a function call, in order.
fn codex_outputs(requests: &[ctxlog_differential::model_server::Request]) -> Vec<String> {
    requests
        .iter()
        .flat_map(|r| r.body["input"].as_array().cloned().unwrap_or_default())
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| match &i["output"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[test]
fn codex_finds_what_its_automatic_compaction_replaced() {
    use ctxlog_differential::codex;
    let Some(js) = codex::install().map_or_else(|e| skipped("Codex", e), Some) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("ctxlog-mcp-codex-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let usage = |prompt, completion| Usage::new(prompt, completion);
    let script = Script {
        agent: VecDeque::from(vec![
            Reply::ToolCalls {
                calls: vec![(
                    "call_migrate".into(),
                    "exec_command".into(),
                    json!({"cmd": format!("echo '{LINE}'")}),
                )],
                usage: usage(1_000, 10),
            },
            // The turn ends at the configured limit: Codex compacts before
            // the next prompt.
            Reply::Text {
                text: "The migration ran.".into(),
                usage: usage(79_000, 1_000),
            },
            Reply::ToolCalls {
                calls: vec![(
                    "call_search".into(),
                    "mcp__ctxlog::search_history".into(),
                    json!({"query": "\"MIGRATION-7f3a\"", "scope": "session"}),
                )],
                usage: usage(3_000, 10),
            },
            Reply::Text {
                text: "It printed the row count.".into(),
                usage: usage(3_000, 10),
            },
        ]),
        summary: VecDeque::from(vec![Reply::Text {
            text: "SUMMARY: a migration was run.".into(),
            usage: usage(500, 50),
        }]),
    };
    let server = ModelServer::start_api(Api::OpenAiResponses, script).expect("model server");
    let model = codex::ModelConfig {
        context: 100_000,
        auto_compact_limit: Some(80_000),
    };
    let sandbox = codex::Sandbox::new(js, dir.clone(), &server.base_url(), model).expect("sandbox");
    let home = dir.join("home");
    let project = std::fs::canonicalize(dir.join("project")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .arg("--db")
        .arg(dir.join("store"))
        .args([
            "mcp",
            "install",
            "--agent",
            "codex",
            "--scope",
            "user",
            "--project",
        ])
        .arg(&project)
        .env("HOME", &home)
        .env("CODEX_HOME", home.join(".codex"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let thread = sandbox.exec("Run the migration.", None).expect("turn 1");
    sandbox
        .exec("What did the migration print?", Some(&thread))
        .expect("turn 2");
    let requests = server.requests();
    let outputs = codex_outputs(&requests);
    let log = std::fs::read_to_string(dir.join("exec.log")).unwrap_or_default();
    let found = outputs
        .iter()
        .find(|t| t.contains("hits for"))
        .unwrap_or_else(|| panic!("no ctxlog tool result in {outputs:#?}\n{log}"));
    assert!(found.contains(LINE), "{found}");
    assert!(found.contains("compacted away at seq"), "{found}");
    assert!(found.contains("call_migrate"), "{found}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every tool result OpenCode sent in its last request, in order.
fn opencode_tool_results(requests: &[ctxlog_differential::model_server::Request]) -> Vec<String> {
    requests
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Seven turns of large tool outputs (the first printing the line) make
/// OpenCode prune the first two; the scripted model then finds the line
/// pruned; an answer at the usable limit compacts; it finds the line
/// again, compacted away.
#[test]
fn opencode_finds_what_pruning_and_then_compaction_took() {
    use ctxlog_differential::opencode;
    let bin = match opencode::install() {
        Ok(bin) => bin,
        Err(e) => {
            skipped("OpenCode", e);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("ctxlog-mcp-opencode-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut script = Script::default();
    let big = "for i in $(seq 1 440); do printf '%099d\\n' $i; done";
    for n in 1..=7u64 {
        let command = if n == 1 {
            format!("echo '{LINE}'; {big}")
        } else {
            big.to_owned()
        };
        script.agent.push_back(Reply::bash(
            &format!("call_{n:04}"),
            &command,
            5_000 + n * 11_000,
            20,
        ));
        script.agent.push_back(Reply::text(
            &format!("Turn {n} done."),
            6_000 + n * 11_000,
            5,
        ));
    }
    let search = |id: &str| Reply::ToolCalls {
        calls: vec![(
            id.into(),
            "ctxlog_search_history".into(),
            json!({"query": "\"MIGRATION-7f3a\"", "scope": "session"}),
        )],
        usage: Usage::new(90_000, 20),
    };
    script.agent.extend([
        search("call_search_1"),
        // 395,997 + 3 = the usable 396,000: OpenCode compacts.
        Reply::text("Found it.", 395_997, 3),
        Reply::text("Resumed.", 5_000, 3),
        search("call_search_2"),
        Reply::text("Found it again.", 6_000, 3),
    ]);
    script.summary.push_back(Reply::text(
        "## Objective\n- Run the migrations.",
        9_000,
        20,
    ));
    let server = ModelServer::start(script).expect("model server");
    let model = opencode::ModelConfig {
        context: 400_000,
        output: 4_000,
        prune: true,
    };
    let sandbox =
        opencode::Sandbox::new(bin, dir.clone(), &server.base_url(), model).expect("sandbox");
    let project = std::fs::canonicalize(sandbox.project()).unwrap();
    install("opencode", &dir.join("store"), &project, &dir.join("home"));
    let oc = opencode::Server::start(&sandbox).expect("opencode serve");
    let id = oc.create_session().expect("session");
    for n in 1..=7 {
        oc.prompt(&id, &format!("turn {n}")).expect("prompt");
    }
    oc.prompt(&id, "What did the first migration print?")
        .expect("prompt 8");
    oc.prompt(&id, "And now?").expect("prompt 9");
    drop(oc);
    let results = opencode_tool_results(&server.requests());
    let found: Vec<&String> = results.iter().filter(|t| t.contains("hits for")).collect();
    assert!(!found.is_empty(), "no ctxlog tool result in {results:#?}");
    assert!(found[0].contains(LINE), "{}", found[0]);
    assert!(found[0].contains("pruned at seq"), "{}", found[0]);
    let last = found.last().unwrap();
    assert!(
        last.contains(LINE) && last.contains("compacted away at seq"),
        "{last}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
