//! Differential test against the real pi coding agent
//! (`@mariozechner/pi-coding-agent`, pinned in
//! [`ctxlog_differential::pi::VERSION`]).
//!
//! Each scenario drives pi offline in RPC mode against the scripted
//! Anthropic Messages server, keeps every request the model received and
//! every line pi printed, imports the session file pi wrote, and checks:
//! - the import labels the session `pi-0.73`;
//! - (a) each answer's usage is on its own step, and a request the
//!   provider refused is no step;
//! - (b) ctxlog's window before each agent-loop request, rendered as
//!   Anthropic messages, equals the `messages` pi sent (its
//!   `cache_control` marks aside: pi injects nothing else);
//! - (c) `simulate` under the session's own policy compacts after exactly
//!   the answers (and refused requests) pi compacted after, and ctxlog's
//!   overflow decision after every step equals pi's;
//! - (d) pi's own compactions are imported as pi made them: the reason pi
//!   announced (`compaction_end`: threshold, overflow, manual) and its
//!   `tokensBefore`.
//!
//! The npm install is cached outside git; when the registry cannot be
//! reached the tests skip with a message. Scenarios run one at a time.

mod common;

use ctxlog_core::{window, CompactionTrigger, Envelope, Event, SessionState, TokenUsage};
use ctxlog_differential::drive::DriveError;
use ctxlog_differential::model_server::{Api, Kind, ModelServer, Reply, Request, Script, Usage};
use ctxlog_differential::pi::{install, ModelConfig, Rpc, Sandbox};

use ctxlog_import::{Format, ImportOptions, LimitOverrides};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

/// One scenario at a time: each runs pi (Node) on 2 cores.
static SERIAL: Mutex<()> = Mutex::new(());

/// The model every scenario declares: Claude Sonnet 4.5's limits.
fn model() -> ModelConfig {
    ModelConfig {
        id: "claude-sonnet-4-5-20250929".into(),
        context: 200_000,
        output: 64_000,
        reserve_tokens: None,
        keep_recent_tokens: None,
    }
}

/// pi's threshold for [`model`]: 200,000 − 16,384.
const THRESHOLD: u64 = 183_616;

/// The pinned pi's `cli.js`, or `None` (with a message) when npm cannot
/// reach its registry.
fn pi() -> Option<PathBuf> {
    match install() {
        Ok(cli) => Some(cli),
        Err(DriveError::Unreachable(why)) => {
            eprintln!("SKIPPED: the pi differential tests need the npm registry: {why}");
            None
        }
        Err(e) => panic!("installing pi failed: {e}"),
    }
}

/// What a scenario does.
enum Action {
    Prompt(&'static str),
    Compact(&'static str),
}

/// What one run left behind.
struct Run {
    _serial: std::sync::MutexGuard<'static, ()>,
    dir: PathBuf,
    requests: Vec<Request>,
    /// Every line pi printed on stdout.
    rpc: Vec<Value>,
    session: PathBuf,
}

fn run(name: &str, script: Script, actions: &[Action]) -> Option<Run> {
    let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let cli = pi()?;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pi-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    let server = ModelServer::start_api(Api::AnthropicMessages, script).expect("model server");
    let sandbox = Sandbox::new(cli, dir.clone(), &server.origin(), model()).expect("sandbox");
    let mut rpc = Rpc::start(&sandbox).expect("pi --mode rpc");
    for a in actions {
        match a {
            Action::Prompt(text) => rpc
                .prompt(text)
                .unwrap_or_else(|e| panic!("{name}: prompt {text:?}: {e}")),
            Action::Compact(text) => {
                rpc.compact(text)
                    .unwrap_or_else(|e| panic!("{name}: compact: {e}"));
            }
        }
    }
    let session = rpc.session_file().expect("pi's session file");
    let lines = std::mem::take(&mut rpc.log);
    drop(rpc);
    let requests = common::scripted_requests("pi", name, &dir, &server, false);
    let rpc_log: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(dir.join("rpc.jsonl"), rpc_log).unwrap();
    assert!(
        session.starts_with(&dir),
        "{name}: pi wrote its session outside the sandbox: {}",
        session.display()
    );
    Some(Run {
        _serial: serial,
        dir,
        requests,
        rpc: lines,
        session,
    })
}

/// The session file imported into ctxlog with the model's limits (and, as
/// it grew, at every line end).
fn import(run: &Run) -> Vec<Envelope> {
    assert!(common::check_every_prefix(&run.session, Format::Pi) > 0);
    let m = model();
    let options = ImportOptions {
        limits: LimitOverrides {
            context: Some(m.context),
            output: Some(m.output),
            ..LimitOverrides::default()
        },
        ..ImportOptions::default()
    };
    let file = std::fs::File::open(&run.session).unwrap();
    let imported = ctxlog_import::import(
        std::io::BufReader::new(file),
        &run.session.display().to_string(),
        Format::Pi,
        &options,
    )
    .unwrap_or_else(|e| panic!("ctxlog cannot import pi's session: {e}"));
    imported.events.to_vec().unwrap()
}

fn agent_requests(run: &Run) -> Vec<&Request> {
    run.requests
        .iter()
        .filter(|r| r.kind == Kind::Agent)
        .collect()
}

/// The usage a scripted reply reports, as pi records it.
fn reported(usage: &Usage) -> TokenUsage {
    TokenUsage {
        total: Some(usage.prompt + usage.completion + usage.cached + usage.cache_write),
        input: usage.prompt,
        output: usage.completion,
        reasoning: 0,
        cache_read: usage.cached,
        cache_write: usage.cache_write,
    }
}

/// (a) Each agent request's answer is one assistant message whose step
/// carries exactly the usage the server reported; a refused request's
/// message has no step and an overflow error.
fn check_usage(run: &Run, events: &[Envelope]) {
    let agent = agent_requests(run);
    let messages = common::assistant_messages(events);
    assert_eq!(
        agent.len(),
        messages.len(),
        "one assistant message per agent request"
    );
    let state = SessionState::replay_keeping_history(events).unwrap();
    for (request, (_, id)) in agent.iter().zip(&messages) {
        let m = state.history_message(*id).unwrap();
        match request.reply.as_ref().unwrap() {
            Reply::Text { usage, .. } | Reply::ToolCalls { usage, .. } => {
                assert_eq!(
                    m.tokens.as_deref(),
                    Some(&reported(usage)),
                    "request n={}: the step's usage",
                    request.n
                );
            }
            Reply::Error { .. } => {
                assert!(m.finish.is_none(), "n={}: a refusal is no step", request.n);
                assert_eq!(
                    m.error.as_ref().map(|e| e.name.as_str()),
                    Some(ctxlog_core::window::CONTEXT_OVERFLOW_ERROR),
                    "n={}: the refusal's error",
                    request.n
                );
            }
        }
    }
}

/// `v` without its `cache_control` marks (transport, not content).
fn without_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_cache_control).collect()),
        v => v.clone(),
    }
}

/// (b) ctxlog's window before each agent request equals what pi sent.
/// Returns how many requests were compared.
fn check_windows(run: &Run, events: &[Envelope]) -> usize {
    let agent = agent_requests(run);
    let messages = common::assistant_messages(events);
    for (request, (seq, _)) in agent.iter().zip(&messages) {
        let state = SessionState::replay(events.iter().take(*seq as usize - 1)).unwrap();
        let ours = Value::Array(ctxlog_providers::Format::Anthropic.encode(&window(&state)));
        let theirs = without_cache_control(&request.body["messages"]);
        common::same_window(&run.dir, "pi", request.n, *seq, &ours, &theirs);
    }
    agent.len()
}

/// The reasons pi announced for its compactions, in order.
fn announced(run: &Run) -> Vec<(String, Option<u64>)> {
    run.rpc
        .iter()
        .filter(|v| v["type"] == "compaction_end" && v["result"].is_object())
        .map(|v| {
            (
                v["reason"].as_str().unwrap_or("").to_owned(),
                v["result"]["tokensBefore"].as_u64(),
            )
        })
        .collect()
}

/// (d) Every compaction pi made is imported as pi made it: its reason
/// (automatic, overflow, manual) and its `tokensBefore`. Returns the
/// reasons.
fn check_compactions(run: &Run, events: &[Envelope]) -> Vec<String> {
    let ours: Vec<(String, Option<u64>)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::CompactionRequested {
                auto,
                overflow,
                trigger,
                ..
            } => {
                let reason = match (auto, overflow) {
                    (false, _) => "manual",
                    (true, true) => "overflow",
                    (true, false) => "threshold",
                };
                let before = match trigger {
                    CompactionTrigger::Recorded { tokens_before, .. } => *tokens_before,
                    _ => None,
                };
                Some((reason.to_owned(), before))
            }
            _ => None,
        })
        .collect();
    let theirs = announced(run);
    assert_eq!(
        ours, theirs,
        "the compactions as imported | as pi announced them"
    );
    theirs.into_iter().map(|(r, _)| r).collect()
}

/// (c) After every step, ctxlog's overflow decision under the session's
/// policy equals pi's (an automatic threshold compaction follows exactly
/// the steps ctxlog says overflow, and never a tool step), and `simulate`
/// compacts after exactly the answers and refusals pi compacted after.
fn check_decisions(events: &[Envelope]) -> usize {
    let policy = match &events[0].event {
        Event::SessionStarted { policy, .. } => policy.clone(),
        e => panic!("first event is {}", e.kind()),
    };
    assert_eq!(policy.name, "pi-0.73", "a pi session is labelled pi-0.73");
    let mut state = SessionState::new();
    for (i, e) in events.iter().enumerate() {
        state.evolve(e).unwrap();
        let Event::StepFinished { tokens, reason, .. } = &e.event else {
            continue;
        };
        let theirs = events[i + 1..]
            .iter()
            .find_map(|n| match &n.event {
                Event::MessageAppended { .. } => Some(false),
                Event::CompactionRequested { auto, overflow, .. } => Some(*auto && !*overflow),
                _ => None,
            })
            .unwrap_or(false);
        let run_ends = *reason != ctxlog_core::FinishReason::ToolCalls;
        let ours = run_ends && policy.check_overflow(&state.limits, tokens).overflow;
        assert_eq!(
            ours, theirs,
            "step at seq {} ({tokens:?}, {reason:?}): ctxlog says compact = {ours}, pi compacted = {theirs}",
            e.seq
        );
    }
    common::check_simulation(events, &policy)
}

fn check_all(run: &Run) -> (usize, Vec<String>) {
    let events = import(run);
    check_usage(run, &events);
    let compared = check_windows(run, &events);
    check_decisions(&events);
    let reasons = check_compactions(run, &events);
    (compared, reasons)
}

/// Usage with every count of the Anthropic API.
fn split(input: u64, cache_read: u64, cache_write: u64, output: u64) -> Usage {
    Usage {
        prompt: input,
        completion: output,
        cached: cache_read,
        cache_write,
        ..Usage::new(input, output)
    }
}

/// A `bash` call printing `chars` characters (no newline).
fn output_of(id: &str, chars: usize, usage: Usage) -> Reply {
    Reply::ToolCalls {
        calls: vec![(
            id.into(),
            "bash".into(),
            json!({"command": format!("yes 0123456789abcdef | tr -d '\\n' | head -c {chars}")}),
        )],
        usage,
    }
}

fn text(t: &str, usage: Usage) -> Reply {
    Reply::Text {
        text: t.into(),
        usage,
    }
}

fn summaries(n: usize) -> VecDeque<Reply> {
    (1..=n)
        .map(|i| {
            text(
                &format!("## Goal\nscripted summary {i}"),
                Usage::new(3_000, 400),
            )
        })
        .collect()
}

/// The threshold bracket, a tool step over the threshold, an automatic
/// compaction after a run's final answer, then a second one: 183,616 does
/// not compact (pi's `>` is strict), a tool step at 190,100 goes on, the
/// final answer at 183,617 compacts, and so does a later one.
#[test]
fn automatic_compactions_at_pis_threshold() {
    let script = Script {
        agent: VecDeque::from(vec![
            output_of("toolu_01", 40_000, Usage::new(10_000, 50)),
            output_of("toolu_02", 40_000, Usage::new(20_000, 50)),
            output_of("toolu_03", 40_000, Usage::new(30_000, 50)),
            // 183,616 in all: not over.
            text("Done (reply-1).", split(83_516, 60_000, 40_000, 100)),
            // A tool step over the threshold: pi goes on.
            output_of("toolu_04", 200, split(90_000, 100_000, 0, 100)),
            // 183,617: over, at the run's end.
            text("Done (reply-2).", split(83_517, 60_000, 40_000, 100)),
            text("Done (reply-3).", Usage::new(40_000, 100)),
            output_of("toolu_05", 40_000, Usage::new(50_000, 50)),
            text("Done (reply-4).", Usage::new(THRESHOLD, 1)),
            text("Done (reply-5).", Usage::new(30_000, 100)),
        ]),
        summary: summaries(8),
    };
    let Some(run) = run(
        "threshold",
        script,
        &[
            Action::Prompt("LARGE turn one: run the three commands"),
            Action::Prompt("turn two: one more command"),
            Action::Prompt("SMALL turn three after the compaction"),
            Action::Prompt("turn four: one more large command"),
            Action::Prompt("SMALL turn five after the second compaction"),
        ],
    ) else {
        return;
    };
    let (compared, reasons) = check_all(&run);
    assert_eq!(compared, 10);
    assert_eq!(reasons, ["threshold", "threshold"]);
}

/// A manual compaction (RPC `compact`) far under the threshold, then a
/// request the provider refuses as too long: pi compacts for the overflow
/// and sends the request again on the compacted context.
#[test]
fn manual_compaction_and_a_refused_request() {
    let script = Script {
        agent: VecDeque::from(vec![
            output_of("toolu_01", 20_000, Usage::new(20_000, 50)),
            text("Done (reply-1).", Usage::new(31_079, 100)),
            text("Done (reply-2).", Usage::new(8_000, 100)),
            Reply::prompt_too_long(),
            text("Done (reply-3).", Usage::new(9_000, 100)),
        ]),
        summary: summaries(6),
    };
    let Some(run) = run(
        "manual-refused",
        script,
        &[
            Action::Prompt("turn one: run the command"),
            Action::Compact("keep the scripted tokens"),
            Action::Prompt("turn two"),
            Action::Prompt("SMALL PTL turn three"),
        ],
    ) else {
        return;
    };
    let (compared, reasons) = check_all(&run);
    assert_eq!(compared, 5);
    assert_eq!(reasons, ["manual", "overflow"]);
}

/// Outputs over pi's bash limits (the last 50 KB or 2,000 lines, with a
/// note naming the full output's file) are stored as sent.
#[test]
fn big_tool_outputs_are_stored_as_sent() {
    let lines = Reply::ToolCalls {
        calls: vec![(
            "toolu_02".into(),
            "bash".into(),
            json!({"command": "seq 1 3001"}),
        )],
        usage: Usage::new(30_000, 50),
    };
    let script = Script {
        agent: VecDeque::from(vec![
            output_of("toolu_01", 60_000, Usage::new(10_000, 50)),
            lines,
            output_of("toolu_03", 20_000, Usage::new(50_000, 50)),
            text("Done (reply-1).", Usage::new(60_000, 100)),
        ]),
        summary: VecDeque::new(),
    };
    let Some(run) = run(
        "big-outputs",
        script,
        &[Action::Prompt("turn one: three big outputs")],
    ) else {
        return;
    };
    let (compared, reasons) = check_all(&run);
    assert_eq!(compared, 4);
    assert!(reasons.is_empty());
    // The first output was cut to its end, with pi's note.
    let sent = &run.requests[2].body["messages"];
    let result = sent
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|c| c["tool_use_id"] == "toolu_01")
        .expect("the first result");
    let output = result["content"].as_str().unwrap();
    assert!(output.len() < 60_000, "pi cut the 60,000-character output");
    assert!(output.contains("Full output:"), "pi names the full output");
}
