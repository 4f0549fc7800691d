//! `simulate`: a recording run again under other policies, compared with
//! what was recorded, kept when asked.

use crate::recording::{decoded, parse_tokens, preset, read_recording, FormatArg, LimitArgs};
use crate::store::open_store;
use crate::{ui, CliError};
use ctxlog_app::catalog::CatalogError;
use ctxlog_app::logs::{AnyLog, Location};
use ctxlog_app::simulation::SimulationError;
use ctxlog_core::{Envelope, Policy, Timeline};
use ctxlog_engine::simulate::{Decision, SimulateConfig};
use ctxlog_import::limits::resolve;
use ctxlog_import::ImportOptions;
use ctxlog_store::EventLog;
use serde_json::json;
use std::path::{Path, PathBuf};

/// `simulate FILE|SESSION` options beyond the recording.
#[derive(clap::Args, Debug, Clone)]
pub struct SimulateArgs {
    /// The recording: a file (`-`: standard input), or a session of the
    /// store (as `sessions` names it) when no such file exists.
    #[arg(value_name = "FILE|SESSION")]
    pub file: PathBuf,
    /// Its format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// Policy presets to simulate, comma-separated (`opencode-1.17,codex`);
    /// see `ctxlog presets` [default: opencode-seed, unless --policy-file].
    #[arg(long, value_delimiter = ',', add = crate::completion::presets())]
    pub policy: Vec<String>,
    /// Policies as a JSON file (every constant; `ctxlog presets` prints
    /// the built-in ones in this form): its one policy is simulated too;
    /// of several, those --policy names are taken from it.
    #[arg(long)]
    pub policy_file: Option<PathBuf>,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// The longest JSONL line or OpenCode export message read, in bytes;
    /// longer input is refused.
    #[arg(long, default_value_t = ctxlog_import::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: u64,
    /// Automatic compaction on overflow.
    #[arg(long, action = clap::ArgAction::Set)]
    pub auto: Option<bool>,
    /// Tool-output pruning at the end of each turn.
    #[arg(long, action = clap::ArgAction::Set)]
    pub prune: Option<bool>,
    /// Newest estimated tool-output tokens kept from pruning.
    #[arg(long, value_parser = parse_tokens)]
    pub prune_protect: Option<u64>,
    /// Prune only if strictly more than this many tokens would be cleared.
    #[arg(long, value_parser = parse_tokens)]
    pub prune_minimum: Option<u64>,
    /// Compact when the count reaches this percentage (1–100) of the usable
    /// context, for every policy simulated.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub threshold: Option<u64>,
    /// Store each simulated session in the store (`--db`), named
    /// `<recording id>@<policy>`, so that `timeline`, `window`, `audit` and
    /// `report` work on it (keeping the same simulation again stores
    /// nothing new).
    #[arg(long)]
    pub keep: bool,
    /// Also write the HTML report of the recording and every simulation to
    /// this file.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
}

/// The policies `simulate` runs, with the command line's changes applied.
fn simulated_policies(a: &SimulateArgs) -> Result<Vec<Policy>, CliError> {
    let mut names = a.policy.clone();
    if names.is_empty() && a.policy_file.is_none() {
        names.push(ctxlog_core::policy::PRESET_OPENCODE_SEED.to_owned());
    }
    let from_file = match &a.policy_file {
        Some(path) => crate::recording::read_policies(path)?,
        None => Vec::new(),
    };
    let named_in_file = |name: &str| from_file.iter().find(|p| p.name == name);
    let mut policies = names
        .iter()
        .map(|p| named_in_file(p).cloned().map_or_else(|| preset(p), Ok))
        .collect::<Result<Vec<_>, _>>()?;
    if let (Some(path), false) = (
        &a.policy_file,
        names.iter().any(|n| named_in_file(n).is_some()),
    ) {
        match from_file.as_slice() {
            [only] => policies.push(only.clone()),
            several => {
                return Err(CliError::BadInput(format!(
                    "{}: holds {} policies ({}): name those to simulate with --policy",
                    path.display(),
                    several.len(),
                    crate::recording::policy_names(several)
                )))
            }
        }
    }
    for policy in &mut policies {
        if let Some(v) = a.auto {
            policy.auto = v;
        }
        if let Some(v) = a.prune {
            policy.prune = v;
        }
        if let Some(v) = a.prune_protect {
            policy.prune_protect = v;
        }
        if let Some(v) = a.prune_minimum {
            policy.prune_minimum = v;
        }
        if let Some(v) = a.threshold {
            policy.threshold_percent = v;
        }
    }
    let mut sorted: Vec<&str> = policies.iter().map(|p| p.name.as_str()).collect();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(CliError::BadInput(format!(
            "policy {:?} is given twice; each simulated policy needs its own name",
            w[0]
        )));
    }
    Ok(policies)
}

/// One policy's simulation, with its timeline.
struct Simulated {
    policy: Policy,
    report: ctxlog_engine::simulate::SimulationReport,
    timeline: ctxlog_core::Timeline,
    kept: Option<String>,
}

/// `simulate FILE ...`.
pub fn simulate(json: bool, db: &Location, a: &SimulateArgs) -> Result<(), CliError> {
    let policies = simulated_policies(a)?;
    // The page is written last: a path it cannot go to is refused before
    // anything is simulated or kept.
    if let Some(path) = &a.report {
        if crate::redaction::is_stdout(path) {
            return Err(CliError::BadInput(
                "--report -: simulate prints its decisions on standard output; name a file for the page".into(),
            ));
        }
        crate::redaction::check_page_path(path)?;
    }
    // The recording is labelled with its agent's preset (else the seed's),
    // never with a policy under test.
    let options = ImportOptions {
        policy: Policy::opencode_seed(),
        detect_policy: true,
        limits: a.limits.overrides(),
        max_line_bytes: a.max_line_bytes,
        version: 0,
    };
    let recorded = recording_of(json, db, a, &options)?;
    let source = recorded
        .source_session
        .clone()
        .unwrap_or_else(|| a.file.display().to_string());
    let recording = &recorded.events;
    // With --model, the recorded model switches no longer matter: one set of
    // limits for the whole run. Otherwise the recording's (with overrides
    // already applied by the importer) are followed; a stored session's
    // limits were set when it was imported, so overrides fix them too.
    let overridden = a.limits.model.is_some()
        || (recorded.stored
            && (options.limits.context.is_some()
                || options.limits.output.is_some()
                || options.limits.input.is_some()));
    let fixed =
        overridden.then(|| resolve(&options.limits, recorded.model.as_deref(), None, None).limits);
    let store = if a.keep { Some(open_store(db)?) } else { None };
    let mut runs = Vec::new();
    for policy in &policies {
        let mut config = SimulateConfig::new(policy.clone());
        config.limits = fixed.clone();
        if a.keep {
            config = config.keepable(&source, recording);
        }
        runs.push(run_one(json, recording, config, store.as_ref())?);
    }
    if let Some(store) = &store {
        store
            .flush()
            .map_err(|e| CliError::Failed(format!("{}: {e}", db)))?;
    }
    let timeline = crate::timeline::timeline_of(recording)?;
    if let Some(path) = &a.report {
        write_report(path, recording, &runs)?;
    }
    if json {
        print_json(&recorded, &timeline, &runs, a.report.as_deref());
    } else {
        print_text(&recorded, &timeline, &runs, a.report.as_deref());
    }
    Ok(())
}

/// What a simulation runs on: a recording read from a file, or a session
/// already stored.
struct Recording {
    /// The format it was read in, or the agent that recorded it.
    format: String,
    /// The agent's own session id.
    source_session: Option<String>,
    /// The model it used last (for limits given by hand).
    model: Option<String>,
    /// Whether it is a stored session.
    stored: bool,
    /// Its events, seq 1 first.
    events: Vec<Envelope>,
}

/// The recording `a.file` names: the file when it exists (or `-`), else
/// the stored session it names.
fn recording_of(
    json: bool,
    db: &Location,
    a: &SimulateArgs,
    options: &ImportOptions,
) -> Result<Recording, CliError> {
    if a.file.as_os_str() == "-" || a.file.exists() {
        let imported = read_recording(json, &a.file, a.format, options)?
            .ok_or_else(|| CliError::BadInput(format!("{}: no session", a.file.display())))?;
        return Ok(Recording {
            format: imported.format.name().to_owned(),
            source_session: imported.source_session.clone(),
            model: None,
            stored: false,
            events: decoded(&imported.events)?,
        });
    }
    let name = a.file.to_string_lossy();
    let (store, session) = crate::store::stored_session_in(db, &name).map_err(|e| match e {
        CliError::BadInput(why) => CliError::BadInput(format!(
            "{name}: no such file, and not a stored session: {why}"
        )),
        e => e,
    })?;
    let events = ctxlog_app::views::described_events(&store, session)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let state = ctxlog_core::SessionState::replay(&events)
        .map_err(|e| CliError::Failed(format!("{name}: {e}")))?;
    let about = state.about.clone().unwrap_or_default();
    Ok(Recording {
        format: about.agent.as_deref().map_or("stored".into(), |a| {
            ctxlog_app::usage::without_version(a).to_owned()
        }),
        source_session: state
            .source_id
            .clone()
            .or_else(|| Some(session.to_string())),
        model: about.model,
        stored: true,
        events,
    })
}

/// One simulation of `recording` under `config`, behind a progress bar;
/// kept in `store` when given.
fn run_one(
    json: bool,
    recording: &[Envelope],
    config: SimulateConfig,
    store: Option<&AnyLog>,
) -> Result<Simulated, CliError> {
    let policy = config.policy.clone();
    let bar = ui::progress(
        json,
        recording.len() as u64,
        ui::PROGRESS_MIN_EVENTS,
        &format!("simulate {}", policy.name),
        false,
    );
    let result = ctxlog_app::simulation::run(recording, config, |i| bar.set_position(i as u64));
    bar.finish_and_clear();
    let report = result.map_err(|e| CliError::Failed(e.to_string()))?;
    let timeline = crate::timeline::timeline_of(&report.log)?;
    let kept = match store {
        Some(store) => Some(
            ctxlog_app::simulation::keep(store, &report).map_err(|e| match e {
                SimulationError::NotKept { ref source, .. }
                    if matches!(**source, CatalogError::Diverged { .. }) =>
                {
                    CliError::BadInput(e.to_string())
                }
                e => CliError::Failed(e.to_string()),
            })?,
        ),
        None => None,
    };
    Ok(Simulated {
        policy,
        report,
        timeline,
        kept,
    })
}

/// The HTML report of the recording and its simulations, at `path`.
fn write_report(path: &Path, recording: &[Envelope], runs: &[Simulated]) -> Result<(), CliError> {
    let mut curves = vec![ctxlog_report::Curve {
        label: ctxlog_app::pages::label(recording),
        title: ctxlog_app::titles::first_prompt_in(recording),
        events: recording,
    }];
    for r in runs {
        curves.push(ctxlog_report::Curve {
            label: r.policy.name.clone(),
            title: None,
            events: &r.report.log,
        });
    }
    let html = ctxlog_report::report(&curves).map_err(|e| CliError::Failed(e.to_string()))?;
    crate::redaction::write_page(path, &html)
}

/// `simulate --json`.
fn print_json(
    imported: &Recording,
    recorded: &Timeline,
    runs: &[Simulated],
    report: Option<&Path>,
) {
    let simulations: Vec<_> = runs
        .iter()
        .map(|r| {
            json!({
                "policy": r.policy,
                "limits": r.timeline.limits,
                "usable": r.timeline.steps.last().and_then(|s| s.usable),
                "threshold": r.timeline.steps.last().and_then(|s| s.threshold),
                "peak_tokens": r.timeline.peak(),
                "compactions": r.timeline.count("summary_completed"),
                "prunes": r.timeline.count("parts_pruned"),
                "decisions": r.report.decisions,
                "steps": r.report.steps,
                "turns": r.report.turns,
                "overhead_tokens": r.report.overhead,
                "final_window_tokens": r.report.final_window,
                "kept": r.kept,
            })
        })
        .collect();
    let first = &runs[0];
    println!(
        "{}",
        json!({
            "ok": true,
            // The first policy's figures at the top level, as before
            // several policies could be given.
            "decisions": first.report.decisions,
            "policy": first.policy,
            // The recording's steps as `sessions` and `timeline` count
            // them (a step whose end is not recorded yet too).
            "steps": recorded.steps.len(),
            "turns": first.report.turns,
            "overhead_tokens": first.report.overhead,
            "final_window_tokens": first.report.final_window,
            "source_session": imported.source_session,
            "format": imported.format,
            "recorded": {
                "policy": recorded.policy,
                "limits": recorded.limits,
                "peak_tokens": recorded.peak(),
                "compactions": recorded.count("summary_completed"),
                "prunes": recorded.count("parts_pruned"),
            },
            "simulations": simulations,
            "report": report.map(|p| p.display().to_string()),
        })
    );
}

/// `simulate` as text: the recording, then each simulation's decisions,
/// then the comparison.
fn print_text(
    imported: &Recording,
    recorded: &Timeline,
    runs: &[Simulated],
    report: Option<&Path>,
) {
    let first = &runs[0];
    let limits = &first.timeline.limits;
    println!(
        "{} {}: {} turns, {} steps, overhead ~{} tokens; limits: context {}, output {}, input {}",
        imported.format,
        imported.source_session.as_deref().unwrap_or("-"),
        first.report.turns,
        recorded.steps.len(),
        first.report.overhead,
        if limits.context == 0 {
            "unlimited".into()
        } else {
            limits.context.to_string()
        },
        limits.output.map_or("-".into(), |o| o.to_string()),
        limits.input.map_or("-".into(), |o| o.to_string()),
    );
    for r in runs {
        println!();
        println!(
            "under {} (auto {}, prune {}, threshold {}%): usable {}, {}, peak {}",
            r.policy.name,
            r.policy.auto,
            r.policy.prune,
            r.policy.threshold_percent,
            r.timeline
                .steps
                .last()
                .and_then(|s| s.usable)
                .map_or("unlimited".into(), |u| u.to_string()),
            r.timeline
                .steps
                .last()
                .and_then(|s| s.threshold)
                .map_or("never compacts on a threshold".into(), |u| format!(
                    "compacts at {u}"
                )),
            r.timeline.peak(),
        );
        if r.report.decisions.is_empty() {
            println!("no decisions: nothing was pruned or compacted");
        } else {
            print_decisions(&r.report.decisions);
        }
        println!("final window ~{} tokens", r.report.final_window);
        if let Some(name) = &r.kept {
            println!("kept as {name} (ctxlog timeline {name:?})");
        }
    }
    println!();
    comparison(recorded, runs);
    if let Some(path) = report {
        println!("report: {}", path.display());
    }
}

/// The recording and each simulation side by side.
fn comparison(recorded: &ctxlog_core::Timeline, runs: &[Simulated]) {
    let row = |name: &str, t: &ctxlog_core::Timeline, final_window: Option<u64>| {
        let pruned: u64 = t
            .steps
            .iter()
            .flat_map(|s| &s.events)
            .filter(|e| e.kind == "parts_pruned")
            .filter_map(|e| e.tokens)
            .sum();
        vec![
            name.to_owned(),
            t.steps
                .last()
                .and_then(|s| s.threshold)
                .map_or("never".into(), ui::tokens),
            ui::tokens(t.peak()),
            t.count("summary_completed").to_string(),
            t.count("compaction_failed").to_string(),
            t.count("auto_compaction_paused").to_string(),
            t.count("parts_pruned").to_string(),
            ui::tokens(pruned),
            final_window.map_or("-".into(), ui::tokens),
        ]
    };
    let mut rows = vec![row(
        &format!("recorded ({})", recorded.policy),
        recorded,
        None,
    )];
    for r in runs {
        rows.push(row(
            &r.policy.name,
            &r.timeline,
            Some(r.report.final_window),
        ));
    }
    ui::table(
        &[
            "POLICY",
            "COMPACTS AT",
            "PEAK",
            "COMPACTIONS",
            "FAILED",
            "STALLS",
            "PRUNES",
            "PRUNED",
            "FINAL WINDOW",
        ],
        &rows,
    );
}

/// The decisions of a simulation as a table.
pub fn print_decisions(decisions: &[Decision]) {
    let rows: Vec<Vec<String>> = decisions
        .iter()
        .map(|d| match d {
            Decision::Prune {
                after,
                call_ids,
                tokens,
            } => vec![
                "prune".into(),
                after.clone(),
                format!(
                    "{} output{}, ~{tokens} tokens",
                    call_ids.len(),
                    if call_ids.len() == 1 { "" } else { "s" }
                ),
            ],
            Decision::Compaction {
                after,
                count,
                usable,
                estimated,
                ..
            } => vec![
                "compaction".into(),
                after.clone(),
                format!(
                    "count {}{count}, usable {}",
                    if *estimated { "~" } else { "" },
                    usable.map_or("-".into(), |u| u.to_string())
                ),
            ],
            Decision::Summary {
                after,
                window_before,
                window_after,
            } => vec![
                "summary".into(),
                after.clone(),
                format!("window ~{window_before} -> ~{window_after} tokens"),
            ],
            Decision::Continue { after } => {
                vec![
                    "continue".into(),
                    after.clone(),
                    "synthetic continue".into(),
                ]
            }
            Decision::CompactionFailed { after, error } => {
                vec!["failed".into(), after.clone(), error.clone()]
            }
            Decision::Stalled { after, reason } => {
                vec!["stalled".into(), after.clone(), reason.clone()]
            }
            Decision::Refused { after, compacted } => vec![
                "refused".into(),
                after.clone(),
                if *compacted {
                    "provider overflow: compaction queued".into()
                } else {
                    "provider overflow: recorded as the error".into()
                },
            ],
            Decision::Replay { after } => {
                vec![
                    "replay".into(),
                    after.clone(),
                    "refused prompt sent again".into(),
                ]
            }
        })
        .collect();
    ui::table(&["DECISION", "AFTER", "DETAIL"], &rows);
}
