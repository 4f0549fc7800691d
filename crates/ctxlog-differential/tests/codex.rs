//! Differential test against the real Codex CLI (`@openai/codex`, pinned
//! in [`ctxlog_differential::codex::VERSION`]).
//!
//! Each scenario drives Codex offline (`codex exec`, then `exec resume`)
//! against the scripted Responses API server, imports the rollout it wrote,
//! and checks:
//! - the import labels the session `codex-0.169` and recovers the
//!   configured context window from the 95 % Codex records;
//! - (a) each response's usage is on its own step (Codex writes it after
//!   the items it reports on), a refused request is no step, and each
//!   compaction's own call has its usage on its summary;
//! - (b) ctxlog's window before each agent-loop request, rendered as
//!   Responses API input, equals the `input` Codex sent, roles as sent
//!   (`developer` for its injected context): after a compaction exactly its
//!   replacement history and the summary as a user message. Left out of
//!   the comparison, by name: Codex's instructions (its first input item,
//!   not in the rollout), item `id`s, `status`,
//!   `internal_chat_message_metadata_passthrough` and output-text
//!   `annotations` (none is in the rollout), and tool arguments compared
//!   parsed (ctxlog keeps them as JSON);
//! - (c) ctxlog's overflow decision after every step equals Codex's, and
//!   `simulate` under the preset (its threshold the configured limit's
//!   share of the window) compacts after the same responses;
//! - (d) the compaction's own answer is the summary, not a message.
//!
//! The npm install is cached outside git; when the registry cannot be
//! reached the tests skip with a message.

mod common;

use ctxlog_core::{window, Envelope, Event, PartBody, Policy, SessionState, TokenUsage, ToolState};
use ctxlog_differential::codex::{install, ModelConfig, Sandbox};
use ctxlog_differential::drive::DriveError;
use ctxlog_differential::model_server::{Api, Kind, ModelServer, Reply, Request, Script, Usage};

use ctxlog_import::{Format, ImportOptions};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

/// One scenario at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn codex() -> Option<PathBuf> {
    match install() {
        Ok(js) => Some(js),
        Err(DriveError::Unreachable(why)) => {
            eprintln!("SKIPPED: the Codex differential tests need the npm registry: {why}");
            None
        }
        Err(e) => panic!("installing Codex failed: {e}"),
    }
}

/// In a scenario's prompts: a manual compaction (app-server
/// `thread/compact/start`) instead of a prompt.
const COMPACT: &str = "<compact>";

struct Run {
    _serial: std::sync::MutexGuard<'static, ()>,
    dir: PathBuf,
    requests: Vec<Request>,
    rollout: PathBuf,
    model: ModelConfig,
}

fn run(name: &str, model: ModelConfig, script: Script, prompts: &[&str]) -> Option<Run> {
    let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let js = codex()?;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("codex-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    let server = ModelServer::start_api(Api::OpenAiResponses, script).expect("model server");
    let sandbox = Sandbox::new(js, dir.clone(), &server.base_url(), model).expect("sandbox");
    let mut thread: Option<String> = None;
    for p in prompts {
        if *p == COMPACT {
            let t = thread.as_deref().expect("a thread to compact");
            sandbox.compact(t).unwrap_or_else(|e| panic!("{name}: {e}"));
            continue;
        }
        let t = sandbox
            .exec(p, thread.as_deref())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        thread.get_or_insert(t);
    }
    let thread = thread.expect("a thread");
    let rollout = sandbox.rollout(&thread).expect("the rollout");
    let requests = common::scripted_requests("Codex", name, &dir, &server, true);
    Some(Run {
        _serial: serial,
        dir,
        requests,
        rollout,
        model,
    })
}

/// The rollout imported whole, and at every line end as it grew.
fn import(run: &Run) -> Vec<Envelope> {
    assert!(common::check_every_prefix(&run.rollout, Format::Codex) > 0);
    let file = std::fs::File::open(&run.rollout).unwrap();
    let imported = ctxlog_import::import(
        std::io::BufReader::new(file),
        &run.rollout.display().to_string(),
        Format::Codex,
        &ImportOptions::default(),
    )
    .unwrap_or_else(|e| panic!("ctxlog cannot import the rollout: {e}"));
    imported.events.to_vec().unwrap()
}

/// Agent requests that were answered (a refused one makes no step).
fn answered(run: &Run) -> Vec<&Request> {
    run.requests
        .iter()
        .filter(|r| r.kind == Kind::Agent && !matches!(r.reply, Some(Reply::Error { .. })))
        .collect()
}

/// The usage a scripted response reports, as ctxlog stores Codex's.
fn stored(u: &Usage) -> TokenUsage {
    TokenUsage {
        total: Some(u.total.unwrap_or(u.prompt + u.completion)),
        input: u.prompt - u.cached,
        output: u.completion - u.reasoning,
        reasoning: u.reasoning,
        cache_read: u.cached,
        cache_write: 0,
    }
}

/// (a) and (d): one assistant message per answered agent request (none for
/// the compaction's answer), with its own response's usage; the window
/// recovered.
fn check_usage(run: &Run, events: &[Envelope]) {
    let agent = answered(run);
    let messages = common::assistant_messages(events);
    assert_eq!(
        agent.len(),
        messages.len(),
        "one assistant message per answered agent request, none for a compaction's answer"
    );
    let state = SessionState::replay_keeping_history(events).unwrap();
    for (request, (_, id)) in agent.iter().zip(&messages) {
        let usage = match request.reply.as_ref().unwrap() {
            Reply::Text { usage, .. } | Reply::ToolCalls { usage, .. } => usage,
            Reply::Error { .. } => unreachable!(),
        };
        assert_eq!(
            state.history_message(*id).unwrap().tokens.as_deref(),
            Some(&stored(usage)),
            "request n={}: the step's usage",
            request.n
        );
    }
    assert_eq!(
        state.limits.context, run.model.context,
        "the configured window, recovered from the 95 % Codex records"
    );
    // Every compaction's own call is counted: its usage on its summary.
    let theirs: Vec<Option<TokenUsage>> = run
        .requests
        .iter()
        .filter(|r| r.kind == Kind::Summary)
        .map(|r| match r.reply.as_ref() {
            Some(Reply::Text { usage, .. }) => Some(stored(usage)),
            _ => None,
        })
        .collect();
    let ours: Vec<Option<TokenUsage>> = state
        .messages
        .iter()
        .filter(|m| m.summary)
        .map(|m| m.tokens.as_deref().copied())
        .collect();
    assert_eq!(ours, theirs, "each compaction call's usage, on its summary");
    assert_eq!(state.policy.name, "codex-0.169");
}

/// What Codex sent, less what the window does not hold: its first input
/// item (its instructions), item ids, statuses and metadata; tool
/// arguments parsed.
fn comparable(input: &Value, skip_instructions: bool) -> Value {
    let items = input.as_array().cloned().unwrap_or_default();
    let items = items.into_iter().skip(usize::from(skip_instructions));
    Value::Array(
        items
            .map(|mut item| {
                if let Some(o) = item.as_object_mut() {
                    for k in ["id", "status", "internal_chat_message_metadata_passthrough"] {
                        o.remove(k);
                    }
                    if let Some(Value::String(a)) = o.get("arguments").cloned() {
                        let parsed = serde_json::from_str(&a).unwrap_or(Value::String(a));
                        o.insert("arguments".into(), parsed);
                    }
                    if let Some(Value::Array(content)) = o.get_mut("content") {
                        for c in content {
                            if let Some(c) = c.as_object_mut() {
                                c.remove("annotations");
                            }
                        }
                    }
                }
                item
            })
            .collect(),
    )
}

/// (b) ctxlog's window before each answered agent request equals the input
/// Codex sent. Returns how many were compared.
fn check_windows(run: &Run, events: &[Envelope]) -> usize {
    let agent = answered(run);
    let messages = common::assistant_messages(events);
    for (request, (seq, _)) in agent.iter().zip(&messages) {
        let state = SessionState::replay(events.iter().take(*seq as usize - 1)).unwrap();
        let ours = comparable(
            &Value::Array(ctxlog_providers::Format::Responses.encode(&window(&state))),
            false,
        );
        let theirs = comparable(&request.body["input"], true);
        common::same_window(&run.dir, "Codex", request.n, *seq, &ours, &theirs);
    }
    agent.len()
}

/// (c) ctxlog's decision before every request, under the preset and what
/// the import inferred of the configured limit (nothing is given by
/// hand), equals Codex's; `simulate` under the preset compacts after the
/// same responses. Returns how many compactions.
fn check_decisions(run: &Run, events: &[Envelope]) -> usize {
    let policy = Policy::codex_0_169();
    let n = common::check_decisions_before_requests(events, &policy);
    assert_eq!(common::check_simulation(events, &policy), n);
    // A configured limit under 90 % is recorded as the import inferred it,
    // from the first automatic compaction that shows it.
    let state = SessionState::replay(events).unwrap();
    let limit = run
        .model
        .auto_compact_limit
        .filter(|l| *l * 10 < run.model.context * 9);
    if n > 0 {
        assert_eq!(
            state.policy.threshold(&state.limits),
            Some(limit.unwrap_or(run.model.context * 9 / 10)),
            "the limit in force after the compactions"
        );
    }
    n
}

/// Each tool step's total plus ctxlog's estimate of its outputs, under the
/// Codex preset: the count Codex compares with its limit mid-turn.
fn counts_after_tool_steps(events: &[Envelope]) -> Vec<u64> {
    let e = Policy::codex_0_169().estimator;
    let mut message_of = std::collections::BTreeMap::new();
    let mut totals = Vec::new();
    let mut outputs: std::collections::BTreeMap<_, u64> = std::collections::BTreeMap::new();
    for env in events {
        let (part, body) = match &env.event {
            Event::PartAppended {
                message,
                part,
                body,
                ..
            } => {
                message_of.insert(*part, *message);
                (part, body)
            }
            Event::PartUpdated { part, body } => (part, body),
            Event::StepFinished {
                message, tokens, ..
            } => {
                totals.extend(tokens.total.map(|t| (*message, t)));
                continue;
            }
            _ => continue,
        };
        if let PartBody::Tool {
            call_id,
            state: ToolState::Completed { output, .. },
            ..
        } = body
        {
            *outputs.entry(message_of[part]).or_default() += e.estimate_result(call_id, output);
        }
    }
    totals
        .into_iter()
        .filter_map(|(m, total)| Some(total + outputs.get(&m)?))
        .collect()
}

fn text(t: &str, usage: Usage) -> Reply {
    Reply::Text {
        text: t.into(),
        usage,
    }
}

fn exec(id: &str, command: &str, usage: Usage) -> Reply {
    Reply::ToolCalls {
        calls: vec![(id.into(), "exec_command".into(), json!({"cmd": command}))],
        usage,
    }
}

fn summaries(n: usize) -> VecDeque<Reply> {
    (1..=n)
        .map(|i| text(&format!("SUMMARY {i}: scripted"), Usage::new(500, 50)))
        .collect()
}

/// A configured limit of 80,000 of 100,000: 79,999 does not compact, a
/// turn ending at exactly 80,000 compacts before the next turn's prompt,
/// and that request sends the replacement history and the summary.
#[test]
fn pre_turn_compaction_at_the_configured_limit() {
    let model = ModelConfig {
        context: 100_000,
        auto_compact_limit: Some(80_000),
    };
    let script = Script {
        agent: VecDeque::from(vec![
            exec("call_1", "echo hi", Usage::new(1_000, 10)),
            text("Done (reply-1).", Usage::new(79_000, 999)),
            text("Done (reply-2).", Usage::new(79_000, 1_000)),
            text("Done (reply-3).", Usage::new(3_000, 5)),
        ]),
        summary: summaries(1),
    };
    let Some(run) = run(
        "pre-turn",
        model,
        script,
        &["turn one: run it", "turn two", "turn three"],
    ) else {
        return;
    };
    let events = import(&run);
    check_usage(&run, &events);
    assert_eq!(check_windows(&run, &events), 4);
    assert_eq!(check_decisions(&run, &events), 1);
}

/// No limit configured (90 % of 100,000): a tool step at 91,000 compacts
/// in the middle of the turn, and the loop goes on on the replacement
/// history.
#[test]
fn mid_turn_compaction() {
    let model = ModelConfig {
        context: 100_000,
        auto_compact_limit: None,
    };
    let script = Script {
        agent: VecDeque::from(vec![
            text("Done (reply-1).", Usage::new(20_000, 100)),
            exec("call_1", "echo hi", Usage::new(90_000, 1_000)),
            text("Done (reply-2).", Usage::new(5_000, 100)),
        ]),
        summary: summaries(1),
    };
    let Some(run) = run("mid-turn", model, script, &["turn one", "turn two: run it"]) else {
        return;
    };
    let events = import(&run);
    check_usage(&run, &events);
    assert_eq!(check_windows(&run, &events), 3);
    assert_eq!(check_decisions(&run, &events), 1);
}

/// The provider refuses a request as too long: Codex fails the turn, does
/// not compact, and sends the refused prompt again with the next one.
#[test]
fn a_refused_request_fails_the_turn() {
    let model = ModelConfig {
        context: 100_000,
        auto_compact_limit: None,
    };
    let script = Script {
        agent: VecDeque::from(vec![
            text("Done (reply-1).", Usage::new(20_000, 100)),
            Reply::context_window_exceeded(),
            text("Done (reply-3).", Usage::new(21_000, 100)),
        ]),
        summary: VecDeque::new(),
    };
    let Some(run) = run(
        "refused",
        model,
        script,
        &["turn one", "turn two: too long", "turn three"],
    ) else {
        return;
    };
    let events = import(&run);
    check_usage(&run, &events);
    assert_eq!(check_windows(&run, &events), 2);
    assert_eq!(check_decisions(&run, &events), 0);
}

/// Mid-turn the count is the last response's total plus Codex's estimate
/// of the tool outputs after it (ceil((output + call id bytes) / 4)): with
/// a limit of 80,000, a tool step whose count is 79,999 with its output
/// stays under it; one whose output brings it to exactly 80,000 crosses
/// it, and Codex compacts before the follow-up request.
#[test]
fn the_mid_turn_count_adds_the_tool_outputs() {
    let model = ModelConfig {
        context: 100_000,
        auto_compact_limit: Some(80_000),
    };
    let script = Script {
        agent: VecDeque::from(vec![
            exec("call_1", "echo hi", Usage::new(79_000, 971)),
            exec("call_2", "echo hi", Usage::new(79_000, 972)),
            text("Done (reply-1).", Usage::new(5_000, 100)),
        ]),
        summary: summaries(1),
    };
    let Some(run) = run("mid-turn-count", model, script, &["turn one: run it twice"]) else {
        return;
    };
    let events = import(&run);
    check_usage(&run, &events);
    assert_eq!(check_windows(&run, &events), 3);
    assert_eq!(
        counts_after_tool_steps(&events),
        [79_999, 80_000],
        "the scenario sits on the edge (Codex's output text changed length?)"
    );
    assert_eq!(check_decisions(&run, &events), 1);
}

/// An automatic compaction, then a manual one (app-server
/// `thread/compact/start`), a turn of its own: imported as manual, its
/// answer the summary, and the next turn's request sends the replacement
/// history (without the first summary) and the second summary.
#[test]
fn an_automatic_compaction_then_a_manual_one() {
    let model = ModelConfig {
        context: 100_000,
        auto_compact_limit: None,
    };
    let script = Script {
        agent: VecDeque::from(vec![
            exec("call_1", "echo hi", Usage::new(10_000, 10)),
            text("Done (reply-1).", Usage::new(11_000, 100)),
            text("Done (reply-2).", Usage::new(90_000, 100)),
            text("Done (reply-3).", Usage::new(4_000, 100)),
            text("Done (reply-4).", Usage::new(5_000, 100)),
        ]),
        summary: summaries(2),
    };
    let Some(run) = run(
        "manual",
        model,
        script,
        &[
            "turn one: run it",
            "turn two",
            "turn three",
            COMPACT,
            "turn four",
        ],
    ) else {
        return;
    };
    let events = import(&run);
    check_usage(&run, &events);
    assert_eq!(check_windows(&run, &events), 5);
    assert_eq!(check_decisions(&run, &events), 1);
    let kinds: Vec<bool> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::CompactionRequested { auto, .. } => Some(*auto),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [true, false],
        "the automatic one, then the manual one"
    );
}

/// A 44,000-character output: Codex cuts what it sends to about 10,000
/// characters (head and tail, with its note) and records the same cut
/// text, which ctxlog keeps and sends.
#[test]
fn big_tool_outputs_are_stored_as_cut() {
    let model = ModelConfig {
        context: 100_000,
        auto_compact_limit: None,
    };
    let script = Script {
        agent: VecDeque::from(vec![
            exec(
                "call_1",
                "yes 0123456789abcdef | tr -d '\\n' | head -c 44000",
                Usage::new(10_000, 10),
            ),
            text("Done (reply-1).", Usage::new(20_000, 100)),
        ]),
        summary: VecDeque::new(),
    };
    let Some(run) = run("big-outputs", model, script, &["turn one: a big output"]) else {
        return;
    };
    let events = import(&run);
    check_usage(&run, &events);
    assert_eq!(check_windows(&run, &events), 2);
    let output = run.requests[1].body["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .and_then(|i| i["output"].as_str())
        .expect("the output sent")
        .to_owned();
    assert!(
        output.len() < 12_000 && output.contains("truncated output"),
        "Codex cut the 44,000 characters: {} sent",
        output.len()
    );
}
