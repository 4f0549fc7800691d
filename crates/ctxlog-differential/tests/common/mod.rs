//! Checks shared by the differential tests of the JSONL agents.

#![allow(dead_code)]

use ctxlog_core::{
    decide, Command, Context, Envelope, Event, LoopGuard, MessageId, Policy, Role, SeededIds,
    SessionState,
};
use ctxlog_differential::model_server::{ModelServer, Request};
use ctxlog_engine::simulate::{simulate_recording, Decision, SimulateConfig};
use ctxlog_engine::summarize::RecordedSummarizer;
use ctxlog_import::{import, Format, ImportOptions};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// ctxlog's window `ours` equals what `agent` sent in request `n`
/// (`theirs`, before seq `before`); else both are written beside the run
/// (`window-NN.json`, `sent-NN.json`) and the test fails naming them.
pub fn same_window(dir: &Path, agent: &str, n: usize, before: u64, ours: &Value, theirs: &Value) {
    if ours == theirs {
        return;
    }
    let file = dir.join(format!("window-{n:02}.json"));
    std::fs::write(&file, serde_json::to_vec_pretty(ours).unwrap()).unwrap();
    let sent = dir.join(format!("sent-{n:02}.json"));
    std::fs::write(&sent, serde_json::to_vec_pretty(theirs).unwrap()).unwrap();
    panic!(
        "request n={n} (before seq {before}): ctxlog's window differs from what {agent} sent; ours in {}, theirs in {}",
        file.display(),
        sent.display()
    );
}

/// What happened: the events that do not describe the session.
fn happened(events: Vec<Envelope>) -> Vec<Envelope> {
    events
        .into_iter()
        .filter(|e| !e.event.is_description())
        .collect()
}

/// The recording the agent wrote, imported at every line end while
/// it grew, gives a prefix of what the whole file gives: an import made
/// while the agent is still writing never stores what a later one
/// contradicts. Returns how many prefixes were imported.
pub fn check_every_prefix(path: &Path, format: Format) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let name = path.display().to_string();
    let whole = import(&bytes[..], &name, format, &ImportOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let whole = happened(whole.events.to_vec().unwrap());
    let live = ImportOptions::default();
    let mut imported = 0;
    for (cut, _) in bytes.iter().enumerate().filter(|(_, b)| **b == b'\n') {
        let part = match import(&bytes[..=cut], &name, format, &live) {
            Err(e) if e.holds_no_session() => continue,
            Err(e) => panic!("{name} cut after byte {cut}: refused: {e}"),
            Ok(a) => happened(a.events.to_vec().unwrap()),
        };
        assert!(
            part.len() <= whole.len() && part[..] == whole[..part.len()],
            "{name} cut after byte {cut}: its {} events are not a prefix of the whole file's",
            part.len()
        );
        imported += 1;
    }
    imported
}

/// Whether `decide` queues an automatic compaction before a request on
/// `state`.
fn compacts_before_request(state: &SessionState) -> bool {
    let mut ids = SeededIds::new(7);
    let mut context = Context {
        ids: &mut ids,
        at: 0,
        guard: LoopGuard::default(),
    };
    decide(state, Command::BeforeRequest, &mut context)
        .expect("before_request")
        .events
        .iter()
        .any(|d| matches!(d.event, Event::CompactionRequested { .. }))
}

/// Under `policy` (a preset that checks before each request), ctxlog's
/// decision before every request the agent made (each assistant message,
/// and each place the agent compacted on its own) equals the agent's: a
/// compaction exactly where the agent compacted automatically. Returns
/// how many compactions.
pub fn check_decisions_before_requests(events: &[Envelope], policy: &Policy) -> usize {
    let mut state = SessionState::new();
    let mut compactions = 0;
    for e in events {
        let theirs = match &e.event {
            Event::MessageAppended {
                role: Role::Assistant,
                ..
            } => Some(false),
            Event::CompactionRequested {
                auto: true,
                overflow: false,
                ..
            } => Some(true),
            _ => None,
        };
        if let Some(theirs) = theirs {
            let ours = compacts_before_request(&state);
            assert_eq!(
                ours,
                theirs,
                "before seq {} ({}): ctxlog compacts = {ours}, the agent compacted = {theirs}",
                e.seq,
                e.event.kind()
            );
            compactions += usize::from(theirs);
        }
        state.evolve(e).unwrap();
        if e.seq == 1 {
            state.policy = policy.clone();
        }
    }
    compactions
}

/// `simulate` under `policy`, with the recorded summaries, compacts after
/// exactly the steps (and recorded refusals) the agent compacted after
/// automatically, on the recorded usage, and resumes with nothing (as
/// Claude Code, Codex and pi). Returns how many.
pub fn check_simulation(events: &[Envelope], policy: &Policy) -> usize {
    let config = SimulateConfig {
        summarizer: Arc::new(RecordedSummarizer::from_log(events)),
        ..SimulateConfig::new(policy.clone())
    };
    let report = simulate_recording(events, config, |_| {}).expect("simulate");
    // A compaction after a refusal the recording kept (an assistant message
    // with an error and no step) is one simulate can make; Claude Code
    // leaves its refusals out, so its reactive compactions are not.
    let mut last_assistant = String::new();
    let mut refused = false;
    let mut recorded = Vec::new();
    for e in events {
        match &e.event {
            Event::MessageAppended {
                role: Role::Assistant,
                source_id: Some(s),
                ..
            } => {
                last_assistant = s.clone();
                refused = false;
            }
            Event::MessageErrored { .. } => refused = true,
            Event::StepFinished { .. } => refused = false,
            Event::CompactionRequested {
                auto: true,
                overflow,
                ..
            } if !overflow || refused => recorded.push(last_assistant.clone()),
            _ => {}
        }
    }
    let simulated: Vec<String> = report
        .decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Compaction {
                after, estimated, ..
            } => {
                assert!(!estimated, "after {after}: the recorded usage was replaced");
                Some(after.clone())
            }
            Decision::Refused {
                after,
                compacted: true,
            } => Some(after.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        simulated, recorded,
        "simulate compacts after the steps the agent compacted after: {:?}",
        report.decisions
    );
    // None of these agents writes anything to resume after a compaction:
    // no continue message, and a refused prompt is not appended again.
    assert!(
        !report
            .decisions
            .iter()
            .any(|d| matches!(d, Decision::Replay { .. } | Decision::Continue { .. })),
        "{:?}",
        report.decisions
    );
    recorded.len()
}

/// Every request `server` received, each saved as `request-NN-Kind.json`
/// in `dir`; the run of `agent` (scenario `name`) used every scripted
/// agent-loop answer (and every summary when `all_summaries`) and made no
/// call the script did not expect.
pub fn scripted_requests(
    agent: &str,
    name: &str,
    dir: &Path,
    server: &ModelServer,
    all_summaries: bool,
) -> Vec<Request> {
    let requests = server.requests();
    for r in &requests {
        let file = dir.join(format!("request-{:02}-{:?}.json", r.n, r.kind));
        std::fs::write(file, serde_json::to_vec_pretty(&r.body).unwrap()).unwrap();
    }
    let unscripted: Vec<String> = requests
        .iter()
        .filter(|r| r.reply.is_none())
        .map(|r| format!("n={} {:?}", r.n, r.kind))
        .collect();
    assert!(
        unscripted.is_empty(),
        "{name}: {agent} made model calls the script did not expect: {unscripted:?} (requests in {})",
        dir.display()
    );
    let (agent_left, summaries_left) = server.unused();
    assert_eq!(
        agent_left, 0,
        "{name}: {agent} made fewer agent-loop calls than scripted"
    );
    if all_summaries {
        assert_eq!(
            summaries_left, 0,
            "{name}: {agent} made fewer summary calls than scripted"
        );
    }
    requests
}

/// The assistant messages of an import, in order: (seq of their
/// `MessageAppended`, id).
pub fn assistant_messages(events: &[Envelope]) -> Vec<(u64, MessageId)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::MessageAppended {
                message,
                role: Role::Assistant,
                ..
            } => Some((e.seq, *message)),
            _ => None,
        })
        .collect()
}
