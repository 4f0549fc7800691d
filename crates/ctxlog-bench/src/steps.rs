//! The cost of one agent step as the history grows, against re-folding the
//! whole log for every step ([`bench_steps`]).

use crate::measure::{measure, median, Scratch};
use crate::report::Report;
use crate::sizes::{generated, Sizes};
use crate::stores::{store, write_log};
use crate::{failed, BenchError};
use ctxlog_core::{
    window, Envelope, FinishReason, Json, PartBody, SeededIds, SessionId, SessionState, TokenUsage,
    ToolState,
};
use ctxlog_engine::summarize::{SummarizeError, Summarizer, SummaryOutput, SummaryRequest};
use ctxlog_engine::{Engine, EngineBuilder, ManualClock, Step};
use ctxlog_sled::{Durability, SledStore};
use ctxlog_store::EventLog;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// 5–6. Step cost at `small` and `large` events of history; re-fold at
/// `large`. Calls `progress` once per figure.
pub fn bench_steps(
    z: &Sizes,
    r: &mut Report,
    progress: &mut dyn FnMut(),
) -> Result<(), BenchError> {
    let small_dir = Scratch::new("steps-small");
    let large_dir = Scratch::new("steps-large");
    let (small, large, large_engine, large_session) = step_costs(
        small_dir.path(),
        large_dir.path(),
        z.small,
        z.large,
        z.steps,
    )?;
    drop(small_dir);
    r.set_ratio("step_cost_growth", large / small);
    r.set_figure("step_seconds_1k", json!(small));
    r.set_figure(format!("step_seconds_{}", z.large), json!(large));
    progress();
    let refold_secs = measure(z.runs, || refold(large_engine.store(), large_session))?;
    r.set_ratio("incremental_vs_refold", refold_secs / large);
    r.set_figure(format!("refold_seconds_{}", z.large), json!(refold_secs));
    drop(large_engine);
    drop(large_dir);
    progress();
    Ok(())
}

/// Median step cost at two history sizes, measured interleaved (a step on
/// one, then on the other) so machine noise falls on both alike; seconds.
fn step_costs(
    small_dir: &Path,
    large_dir: &Path,
    small: u64,
    large: u64,
    steps: usize,
) -> Result<(f64, f64, Engine<SledStore>, SessionId), BenchError> {
    let (se, ss, sp) = step_session(small_dir, &generated(21, small)?)?;
    let (le, ls, lp) = step_session(large_dir, &generated(21, large)?)?;
    for i in 0..5 {
        one_step(&se, ss, sp, i)?; // warm-up
        one_step(&le, ls, lp, i)?;
    }
    let (mut a, mut b) = (Vec::with_capacity(steps), Vec::with_capacity(steps));
    for i in 0..steps {
        a.push(one_step(&se, ss, sp, 5 + i)?);
        b.push(one_step(&le, ls, lp, 5 + i)?);
    }
    Ok((median(a)?, median(b)?, le, ls))
}

/// A session of `events` in a store, compacted at its head by a fixed
/// summary (so the window starts at the same fresh pivot whatever the
/// history), with a user message to answer: (engine, session, parent).
pub(crate) fn step_session(
    dir: &Path,
    events: &[Envelope],
) -> Result<(Engine<SledStore>, SessionId, ctxlog_core::MessageId), BenchError> {
    let session = write_log(dir, events)?;
    compacted_at_head(store(dir, Durability::Buffered)?, session)
}

/// An engine on `log`'s `session`, compacted at its head by a fixed
/// summary, with a user message to answer: (engine, session, parent).
pub(crate) fn compacted_at_head<L: EventLog>(
    log: L,
    session: SessionId,
) -> Result<(Engine<L>, SessionId, ctxlog_core::MessageId), BenchError> {
    let engine = EngineBuilder::new()
        .clock(Arc::new(ManualClock::new(1_800_000_000_000)))
        .ids(SeededIds::new(23))
        .summarizer(Arc::new(FixedSummarizer))
        .build(log)
        .map_err(|e| failed("engine")(&e))?;
    let handle = engine.session(session).map_err(|e| failed("open")(&e))?;
    handle.compact().map_err(|e| failed("compact")(&e))?;
    let parent = handle
        .user("go on with the next file")
        .map_err(|e| failed("prompt")(&e))?;
    Ok((engine, session, parent))
}

/// A summarizer whose summary is the same whatever the history, so the step
/// benchmark compares equal windows.
struct FixedSummarizer;

impl Summarizer for FixedSummarizer {
    fn name(&self) -> &str {
        "fixed"
    }
    fn summarize(&self, _: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        Ok(SummaryOutput {
            text: "## Objective\n- keep going through the files\n".repeat(20),
            tokens: TokenUsage::default(),
            finish: FinishReason::Stop,
            redacted: 0,
        })
    }
}

/// One agent step as an agent makes it: record the step (message, a text
/// part, a tool output, its usage; the overflow check runs), then build the
/// window for the next call. Seconds.
pub(crate) fn one_step<L: EventLog>(
    engine: &Engine<L>,
    session: SessionId,
    parent: ctxlog_core::MessageId,
    i: usize,
) -> Result<f64, BenchError> {
    let output = format!("line {i}: ok\n").repeat(150);
    let parts = vec![
        PartBody::Text {
            text: format!("step {i}: checking the next file"),
            synthetic: false,
            time: None,
        },
        PartBody::Tool {
            call_id: format!("bench_{i}"),
            tool: "read".into(),
            state: ToolState::Completed {
                input: Json::Null,
                output,
                title: None,
                metadata: Json::Null,
                start: 0,
                end: 0,
                attachments: Vec::new(),
            },
        },
    ];
    let tokens = TokenUsage {
        input: 1_000,
        output: 100,
        ..TokenUsage::default()
    };
    let session = engine.session(session).map_err(|e| failed("open")(&e))?;
    let t = Instant::now();
    let step = Step {
        parts,
        tokens,
        finish: FinishReason::ToolCalls,
        ..Step::new(parent)
    };
    session.step(step).map_err(|e| failed("step")(&e))?;
    let w = session.window().map_err(|e| failed("window")(&e))?;
    let secs = t.elapsed().as_secs_f64();
    non_empty(&w)?;
    Ok(secs)
}

/// What a stateless implementation does for one step: read the whole log,
/// fold it, check overflow, build the window. Seconds.
fn refold(store: &SledStore, session: SessionId) -> Result<f64, BenchError> {
    let t = Instant::now();
    let mut state = SessionState::new();
    for e in store.read(session, 1).map_err(|e| failed("read")(&e))? {
        let e = e.map_err(|e| failed("read")(&e))?;
        state.evolve(&e).map_err(|e| failed("fold")(&e))?;
    }
    let _ = state.overflow();
    let w = window(&state);
    let secs = t.elapsed().as_secs_f64();
    non_empty(&w)?;
    Ok(secs)
}

/// Every measured window has messages (the step or the fold went wrong
/// otherwise).
fn non_empty(w: &ctxlog_core::Window) -> Result<(), BenchError> {
    if w.messages.is_empty() {
        return Err(BenchError::Failed("bench: an empty window".into()));
    }
    Ok(())
}
