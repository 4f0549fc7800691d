//! Importing recordings once: a file, a directory, or every recording
//! `--discover` finds, each stored whole, grown or as a new version.

use crate::recording::read_input;
use crate::recording::read_recording;
use crate::recording::FormatArg;
use crate::recording::Input;
use crate::recording::LimitArgs;
use crate::store::open_store;
use crate::ui::{self};
use crate::CliError;
use ctxlog_app::catalog::{self, CatalogError, Stored};
use ctxlog_app::importing::{self, VersionError, Versioning};
use ctxlog_core::{EventPack, SessionId};
use ctxlog_import::discover::{database_sessions, discover, recordings_in, Places};
use ctxlog_import::{opencode_db, ImportOptions, Imported};
use ctxlog_store::SledStore;
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
    /// (Claude Code, Codex, pi, OpenCode; see `ctxlog_import::discover`).
    #[arg(long)]
    pub discover: bool,
    /// Its format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// Policy preset recorded with the session [default: the preset of
    /// the agent that wrote it (Claude Code → claude-code, Codex → codex,
    /// pi → pi, OpenCode 1.17.x and 1.18.x → opencode-1.17 and
    /// opencode-1.18), else opencode-seed].
    #[arg(long)]
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

/// How `import` reads and stores each input.
pub(crate) struct How {
    pub(crate) format: FormatArg,
    pub(crate) options: ImportOptions,
    pub(crate) replace: bool,
}

/// Stores `imported`, read from `input`, as the newest version of its
/// recording (`ctxlog_app::importing::store_newest`): the input is read
/// again as the next version when one is needed, which standard input
/// cannot be.
fn store_versions(
    store: &SledStore,
    input: &Input,
    imported: Imported,
    how: &How,
) -> Result<(Imported, Stored, Option<SessionId>), CliError> {
    // Limits or a policy given on the command line are adopted by a session
    // stored before with others (recorded as `LimitsChanged` or
    // `PolicyChanged`); without them, what the session has in force stays.
    let versioning = Versioning {
        adopt: catalog::Adopt {
            limits: how.options.limits != ctxlog_import::LimitOverrides::default(),
            policy: !how.options.detect_policy,
        },
        replace: how.replace,
        version: how.options.version,
    };
    let reread = |version| {
        if matches!(input, Input::Stdin) {
            return Err(CliError::BadInput(
                "stdin: a newer version of this recording is stored (or --replace stores one), \
                 and standard input cannot be read again as it: save it to a file and import that"
                    .into(),
            ));
        }
        let options = ImportOptions {
            version,
            ..how.options.clone()
        };
        read_input(true, input, how.format, &options)
    };
    match importing::store_newest(store, imported, versioning, reread) {
        Ok(v) => Ok((v.imported, v.stored, v.replaced)),
        // A stored session with other events names itself; the others
        // are said of the input.
        Err(VersionError::Diverged(e)) => Err(CliError::BadInput(e.to_string())),
        Err(e @ VersionError::TooMany) => Err(CliError::BadInput(format!("{}: {e}", input.name()))),
        Err(VersionError::Gone) => Err(CliError::BadInput(format!(
            "{}: holds no session any more",
            input.name()
        ))),
        Err(VersionError::Reread(e)) => Err(e),
        Err(e @ VersionError::Catalog(_)) => Err(CliError::Failed(e.to_string())),
    }
}

/// What `import` reads: the files named (directories expanded, `-` for
/// standard input) and, with `--discover`, the sessions found.
pub(crate) fn inputs(a: &ImportArgs) -> Result<Vec<Input>, CliError> {
    let mut out = Vec::new();
    for p in &a.files {
        if p.as_os_str() == "-" {
            out.push(Input::Stdin);
        } else if p.is_dir() {
            let files = recordings_in(p)
                .map_err(|e| CliError::BadInput(format!("{}: cannot list: {e}", p.display())))?;
            if files.is_empty() {
                return Err(CliError::BadInput(format!(
                    "{}: a directory with no recording in it (no .json or .jsonl file in it or below \
                     it): nothing was imported",
                    p.display()
                )));
            }
            out.extend(files.into_iter().map(Input::File));
        } else if opencode_db::is_database_file(p) {
            out.extend(database_sessions(p).into_iter().map(Input::Found));
        } else {
            out.push(Input::File(p.clone()));
        }
    }
    if a.discover {
        out.extend(discover(&Places::from_env()).into_iter().map(Input::Found));
    }
    Ok(out)
}

/// What became of one input of a many-input import.
pub(crate) enum Outcome {
    /// Stored; the version it replaced (`--replace`).
    Imported(Box<Imported>, Stored, Option<SessionId>),
    NothingYet,
    Refused(String),
}

impl Outcome {
    /// One word for the table: imported, extended, unchanged, replaced,
    /// waiting, refused.
    pub(crate) fn result(&self) -> &'static str {
        match self {
            Outcome::Imported(_, _, Some(_)) => "replaced",
            Outcome::Imported(_, Stored { new_events: 0, .. }, _) => "unchanged",
            Outcome::Imported(_, Stored { grew: true, .. }, _) => "extended",
            Outcome::Imported(..) => "imported",
            Outcome::NothingYet => "waiting",
            Outcome::Refused(_) => "refused",
        }
    }
}

pub(crate) fn import_many(
    json: bool,
    db: &Path,
    inputs: &[Input],
    how: &How,
) -> Result<(), CliError> {
    if inputs.is_empty() {
        return Err(CliError::BadInput(
            "nothing to import: no recording in the files named, and none found".into(),
        ));
    }
    // Opened once something is to be stored: refusing everything creates
    // nothing.
    let mut store: Option<SledStore> = None;
    let bar = ui::progress(json, inputs.len() as u64, 2, "import", false);
    let mut outcomes = Vec::with_capacity(inputs.len());
    for input in inputs {
        let outcome = import_input(db, &mut store, input, how)?;
        outcomes.push(outcome);
        bar.inc(1);
    }
    bar.finish_and_clear();
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
    db: &Path,
    store: &mut Option<SledStore>,
    input: &Input,
    how: &How,
) -> Result<Outcome, CliError> {
    Ok(match read_input(true, input, how.format, &how.options) {
        Ok(Some(imported)) => {
            let store = match store {
                Some(s) => s,
                None => store.insert(open_store(db)?),
            };
            match store_versions(store, input, imported, how) {
                Ok((imported, stored, replaced)) => {
                    Outcome::Imported(Box::new(imported), stored, replaced)
                }
                Err(e @ CliError::BadInput(_)) => {
                    Outcome::Refused(format!("{}: {e}", input.name()))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None) => Outcome::NothingYet,
        Err(e @ CliError::BadInput(_)) => Outcome::Refused(e.to_string()),
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
        let result = outcome.result();
        *counts.entry(result).or_default() += 1;
        let (imported, events, new_events, replaced) = match outcome {
            Outcome::Imported(i, stored, replaced) => (
                Some(i.as_ref()),
                Some(stored.events),
                Some(stored.new_events),
                *replaced,
            ),
            _ => (None, None, None, None),
        };
        let error = match outcome {
            Outcome::Refused(why) => Some(why.clone()),
            _ => None,
        };
        let detail = match outcome {
            Outcome::Imported(i, stored, Some(old)) => {
                format!("{} events, {} (replaces {old})", stored.events, i.session)
            }
            Outcome::Imported(i, stored, _) if stored.grew => {
                format!("+{} events, {}", stored.new_events, i.session)
            }
            Outcome::Imported(i, stored, _) => format!("{} events, {}", stored.events, i.session),
            Outcome::NothingYet => "no session written yet".into(),
            Outcome::Refused(why) => why.clone(),
        };
        docs.push(json!({
            "file": input.name(),
            "result": result,
            "format": imported.map(|i| i.format.name()),
            "session": imported.map(|i| i.session.to_string()),
            "source_session": imported.and_then(|i| i.source_session.clone()),
            "events": events,
            "new_events": new_events,
            "replaced": replaced.map(|s| s.to_string()),
            "warnings": imported.map(|i| i.warnings.clone()).unwrap_or_default(),
            "error": error,
        }));
        rows.push(vec![
            result.to_string(),
            imported.map_or("-".into(), |i| i.format.name().to_string()),
            input.name(),
            detail,
        ]);
    }
    let count = |k: &str| counts.get(k).copied().unwrap_or(0);
    if json {
        println!(
            "{}",
            json!({
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
        if let Outcome::Imported(i, ..) = outcome {
            for w in &i.warnings {
                eprintln!("ctxlog: warning: {}: {w}", input.name());
            }
        }
    }
    println!(
        "{} recordings: {} imported, {} extended, {} unchanged, {} replaced, {} waiting, {} refused",
        inputs.len(),
        count("imported"),
        count("extended"),
        count("unchanged"),
        count("replaced"),
        count("waiting"),
        count("refused"),
    );
}

/// `import FILE` of one file.
pub(crate) fn import_one(json: bool, db: &Path, file: &Path, how: &How) -> Result<(), CliError> {
    let Some(imported) = read_recording(json, file, how.format, &how.options)? else {
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
    let input = Input::File(file.to_path_buf());
    let (imported, stored, replaced) =
        store_versions(&store, &input, imported, how).map_err(|e| match e {
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
pub fn store_import(store: &SledStore, imported: Imported) -> Result<Stored, CliError> {
    store_import_events(store, imported.events)
}

/// Stores a simulated session's events whole (or what is new of them).
pub(crate) fn store_import_events(
    store: &SledStore,
    events: EventPack,
) -> Result<Stored, CliError> {
    catalog::store_recording(store, events).map_err(|e| match e {
        e @ CatalogError::Diverged { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(format!("not stored: {e}")),
    })
}
