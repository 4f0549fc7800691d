//! Differential test against the real Claude Code
//! (`@anthropic-ai/claude-code`, pinned in
//! [`ctxlog_differential::claude_code::VERSION`]).
//!
//! Each scenario drives Claude Code offline in print mode (`claude -p`, one
//! process per prompt, `--resume` after the first) against the scripted
//! Anthropic Messages server, imports the transcript it wrote, and checks:
//! - the import labels the session `claude-code-2.1`;
//! - (a) each answer's usage is on its own step;
//! - (b) ctxlog's window before each agent-loop request (a refused one
//!   included), rendered as Claude Code sends it, equals the `messages`
//!   Claude Code sent: its `<system-reminder>` blocks (imported from the
//!   `attachment` lines) and the reminder folded into each tool result
//!   included. Set aside, by name: `cache_control` marks, and a string
//!   `content` compared as its one text block;
//! - (c) ctxlog's decision before every request equals Claude Code's, and
//!   `simulate` compacts after the same answers, the reactive compaction
//!   after the refusal the import infers included;
//! - (d) Claude Code's compactions are imported as it made them: automatic
//!   or manual, with its `preTokens`, and the messages it kept verbatim.
//!
//! The npm install is cached outside git; when the registry cannot be
//! reached the tests skip with a message. Each run's folder lies outside any
//! git repository (in the temp directory) and is removed when it passes.

mod common;

use ctxlog_core::decide::count_before_request;
use ctxlog_core::{window, CompactionTrigger, Envelope, Event, Policy, SessionState, TokenUsage};
use ctxlog_differential::claude_code::{install, Sandbox};
use ctxlog_differential::drive::DriveError;
use ctxlog_differential::model_server::{Api, Kind, ModelServer, Reply, Request, Script, Usage};

use ctxlog_import::{Format, ImportOptions, LimitOverrides};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

/// One scenario at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// The model the scenarios run: a 200,000-token window, 32,000 output
/// tokens (what 2.1.328 reports for it), checked on the threshold.
const MODEL: &str = "claude-sonnet-4-6";
/// A model whose auto-compact window 2.1.328 resolves to "auto": no
/// threshold, only a reactive compaction after a refusal.
const AUTO_WINDOW_MODEL: &str = "claude-sonnet-4-5-20250929";

/// The pinned Claude Code, or `None` (with a message) when npm cannot reach
/// its registry.
fn claude() -> Option<PathBuf> {
    match install() {
        Ok(bin) => Some(bin),
        Err(DriveError::Unreachable(why)) => {
            eprintln!("SKIPPED: the Claude Code differential tests need the npm registry: {why}");
            None
        }
        Err(e) => panic!("installing Claude Code failed: {e}"),
    }
}

/// What one run left behind.
struct Run {
    _serial: std::sync::MutexGuard<'static, ()>,
    dir: PathBuf,
    requests: Vec<Request>,
    transcript: PathBuf,
}

impl Drop for Run {
    fn drop(&mut self) {
        // CTXLOG_KEEP_RUNS keeps a passing run's folder to look at.
        if !std::thread::panicking() && std::env::var_os("CTXLOG_KEEP_RUNS").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn run(name: &str, script: Script, prompts: &[&str]) -> Option<Run> {
    run_model(name, MODEL, script, prompts)
}

fn run_model(name: &str, model: &str, script: Script, prompts: &[&str]) -> Option<Run> {
    let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let bin = claude()?;
    let dir =
        std::env::temp_dir().join(format!("ctxlog-claude-code-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let server = ModelServer::start_api(Api::AnthropicMessages, script).expect("model server");
    let sandbox = Sandbox::new(bin, dir.clone(), &server.origin(), model, &[]).expect("sandbox");
    let mut session: Option<String> = None;
    for p in prompts {
        let out = sandbox
            .prompt(p, session.as_deref())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if session.is_none() {
            session = out["session_id"].as_str().map(str::to_owned);
        }
    }
    let session = session.expect("a session id");
    let transcript = sandbox.transcript(&session).expect("the transcript");
    let requests = common::scripted_requests("Claude Code", name, &dir, &server, false);
    Some(Run {
        _serial: serial,
        dir,
        requests,
        transcript,
    })
}

/// The transcript imported whole, and at every line end as it grew.
fn import(run: &Run) -> Vec<Envelope> {
    assert!(common::check_every_prefix(&run.transcript, Format::ClaudeCode) > 0);
    let options = ImportOptions {
        limits: LimitOverrides {
            context: Some(200_000),
            output: Some(32_000),
            ..LimitOverrides::default()
        },
        ..ImportOptions::default()
    };
    let file = std::fs::File::open(&run.transcript).unwrap();
    let imported = ctxlog_import::import(
        std::io::BufReader::new(file),
        &run.transcript.display().to_string(),
        Format::ClaudeCode,
        &options,
    )
    .unwrap_or_else(|e| panic!("ctxlog cannot import the transcript: {e}"));
    imported.events.to_vec().unwrap()
}

/// The agent-loop requests, each an assistant message of the import: an
/// answer, or a request refused as too long, which Claude Code writes
/// nothing of but its reactive compaction implies (the scenarios refuse
/// nothing else).
fn agent_requests(run: &Run) -> Vec<&Request> {
    run.requests
        .iter()
        .filter(|r| r.kind == Kind::Agent)
        .collect()
}

/// (a) Every answer is one step with the usage the server reported.
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
        let usage = match request.reply.as_ref().unwrap() {
            Reply::Text { usage, .. } | Reply::ToolCalls { usage, .. } => usage,
            Reply::Error { .. } => continue,
        };
        let want = TokenUsage {
            total: None,
            input: usage.prompt,
            output: usage.completion,
            reasoning: 0,
            cache_read: usage.cached,
            cache_write: usage.cache_write,
        };
        assert_eq!(
            state.history_message(*id).unwrap().tokens.as_deref(),
            Some(&want),
            "request n={}: the step's usage",
            request.n
        );
    }
}

/// What Claude Code sent as the window holds it: `cache_control` marks
/// (transport) left out, a string content as its one text block.
fn as_sent(messages: &Value) -> Value {
    let mut out = Vec::new();
    for m in messages.as_array().into_iter().flatten() {
        let blocks = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(b) => b.clone(),
            _ => Vec::new(),
        };
        let blocks: Vec<Value> = blocks
            .into_iter()
            .map(|mut b| {
                if let Some(o) = b.as_object_mut() {
                    o.remove("cache_control");
                }
                b
            })
            .collect();
        out.push(json!({"role": m["role"], "content": blocks}));
    }
    Value::Array(out)
}

/// (b) ctxlog's window before each agent request equals what Claude Code
/// sent, reminders included. Returns how many were compared.
fn check_windows(run: &Run, events: &[Envelope]) -> usize {
    let agent = agent_requests(run);
    let messages = common::assistant_messages(events);
    for (request, (seq, _)) in agent.iter().zip(&messages) {
        let state = SessionState::replay(events.iter().take(*seq as usize - 1)).unwrap();
        let ours = Value::Array(ctxlog_providers::Format::ClaudeCode.encode(&window(&state)));
        let theirs = as_sent(&request.body["messages"]);
        common::same_window(&run.dir, "Claude Code", request.n, *seq, &ours, &theirs);
    }
    agent.len()
}

/// The compactions as imported: (automatic, `preTokens`).
fn compactions(events: &[Envelope]) -> Vec<(bool, Option<u64>)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::CompactionRequested { auto, trigger, .. } => {
                let before = match trigger {
                    CompactionTrigger::Recorded { tokens_before, .. } => *tokens_before,
                    _ => None,
                };
                Some((*auto, before))
            }
            _ => None,
        })
        .collect()
}

/// The boundaries in the transcript: (automatic, `preTokens`).
fn boundaries(run: &Run) -> Vec<(bool, Option<u64>)> {
    std::fs::read_to_string(&run.transcript)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["subtype"] == "compact_boundary")
        .map(|v| {
            (
                v["compactMetadata"]["trigger"] != "manual",
                v["compactMetadata"]["preTokens"].as_u64(),
            )
        })
        .collect()
}

/// (c) ctxlog's decision before every request equals Claude Code's, and
/// `simulate` compacts after the answers Claude Code compacted after.
fn check_decisions(events: &[Envelope]) -> usize {
    let policy = match &events[0].event {
        Event::SessionStarted { policy, .. } => policy.clone(),
        e => panic!("first event is {}", e.kind()),
    };
    assert_eq!(policy.name, "claude-code-2.1");
    let n = common::check_decisions_before_requests(events, &policy);
    assert_eq!(common::check_simulation(events, &policy), n);
    n
}

/// ctxlog's count (what the preset compares with its threshold) before
/// each prompt's first request and at each automatic compaction, in log
/// order: `(automatic compaction here, count)`.
fn counts_before_requests(events: &[Envelope]) -> Vec<(bool, u64)> {
    let mut state = SessionState::new();
    let mut counts = Vec::new();
    let mut prompt_seen = false;
    for e in events {
        let (compaction, request) = match &e.event {
            Event::CompactionRequested { auto: true, .. } => (true, true),
            Event::MessageAppended {
                role: ctxlog_core::Role::Assistant,
                ..
            } => (false, std::mem::take(&mut prompt_seen)),
            _ => (false, false),
        };
        if request {
            counts.extend(count_before_request(&state).map(|(_, c)| (compaction, c)));
        }
        if let Event::MessageAppended {
            role: ctxlog_core::Role::User,
            synthetic: false,
            ..
        } = &e.event
        {
            prompt_seen = true;
        }
        state.evolve(e).unwrap();
    }
    counts
}

fn text(t: &str, usage: Usage) -> Reply {
    Reply::Text {
        text: t.into(),
        usage,
    }
}

/// A `Bash` call printing `chars` characters.
fn bash(id: &str, chars: usize, usage: Usage) -> Reply {
    Reply::ToolCalls {
        calls: vec![(
            id.into(),
            "Bash".into(),
            json!({
                "command": format!("yes 0123456789abcdef | tr -d '\\n' | head -c {chars}"),
                "description": "Print scripted output",
            }),
        )],
        usage,
    }
}

fn summaries(n: usize) -> VecDeque<Reply> {
    (1..=n)
        .map(|i| {
            text(
                &format!("<analysis>scripted</analysis>\n<summary>scripted summary {i}</summary>"),
                Usage::new(3_000, 400),
            )
        })
        .collect()
}

/// An answer over the threshold (167,100 of 167,000), then a prompt: Claude
/// Code compacts before the prompt's request, keeps the previous answer and
/// the prompt verbatim after the summary, and sends no continue message.
#[test]
fn automatic_compaction_at_the_next_prompt() {
    let script = Script {
        agent: VecDeque::from(vec![
            bash("toolu_01", 28_999, Usage::new(10_000, 50)),
            text("Done (reply-1).", Usage::new(50_000, 100)),
            text(
                "Done (reply-2).",
                Usage {
                    prompt: 60_000,
                    completion: 7_100,
                    cached: 80_000,
                    cache_write: 20_000,
                    ..Usage::new(0, 0)
                },
            ),
            text("Done (reply-3).", Usage::new(9_000, 100)),
        ]),
        summary: summaries(2),
    };
    let Some(run) = run(
        "automatic",
        script,
        &[
            "LARGE turn one: run the command",
            "turn two",
            "SMALL turn three after the compaction",
        ],
    ) else {
        return;
    };
    let events = import(&run);
    check_usage(&run, &events);
    assert_eq!(check_windows(&run, &events), 4);
    assert_eq!(check_decisions(&events), 1);
    let theirs = boundaries(&run);
    assert_eq!(compactions(&events), theirs);
    assert_eq!(theirs.len(), 1);
    assert!(theirs[0].0, "automatic");
    // The request after it: the summary as a user message, the answer
    // before it and the prompt kept verbatim, nothing else.
    let after = as_sent(&agent_requests(&run)[3].body["messages"]);
    let roles: Vec<&str> = after
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    // Each message's last block: its own text after the reminders.
    let texts: Vec<&str> = after
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["content"].as_array().unwrap().last().unwrap()["text"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert!(texts[0].starts_with("This session is being continued"));
    assert!(texts[0].contains("scripted summary"));
    assert_eq!(
        texts[1..],
        ["Done (reply-2).", "SMALL turn three after the compaction"]
    );
}

/// `/compact` with instructions in print mode: a manual compaction that
/// keeps the last answer verbatim; the local command's caveat (`isMeta`),
/// its echo and its output are sent with the next prompt.
#[test]
fn manual_compact_command() {
    let script = Script {
        agent: VecDeque::from(vec![
            bash("toolu_01", 2_000, Usage::new(10_000, 50)),
            text("Done (reply-1).", Usage::new(11_000, 100)),
            text("Done (reply-2).", Usage::new(12_000, 100)),
            text("Done (reply-3).", Usage::new(5_000, 100)),
        ]),
        summary: summaries(2),
    };
    let Some(run) = run(
        "manual",
        script,
        &[
            "turn one: run the command",
            "turn two",
            "/compact keep the scripted tokens",
            "turn three after the compaction",
        ],
    ) else {
        return;
    };
    let events = import(&run);
    check_usage(&run, &events);
    assert_eq!(check_windows(&run, &events), 4);
    assert_eq!(check_decisions(&events), 0);
    let theirs = boundaries(&run);
    assert_eq!(compactions(&events), theirs);
    assert_eq!(theirs.len(), 1);
    assert!(!theirs[0].0, "manual");
    // The caveat Claude Code marks isMeta is sent, and kept by ctxlog.
    let after = as_sent(&agent_requests(&run)[3].body["messages"]).to_string();
    assert!(after.contains("<local-command-caveat>"), "{after}");
}

/// Outputs of 20,000 characters (sent inline) and 40,000 (saved to a file,
/// a preview sent instead) are stored as Claude Code sent them.
#[test]
fn big_tool_outputs() {
    let script = Script {
        agent: VecDeque::from(vec![
            bash("toolu_01", 20_000, Usage::new(10_000, 50)),
            bash("toolu_02", 40_000, Usage::new(20_000, 50)),
            text("Done (reply-1).", Usage::new(30_000, 100)),
        ]),
        summary: VecDeque::new(),
    };
    let Some(run) = run("big-outputs", script, &["turn one: two big outputs"]) else {
        return;
    };
    let events = import(&run);
    check_usage(&run, &events);
    assert_eq!(check_windows(&run, &events), 3);
    let last = as_sent(&agent_requests(&run)[2].body["messages"]);
    let text = last.to_string();
    assert!(
        text.contains("<persisted-output>"),
        "the 40,000-character output is sent as a preview"
    );
}

/// The count before a request is the last answer's usage plus what came
/// after it, each block rounded on its own (`round(chars / 4)`): a
/// 32-character prompt (8) and its 86-character token-budget reminder
/// (22). After an answer at 166,969 the count is 166,999, one under
/// 167,000: no compaction; after one at 166,970 it is exactly 167,000, and
/// Claude Code compacts at that prompt. Then a tool step at 159,728 whose
/// 28,999-character result (7,250) and its reminder (22) bring it to
/// exactly 167,000 compacts in the middle of the turn, keeping the call and
/// its result. ctxlog's counts equal Claude Code's `preTokens`.
#[test]
fn the_count_before_a_request_and_a_mid_turn_compaction() {
    let script = Script {
        agent: VecDeque::from(vec![
            text("Done (reply-1).", Usage::new(166_000, 969)),
            text("Done (reply-2).", Usage::new(166_000, 970)),
            text("Done (reply-3).", Usage::new(5_000, 100)),
            bash(
                "toolu_04",
                28_999,
                Usage {
                    cached: 100_000,
                    ..Usage::new(59_628, 100)
                },
            ),
            text("Done (reply-4).", Usage::new(12_000, 100)),
            text("Done (reply-5).", Usage::new(13_000, 100)),
        ]),
        summary: summaries(3),
    };
    let Some(run) = run(
        "before-request",
        script,
        &[
            "turn one",
            "EDGE turn two: one token under..",
            "EDGE turn three: right at it....",
            "turn four: one more large command",
            "SMALL turn five",
        ],
    ) else {
        return;
    };
    let events = import(&run);
    check_usage(&run, &events);
    assert_eq!(check_windows(&run, &events), 6);
    let counts = counts_before_requests(&events);
    assert_eq!(
        counts[..2],
        [(false, 166_999), (true, 167_000)],
        "the scenario sits on the edge (did Claude Code's reminders change?)"
    );
    let at_compactions: Vec<Option<u64>> = counts
        .iter()
        .filter(|(compaction, _)| *compaction)
        .map(|(_, c)| Some(*c))
        .collect();
    let pre_tokens: Vec<Option<u64>> = boundaries(&run).into_iter().map(|(_, p)| p).collect();
    assert_eq!(at_compactions, [Some(167_000), Some(167_000)]);
    assert_eq!(
        at_compactions, pre_tokens,
        "ctxlog's counts are Claude Code's"
    );
    assert_eq!(check_decisions(&events), 2);
    let theirs = boundaries(&run);
    assert_eq!(compactions(&events), theirs);
    // Mid-turn, the call and its result follow the summary.
    let after = as_sent(&agent_requests(&run)[4].body["messages"]);
    let kinds: Vec<String> = after
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}:{}", m["role"], m["content"][0]["type"]))
        .collect();
    assert_eq!(
        kinds,
        [
            "\"user\":\"text\"",
            "\"assistant\":\"tool_use\"",
            "\"user\":\"tool_result\""
        ]
    );
}

/// A model with no threshold in 2.1.328: an answer at 190,000 (over
/// 167,000) compacts nothing; a prompt the provider refuses as too long
/// makes Claude Code summarise and send the prompt again. The transcript
/// keeps only an automatic boundary; ctxlog records it as the overflow
/// compaction it was, after the refused request it implies.
#[test]
fn a_model_without_threshold_compacts_only_when_refused() {
    let script = Script {
        agent: VecDeque::from(vec![
            text("Done (reply-1).", Usage::new(190_000, 100)),
            Reply::prompt_too_long(),
            text("Done (reply-2).", Usage::new(20_000, 100)),
        ]),
        summary: summaries(2),
    };
    let Some(run) = run_model(
        "reactive",
        AUTO_WINDOW_MODEL,
        script,
        &["turn one", "SMALL PTL turn two"],
    ) else {
        return;
    };
    let events = import(&run);
    check_usage(&run, &events);
    assert_eq!(
        check_windows(&run, &events),
        3,
        "the refused request included"
    );
    let policy = Policy::claude_code_2_1();
    assert_eq!(common::check_decisions_before_requests(&events, &policy), 0);
    // The refusal Claude Code left out is recorded as inferred, so
    // `simulate` compacts where Claude Code did.
    assert_eq!(common::check_simulation(&events, &policy), 1);
    let kinds: Vec<(bool, bool)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::CompactionRequested { auto, overflow, .. } => Some((*auto, *overflow)),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [(true, true)], "one reactive (overflow) compaction");
}
