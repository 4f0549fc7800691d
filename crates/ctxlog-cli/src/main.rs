//! `ctxlog`: the command line of the ctxlog engine.
//!
//! Exit codes: 0 success, 1 the operation failed, 2 bad input or usage.

use clap::{Parser, Subcommand};
use ctxlog_core::sim::{simulate, SimConfig};
use ctxlog_core::{
    plan_prune, window, Envelope, Event, JobStatus, ModelLimits, Policy, RefusedEvent, SessionState,
};
use ctxlog_store::SledStore;
use serde_json::json;

mod stress;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ctxlog",
    version,
    about = "Event-sourced context log for LLM agent sessions"
)]
struct Cli {
    /// Print one JSON document on stdout instead of human output.
    #[arg(long, global = true)]
    json: bool,
    /// The store directory (a sled database), before or after the command.
    #[arg(long, global = true, env = "CTXLOG_DB", default_value = "ctxlog-data")]
    db: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a session through the compaction lifecycle and report what
    /// the reducers derived (runs on the built-in default with no options).
    Demo {
        /// Seed of the simulated session.
        #[arg(long, default_value_t = 3)]
        seed: u64,
        /// User turns.
        #[arg(long, default_value_t = 16)]
        turns: u32,
        /// Model context window, tokens (0 = unlimited).
        #[arg(long, default_value_t = 80_000)]
        context: u64,
        /// Model output limit, tokens.
        #[arg(long, default_value_t = 8_000)]
        output: u64,
        /// Policy preset (`opencode-seed`, `opencode-1.17`).
        #[arg(long, default_value = "opencode-seed", conflicts_with = "policy_file")]
        policy: String,
        /// Policy as a JSON file (every constant configurable); see `ctxlog presets`.
        #[arg(long)]
        policy_file: Option<PathBuf>,
        /// Also write the events as JSON lines to this file.
        #[arg(long)]
        events_out: Option<PathBuf>,
    },
    /// Replay a JSON-lines file of event envelopes and report the state.
    ReplayEvents {
        /// The file (one envelope per line, as `demo --events-out` writes).
        file: PathBuf,
    },
    /// Print the built-in policy presets as JSON.
    Presets,
    /// Append synthetic sessions durably, printing `ACK <session> <seq>` as
    /// each append is acknowledged.
    Stress {
        /// Sessions written concurrently.
        #[arg(long, default_value_t = 4)]
        sessions: u32,
        /// Events per session.
        #[arg(long, default_value_t = 1000)]
        events: u32,
        /// Events per append.
        #[arg(long, default_value_t = 1)]
        batch: u32,
    },
    /// Check every record of the store (CRC, chain, contiguity, heads).
    Verify,
}

/// A failure, with the exit code it maps to.
#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error("{0}")]
    BadInput(String),
    #[error("{0}")]
    Failed(String),
    /// The failure is already in the command's output.
    #[error("{0} problems found")]
    Reported(usize),
}

impl CliError {
    fn code(&self) -> u8 {
        match self {
            CliError::BadInput(_) => 2,
            CliError::Failed(_) | CliError::Reported(_) => 1,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ CliError::Reported(_)) => {
            eprintln!("ctxlog: {e}");
            ExitCode::from(e.code())
        }
        Err(e) => {
            if cli.json {
                println!("{}", json!({"ok": false, "error": e.to_string()}));
            }
            eprintln!("ctxlog: {e}");
            ExitCode::from(e.code())
        }
    }
}

fn run(cli: &Cli) -> Result<(), CliError> {
    match &cli.command {
        Command::Demo {
            seed,
            turns,
            context,
            output,
            policy,
            policy_file,
            events_out,
        } => {
            let policy = match policy_file {
                Some(path) => read_policy(path)?,
                None => Policy::preset(policy).ok_or_else(|| {
                    CliError::BadInput(format!(
                        "unknown policy preset {policy:?}; known: {}",
                        Policy::preset_names().join(", ")
                    ))
                })?,
            };
            let cfg = SimConfig {
                seed: *seed,
                turns: *turns,
                policy,
                limits: ModelLimits {
                    context: *context,
                    input: None,
                    output: Some(*output),
                },
                ..SimConfig::default()
            };
            let events = simulate(&cfg).map_err(|e| {
                CliError::Failed(format!("the simulator wrote an invalid event: {e}"))
            })?;
            if let Some(path) = events_out {
                write_events(path, &events)?;
            }
            let state = SessionState::replay(&events)
                .map_err(|e| CliError::Failed(format!("replay failed: {e}")))?;
            report(cli.json, &events, &state);
            Ok(())
        }
        Command::ReplayEvents { file } => {
            let events = read_events(file)?;
            let mut state = SessionState::new();
            for (line, e) in &events {
                state.evolve(e).map_err(|err: RefusedEvent| {
                    CliError::BadInput(format!("{}:{line}: {err}", file.display()))
                })?;
            }
            let events: Vec<Envelope> = events.into_iter().map(|(_, e)| e).collect();
            report(cli.json, &events, &state);
            Ok(())
        }
        Command::Stress {
            sessions,
            events,
            batch,
        } => stress::run(&cli.db, *sessions, *events, *batch),
        Command::Verify => verify(cli),
        Command::Presets => {
            let presets: Vec<Policy> = Policy::preset_names()
                .iter()
                .filter_map(|n| Policy::preset(n))
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&presets).expect("policies serialize")
            );
            Ok(())
        }
    }
}

fn open_store(db: &Path) -> Result<SledStore, CliError> {
    SledStore::open(db)
        .map_err(|e| CliError::Failed(format!("cannot open the store at {}: {e}", db.display())))
}

fn verify(cli: &Cli) -> Result<(), CliError> {
    let store = open_store(&cli.db)?;
    let report = store
        .verify()
        .map_err(|e| CliError::Failed(format!("verify failed: {e}")))?;
    if cli.json {
        let heads: serde_json::Map<String, serde_json::Value> = report
            .heads
            .iter()
            .map(|(s, q)| (s.to_string(), json!(q)))
            .collect();
        let errors: Vec<_> = report
            .errors
            .iter()
            .map(|e| {
                json!({
                    "session": e.session.map(|s| s.to_string()),
                    "seq": e.seq,
                    "problem": e.problem,
                    "message": e.to_string(),
                })
            })
            .collect();
        println!(
            "{}",
            json!({"ok": report.ok(), "sessions": report.sessions, "events": report.events, "heads": heads, "errors": errors})
        );
    } else {
        println!(
            "{}: {} sessions, {} events",
            store.path().display(),
            report.sessions,
            report.events
        );
        for e in &report.errors {
            println!("error: {e}");
        }
        println!("{}", if report.ok() { "ok" } else { "NOT OK" });
    }
    if report.ok() {
        Ok(())
    } else {
        Err(CliError::Reported(report.errors.len()))
    }
}

fn read_policy(path: &Path) -> Result<Policy, CliError> {
    let file = File::open(path)
        .map_err(|e| CliError::BadInput(format!("{}: cannot open: {e}", path.display())))?;
    serde_json::from_reader(BufReader::new(file))
        .map_err(|e| CliError::BadInput(format!("{}: not a policy: {e}", path.display())))
}

fn write_events(path: &Path, events: &[Envelope]) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError::Failed(format!("{}: {e}", path.display()));
    let mut out = BufWriter::new(File::create(path).map_err(fail)?);
    for e in events {
        serde_json::to_writer(&mut out, e).expect("events serialize");
        out.write_all(b"\n").map_err(fail)?;
    }
    out.flush().map_err(fail)
}

/// Reads envelopes, one per non-empty line; errors name the file and line.
fn read_events(path: &Path) -> Result<Vec<(usize, Envelope)>, CliError> {
    let file = File::open(path)
        .map_err(|e| CliError::BadInput(format!("{}: cannot open: {e}", path.display())))?;
    let mut events = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
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

fn report(as_json: bool, events: &[Envelope], state: &SessionState) {
    let w = window(state);
    let estimator = state.policy.estimator;
    let stored: u64 = state
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| p.completed_output())
        .map(|o| estimator.estimate(o))
        .sum();
    let completed = state
        .jobs
        .iter()
        .filter(|j| matches!(j.status, JobStatus::Completed { .. }))
        .count();
    let failed = state
        .jobs
        .iter()
        .filter(|j| matches!(j.status, JobStatus::Failed { .. }))
        .count();
    let timeline: Vec<_> = events.iter().filter_map(lifecycle_entry).collect();
    let plan = plan_prune(state, &state.policy);
    let overflow = state.overflow();
    let doc = json!({
        "session": state.session.map(|s| s.to_string()),
        "events": events.len(),
        "head": state.head,
        "policy": state.policy.name,
        "messages": state.messages.len(),
        "compactions": {"completed": completed, "failed": failed, "pending": state.pending_jobs().count()},
        "timeline": timeline,
        "pruned_parts": state.pruned_parts().count(),
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
    println!("messages  {}", state.messages.len());
    println!(
        "compacted {completed} times ({failed} failed, {} pending)",
        state.pending_jobs().count()
    );
    if !timeline.is_empty() {
        println!("lifecycle");
    }
    for t in &timeline {
        println!("  #{:<6} {}", t["seq"], t["what"].as_str().unwrap_or(""));
    }
    println!(
        "window    {} messages, ~{} tokens of content; {} pruned outputs still stored (~{} tool-output tokens kept in the log)",
        w.messages.len(),
        w.estimate(&estimator),
        state.pruned_parts().count(),
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

/// One line of the compaction lifecycle for the audit timeline.
fn lifecycle_entry(e: &Envelope) -> Option<serde_json::Value> {
    use ctxlog_core::CompactionTrigger as T;
    let what = match &e.event {
        Event::CompactionRequested { auto, trigger, .. } => {
            let why = match trigger {
                T::Overflow { check, .. } => format!(
                    "overflow: {} tokens > {} usable",
                    check.count,
                    check.usable.unwrap_or(0)
                ),
                T::ProviderOverflow { error } => format!("provider overflow: {error}"),
                T::Manual => "manual".into(),
                T::Imported => "imported".into(),
            };
            format!(
                "compaction requested ({}; {why})",
                if *auto { "auto" } else { "manual" }
            )
        }
        Event::CompactionStarted { .. } => "compaction started".into(),
        Event::SummaryCompleted { tokens, .. } => {
            format!(
                "summary completed ({} output tokens): window pivots here",
                tokens.output
            )
        }
        Event::CompactionFailed { error, .. } => {
            format!("compaction failed: {error}; history kept")
        }
        Event::PartsPruned {
            parts,
            total_tokens,
            policy,
        } => {
            format!(
                "pruned {} tool outputs, ~{total_tokens} tokens (policy {policy})",
                parts.len()
            )
        }
        Event::PartsRestored { parts, .. } => format!("restored {} tool outputs", parts.len()),
        Event::PolicyChanged { policy } => format!("policy changed to {}", policy.name),
        _ => return None,
    };
    Some(json!({"seq": e.seq, "at": e.recorded_at, "kind": e.event.kind(), "what": what}))
}
