//! Tests that pin the design: one home for every decision, two logs that
//! behave alike, and `simulate` deciding exactly what the engine decides live.

use ctxlog_core::window::{WindowPart, COMPACTION_QUESTION, CONTINUE_TEXT, CONTINUE_TEXT_OPENCODE};
use ctxlog_core::*;
use ctxlog_engine::simulate::{simulate_recording, Decision, SimulateConfig};
use ctxlog_engine::summarize::*;
use ctxlog_engine::*;
use ctxlog_store::EventLog;
use ctxlog_testkit::TempDir;
use proptest::prelude::*;
use std::sync::{Arc, Mutex};

fn builder(seed: u64) -> EngineBuilder {
    EngineBuilder::new()
        .clock(Arc::new(ManualClock::new(1_790_000_000_000)))
        .ids(SeededIds::new(seed))
}

fn tool(call: &str, output: String) -> PartBody {
    PartBody::Tool {
        call_id: call.into(),
        tool: "read".into(),
        state: ToolState::Completed {
            input: Json::Object(vec![("filePath".into(), call.into())]),
            output,
            title: None,
            metadata: Json::Null,
            start: 1,
            end: 2,
            attachments: vec![],
        },
    }
}

/// One turn of a scripted session: a prompt, then steps with tool outputs of
/// these sizes (chars); the last step of the turn stops.
#[derive(Debug, Clone)]
struct Turn {
    prompt: String,
    steps: Vec<Vec<usize>>,
    output_tokens: u64,
}

fn turns() -> impl Strategy<Value = Vec<Turn>> {
    let turn = (
        "[a-z ]{5,60}",
        prop::collection::vec(prop::collection::vec(100usize..30_000, 0..4), 1..5),
        10u64..2_000,
    )
        .prop_map(|(prompt, steps, output_tokens)| Turn {
            prompt,
            steps,
            output_tokens,
        });
    prop::collection::vec(turn, 1..8)
}

fn policies() -> impl Strategy<Value = Policy> {
    (0..3usize).prop_map(|i| match i {
        0 => Policy::opencode_seed(),
        1 => Policy::opencode_1_17(),
        _ => {
            let mut p = Policy::opencode_1_17();
            p.name = "opencode-1.17+prune".into();
            p.prune = true;
            p.prune_protect = 2_000;
            p.prune_minimum = 1_000;
            p
        }
    })
}

fn limits(context: u64) -> ModelLimits {
    ModelLimits {
        context,
        input: None,
        output: Some(4_000),
    }
}

/// The fixed prompt overhead the scripted provider reports on top of the
/// window (system prompt, tool schemas).
const OVERHEAD: u64 = 1_500;

fn label<L: EventLog>(session: Session<'_, L>, message: MessageId) -> String {
    let state = session.state().unwrap();
    format!("seq:{}", state.message(message).unwrap().created_seq)
}

/// The source label of the latest message a simulation would have fed (not
/// a marker, a summary or a continue message, which it leaves out and
/// decides itself).
fn last_label<L: EventLog>(session: Session<'_, L>) -> String {
    let state = session.state().unwrap();
    let m = state
        .messages
        .iter()
        .rev()
        .find(|m| !(m.marker || m.summary || (m.synthetic && m.role == Role::User)))
        .unwrap();
    format!("seq:{}", m.created_seq)
}

/// Drives `script` through `engine` as an agent loop would: the provider
/// reports the window plus a fixed overhead, queued jobs run at once, the
/// turn ends (prune) before each later prompt and at the end. Returns the
/// session and the decisions the engine took, as `simulate` reports them.
fn drive<L: EventLog>(
    engine: &Engine<L>,
    policy: Policy,
    context: u64,
    script: &[Turn],
) -> (SessionId, Vec<Decision>) {
    let session = engine
        .create_session(NewSession::new(limits(context)).policy(policy))
        .unwrap();
    let mut decisions = Vec::new();
    let mut calls = 0;
    for (t, turn) in script.iter().enumerate() {
        if t > 0 {
            end_turn(session, &mut decisions);
        }
        let mut parent = session.user(&turn.prompt).unwrap();
        for (i, outputs) in turn.steps.iter().enumerate() {
            let window = session.window_estimate().unwrap();
            let mut step = Step::new(parent).text(format!("step {i} of turn {t}"));
            for &n in outputs {
                calls += 1;
                let text = format!("{calls} ").repeat(n / 4 + 1);
                step = step.part(tool(&format!("call_{calls}"), text));
            }
            let last = i + 1 == turn.steps.len();
            let usage = TokenUsage {
                input: OVERHEAD + window,
                output: turn.output_tokens,
                ..TokenUsage::default()
            };
            let finish = if last {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            };
            let outcome = session.step(step.tokens(usage).finish(finish)).unwrap();
            let after = label(session, outcome.message);
            let (Some(_), Some(check)) = (outcome.queued, outcome.overflow) else {
                continue;
            };
            decisions.push(Decision::Compaction {
                after: after.clone(),
                auto: true,
                count: check.count,
                usable: check.usable,
                // Simulated under the same policy, every decision coincides
                // with this run's, so the recorded usage is never replaced.
                estimated: false,
            });
            let window_before = session.window_estimate().unwrap();
            let outcomes = session.run_pending().unwrap();
            let window_after = session.window_estimate().unwrap();
            for o in outcomes {
                match &o {
                    JobOutcome::Completed { continued, .. } => {
                        decisions.push(Decision::Summary {
                            after: after.clone(),
                            window_before,
                            window_after,
                        });
                        if *continued {
                            decisions.push(Decision::Continue {
                                after: after.clone(),
                            });
                            // The agent answers the continue message next.
                            parent = session.state().unwrap().messages.last().unwrap().id;
                        }
                    }
                    JobOutcome::Failed { error, .. } => {
                        decisions.push(Decision::CompactionFailed {
                            after: after.clone(),
                            error: error.clone(),
                        })
                    }
                }
                if let Some(reason) = o.paused() {
                    decisions.push(Decision::Stalled {
                        after: after.clone(),
                        reason: reason.to_owned(),
                    });
                }
            }
        }
    }
    end_turn(session, &mut decisions);
    (session.id(), decisions)
}

fn end_turn<L: EventLog>(session: Session<'_, L>, decisions: &mut Vec<Decision>) {
    let after = last_label(session);
    if let Some(pruned) = session.end_turn().unwrap() {
        let state = session.state().unwrap();
        let call_ids = pruned
            .parts
            .iter()
            .map(|p| {
                state
                    .part(p.part)
                    .and_then(|(_, part)| part.tool_call())
                    .map_or(String::new(), |(call_id, _)| call_id.to_owned())
            })
            .collect::<Vec<_>>();
        decisions.push(Decision::Prune {
            after,
            call_ids,
            tokens: pruned.tokens,
        });
    }
}

fn log<L: EventLog>(engine: &Engine<L>, s: SessionId) -> Vec<Envelope> {
    engine
        .store()
        .read(s, 1)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The engine writes byte-identical logs over the in-memory log and over
    /// the durable sled store.
    #[test]
    fn memory_and_sled_logs_are_byte_identical(
        script in turns(),
        policy in policies(),
        context in prop::sample::select(vec![12_000u64, 20_000, 60_000]),
    ) {
        let memory = builder(5).in_memory().unwrap();
        let (ms, _) = drive(&memory, policy.clone(), context, &script);
        let dir = TempDir::new("design");
        let durable = builder(5).open(dir.path()).unwrap();
        let (ds, _) = drive(&durable, policy, context, &script);
        prop_assert_eq!(ms, ds);
        let a: Vec<Vec<u8>> = log(&memory, ms).iter().map(|e| codec::encode(e).unwrap()).collect();
        let b: Vec<Vec<u8>> = log(&durable, ds).iter().map(|e| codec::encode(e).unwrap()).collect();
        prop_assert!(a.len() > 1);
        prop_assert_eq!(a, b);
    }

    /// `simulate` of a recording under a policy decides exactly what the
    /// engine decided when the same session was driven live under it.
    #[test]
    fn simulate_decides_what_the_engine_decides_live(
        script in turns(),
        policy in policies(),
        context in prop::sample::select(vec![12_000u64, 20_000, 60_000]),
    ) {
        let live = builder(7).in_memory().unwrap();
        let (s, decided) = drive(&live, policy.clone(), context, &script);
        let recording = log(&live, s);
        let report = simulate_recording(&recording, SimulateConfig::new(policy), |_| {}).unwrap();
        prop_assert_eq!(report.decisions, decided);
    }
}

/// A session the generator would call dense: every step reads big files.
#[test]
fn the_drive_above_compacts_and_prunes() {
    let script = vec![
        Turn {
            prompt: "read everything".into(),
            steps: vec![vec![20_000, 20_000], vec![20_000], vec![]],
            output_tokens: 100,
        };
        4
    ];
    let mut p = Policy::opencode_1_17();
    p.prune = true;
    p.prune_protect = 2_000;
    p.prune_minimum = 1_000;
    let engine = builder(3).in_memory().unwrap();
    let (_, decisions) = drive(&engine, p, 20_000, &script);
    let kinds: Vec<&str> = decisions
        .iter()
        .map(|d| match d {
            Decision::Prune { .. } => "prune",
            Decision::Compaction { .. } => "compaction",
            Decision::Summary { .. } => "summary",
            Decision::Continue { .. } => "continue",
            Decision::CompactionFailed { .. } => "failed",
            Decision::Stalled { .. } => "stalled",
            Decision::Refused { .. } => "refused",
            Decision::Replay { .. } => "replay",
        })
        .collect();
    assert!(kinds.contains(&"compaction"), "{kinds:?}");
    assert!(kinds.contains(&"summary"), "{kinds:?}");
    assert!(kinds.contains(&"prune"), "{kinds:?}");
}

/// Captures summary requests and answers with a fixed text.
struct Capture(Mutex<Vec<SummaryRequest>>);
impl Summarizer for Capture {
    fn name(&self) -> &str {
        "capture"
    }
    fn summarize(&self, r: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        self.0.lock().unwrap().push(r.clone());
        Ok(SummaryOutput {
            text: "We read the parser; next: fix parse_block.".into(),
            tokens: TokenUsage::default(),
            finish: FinishReason::Stop,
            redacted: 0,
        })
    }
}

/// `opencode-1.17` keeps its recent tail verbatim when the engine decides:
/// the job records where the tail starts, the summarizer does not get the
/// tail, and the window after the summary holds it.
#[test]
fn opencode_1_17_keeps_its_tail_through_the_engine() {
    let capture = Arc::new(Capture(Mutex::new(Vec::new())));
    let engine = builder(11).summarizer(capture.clone()).in_memory().unwrap();
    // usable = 100k - 8k = 92k; the tail budget is min(8k, max(2k, 23k)) = 8k.
    let limits = ModelLimits {
        context: 100_000,
        input: None,
        output: Some(8_000),
    };
    let session = engine
        .create_session(NewSession::new(limits).policy(Policy::opencode_1_17()))
        .unwrap();
    let big = "x".repeat(200_000); // 50k tokens: an old turn far too big for the tail
    let u1 = session.user("read the big file").unwrap();
    session
        .step(
            Step::new(u1)
                .part(tool("call_big", big))
                .tokens(TokenUsage {
                    input: 10_000,
                    output: 10,
                    ..TokenUsage::default()
                }),
        )
        .unwrap();
    let u2 = session.user("now fix parse_block").unwrap();
    let outcome = session
        .step(
            Step::new(u2)
                .text("Fixed the off-by-one in parse_block.")
                .tokens(TokenUsage {
                    input: 95_000,
                    output: 100,
                    ..TokenUsage::default()
                }),
        )
        .unwrap();
    let job = outcome.queued.expect("95k of 92k usable overflows");
    let outcomes = session.run_pending().unwrap();
    assert!(matches!(outcomes[..], [JobOutcome::Completed { .. }]));

    let state = session.state().unwrap();
    let tail = state.job(job).unwrap().tail_start;
    assert_eq!(
        tail,
        Some(u2),
        "the last turn fits the 8k budget and is kept"
    );

    let requests = capture.0.lock().unwrap();
    let sent: Vec<MessageId> = requests[0].messages.iter().map(|m| m.id).collect();
    assert!(sent.contains(&u1), "the older turn is summarized");
    assert!(!sent.contains(&u2), "the tail is not summarized");
    assert_eq!(sent.last(), Some(&job), "the request ends with the marker");

    let window = session.window().unwrap();
    let ids: Vec<MessageId> = window.messages.iter().map(|m| m.id).collect();
    assert_eq!(ids[0], job);
    assert!(
        matches!(&window.messages[0].parts[..], [WindowPart::Text(t)] if t == COMPACTION_QUESTION)
    );
    assert_eq!(ids[2], u2, "summary, then the tail verbatim");
    assert!(
        !ids.contains(&u1),
        "the summarized turn is gone from the window"
    );
    let last = window.messages.last().unwrap();
    assert!(matches!(&last.parts[..], [WindowPart::Text(t)] if t == CONTINUE_TEXT_OPENCODE));
}

/// The embedding API refuses an invalid configuration with a typed error.
#[test]
fn an_invalid_configuration_is_a_typed_error() {
    let guard = LoopGuard {
        min_shrink_percent: 150,
        ..LoopGuard::default()
    };
    let err = builder(1).loop_guard(guard).in_memory().err().unwrap();
    assert!(matches!(err, EngineError::InvalidConfig(_)), "{err}");
}

/// A session handle for an id the log does not have is an error, not a panic.
#[test]
fn an_unknown_session_is_a_typed_error() {
    let dir = TempDir::new("design");
    let engine = EngineBuilder::new().open(dir.path()).unwrap();
    let missing = SessionId(uuid::Uuid::from_u128(42));
    assert!(matches!(
        engine.session(missing).err().unwrap(),
        EngineError::UnknownSession(s) if s == missing
    ));
}

/// A recording whose agent compacted on its own, followed by a synthetic
/// user message with `text`.
fn recording_with_synthetic_after_compaction(text: &str) -> Vec<Envelope> {
    let mut ids = SeededIds::new(77);
    let t = 1_790_000_000_000;
    let session = SessionId(ids.next_uuid(t));
    let limits = ModelLimits {
        context: 200_000,
        input: None,
        output: Some(8_000),
    };
    let mut r = Recorder::start(session, ids, t, Policy::opencode_seed(), limits).unwrap();
    let guard = LoopGuard::default();
    let u = r.user_text(t, "fix the parser", false).unwrap();
    let step = Step::new(u).text("looking").tokens(TokenUsage {
        input: 1_000,
        output: 10,
        ..TokenUsage::default()
    });
    r.run(t, Command::Step(step), guard).unwrap();
    let compaction = RecordedCompaction {
        auto: true,
        overflow: false,
        text: "We looked at the parser.".into(),
        tail_start: None,
        marker_source: None,
        summary_source: None,
        decided_by: "codex".into(),
        tokens_before: None,
        tokens: None,
    };
    r.run(t, Command::RecordCompaction(compaction), guard)
        .unwrap();
    r.user_text(t, text, true).unwrap();
    r.into_events()
}

/// `simulate` leaves out the recording's own continue message after its
/// automatic compaction (the policy under test decides whether to
/// continue), and feeds any other synthetic message there as recorded
/// (Codex re-injects its environment context after a compaction).
#[test]
fn simulate_drops_only_the_recorded_continue_message() {
    let policy = Policy {
        auto: false,
        ..Policy::opencode_seed()
    };
    let run = |text: &str| {
        let events = recording_with_synthetic_after_compaction(text);
        simulate_recording(&events, SimulateConfig::new(policy.clone()), |_| {}).unwrap()
    };
    let continued = run(CONTINUE_TEXT);
    let context = run("<environment_context>cwd: /repo</environment_context>");
    // Message and text part of the synthetic message: fed only when it is
    // not the continue message.
    assert_eq!(context.events, continued.events + 2);
    assert!(context.final_window > continued.final_window);
}

/// A recording made with automatic compaction off, simulated with it on:
/// the first compaction is decided on the recorded usage; the recording
/// did not compact there, so every later one is decided on the estimate.
#[test]
fn simulate_keeps_the_recorded_usage_only_while_its_decisions_coincide() {
    let turn = |n: usize| Turn {
        prompt: format!("turn {n}"),
        steps: vec![vec![20_000], vec![20_000], vec![]],
        output_tokens: 50,
    };
    let script: Vec<Turn> = (0..6).map(turn).collect();
    let live = builder(11).in_memory().unwrap();
    let mut off = Policy::opencode_seed();
    off.auto = false;
    let (s, decided) = drive(&live, off, 20_000, &script);
    assert!(!decided
        .iter()
        .any(|d| matches!(d, Decision::Compaction { .. })));
    let config = SimulateConfig::new(Policy::opencode_seed());
    let report = simulate_recording(&log(&live, s), config, |_| {}).unwrap();
    let estimated: Vec<bool> = report
        .decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Compaction { estimated, .. } => Some(*estimated),
            _ => None,
        })
        .collect();
    assert!(estimated.len() >= 2, "{:?}", report.decisions);
    assert!(!estimated[0]);
    assert!(estimated[1..].iter().all(|e| *e), "{estimated:?}");
}
