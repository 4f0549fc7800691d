//! A provider's "request too large" and what resumes an automatic
//! compaction, through the engine, per preset: OpenCode 1.17/1.18 compact and
//! replay the refused prompt (or continue with the overflow note when there
//! is nothing before it to keep); the seed records the error.

use ctxlog_core::window::{
    WindowPart, COMPACTION_QUESTION, CONTEXT_OVERFLOW_ERROR, CONTINUE_TEXT, CONTINUE_TEXT_OPENCODE,
    OVERFLOW_CONTINUE_PREFIX,
};
use ctxlog_core::*;
use ctxlog_engine::summarize::*;
use ctxlog_engine::*;
mod common;
use std::sync::{Arc, Mutex};

/// Answers with a fixed summary and keeps every request.
#[derive(Default)]
struct Capture(Mutex<Vec<SummaryRequest>>);

impl Summarizer for Capture {
    fn name(&self) -> &str {
        "capture"
    }
    fn summarize(&self, request: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        self.0.lock().unwrap().push(request.clone());
        Ok(SummaryOutput {
            text: "## Objective\n- Summarized.".into(),
            tokens: TokenUsage::default(),
            finish: FinishReason::Stop,
            redacted: 0,
        })
    }
}

fn engine(capture: Arc<Capture>) -> Engine<MemoryLog> {
    EngineBuilder::new()
        .clock(Arc::new(ManualClock::new(1_790_000_000_000)))
        .ids(SeededIds::new(7))
        .summarizer(capture)
        .in_memory()
        .unwrap()
}

fn start(e: &Engine<MemoryLog>, policy: Policy) -> Session<'_, MemoryLog> {
    let new = NewSession::new(ModelLimits {
        context: 100_000,
        output: Some(4_000),
        ..ModelLimits::default()
    })
    .policy(policy);
    e.create_session(new).unwrap()
}

fn texts(w: &Window) -> Vec<(Role, String)> {
    w.messages
        .iter()
        .map(|m| {
            let t: Vec<String> = m
                .parts
                .iter()
                .map(|p| match p {
                    WindowPart::Text(t) => t.clone(),
                    other => format!("{other:?}"),
                })
                .collect();
            (m.role, t.join("|"))
        })
        .collect()
}

/// A first turn, then a prompt the provider refuses.
fn refused_second_prompt(s: Session<'_, MemoryLog>) -> Option<MessageId> {
    let first = s.user("first turn").unwrap();
    s.step(Step::new(first).text("One.").tokens(TokenUsage {
        input: 30_000,
        output: 3,
        ..TokenUsage::default()
    }))
    .unwrap();
    let big = s.user("a prompt too large").unwrap();
    let refused = s.assistant_message(big, None).unwrap();
    s.refused(refused, "context_length_exceeded").unwrap()
}

#[test]
fn opencode_compacts_the_history_before_the_refused_prompt_and_replays_it() {
    for policy in [Policy::opencode_1_17(), Policy::opencode_1_18()] {
        let capture = Arc::new(Capture::default());
        let e = engine(capture.clone());
        let s = start(&e, policy.clone());
        let job = refused_second_prompt(s).expect("a compaction is queued");
        let state = s.state().unwrap();
        let j = state.job(job).unwrap();
        assert!(j.auto && j.overflow, "{}", policy.name);
        assert!(matches!(
            &j.trigger,
            CompactionTrigger::ProviderOverflow { error } if error == "context_length_exceeded"
        ));
        let outcomes = s.run_pending().unwrap();
        assert!(matches!(
            outcomes[..],
            [JobOutcome::Completed {
                continued: true,
                ..
            }]
        ));
        // The window: the pivot, then the refused prompt again; no continue.
        assert_eq!(
            texts(&s.window().unwrap()),
            vec![
                (Role::User, COMPACTION_QUESTION.to_owned()),
                (Role::Assistant, "## Objective\n- Summarized.".to_owned()),
                (Role::User, "a prompt too large".to_owned()),
            ],
            "{}",
            policy.name
        );
        let state = s.state().unwrap();
        let replayed = state.messages.last().unwrap();
        assert!(!replayed.synthetic);
        // The summarizer saw the history before the refused prompt only.
        let requests = capture.0.lock().unwrap();
        let seen = format!("{:?}{:?}", requests[0].messages, requests[0].transcript);
        assert!(
            seen.contains("first turn") && !seen.contains("too large"),
            "{seen}"
        );
        if policy.summary_input != SummaryInput::Messages {
            let t = requests[0].transcript.as_deref().unwrap();
            assert!(t.contains("[User]: first turn\n\n[Assistant]: One."), "{t}");
        }
    }
}

#[test]
fn a_refused_first_prompt_has_nothing_to_keep_and_continues_with_the_overflow_note() {
    let e = engine(Arc::new(Capture::default()));
    let s = start(&e, Policy::opencode_1_18());
    let first = s.user("an enormous first prompt").unwrap();
    let refused = s.assistant_message(first, None).unwrap();
    s.refused(refused, "prompt is too long").unwrap().unwrap();
    s.run_pending().unwrap();
    let window = texts(&s.window().unwrap());
    let last = &window.last().unwrap().1;
    assert_eq!(
        last,
        &format!("{OVERFLOW_CONTINUE_PREFIX}{CONTINUE_TEXT_OPENCODE}")
    );
    assert!(s.state().unwrap().messages.last().unwrap().synthetic);
}

#[test]
fn the_seed_records_the_refusal_as_an_error_and_compacts_nothing() {
    let e = engine(Arc::new(Capture::default()));
    let s = start(&e, Policy::opencode_seed());
    assert_eq!(refused_second_prompt(s), None);
    let state = s.state().unwrap();
    // Only an open request can be refused: not a prompt, not a finished step.
    let prompt = state.messages[0].id;
    let step = state.messages[1].id;
    for id in [prompt, step] {
        assert!(s.refused(id, "too large").is_err());
    }
    assert_eq!(s.state().unwrap().head, state.head, "nothing recorded");
    assert!(state.jobs.is_empty());
    let error = state.messages.last().unwrap().error.clone().unwrap();
    assert_eq!(error.name, CONTEXT_OVERFLOW_ERROR);
    assert_eq!(error.message, "context_length_exceeded");
}

#[test]
fn the_continue_message_is_the_presets_own() {
    for (policy, want) in [
        (Policy::opencode_seed(), CONTINUE_TEXT),
        (Policy::opencode_1_17(), CONTINUE_TEXT_OPENCODE),
        (Policy::opencode_1_18(), CONTINUE_TEXT_OPENCODE),
    ] {
        let e = engine(Arc::new(Capture::default()));
        let s = start(&e, policy.clone());
        let u = s.user("go").unwrap();
        let out = s
            .step(Step::new(u).text("Done.").tokens(TokenUsage {
                input: 99_000,
                ..TokenUsage::default()
            }))
            .unwrap();
        assert!(out.queued.is_some(), "{}", policy.name);
        s.run_pending().unwrap();
        let window = texts(&s.window().unwrap());
        assert_eq!(window.last().unwrap().1, want, "{}", policy.name);
        // The export marks it as OpenCode does.
        let events: Vec<Envelope> = common::events(&s);
        let mut out = Vec::new();
        ctxlog_import::export::opencode(&events, &mut out).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let part = doc["messages"].as_array().unwrap().last().unwrap()["parts"][0].clone();
        assert_eq!(part["metadata"]["compaction_continue"], true, "{part}");
        assert_eq!(part["synthetic"], true);
    }
}
