//! The engine's lifecycle, with injected clock and ids: on the memory log,
//! and on a real sled store where the store is the subject (reopening,
//! other processes, snapshots).

mod common;
use common::limits;

use ctxlog_core::window::{ToolResult, WindowPart, COMPACTION_QUESTION, CONTINUE_TEXT};
use ctxlog_core::*;
use ctxlog_engine::summarize::*;
use ctxlog_engine::*;
use ctxlog_sled::SledStore;
use ctxlog_store::{EventLog, SessionStates};
use ctxlog_testkit::TempDir;
use std::path::Path;
use std::sync::{Arc, Mutex};

fn engine_with(
    dir: &Path,
    summarizer: Arc<dyn Summarizer>,
    hook: Option<Arc<dyn CompactingHook>>,
) -> Engine<SledStore> {
    engine_seeded(dir, summarizer, hook, 9)
}

/// An engine whose ids come from `seed` (a reopened store needs a source
/// that does not repeat the ids already stored).
fn engine_seeded(
    dir: &Path,
    summarizer: Arc<dyn Summarizer>,
    hook: Option<Arc<dyn CompactingHook>>,
    seed: u64,
) -> Engine<SledStore> {
    let store = SledStore::open(dir).unwrap();
    builder(summarizer, hook, seed).build(store).unwrap()
}

/// An engine over a fresh memory log, ids from seed 9: where the log's
/// medium is not what a test is about.
fn engine_in_memory(
    summarizer: Arc<dyn Summarizer>,
    hook: Option<Arc<dyn CompactingHook>>,
) -> Engine<MemoryLog> {
    builder(summarizer, hook, 9).in_memory().unwrap()
}

/// A builder with ids from `seed`, the tests' manual clock, `summarizer`
/// and `hook`.
fn builder(
    summarizer: Arc<dyn Summarizer>,
    hook: Option<Arc<dyn CompactingHook>>,
    seed: u64,
) -> EngineBuilder {
    let builder = EngineBuilder::new()
        .ids(SeededIds::new(seed))
        .clock(Arc::new(ManualClock::new(1_780_000_000_000)))
        .summarizer(summarizer);
    match hook {
        Some(hook) => builder.hook(hook),
        None => builder,
    }
}

fn tool(name: &str, path: &str, output: &str) -> PartBody {
    PartBody::Tool {
        call_id: format!("call_{path}"),
        tool: name.into(),
        state: ToolState::Completed {
            input: Json::Object(vec![("filePath".into(), path.into())]),
            output: output.into(),
            title: None,
            metadata: Json::Null,
            start: 1,
            end: 2,
            attachments: vec![],
        },
    }
}

/// A tool-calling step answering `parent` whose 95k input overflows the
/// 92k the tests' limits leave usable.
fn overflowing_step<L: EventLog>(
    s: &Session<'_, L>,
    parent: MessageId,
    text: impl Into<String>,
) -> StepOutcome {
    let step = Step::new(parent).text(text).tokens(usage(95_000));
    s.step(step.finish(FinishReason::ToolCalls)).unwrap()
}

fn usage(input: u64) -> TokenUsage {
    TokenUsage {
        input,
        output: 100,
        ..Default::default()
    }
}

fn texts(w: &Window) -> Vec<String> {
    w.messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(|p| match p {
            WindowPart::Text(t) => t.clone(),
            WindowPart::Tool { tool, .. } => format!("tool:{tool}"),
            other => format!("{other:?}"),
        })
        .collect()
}

/// Captures requests and answers with a fixed text.
struct Capture {
    answer: String,
    seen: Mutex<Vec<SummaryRequest>>,
}
impl Summarizer for Capture {
    fn name(&self) -> &str {
        "capture"
    }
    fn summarize(&self, r: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        self.seen.lock().unwrap().push(r.clone());
        Ok(SummaryOutput {
            text: self.answer.clone(),
            tokens: usage(10),
            finish: FinishReason::Stop,
            redacted: 0,
        })
    }
}
fn capture(answer: &str) -> Arc<Capture> {
    Arc::new(Capture {
        answer: answer.into(),
        seen: Mutex::new(vec![]),
    })
}

#[test]
fn overflow_queues_an_auto_marker_that_runs_and_continues() {
    let cap = capture("We fixed parse_block in src/parse.rs; next: run cargo test.");
    let e = engine_in_memory(cap.clone(), None);
    let s = e.create_session(NewSession::new(limits())).unwrap();
    let u = s.user("Fix the parser.").unwrap();
    let step = s
        .step(
            Step::new(u)
                .part(tool("read", "src/parse.rs", "fn parse_block() {}"))
                .text("reading")
                .tokens(usage(50_000))
                .finish(FinishReason::ToolCalls),
        )
        .unwrap();
    assert_eq!(step.queued, None, "50k fits in 92k");
    let step = s
        .step(
            Step::new(u)
                .text("almost")
                .tokens(usage(91_950))
                .finish(FinishReason::ToolCalls),
        )
        .unwrap();
    let job = step
        .queued
        .expect("91,950 + 100 > 92,000 queues a compaction");
    assert!(step.overflow.unwrap().overflow);
    let state = s.state().unwrap();
    assert!(state.job(job).unwrap().auto);
    assert_eq!(state.pending_jobs().count(), 1);

    let outcomes = s.run_pending().unwrap();
    assert!(matches!(
        outcomes[..],
        [JobOutcome::Completed {
            continued: true,
            redactions: 0,
            ..
        }]
    ));
    // the request: system prompt with the secrets rule, the window ending with
    // the marker question, the seed's final instruction
    let req = cap.seen.lock().unwrap()[0].clone();
    assert!(req
        .system
        .starts_with("You are a helpful AI assistant tasked with summarizing conversations."));
    assert!(req.system.contains("Never include secrets or credentials"));
    assert_eq!(req.instruction, COMPACTION_INSTRUCTION);
    let last = req.messages.last().unwrap();
    assert_eq!(
        (last.id, &last.parts[..]),
        (job, &[WindowPart::Text(COMPACTION_QUESTION.into())][..])
    );
    assert_eq!(
        texts(&s.window().unwrap()),
        [
            COMPACTION_QUESTION,
            "We fixed parse_block in src/parse.rs; next: run cargo test.",
            CONTINUE_TEXT
        ]
    );
    // the prompt actually used is recorded by hash and size
    let state = s.state().unwrap();
    let j = state.job(job).unwrap();
    let rec = j.prompt.as_ref().unwrap();
    assert_eq!(rec.bytes, req.prompt_text().len() as u64);
    use sha2::Digest;
    let want: String = sha2::Sha256::digest(req.prompt_text().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(rec.sha256, want);
    // no re-trigger straight after a summary
    assert_eq!(state.overflow(), None);
    assert_eq!(
        s.run_pending().unwrap(),
        vec![],
        "a completed job never runs twice"
    );
}

#[test]
fn manual_compaction_never_continues() {
    let e = engine_in_memory(capture("summary"), None);
    let s = e.create_session(NewSession::new(limits())).unwrap();
    let u = s.user("hello").unwrap();
    s.step(Step::new(u).text("hi").tokens(usage(10))).unwrap();
    let job = s.request_compaction().unwrap();
    assert!(!s.state().unwrap().job(job).unwrap().auto);
    assert!(matches!(
        s.run_pending().unwrap()[..],
        [JobOutcome::Completed {
            continued: false,
            ..
        }]
    ));
    assert_eq!(
        texts(&s.window().unwrap()),
        [COMPACTION_QUESTION, "summary"]
    );
}

#[test]
fn hook_context_is_appended_capped_or_replaces_the_prompt() {
    struct Hook(HookOutput);
    impl CompactingHook for Hook {
        fn compacting(&self, _: SessionId) -> HookOutput {
            self.0.clone()
        }
    }
    let cap = capture("s");
    let long = "x".repeat(10_000);
    let many: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
    let hook = Hook(HookOutput {
        context: [vec!["branch: main".to_string(), long.clone()], many].concat(),
        prompt: None,
    });
    let e = engine_in_memory(cap.clone(), Some(Arc::new(hook)));
    let s = e.create_session(NewSession::new(limits())).unwrap();
    s.user("x").unwrap();
    s.request_compaction().unwrap();
    s.run_pending().unwrap();
    let req = cap.seen.lock().unwrap()[0].clone();
    let parts: Vec<&str> = req.instruction.split("\n\n").collect();
    assert_eq!(parts[0], COMPACTION_INSTRUCTION);
    assert_eq!(parts[1], "branch: main");
    assert_eq!(parts[2].chars().count(), HOOK_MAX_LINE_CHARS);
    assert_eq!(parts.len(), 1 + HOOK_MAX_LINES);
    let cap = capture("s");
    let hook = Hook(HookOutput {
        context: vec!["ignored".into()],
        prompt: Some(format!("Summarize in French. {long}")),
    });
    let e = engine_in_memory(cap.clone(), Some(Arc::new(hook)));
    let s = e.create_session(NewSession::new(limits())).unwrap();
    s.user("x").unwrap();
    s.request_compaction().unwrap();
    s.run_pending().unwrap();
    let req = cap.seen.lock().unwrap()[0].clone();
    assert!(req.instruction.starts_with("Summarize in French."));
    assert_eq!(req.instruction.chars().count(), HOOK_MAX_PROMPT_CHARS);
    assert!(!req.instruction.contains("ignored"));
}

struct Failing(SummarizeError);
impl Summarizer for Failing {
    fn name(&self) -> &str {
        "failing"
    }
    fn summarize(&self, _: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        Err(self.0.clone())
    }
}

#[test]
fn a_failed_summary_never_replaces_history() {
    for summarizer in [
        Arc::new(Failing(SummarizeError::Failed("HTTP 500".into()))) as Arc<dyn Summarizer>,
        capture("   "),
        Arc::new(RecordedSummarizer::default()),
    ] {
        let e = engine_in_memory(summarizer, None);
        let s = e.create_session(NewSession::new(limits())).unwrap();
        let u = s.user("keep me").unwrap();
        s.step(Step::new(u).text("ok").tokens(usage(10))).unwrap();
        let before = texts(&s.window().unwrap());
        let job = s.request_compaction().unwrap();
        let out = s.run_pending().unwrap();
        assert!(matches!(&out[..], [JobOutcome::Failed { .. }]), "{out:?}");
        let state = s.state().unwrap();
        assert!(matches!(
            state.job(job).unwrap().status,
            JobStatus::Failed { .. }
        ));
        let after = texts(&s.window().unwrap());
        assert_eq!(after, before, "the window is exactly as it was");
        assert_eq!(state.pending_jobs().count(), 0);
    }
}

#[test]
fn an_oversized_request_retries_with_truncated_outputs_then_recent_turns() {
    let cap = capture("short summary");
    let e = engine_in_memory(cap.clone(), None);
    // usable = 12,000 - 4,000 = 8,000 tokens
    let small = ModelLimits {
        context: 12_000,
        input: None,
        output: Some(4_000),
    };
    let s = e
        .create_session(NewSession::new(small.clone()).policy(Policy {
            auto: false,
            ..Policy::opencode_seed()
        }))
        .unwrap();
    let u = s.user("read the big file").unwrap();
    let big = "y".repeat(40_000); // 10k tokens: the full request cannot fit
    s.step(
        Step::new(u)
            .part(tool("read", "big.txt", &big))
            .tokens(usage(10))
            .finish(FinishReason::ToolCalls),
    )
    .unwrap();
    let job = s.request_compaction().unwrap();
    assert!(matches!(
        s.run_pending().unwrap()[..],
        [JobOutcome::Completed { .. }]
    ));
    let events: Vec<Envelope> = common::events(&s);
    let attempts: Vec<(String, bool)> = events
        .iter()
        .filter_map(|x| match &x.event {
            Event::CompactionAttempted {
                job: j,
                strategy,
                fits,
                ..
            } if *j == job => Some((strategy.clone(), *fits)),
            _ => None,
        })
        .collect();
    assert_eq!(
        attempts,
        [
            ("full".to_string(), false),
            ("truncated-tool-outputs".to_string(), true)
        ]
    );
    let req = cap.seen.lock().unwrap()[0].clone();
    let WindowPart::Tool {
        result: ToolResult::Output { text: out, .. },
        ..
    } = &req.messages[1].parts[0]
    else {
        panic!()
    };
    assert!(
        out.ends_with("[Tool output truncated for compaction: omitted 38000 chars]"),
        "{}",
        &out[out.len() - 80..]
    );

    // when even that does not fit, only the recent turns are sent; when nothing fits, it fails
    let cap = capture("s");
    let e = engine_in_memory(cap.clone(), None);
    let s = e
        .create_session(NewSession::new(small).policy(Policy {
            auto: false,
            ..Policy::opencode_seed()
        }))
        .unwrap();
    for i in 0..30 {
        let u = s.user(&format!("turn {i}: {}", "z".repeat(1_500))).unwrap();
        s.step(Step::new(u).text("w".repeat(1_500)).tokens(usage(10)))
            .unwrap();
    }
    s.request_compaction().unwrap();
    assert!(matches!(
        s.run_pending().unwrap()[..],
        [JobOutcome::Completed { .. }]
    ));
    let req = cap.seen.lock().unwrap()[0].clone();
    assert!(
        req.messages.len() < 61 && req.messages.len() >= 3,
        "{}",
        req.messages.len()
    );
    assert_eq!(req.messages[0].role, Role::User);
    assert!(
        texts(&Window {
            pivot: None,
            messages: req.messages.clone()
        })
        .last()
        .unwrap()
            == COMPACTION_QUESTION
    );
    let e = engine_in_memory(capture("s"), None);
    let tiny = ModelLimits {
        context: 1_000,
        input: Some(500),
        output: Some(100),
    };
    let s = e
        .create_session(NewSession::new(tiny).policy(Policy {
            auto: false,
            ..Policy::opencode_seed()
        }))
        .unwrap();
    let u = s.user(&"q".repeat(8_000)).unwrap();
    s.step(Step::new(u).text("a").tokens(usage(10))).unwrap();
    s.request_compaction().unwrap();
    let out = s.run_pending().unwrap();
    assert!(
        matches!(&out[..], [JobOutcome::Failed { error, .. }] if error.contains("does not fit")),
        "{out:?}"
    );
}

#[test]
fn the_loop_guard_pauses_auto_compaction_until_a_real_user_message() {
    // A summary as large as the history: compaction does not help.
    let e = engine_in_memory(capture(&"summary ".repeat(30_000)), None);
    let s = e.create_session(NewSession::new(limits())).unwrap();
    let u = s.user("go").unwrap();
    overflowing_step(&s, u, "t".repeat(20_000));
    assert!(matches!(
        s.run_pending().unwrap()[..],
        [JobOutcome::Completed { .. }]
    ));
    let state = s.state().unwrap();
    let reason = state.auto_paused.clone().expect("paused");
    assert!(reason.contains("shrank the window"), "{reason}");
    // overflow again: nothing is queued while paused
    let cont = state.messages.last().unwrap().id;
    let step = overflowing_step(&s, cont, "more");
    assert!(step.overflow.unwrap().overflow);
    assert_eq!(step.queued, None);
    // a real user message lifts the pause
    let u2 = s.user("try again").unwrap();
    let step = overflowing_step(&s, u2, "more");
    assert!(step.queued.is_some());
}

#[test]
fn failing_automatic_compactions_trip_the_loop_guard() {
    let e = engine_in_memory(
        Arc::new(Failing(SummarizeError::Failed("down".into()))),
        None,
    );
    let s = e.create_session(NewSession::new(limits())).unwrap();
    let u = s.user("go").unwrap();
    let mut queued = 0;
    for _ in 0..6 {
        let step = overflowing_step(&s, u, "x");
        queued += step.queued.is_some() as u32;
        s.run_pending().unwrap();
    }
    assert_eq!(
        queued, 3,
        "three failed automatic compactions within six steps, then a pause"
    );
    let reason = s.state().unwrap().auto_paused.unwrap();
    assert!(
        reason.contains("3 automatic compactions within the last 6 steps"),
        "{reason}"
    );
}

#[test]
fn compactions_spread_over_many_steps_do_not_trip_the_loop_guard() {
    let e = engine_in_memory(capture("short"), None);
    let s = e.create_session(NewSession::new(limits())).unwrap();
    let mut parent = s.user("a long autonomous task").unwrap();
    let mut compactions = 0;
    for step in 0..40 {
        let tokens = if step % 8 == 7 {
            usage(95_000)
        } else {
            usage(10_000)
        };
        let out = s
            .step(
                Step::new(parent)
                    .text("w".repeat(60_000))
                    .tokens(tokens)
                    .finish(FinishReason::ToolCalls),
            )
            .unwrap();
        for o in s.run_pending().unwrap() {
            if matches!(o, JobOutcome::Completed { .. }) {
                compactions += 1;
                parent = s.state().unwrap().messages.last().unwrap().id;
            }
        }
        let _ = out;
    }
    assert_eq!(compactions, 5, "one every eight steps, none refused");
    assert_eq!(s.state().unwrap().auto_paused, None);
}

#[test]
fn secrets_are_redacted_from_the_summary_and_counted() {
    let e = engine_in_memory(
        capture("Use OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuv to call it."),
        None,
    );
    let s = e.create_session(NewSession::new(limits())).unwrap();
    s.user("x").unwrap();
    let job = s.request_compaction().unwrap();
    assert!(matches!(
        s.run_pending().unwrap()[..],
        [JobOutcome::Completed { redactions: 1, .. }]
    ));
    assert_eq!(
        texts(&s.window().unwrap())[1],
        "Use OPENAI_API_KEY=[REDACTED openai-key] to call it."
    );
    assert_eq!(s.state().unwrap().job(job).unwrap().redactions, 1);
    let log: Vec<Envelope> = common::events(&s);
    let json = serde_json::to_string(&log).unwrap();
    assert!(
        !json.contains("sk-proj-abcdefghijklmnopqrstuv"),
        "the secret is nowhere in the log"
    );
}

/// A scripted session run through the engine.
fn script<L: EventLog>(e: &Engine<L>) -> SessionId {
    let s = e
        .create_session(
            NewSession::new(limits())
                .policy(Policy::opencode_seed())
                .title("scripted"),
        )
        .unwrap();
    for turn in 0..6u64 {
        let u = s.user(&format!("turn {turn}")).unwrap();
        for step in 0..3u64 {
            // three calm turns with big outputs (pruned at a turn's end), then
            // turns whose last step overflows (compacted)
            let out = "o".repeat(40_000 * (step as usize + 1));
            let tokens = if turn < 3 {
                usage(20_000)
            } else {
                usage(40_000 + 30_000 * step)
            };
            s.step(
                Step::new(u)
                    .part(tool("read", &format!("f{turn}{step}.rs"), &out))
                    .text("ok")
                    .tokens(tokens)
                    .finish(FinishReason::ToolCalls),
            )
            .unwrap();
            s.run_pending().unwrap();
        }
        s.end_turn().unwrap();
    }
    s.id()
}

fn log_bytes<L: EventLog>(e: &Engine<L>, s: SessionId) -> Vec<u8> {
    e.store()
        .read(s, 1)
        .unwrap()
        .flat_map(|x| codec::encode(&x.unwrap()).unwrap())
        .collect()
}

#[test]
fn the_same_commands_give_byte_identical_logs() {
    let e1 = engine_in_memory(Arc::new(ExtractiveSummarizer::default()), None);
    let s1 = script(&e1);
    let first = log_bytes(&e1, s1);
    let events: Vec<Envelope> = e1
        .store()
        .read(s1, 1)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        events
            .iter()
            .any(|x| matches!(x.event, Event::SummaryCompleted { .. })),
        "the script compacts"
    );
    assert!(
        events
            .iter()
            .any(|x| matches!(x.event, Event::PartsPruned { .. })),
        "the script prunes"
    );
    // replaying with the recorded summaries gives the same bytes
    let e2 = engine_in_memory(Arc::new(RecordedSummarizer::from_log(&events)), None);
    let s2 = script(&e2);
    assert_eq!(s1, s2);
    assert_eq!(log_bytes(&e2, s2), first);
}

/// Panics inside the summarizer.
struct Crash;
impl Summarizer for Crash {
    fn name(&self) -> &str {
        "crash"
    }
    fn summarize(&self, _: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        panic!("simulated bug inside the summarizer");
    }
}

#[test]
fn a_panicking_summarizer_is_a_recorded_failure_and_the_session_stays_usable() {
    let e = engine_in_memory(Arc::new(Crash), None);
    let s = e.create_session(NewSession::new(limits())).unwrap();
    s.user("x").unwrap();
    let job = s.request_compaction().unwrap();
    let out = s.run_pending().unwrap();
    assert!(
        matches!(&out[..], [JobOutcome::Failed { error, .. }] if error.contains("panicked: simulated bug")),
        "{out:?}"
    );
    assert!(matches!(
        s.state().unwrap().job(job).unwrap().status,
        JobStatus::Failed { .. }
    ));
    s.user("still works").unwrap();
}

#[test]
fn a_job_left_started_by_a_crash_runs_again_on_reopen() {
    // The log as a crash between start and completion leaves it: the job's
    // CompactionStarted is stored, nothing after it. (The CLI tests produce
    // the same with a real child killed by SIGKILL.)
    let dir = TempDir::new("engine");
    let (s, job) = {
        let e = engine_with(dir.path(), capture("unused"), None);
        let s = e.create_session(NewSession::new(limits())).unwrap();
        s.user("x").unwrap();
        let job = s.request_compaction().unwrap();
        let head = e.store().head(s.id()).unwrap();
        let started = ctxlog_store::NewEvent {
            id: EventId(uuid::Uuid::from_u128(0xC0FFEE)),
            recorded_at: 1,
            causation: None,
            correlation: None,
            event: Event::CompactionStarted {
                job,
                summary_message: MessageId(uuid::Uuid::from_u128(0xBEEF)),
                agent: None,
                model: None,
                prompt: None,
                tail_start: None,
                source_id: None,
            },
        };
        e.store()
            .append(s.id(), ctxlog_store::Expected::Exactly(head), vec![started])
            .unwrap();
        (s.id(), job)
    };
    let e = engine_seeded(dir.path(), capture("recovered"), None, 10);
    let s = e.session(s).unwrap();
    let state = s.state().unwrap();
    assert_eq!(
        state.job(job).unwrap().status,
        JobStatus::Running,
        "started, never completed"
    );
    let out = s.run_pending().unwrap();
    assert!(matches!(&out[..], [JobOutcome::Completed { job: j, .. }] if *j == job));
    let state = s.state().unwrap();
    assert_eq!(state.job(job).unwrap().attempts, 2);
    assert_eq!(
        texts(&s.window().unwrap()),
        [COMPACTION_QUESTION, "recovered"]
    );
    assert_eq!(
        s.run_pending().unwrap(),
        vec![],
        "a completed job never runs twice"
    );
}

#[test]
fn window_at_shows_the_past() {
    let e = engine_in_memory(capture("S"), None);
    let s = e.create_session(NewSession::new(limits())).unwrap();
    s.user("first").unwrap();
    let head_before = e.store().head(s.id()).unwrap();
    s.request_compaction().unwrap();
    s.run_pending().unwrap();
    assert_eq!(texts(&s.window_at(head_before).unwrap()), ["first"]);
    assert_eq!(texts(&s.window().unwrap()), [COMPACTION_QUESTION, "S"]);
    assert!(matches!(
        s.window_at(10_000),
        Err(EngineError::NoSuchSeq { .. })
    ));
}

#[test]
fn the_extractive_summary_names_requests_files_commands_and_errors_within_budget() {
    let e = engine_in_memory(Arc::new(ExtractiveSummarizer::default()), None);
    let s = e.create_session(NewSession::new(limits())).unwrap();
    let u = s
        .user("Make the parser test in src/parse.rs pass.")
        .unwrap();
    let bash = |cmd: &str, ok: bool| PartBody::Tool {
        call_id: format!("c-{cmd}"),
        tool: "bash".into(),
        state: if ok {
            ToolState::Completed {
                input: Json::Object(vec![("command".into(), cmd.into())]),
                output: "ok".into(),
                title: None,
                metadata: Json::Null,
                start: 1,
                end: 2,
                attachments: vec![],
            }
        } else {
            ToolState::Error {
                input: Json::Object(vec![("command".into(), cmd.into())]),
                error: "test parse_block ... FAILED".into(),
                start: 1,
                end: 2,
            }
        },
    };
    s.step(
        Step::new(u)
            .part(tool("read", "src/parse.rs", "fn parse_block() {}"))
            .part(bash("cargo test", false))
            .tokens(usage(10))
            .finish(FinishReason::ToolCalls),
    )
    .unwrap();
    s.step(
        Step::new(u)
            .part(tool("edit", "src/parse.rs", "patched"))
            .part(bash("cargo test", true))
            .text("Fixed the off-by-one in parse_block.")
            .tokens(usage(10)),
    )
    .unwrap();
    s.request_compaction().unwrap();
    s.run_pending().unwrap();
    let summary = texts(&s.window().unwrap())[1].clone();
    for want in [
        "Make the parser test in src/parse.rs pass.",
        "### Files changed\n- src/parse.rs",
        "### Files read\n- src/parse.rs",
        "`cargo test` (failed: test parse_block ... FAILED)",
        "`cargo test` (ok)",
        "bash: test parse_block ... FAILED",
        "Fixed the off-by-one in parse_block.",
    ] {
        assert!(summary.contains(want), "missing {want:?} in:\n{summary}");
    }
    // bounded by its budget
    let tight = ExtractiveSummarizer {
        budget_tokens: 40,
        ..ExtractiveSummarizer::default()
    };
    let state = s.state().unwrap();
    let req = SummaryRequest {
        session: s.id(),
        job: state.jobs[0].marker,
        system: String::new(),
        messages: window(&SessionState::replay(&common::events(&s)[..12]).unwrap()).messages,
        instruction: String::new(),
        transcript: None,
        model: None,
        max_output_tokens: 100,
    };
    let out = tight.summarize(&req).unwrap();
    assert!(state.policy.estimate(&out.text) <= 45, "{}", out.text);
}

#[test]
fn subscribers_hear_of_compactions_failures_prunes_and_pauses() {
    let e = engine_in_memory(capture(&"big summary ".repeat(20_000)), None);
    let rx = e.subscribe(16);
    let s = e.create_session(NewSession::new(limits())).unwrap();
    let u = s.user("go").unwrap();
    overflowing_step(&s, u, "t".repeat(20_000));
    s.run_pending().unwrap();
    let notices: Vec<Notice> = rx.try_iter().collect();
    assert!(
        matches!(notices[0], Notice::Compacted { session, .. } if session == s.id()),
        "{notices:?}"
    );
    assert!(
        matches!(notices[1], Notice::AutoCompactionPaused { .. }),
        "{notices:?}"
    );
    // prunes
    for i in 0..3 {
        let u = s.user(&format!("turn {i}")).unwrap();
        s.step(
            Step::new(u)
                .part(tool("read", &format!("f{i}"), &"r".repeat(200_000)))
                .tokens(usage(10)),
        )
        .unwrap();
        s.end_turn().unwrap();
    }
    assert!(rx
        .try_iter()
        .any(|n| matches!(n, Notice::Pruned { parts: 1.., .. })));
    drop(rx);
    // a dropped subscriber is forgotten; a failure reaches a new one
    let e = engine_in_memory(
        Arc::new(Failing(SummarizeError::Failed("down".into()))),
        None,
    );
    let rx = e.subscribe(1);
    let s = e.create_session(NewSession::new(limits())).unwrap();
    s.user("x").unwrap();
    s.request_compaction().unwrap();
    s.run_pending().unwrap();
    assert!(matches!(
        rx.try_recv().unwrap(),
        Notice::CompactionFailed { .. }
    ));
}

/// Run by `the_same_commands_give_byte_identical_logs_across_processes` in a
/// child process (this test binary, re-executed): writes the scripted session
/// into `$CTXLOG_CHILD_DIR` and prints its log's bytes as hex. Does nothing
/// when run as an ordinary test.
#[test]
fn child_writes_the_script() {
    let Some(dir) = std::env::var_os("CTXLOG_CHILD_DIR") else {
        return;
    };
    let e = engine_with(
        Path::new(&dir),
        Arc::new(ExtractiveSummarizer::default()),
        None,
    );
    let s = script(&e);
    let hex: String = log_bytes(&e, s)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("\nLOG {hex}");
}

#[test]
fn the_same_commands_give_byte_identical_logs_across_processes() {
    let run_child = || {
        let dir = TempDir::new("engine");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_writes_the_script",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("CTXLOG_CHILD_DIR", dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("LOG "))
            .expect("the child printed its log")
            .to_owned()
    };
    let (a, b) = (run_child(), run_child());
    assert!(a.len() > 10_000);
    assert_eq!(a, b, "two processes wrote different logs");
    // and the same as this process
    let dir = TempDir::new("engine");
    let e = engine_with(dir.path(), Arc::new(ExtractiveSummarizer::default()), None);
    let s = script(&e);
    let here: String = log_bytes(&e, s)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(here, a);
}

/// Says "too large" to any request with more than `max` messages.
struct Picky {
    max: usize,
    sizes: Mutex<Vec<usize>>,
}
impl Summarizer for Picky {
    fn name(&self) -> &str {
        "picky"
    }
    fn summarize(&self, r: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        self.sizes.lock().unwrap().push(r.messages.len());
        if r.messages.len() > self.max {
            return Err(SummarizeError::TooLarge("prompt is too long".into()));
        }
        Ok(SummaryOutput {
            text: "fits now".into(),
            tokens: usage(1),
            finish: FinishReason::Stop,
            redacted: 0,
        })
    }
}

#[test]
fn a_provider_too_large_answer_shrinks_the_next_attempt() {
    let picky = Arc::new(Picky {
        max: 9,
        sizes: Mutex::new(vec![]),
    });
    let e = engine_in_memory(picky.clone(), None);
    // context 0: no budget known, so only the provider can say "too large"
    let s = e
        .create_session(NewSession::new(ModelLimits::default()))
        .unwrap();
    for i in 0..10 {
        let u = s.user(&format!("turn {i} {}", "p".repeat(400))).unwrap();
        s.step(Step::new(u).text("a".repeat(400)).tokens(usage(10)))
            .unwrap();
    }
    s.request_compaction().unwrap();
    assert!(matches!(
        s.run_pending().unwrap()[..],
        [JobOutcome::Completed { .. }]
    ));
    let sizes = picky.sizes.lock().unwrap().clone();
    assert_eq!(sizes[0], 21, "the full request first");
    assert_eq!(
        sizes,
        [21, 13, 7],
        "each attempt smaller; the identical truncated one skipped"
    );
}

#[test]
fn a_long_session_is_kept_as_a_snapshot_as_it_grows() {
    assert!(!snapshot_due(0, SNAPSHOT_EVERY - 1));
    assert!(snapshot_due(SNAPSHOT_EVERY - 1, SNAPSHOT_EVERY));
    // Past 80k events, one snapshot per eighth of the next power of two
    // (262,144 events between 2^20 and 2^21).
    assert!(!snapshot_due(1_100_000, 1_150_000));
    assert!(snapshot_due(1_000_000, 1_100_000));
    assert!(!snapshot_due(1_048_577, 1_048_577 + 200_000));
    let dir = TempDir::new("engine");
    let engine = engine_with(dir.path(), Arc::new(ExtractiveSummarizer::default()), None);
    let s = engine.create_session(NewSession::new(limits())).unwrap();
    // One user message per command: 2 events each.
    let mut i = 0;
    while engine.store().head(s.id()).unwrap() < SNAPSHOT_EVERY + 10 {
        s.user(&format!("message {i}")).unwrap();
        i += 1;
    }
    let loaded = engine.store().load_state(s.id()).unwrap();
    let snapshot = loaded
        .snapshot
        .expect("a snapshot once the head passed 10k");
    assert!((SNAPSHOT_EVERY..SNAPSHOT_EVERY + 2).contains(&snapshot));
    assert!(loaded.replayed < 20, "folded {} events", loaded.replayed);
    assert_eq!(
        loaded.state.digest(),
        engine.store().replay(s.id()).unwrap().digest()
    );
}
