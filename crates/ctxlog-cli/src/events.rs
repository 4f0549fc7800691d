//! Files of events: `generate` (a seeded synthetic session) and
//! `replay-events` (a JSON-lines file replayed, its digest reported).

use crate::CliError;
use ctxlog_core::audit;
use ctxlog_core::generate::GenerateConfig;
use ctxlog_core::{plan_prune, window, Envelope, JobStatus, RefusedEvent, SessionState};
use serde_json::json;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// `generate`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct GenerateArgs {
    /// Seed of the simulated session.
    #[arg(long, default_value_t = 3)]
    pub seed: u64,
    /// User turns.
    #[arg(long, default_value_t = 16)]
    pub turns: u32,
    /// Model context window, tokens (0 = unlimited).
    #[arg(long, default_value_t = 80_000)]
    pub context: u64,
    /// Model output limit, tokens.
    #[arg(long, default_value_t = 8_000)]
    pub output: u64,
    /// Policy preset (`opencode-seed`, `opencode-1.17`); with
    /// --policy-file, the one of the file's policies to use
    /// [default: opencode-seed].
    #[arg(long, add = crate::completion::presets())]
    pub policy: Option<String>,
    /// Policy as a JSON file (every constant configurable): one policy,
    /// or several (`ctxlog presets > p.json`) and --policy NAME to pick.
    #[arg(long)]
    pub policy_file: Option<PathBuf>,
    /// Also write the events as JSON lines to this file.
    #[arg(long)]
    pub events_out: Option<PathBuf>,
}

/// `generate`.
pub(crate) fn generate(as_json: bool, a: &GenerateArgs) -> Result<(), CliError> {
    let policy = match &a.policy_file {
        Some(path) => crate::recording::read_policy(path, a.policy.as_deref())?,
        None => ctxlog_core::Policy::named(
            a.policy
                .as_deref()
                .unwrap_or(ctxlog_core::policy::PRESET_OPENCODE_SEED),
        )
        .map_err(|e| CliError::BadInput(e.to_string()))?,
    };
    let cfg = GenerateConfig {
        seed: a.seed,
        turns: a.turns,
        policy,
        limits: ctxlog_core::ModelLimits {
            context: a.context,
            input: None,
            output: Some(a.output),
        },
        ..GenerateConfig::default()
    };
    generate_session(as_json, &cfg, a.events_out.as_deref())
}

/// `generate`: simulate, optionally write the events, report.
pub(crate) fn generate_session(
    as_json: bool,
    cfg: &GenerateConfig,
    events_out: Option<&Path>,
) -> Result<(), CliError> {
    let events = ctxlog_core::generate::generate(cfg)
        .map_err(|e| CliError::Failed(format!("the generator wrote an invalid event: {e}")))?;
    if let Some(path) = events_out {
        write_events(path, &events)?;
    }
    let state = SessionState::replay_keeping_history(&events)
        .map_err(|e| CliError::Failed(format!("replay failed: {e}")))?;
    report(as_json, &events, &state);
    Ok(())
}

/// `replay-events FILE`: fold the file's envelopes, report.
pub(crate) fn replay_events(as_json: bool, file: &Path) -> Result<(), CliError> {
    let events = read_events(file)?;
    // The whole file is in memory: the state keeps the history too (the
    // report sums the tool outputs of every message).
    let mut state = SessionState::keeping_history();
    for (line, e) in &events {
        state.evolve(e).map_err(|err: RefusedEvent| {
            CliError::BadInput(format!("{}:{line}: {err}", file.display()))
        })?;
    }
    let events: Vec<Envelope> = events.into_iter().map(|(_, e)| e).collect();
    report(as_json, &events, &state);
    Ok(())
}

fn write_events(path: &Path, events: &[Envelope]) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError::Failed(format!("{}: {e}", path.display()));
    let mut out = BufWriter::new(File::create(path).map_err(fail)?);
    for e in events {
        serde_json::to_writer(&mut out, e).map_err(|e| fail(e.into()))?;
        out.write_all(b"\n").map_err(fail)?;
    }
    out.flush().map_err(fail)
}

/// Reads envelopes, one per non-empty line, from `path` (`-`: standard
/// input); errors name the file and line.
fn read_events(path: &Path) -> Result<Vec<(usize, Envelope)>, CliError> {
    let reader: Box<dyn BufRead> = if path == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        let file = File::open(path)
            .map_err(|e| CliError::BadInput(format!("{}: cannot open: {e}", path.display())))?;
        Box::new(BufReader::new(file))
    };
    let mut events = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| CliError::BadInput(format!("{}:{n}: {e}", path.display())))?;
        if line.trim().is_empty() {
            continue;
        }
        let env: Envelope = serde_json::from_str(&line).map_err(|e| {
            CliError::BadInput(format!("{}:{n}: not an event: {e}", path.display()))
        })?;
        events.push((n, env));
    }
    Ok(events)
}

/// The estimated tokens of every completed tool output the state holds.
fn stored_output_tokens(state: &SessionState) -> u64 {
    let estimator = state.policy.estimator;
    state
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| p.completed_output_units())
        .map(|units| estimator.estimate_units(units))
        .sum()
}

/// How many compaction jobs completed, and how many failed.
fn jobs_ended(state: &SessionState) -> (usize, usize) {
    let count = |completed: bool| {
        state
            .jobs
            .iter()
            .filter(|j| match j.status {
                JobStatus::Completed { .. } => completed,
                JobStatus::Failed { .. } => !completed,
                _ => false,
            })
            .count()
    };
    (count(true), count(false))
}

/// What `replay-events` reports of a replayed session: its figures, the
/// audit, the window and the digest, as text or one JSON document.
fn report(as_json: bool, events: &[Envelope], state: &SessionState) {
    let w = window(state);
    let estimator = state.policy.estimator;
    let stored = stored_output_tokens(state);
    let (completed, failed) = jobs_ended(state);
    let timeline = audit(events);
    let plan = plan_prune(state, &state.policy);
    let overflow = state.overflow();
    let doc = json!({
        "ok": true,
        "session": state.session.map(|s| s.to_string()),
        "events": events.len(),
        "head": state.head,
        "policy": state.policy.name,
        "messages": state.tally().messages,
        "compactions": {"completed": completed, "failed": failed, "pending": state.pending_jobs().count()},
        "timeline": timeline,
        "pruned_parts": state.tally().pruned_parts,
        "tool_output_tokens_stored": stored,
        "overflow": overflow,
        "next_prune": {"parts": plan.parts.len(), "tokens": plan.prunable_tokens, "apply": plan.apply},
        "window": {
            "pivot": w.pivot.map(|p| p.to_string()),
            "messages": w.messages.len(),
            "estimated_tokens": w.estimate(&estimator),
        },
        "digest": state.digest().to_string(),
    });
    if as_json {
        println!("{doc}");
        return;
    }
    println!("session   {}", doc["session"].as_str().unwrap_or("-"));
    println!(
        "events    {} (head {})  policy {}",
        events.len(),
        state.head,
        state.policy.name
    );
    println!("messages  {}", state.tally().messages);
    println!(
        "compacted {completed} times ({failed} failed, {} pending)",
        state.pending_jobs().count()
    );
    if !timeline.is_empty() {
        println!("lifecycle");
    }
    for t in &timeline {
        println!("  #{:<6} {}", t.seq, t.what);
    }
    println!(
        "window    {} messages, ~{} tokens of content; {} pruned outputs still stored (~{} tool-output tokens kept in the log)",
        w.messages.len(),
        w.estimate(&estimator),
        state.tally().pruned_parts,
        stored
    );
    if let Some(o) = overflow {
        println!(
            "overflow  last step counted {} of {} usable: {}",
            o.count,
            o.usable.map_or("unlimited".into(), |u| u.to_string()),
            if o.overflow { "overflow" } else { "fits" }
        );
    }
    println!("digest    {}", state.digest());
}
