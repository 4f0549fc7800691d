//! Importing recordings once: a file, a directory, or every recording
//! `--discover` finds, each stored whole, grown or as a new version.

use crate::recording::read_input;
use crate::recording::FormatArg;
use crate::recording::Input;
use crate::recording::LimitArgs;
use crate::store::open_store;
use crate::ui::{self};
use crate::CliError;
use ctxlog_app::catalog::{self, CatalogError, Stored};
use ctxlog_app::importing::{self, InputReport, Outcome, Request, VersionError, Versioned};
use ctxlog_app::inputs;
use ctxlog_app::logs::{AnyLog, Location};
use ctxlog_core::EventPack;
use ctxlog_import::discover::Places;
use ctxlog_import::Imported;
use ctxlog_store::EventLog;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `import FILE`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The recordings: files, directories (every `.json` and `.jsonl` file
    /// in them), OpenCode's `opencode.db` (every session in it) or `-` for
    /// standard input.
    #[arg(required_unless_present = "discover")]
    pub files: Vec<PathBuf>,
    /// Also import every session found where the agents keep them
    /// (Claude Code, Codex, pi, OpenCode; where each is looked for:
    /// docs/formats.md).
    #[arg(long)]
    pub discover: bool,
    /// Its format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// Policy preset recorded with the session [default: the preset of
    /// the agent that wrote it (Claude Code → claude-code, Codex → codex,
    /// pi → pi, OpenCode 1.17.x and 1.18.x → opencode-1.17 and
    /// opencode-1.18), else opencode-seed].
    #[arg(long, add = crate::completion::presets())]
    pub policy: Option<String>,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// The longest JSONL line or OpenCode export message read, in bytes;
    /// longer input is refused.
    #[arg(long, default_value_t = ctxlog_import::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: u64,
    /// Accepted and ignored (kept for older scripts): every
    /// import reads a recording as one that may still be growing, so
    /// importing the grown file again appends only what is new.
    #[arg(long, hide = true)]
    pub live: bool,
    /// A recording that changed in the past (an edited or branched file) is
    /// stored as its session's new version, a session of its own; the
    /// stored one stays readable by its ctxlog id, marked replaced, and the
    /// recording's own id names the new one.
    #[arg(long)]
    pub replace: bool,
    /// After importing, keep importing what the recordings add as they grow
    /// (and, with --discover or a directory, new ones), until interrupted.
    /// Prints a line (JSON: an object) per change.
    #[arg(long)]
    pub follow: bool,
    /// How often --follow looks at the recordings, in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..))]
    pub interval: u64,
}

/// Stores `imported`, read from `input`, as the newest version of its
/// recording ([`importing::store_input`]); refusals are bad input.
fn store_versions(
    store: &AnyLog,
    input: &Input,
    imported: Imported,
    request: &Request,
) -> Result<Versioned, CliError> {
    importing::store_input(store, input, imported, request).map_err(|e| match e {
        // A stored session with other events names itself; the others
        // are said of the input.
        VersionError::Diverged(e) => CliError::BadInput(e.to_string()),
        e @ VersionError::TooMany => CliError::BadInput(format!("{}: {e}", input.name())),
        VersionError::Gone => {
            CliError::BadInput(format!("{}: holds no session any more", input.name()))
        }
        VersionError::Reread(e) => CliError::BadInput(e.to_string()),
        e @ VersionError::Catalog(_) => CliError::Failed(e.to_string()),
    })
}

/// Why an import found nothing: with `--discover`, where it looked.
fn nothing_found(discover: bool) -> String {
    if !discover {
        return "nothing to import: no recording in the files named".into();
    }
    let looked: Vec<String> = Places::from_env()
        .searched()
        .into_iter()
        .map(|(format, place)| format!("{} in {}", format.name(), place.display()))
        .collect();
    format!(
        "nothing to import: no session found (looked for {}); name a recording's file, or set CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_DATA_HOME or OPENCODE_DB where the agents keep theirs elsewhere",
        looked.join(", ")
    )
}

/// What `import` reads: the files named and, with `--discover`, the
/// sessions found ([`inputs::named`]).
pub(crate) fn inputs(a: &ImportArgs) -> Result<Vec<Input>, CliError> {
    let places = a.discover.then(Places::from_env);
    inputs::named(&a.files, places.as_ref()).map_err(|e| CliError::BadInput(e.to_string()))
}

pub(crate) fn import_many(
    json: bool,
    db: &Location,
    inputs: &[Input],
    request: &Request,
    discover: bool,
) -> Result<(), CliError> {
    if inputs.is_empty() {
        return Err(CliError::BadInput(nothing_found(discover)));
    }
    // Opened once something is to be stored: refusing everything creates
    // nothing.
    let mut store: Option<AnyLog> = None;
    let bar = ui::progress(json, inputs.len() as u64, 2, "import", false);
    let mut outcomes = Vec::with_capacity(inputs.len());
    for input in inputs {
        let outcome = import_input(db, &mut store, input, request)?;
        outcomes.push(outcome);
        bar.inc(1);
    }
    bar.finish_and_clear();
    if let Some(store) = &store {
        crate::search::index_after_import(json, db, store);
    }
    let refused = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Refused(_)))
        .count();
    report_many(json, inputs, &outcomes);
    if refused == 0 {
        Ok(())
    } else {
        Err(CliError::Refused(refused))
    }
}

/// Reads `input` and stores what it holds (see [`store_versions`]); the
/// store is opened when there is something to store. Bad input is a
/// refused outcome, not an error.
pub(crate) fn import_input(
    db: &Location,
    store: &mut Option<AnyLog>,
    input: &Input,
    request: &Request,
) -> Result<Outcome, CliError> {
    let imported = match inputs::read(input, request.format, &request.options, &()) {
        Ok(Some(imported)) => imported,
        Ok(None) => return Ok(Outcome::NothingYet),
        Err(e) => return Ok(Outcome::Refused(e.to_string())),
    };
    let store = match store {
        Some(s) => s,
        None => store.insert(open_store(db)?),
    };
    Ok(match store_versions(store, input, imported, request) {
        Ok(versioned) => Outcome::Imported(Box::new(versioned)),
        Err(e @ CliError::BadInput(_)) => Outcome::Refused(format!("{}: {e}", input.name())),
        Err(e) => return Err(e),
    })
}

/// The summary of a many-input import: a table, or `{"files", "imported",
/// "extended", "unchanged", "waiting", "refused"}`.
fn report_many(json: bool, inputs: &[Input], outcomes: &[Outcome]) {
    let mut counts = BTreeMap::<&str, u64>::new();
    let mut rows = Vec::new();
    let mut docs = Vec::new();
    for (input, outcome) in inputs.iter().zip(outcomes) {
        let report = InputReport::new(input.name(), outcome);
        *counts.entry(report.result).or_default() += 1;
        let detail = match outcome {
            Outcome::Imported(v) => match v.replaced {
                Some(old) => format!(
                    "{} events, {} (replaces {old})",
                    v.stored.events, v.imported.session
                ),
                None if v.stored.grew => {
                    format!("+{} events, {}", v.stored.new_events, v.imported.session)
                }
                None => format!("{} events, {}", v.stored.events, v.imported.session),
            },
            Outcome::NothingYet => "no session written yet".into(),
            Outcome::Refused(why) => why.clone(),
        };
        rows.push(vec![
            report.result.to_string(),
            report.format.unwrap_or("-").to_string(),
            report.file.clone(),
            detail,
        ]);
        docs.push(report);
    }
    let count = |k: &str| counts.get(k).copied().unwrap_or(0);
    if json {
        println!(
            "{}",
            json!({
                "ok": count("refused") == 0,
                "files": docs,
                "imported": count("imported"),
                "extended": count("extended"),
                "unchanged": count("unchanged"),
                "replaced": count("replaced"),
                "waiting": count("waiting"),
                "refused": count("refused"),
            })
        );
        return;
    }
    ui::table(&["RESULT", "FORMAT", "FILE", "WHAT"], &rows);
    for (input, outcome) in inputs.iter().zip(outcomes) {
        if let Outcome::Imported(v) = outcome {
            for w in &v.imported.warnings {
                eprintln!("ctxlog: warning: {}: {w}", input.name());
            }
        }
    }
    println!(
        "{}: {} imported, {} extended, {} unchanged, {} replaced, {} waiting, {} refused",
        crate::ui::counted(inputs.len(), "recording"),
        count("imported"),
        count("extended"),
        count("unchanged"),
        count("replaced"),
        count("waiting"),
        count("refused"),
    );
}

/// `import FILE` of one file.
pub(crate) fn import_one(
    json: bool,
    db: &Location,
    file: &Path,
    request: &Request,
) -> Result<(), CliError> {
    let input = Input::File(file.to_path_buf());
    let Some(imported) = read_input(json, &input, request.format, &request.options)? else {
        if json {
            println!(
                "{}",
                json!({"file": file.display().to_string(), "waiting": true})
            );
        }
        eprintln!(
            "ctxlog: {}: no session written yet: nothing to import yet",
            file.display()
        );
        return Ok(());
    };
    let store = open_store(db)?;
    let Versioned {
        imported,
        stored,
        replaced,
    } = store_versions(&store, &input, imported, request).map_err(|e| match e {
        CliError::BadInput(m) => CliError::BadInput(format!("{}: {m}", file.display())),
        e => e,
    })?;
    crate::search::index_after_import(json, db, &store);
    let doc = json!({
        "session": imported.session.to_string(),
        "format": imported.format.name(),
        "source_session": imported.source_session,
        "messages": imported.messages,
        "tool_calls": imported.tool_calls,
        "steps": imported.steps,
        "events": stored.events,
        "already_imported": stored.new_events == 0,
        "new_events": stored.new_events,
        "replaced": replaced.map(|s| s.to_string()),
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
            stored.events,
            match (stored, replaced) {
                (_, Some(old)) =>
                    format!(" (a new version: it replaces {old}, which stays readable by that id)"),
                (Stored { new_events: 0, .. }, _) => {
                    " (already imported: nothing new written)".into()
                }
                (
                    Stored {
                        new_events,
                        grew: true,
                        ..
                    },
                    _,
                ) => format!(" ({new_events} new events appended to the stored session)"),
                _ => String::new(),
            }
        );
    }
    Ok(())
}

/// Stores an imported session (see [`catalog::store_recording`]); a stored
/// session that diverges is bad input.
pub fn store_import(store: &impl EventLog, imported: Imported) -> Result<Stored, CliError> {
    store_import_events(store, imported.events)
}

/// Stores a simulated session's events whole (or what is new of them).
pub(crate) fn store_import_events(
    store: &impl EventLog,
    events: EventPack,
) -> Result<Stored, CliError> {
    catalog::store_recording(store, events).map_err(|e| match e {
        e @ CatalogError::Diverged { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(format!("not stored: {e}")),
    })
}
