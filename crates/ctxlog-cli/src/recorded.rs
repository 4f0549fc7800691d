//! Commands on recorded sessions: `import`, `sessions`, `replay`, `export`
//! and `simulate`.

use crate::ui::{self, Counting};
use crate::{open_store, CliError};
use ctxlog_core::{Envelope, Policy, SessionId, SessionState};
use ctxlog_engine::catalog::{self, CatalogError, Stored};
use ctxlog_engine::simulate::{simulate_recording, Decision, SimulateConfig};
use ctxlog_import::limits::resolve;
use ctxlog_import::{Format, ImportOptions, Imported, LimitOverrides};
use ctxlog_store::{EventLog, SledStore};
use serde_json::json;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// `--format` of `import` and `simulate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Detect from the first bytes.
    Auto,
    /// OpenCode `opencode export` JSON.
    Opencode,
    /// Claude Code transcript JSONL.
    ClaudeCode,
    /// Codex CLI rollout JSONL.
    Codex,
    /// pi coding-agent session JSONL.
    Pi,
}

/// Model limit overrides, shared by `import` and `simulate`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LimitArgs {
    /// Use this model's limits from the built-in table instead of the
    /// recorded model's.
    #[arg(long)]
    pub model: Option<String>,
    /// Context window, tokens (overrides the table and the file).
    #[arg(long)]
    pub context: Option<u64>,
    /// Output limit, tokens.
    #[arg(long)]
    pub output: Option<u64>,
    /// Dedicated input limit, tokens (0 = none).
    #[arg(long = "input-limit")]
    pub input_limit: Option<u64>,
}

impl LimitArgs {
    fn overrides(&self) -> LimitOverrides {
        LimitOverrides {
            model: self.model.clone(),
            context: self.context,
            input: self.input_limit,
            output: self.output,
        }
    }
}

fn preset(name: &str) -> Result<Policy, CliError> {
    Policy::preset(name).ok_or_else(|| {
        CliError::BadInput(format!(
            "unknown policy preset {name:?}; known: {}",
            Policy::preset_names().join(", ")
        ))
    })
}

/// Reads and imports `file`; every input problem is exit code 2. `None`:
/// a recording still being written ([`ImportOptions::live`]) holds no
/// session yet.
pub fn read_recording(
    json: bool,
    file: &Path,
    format: FormatArg,
    options: &ImportOptions,
) -> Result<Option<Imported>, CliError> {
    let name = file.display().to_string();
    let open =
        || File::open(file).map_err(|e| CliError::BadInput(format!("{name}: cannot open: {e}")));
    let format = match format {
        FormatArg::Opencode => Format::OpenCode,
        FormatArg::ClaudeCode => Format::ClaudeCode,
        FormatArg::Codex => Format::Codex,
        FormatArg::Pi => Format::Pi,
        FormatArg::Auto => {
            let mut head = Vec::with_capacity(64 << 10);
            open()?
                .take(64 << 10)
                .read_to_end(&mut head)
                .map_err(|e| CliError::BadInput(format!("{name}: cannot read: {e}")))?;
            Format::sniff(&head).ok_or_else(|| {
                CliError::BadInput(format!(
                    "{name}: unknown format (use --format opencode|claude-code|codex|pi)"
                ))
            })?
        }
    };
    let f = open()?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let bar = ui::progress(json, len, ui::PROGRESS_MIN_BYTES, "import", true);
    let reader = BufReader::with_capacity(256 << 10, Counting::new(f, bar.clone()));
    let imported = ctxlog_import::import(reader, &name, format, options);
    bar.finish_and_clear();
    let imported = match imported {
        Ok(imported) => imported,
        Err(e) if options.live && e.holds_no_session() => return Ok(None),
        Err(e) => return Err(CliError::BadInput(e.to_string())),
    };
    if !json {
        for w in &imported.warnings {
            eprintln!("ctxlog: warning: {name}: {w}");
        }
    }
    Ok(Some(imported))
}

/// `import FILE`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The recording.
    pub file: PathBuf,
    /// Its format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// Policy preset recorded with the session [default: the preset of
    /// the agent version that wrote it (OpenCode 1.18.x → opencode-1.18),
    /// else opencode-seed].
    #[arg(long)]
    pub policy: Option<String>,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// The longest JSONL line or OpenCode export message read, in bytes;
    /// longer input is refused.
    #[arg(long, default_value_t = ctxlog_import::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: u64,
    /// The agent is still writing the file: the step open at its end waits
    /// for the next import (a step whose tool calls have no result yet
    /// always waits), so importing the grown file again appends only what
    /// is new.
    #[arg(long)]
    pub live: bool,
}

/// `import FILE`.
pub fn import(json: bool, db: &Path, a: &ImportArgs) -> Result<(), CliError> {
    let file = &a.file;
    let policy = a.policy.as_deref();
    let options = ImportOptions {
        policy: preset(policy.unwrap_or(ctxlog_core::policy::PRESET_OPENCODE_SEED))?,
        detect_policy: policy.is_none(),
        limits: a.limits.overrides(),
        max_line_bytes: a.max_line_bytes,
        live: a.live,
    };
    let Some(imported) = read_recording(json, file, a.format, &options)? else {
        eprintln!(
            "ctxlog: {}: no session written yet: nothing to import yet",
            file.display()
        );
        return Ok(());
    };
    let store = open_store(db)?;
    let stored = store_import(&store, &imported).map_err(|e| match e {
        CliError::BadInput(m) => CliError::BadInput(format!("{}: {m}", file.display())),
        e => e,
    })?;
    let doc = json!({
        "session": imported.session.to_string(),
        "format": imported.format.name(),
        "source_session": imported.source_session,
        "messages": imported.messages,
        "tool_calls": imported.tool_calls,
        "steps": imported.steps,
        "events": imported.events.len(),
        "already_imported": stored.new_events == 0,
        "new_events": stored.new_events,
        "warnings": imported.warnings,
    });
    if json {
        println!("{doc}");
    } else {
        println!(
            "{} {} (source {}): {} messages, {} tool calls, {} steps, {} events{}",
            imported.format.name(),
            imported.session,
            imported.source_session.as_deref().unwrap_or("-"),
            imported.messages,
            imported.tool_calls,
            imported.steps,
            imported.events.len(),
            match stored {
                Stored { new_events: 0, .. } => " (already imported: nothing new written)".into(),
                Stored {
                    new_events,
                    grew: true,
                } => format!(" ({new_events} new events appended to the stored session)"),
                _ => String::new(),
            }
        );
    }
    Ok(())
}

/// Stores an imported session whole or not at all (see
/// [`catalog::store_recording`]); a stored session that diverges is bad input.
pub fn store_import(store: &SledStore, imported: &Imported) -> Result<Stored, CliError> {
    catalog::store_recording(store, &imported.events).map_err(|e| match e {
        e @ CatalogError::Diverged { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(format!("not stored: {e}")),
    })
}

/// Resolves SESSION: a ctxlog id, or a recording's own session id.
pub fn resolve_session(
    store: &impl EventLog,
    db: &Path,
    text: &str,
) -> Result<SessionId, CliError> {
    catalog::resolve_session(store, text).map_err(|e| match e {
        CatalogError::NotFound(_) => CliError::BadInput(format!("{e} in {}", db.display())),
        e @ CatalogError::Ambiguous { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(e.to_string()),
    })
}

/// `sessions`.
pub fn sessions(json: bool, db: &Path) -> Result<(), CliError> {
    let store = crate::open_existing(db)?;
    let fail = |e: ctxlog_store::StoreError| CliError::Failed(e.to_string());
    let mut rows = Vec::new();
    let mut unreadable = Vec::new();
    for (s, head) in store.sessions().map_err(fail)? {
        // A session that does not read (damage, or acknowledged events the
        // store lost) is listed with why, never left out.
        let loaded = match store.load_state(s) {
            Ok(loaded) => loaded,
            Err(e) => {
                rows.push(
                    json!({"session": s.to_string(), "events": head, "error": e.to_string()}),
                );
                let why = e.to_string();
                unreadable.push(if why.contains(&s.to_string()) {
                    why
                } else {
                    format!("session {s}: {why}")
                });
                continue;
            }
        };
        let st = &loaded.state;
        let completed = st
            .jobs
            .iter()
            .filter(|j| matches!(j.status, ctxlog_core::JobStatus::Completed { .. }))
            .count();
        rows.push(json!({
            "session": s.to_string(),
            "source_session": st.source_id,
            "title": st.title,
            "started_at": st.started_at,
            "events": head,
            "messages": st.messages.len(),
            "compactions": completed,
            "pruned_parts": st.pruned_parts().count(),
            "policy": st.policy.name,
        }));
    }
    let outcome = if unreadable.is_empty() {
        Ok(())
    } else {
        Err(CliError::Reported(unreadable.len()))
    };
    if json {
        println!(
            "{}",
            json!({ "ok": unreadable.is_empty(), "sessions": rows })
        );
        return outcome;
    }
    if rows.is_empty() {
        println!("no sessions in {}", db.display());
        return outcome;
    }
    let s = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        v => v.to_string(),
    };
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                s(&r["session"]),
                s(&r["source_session"]),
                s(&r["events"]),
                s(&r["messages"]),
                s(&r["compactions"]),
                s(&r["pruned_parts"]),
                s(&r["policy"]),
                if r.get("error").is_some() {
                    "UNREADABLE (below)".into()
                } else {
                    s(&r["title"])
                },
            ]
        })
        .collect();
    ui::table(
        &[
            "SESSION",
            "SOURCE",
            "EVENTS",
            "MESSAGES",
            "COMPACTIONS",
            "PRUNED",
            "POLICY",
            "TITLE",
        ],
        &table,
    );
    for u in &unreadable {
        println!("error: {u}");
    }
    outcome
}

/// `replay SESSION`: re-derives the state from the whole log.
pub fn replay(json: bool, db: &Path, session: &str) -> Result<(), CliError> {
    let store = crate::open_existing(db)?;
    let session = resolve_session(&store, db, session)?;
    let fail = |e: ctxlog_store::StoreError| CliError::Failed(e.to_string());
    let head = store.head(session).map_err(fail)?;
    let bar = ui::progress(json, head, ui::PROGRESS_MIN_EVENTS, "replay", false);
    let mut state = SessionState::new();
    let mut events = 0u64;
    for e in store.read(session, 1).map_err(fail)? {
        let e = e.map_err(fail)?;
        state.evolve(&e).map_err(|r| {
            CliError::Failed(format!(
                "session {session} does not replay at event {}: {r}",
                e.seq
            ))
        })?;
        events += 1;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let digest = state.digest().to_string();
    if json {
        println!(
            "{}",
            json!({"session": session.to_string(), "events": events, "head": state.head, "digest": digest})
        );
    } else {
        println!(
            "{session}: {events} events replayed, head {}, digest {digest}",
            state.head
        );
    }
    Ok(())
}

/// `export SESSION --format opencode`: the export itself on stdout, or to
/// `--out` with a short report (JSON with `--json`) on stdout.
pub fn export(json: bool, db: &Path, session: &str, out: Option<&PathBuf>) -> Result<(), CliError> {
    let store = crate::open_existing(db)?;
    let session = resolve_session(&store, db, session)?;
    let fail = |e: ctxlog_store::StoreError| CliError::Failed(e.to_string());
    let events: Vec<Envelope> = store
        .read(session, 1)
        .map_err(fail)?
        .collect::<Result<_, _>>()
        .map_err(fail)?;
    let result = match out {
        Some(path) => {
            let f = File::create(path)
                .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
            let r = ctxlog_import::export::opencode(&events, std::io::BufWriter::new(f));
            if r.is_ok() {
                let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                if json {
                    println!(
                        "{}",
                        json!({"session": session.to_string(), "format": "opencode", "out": path.display().to_string(), "events": events.len(), "bytes": bytes})
                    );
                } else {
                    println!(
                        "exported {session} ({} events) to {} ({bytes} bytes)",
                        events.len(),
                        path.display()
                    );
                }
            }
            r
        }
        None => match ctxlog_import::export::opencode(&events, std::io::stdout().lock()) {
            Err(ctxlog_import::export::ExportError::Io(e)) => crate::stdout_failed(&e),
            Err(ctxlog_import::export::ExportError::Json(e)) if e.io_error_kind().is_some() => {
                crate::stdout_failed(&std::io::Error::from(e))
            }
            r => r,
        },
    };
    result.map_err(|e| CliError::Failed(e.to_string()))
}

/// `simulate FILE` options beyond the file.
#[derive(clap::Args, Debug, Clone)]
pub struct SimulateArgs {
    /// The recording.
    pub file: PathBuf,
    /// Its format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// Policy preset to simulate.
    #[arg(long, default_value = "opencode-seed")]
    pub policy: String,
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
    #[arg(long)]
    pub prune_protect: Option<u64>,
    /// Prune only if strictly more than this many tokens would be cleared.
    #[arg(long)]
    pub prune_minimum: Option<u64>,
}

/// `simulate FILE ...`.
pub fn simulate(json: bool, a: &SimulateArgs) -> Result<(), CliError> {
    let mut policy = preset(&a.policy)?;
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
    let options = ImportOptions {
        policy: policy.clone(),
        detect_policy: false,
        limits: a.limits.overrides(),
        max_line_bytes: a.max_line_bytes,
        live: false,
    };
    let imported = read_recording(json, &a.file, a.format, &options)?
        .ok_or_else(|| CliError::BadInput(format!("{}: no session", a.file.display())))?;
    // With --model, the recorded model switches no longer matter: one set of
    // limits for the whole run. Otherwise the recording's (with overrides
    // already applied by the importer) are followed.
    let fixed = a
        .limits
        .model
        .is_some()
        .then(|| resolve(&options.limits, None, None).limits);
    let bar = ui::progress(
        json,
        imported.events.len() as u64,
        ui::PROGRESS_MIN_EVENTS,
        "simulate",
        false,
    );
    let mut config = SimulateConfig::new(policy.clone());
    config.limits = fixed;
    let result = simulate_recording(&imported.events, config, |i| bar.set_position(i as u64));
    bar.finish_and_clear();
    let report = result.map_err(|e| CliError::Failed(format!("simulation failed: {e}")))?;
    if json {
        println!(
            "{}",
            json!({
                "decisions": report.decisions,
                "source_session": imported.source_session,
                "format": imported.format.name(),
                "policy": policy,
                "steps": report.steps,
                "turns": report.turns,
                "overhead_tokens": report.overhead,
                "final_window_tokens": report.final_window,
            })
        );
        return Ok(());
    }
    println!(
        "{} {} under {} (auto {}, prune {}): {} turns, {} steps, overhead ~{} tokens",
        imported.format.name(),
        imported.source_session.as_deref().unwrap_or("-"),
        policy.name,
        policy.auto,
        policy.prune,
        report.turns,
        report.steps,
        report.overhead
    );
    if report.decisions.is_empty() {
        println!("no decisions: nothing was pruned or compacted");
        return Ok(());
    }
    print_decisions(&report.decisions);
    println!("final window ~{} tokens", report.final_window);
    Ok(())
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
                format!("{} outputs, ~{tokens} tokens", call_ids.len()),
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
