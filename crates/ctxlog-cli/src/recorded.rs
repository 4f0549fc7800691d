//! Commands on recorded sessions: `import`, `sessions`, `replay`, `export`
//! and `simulate`.

use crate::ui::{self, Counting};
use crate::{open_store, CliError};
use ctxlog_app::catalog::{self, CatalogError, Stored};
use ctxlog_app::sessions::{Filter, Listed, Listing, SessionRow, SortBy};
use ctxlog_app::simulation::SimulationError;
use ctxlog_core::{Envelope, EventPack, Policy, SessionId, SessionState};
use ctxlog_engine::simulate::{simulate_recording, Decision, SimulateConfig};
use ctxlog_import::discover::{database_sessions, discover, recordings_in, Found, Layout, Places};
use ctxlog_import::export::ExportError;
use ctxlog_import::limits::resolve;
use ctxlog_import::{
    opencode_db, opencode_storage, Format, ImportOptions, Imported, LimitOverrides,
};
use ctxlog_store::{EventLog, SledStore};
use serde_json::json;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
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
    /// Context window, tokens (overrides the table and the file): `128000`,
    /// `128k`, `1M`.
    #[arg(long, value_parser = parse_tokens)]
    pub context: Option<u64>,
    /// Output limit, tokens (`32k`).
    #[arg(long, value_parser = parse_tokens)]
    pub output: Option<u64>,
    /// Dedicated input limit, tokens (0 = none).
    #[arg(long = "input-limit", value_parser = parse_tokens)]
    pub input_limit: Option<u64>,
}

/// A token count as people write it: `128000`, `128_000`, `128,000`,
/// `128k`, `1.5M` (k = 1,000; M = 1,000,000).
pub fn parse_tokens(text: &str) -> Result<u64, String> {
    let t: String = text
        .trim()
        .chars()
        .filter(|c| *c != '_' && *c != ',')
        .collect();
    let (digits, unit) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000u64),
        Some((i, 'm' | 'M')) => (&t[..i], 1_000_000),
        _ => (t.as_str(), 1),
    };
    let bad = || format!("{text:?} is not a token count (write 128000, 128k or 1.5M)");
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    match digits.split_once('.') {
        None => digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(unit))
            .ok_or_else(bad),
        Some((whole, frac)) => {
            // Exact decimal arithmetic: 1.5M is 1,500,000, never 1,499,999.
            if frac.len() > 6 || frac.contains('.') {
                return Err(bad());
            }
            let scale = 10u64.pow(frac.len() as u32);
            let whole: u64 = if whole.is_empty() {
                0
            } else {
                whole.parse().map_err(|_| bad())?
            };
            let frac: u64 = if frac.is_empty() {
                0
            } else {
                frac.parse().map_err(|_| bad())?
            };
            let n = whole
                .checked_mul(scale)
                .and_then(|w| w.checked_add(frac))
                .and_then(|v| v.checked_mul(unit))
                .ok_or_else(bad)?;
            if n % scale != 0 {
                return Err(format!("{text:?} is not a whole number of tokens"));
            }
            Ok(n / scale)
        }
    }
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
    Policy::named(name).map_err(|e| CliError::BadInput(e.to_string()))
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
    read_input(json, &Input::File(file.to_path_buf()), format, options)
}

/// One thing `import` reads.
#[derive(Debug, Clone)]
pub enum Input {
    /// A file, in the format named or sniffed.
    File(PathBuf),
    /// Standard input (`-`).
    Stdin,
    /// A session found where its agent keeps it (`--discover`).
    Found(Found),
}

impl Input {
    /// How it is named in messages.
    pub(crate) fn name(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Stdin => "stdin".into(),
            Input::Found(f) => f.name(),
        }
    }
}

/// Reads and imports one input (see [`read_recording`]). The format is
/// sniffed from the first bytes buffered, so a stream is read once.
fn read_input(
    json: bool,
    input: &Input,
    format: FormatArg,
    options: &ImportOptions,
) -> Result<Option<Imported>, CliError> {
    let name = input.name();
    let bad = |m: String| CliError::BadInput(format!("{name}: {m}"));
    let named = match format {
        FormatArg::Opencode => Some(Format::OpenCode),
        FormatArg::ClaudeCode => Some(Format::ClaudeCode),
        FormatArg::Codex => Some(Format::Codex),
        FormatArg::Pi => Some(Format::Pi),
        FormatArg::Auto => None,
    };
    let open = |path: &Path| -> Result<(Box<dyn std::io::Read>, u64), CliError> {
        let f = File::open(path).map_err(|e| bad(format!("cannot open: {e}")))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        Ok((Box::new(f), len))
    };
    // An OpenCode storage tree, to name the file an error is about.
    let mut tree: Option<opencode_storage::Assembled> = None;
    let (source, len, format): (Box<dyn std::io::Read>, u64, Option<Format>) = match input {
        Input::File(path) => {
            let (f, len) = open(path)?;
            (f, len, named)
        }
        Input::Stdin => (Box::new(std::io::stdin()), 0, named),
        Input::Found(found) => match found.layout {
            Layout::File => {
                let (f, len) = open(&found.path)?;
                (f, len, Some(found.format))
            }
            Layout::OpenCodeStorage => {
                let assembled = opencode_storage::assemble(&found.path, options.max_line_bytes)
                    .map_err(|e| CliError::BadInput(e.to_string()))?;
                let bytes = std::mem::take(&mut tree.insert(assembled).bytes);
                let len = bytes.len() as u64;
                (
                    Box::new(std::io::Cursor::new(bytes)),
                    len,
                    Some(Format::OpenCode),
                )
            }
            Layout::OpenCodeDatabase => {
                let bytes = match &found.session {
                    Some(id) => opencode_db::assemble(&found.path, id, options.max_line_bytes),
                    None => opencode_db::sessions(&found.path).map(|_| Vec::new()),
                }
                .map_err(|e| CliError::BadInput(e.to_string()))?;
                let len = bytes.len() as u64;
                (
                    Box::new(std::io::Cursor::new(bytes)),
                    len,
                    Some(Format::OpenCode),
                )
            }
        },
    };
    let bar = ui::progress(json, len, ui::PROGRESS_MIN_BYTES, "import", true);
    let mut reader = BufReader::with_capacity(256 << 10, Counting::new(source, bar.clone()));
    let format = match format {
        Some(f) => f,
        None => {
            let head = reader
                .fill_buf()
                .map_err(|e| bad(format!("cannot read: {e}")))?;
            Format::sniff(head).ok_or_else(|| {
                bad("unknown format (use --format opencode|claude-code|codex|pi)".into())
            })?
        }
    };
    let imported = ctxlog_import::import(reader, &name, format, options);
    bar.finish_and_clear();
    let imported = match imported {
        Ok(imported) => imported,
        Err(e) if e.holds_no_session() => return Ok(None),
        Err(e) => {
            let e = match &tree {
                Some(t) => t.locate(e),
                None => e,
            };
            return Err(CliError::BadInput(e.to_string()));
        }
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

/// `import FILE…`: one file as before; several, a directory, standard
/// input or `--discover`, each on its own with a summary table.
pub fn import(json: bool, db: &Path, a: &ImportArgs) -> Result<(), CliError> {
    let policy = a.policy.as_deref();
    let options = ImportOptions {
        policy: preset(policy.unwrap_or(ctxlog_core::policy::PRESET_OPENCODE_SEED))?,
        detect_policy: policy.is_none(),
        limits: a.limits.overrides(),
        max_line_bytes: a.max_line_bytes,
        version: 0,
    };
    let inputs = inputs(a)?;
    let how = How {
        format: a.format,
        options,
        replace: a.replace,
    };
    if a.follow {
        return crate::follow::follow(json, db, a, how);
    }
    match inputs.as_slice() {
        [Input::File(file)] if !a.discover && a.files.len() == 1 && !a.files[0].is_dir() => {
            import_one(json, db, file, &how)
        }
        _ => import_many(json, db, &inputs, &how),
    }
}

/// How `import` reads and stores each input.
pub(crate) struct How {
    pub(crate) format: FormatArg,
    pub(crate) options: ImportOptions,
    pub(crate) replace: bool,
}

/// The most versions of one recording `--replace` stores.
const MAX_VERSIONS: u32 = 1_000;

/// Stores `imported`, read from `input`, as the newest version of its
/// recording. A version `--replace` replaced is passed over (the input is
/// read again as the next version); a stored version the recording does not
/// extend is refused, or with `--replace` the recording is stored as the
/// next version and the stored one marked replaced by it. Returns what was
/// stored, and the version it replaced.
fn store_versions(
    store: &SledStore,
    input: &Input,
    imported: Imported,
    how: &How,
) -> Result<(Imported, Stored, Option<SessionId>), CliError> {
    let failed = |e: CatalogError| CliError::Failed(format!("not stored: {e}"));
    let mut imported = imported;
    let mut version = how.options.version;
    let mut diverged: Option<SessionId> = None;
    loop {
        let session = imported.session;
        if catalog::replaced_by(store, session)
            .map_err(failed)?
            .is_none()
        {
            // Limits or a policy given on the command line are adopted by
            // a session stored before with others (recorded as
            // `LimitsChanged` or `PolicyChanged`); without them, what the
            // session has in force stays.
            let adopt = catalog::Adopt {
                limits: how.options.limits != ctxlog_import::LimitOverrides::default(),
                policy: !how.options.detect_policy,
            };
            let events = std::mem::take(&mut imported.events);
            match catalog::store_recording_adopting(store, events, adopt) {
                Ok(stored) => {
                    if let Some(old) = diverged {
                        catalog::mark_replaced(store, old, session).map_err(failed)?;
                    }
                    return Ok((imported, stored, diverged));
                }
                Err(e @ CatalogError::Diverged { .. }) if !how.replace => {
                    return Err(CliError::BadInput(e.to_string()))
                }
                Err(CatalogError::Diverged { .. }) => {
                    // An earlier --replace stored this version and was cut
                    // short before marking the one before.
                    if let Some(old) = diverged {
                        catalog::mark_replaced(store, old, session).map_err(failed)?;
                    }
                    diverged = Some(session);
                }
                Err(e) => return Err(failed(e)),
            }
        }
        version += 1;
        if version > MAX_VERSIONS {
            return Err(CliError::BadInput(format!(
                "{}: more than {MAX_VERSIONS} versions of the recording are stored",
                input.name()
            )));
        }
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
        imported = read_input(true, input, how.format, &options)?.ok_or_else(|| {
            CliError::BadInput(format!("{}: holds no session any more", input.name()))
        })?;
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

fn import_many(json: bool, db: &Path, inputs: &[Input], how: &How) -> Result<(), CliError> {
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
fn import_one(json: bool, db: &Path, file: &Path, how: &How) -> Result<(), CliError> {
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

/// An imported recording's events, decoded (for the commands that need
/// them all at once).
pub fn decoded(events: &EventPack) -> Result<Vec<Envelope>, CliError> {
    events
        .to_vec()
        .map_err(|e| CliError::Failed(format!("cannot decode the imported events: {e}")))
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

/// `sessions`' filters and order.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SessionsArgs {
    /// Only sessions whose agent contains this text (`claude`, `codex`,
    /// `opencode`, `pi`; `simulated` for kept simulations).
    #[arg(long)]
    pub agent: Option<String>,
    /// Only sessions started on or after this day or time (`2025-09-25`,
    /// RFC 3339).
    #[arg(long)]
    pub since: Option<String>,
    /// Only sessions started before the end of this day (or before this
    /// time).
    #[arg(long)]
    pub until: Option<String>,
    /// The order of the rows.
    #[arg(long, value_enum, default_value_t = SortArg::Date)]
    pub sort: SortArg,
    /// Largest first (newest first for dates).
    #[arg(long)]
    pub desc: bool,
}

/// What `sessions --sort` orders by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SortArg {
    /// When the session started.
    #[default]
    Date,
    /// The agent's name.
    Agent,
    /// Model steps.
    Steps,
    /// The largest total tokens a step reported.
    Peak,
    /// Events stored.
    Events,
    /// The title.
    Title,
}

impl From<SortArg> for SortBy {
    fn from(a: SortArg) -> SortBy {
        match a {
            SortArg::Date => SortBy::Date,
            SortArg::Agent => SortBy::Agent,
            SortArg::Steps => SortBy::Steps,
            SortArg::Peak => SortBy::Peak,
            SortArg::Events => SortBy::Events,
            SortArg::Title => SortBy::Title,
        }
    }
}

/// A day (`2025-09-25`, its start; with `end`, the start of the next day)
/// or an RFC 3339 time, in ms since the epoch.
fn parse_day(text: &str, end: bool, flag: &str) -> Result<u64, CliError> {
    let bad = || {
        CliError::BadInput(format!(
            "--{flag} {text:?}: not a day (2025-09-25) or an RFC 3339 time"
        ))
    };
    if text.len() == 10 {
        let start =
            ctxlog_import::time::parse_rfc3339_ms(&format!("{text}T00:00:00Z")).ok_or_else(bad)?;
        return Ok(if end { start + 86_400_000 } else { start });
    }
    ctxlog_import::time::parse_rfc3339_ms(text).ok_or_else(bad)
}

/// The shortest prefix of each of `names`, at least 8 characters, that no
/// other name of `universe` (every stored session's, filtered or not)
/// starts with, as git shortens hashes; a kept simulation keeps its
/// `@policy`. `resolve_session` takes each back to its session.
fn short_names(names: &[String], universe: &[String]) -> Vec<String> {
    let base = |n: &str| n.split_once('@').map_or(n, |(b, _)| b).to_owned();
    let mut bases: Vec<String> = universe.iter().chain(names).map(|n| base(n)).collect();
    bases.sort_unstable();
    bases.dedup();
    let lcp = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    names
        .iter()
        .map(|n| {
            let b = base(n);
            // In sorted order the longest shared prefix is with a neighbour.
            let i = bases.binary_search(&b).unwrap_or(0);
            let before = i.checked_sub(1).map_or(0, |j| lcp(&b, &bases[j]));
            let after = bases.get(i + 1).map_or(0, |o| lcp(&b, o));
            let len = (before.max(after) + 1).max(8).min(b.chars().count());
            let short: String = b.chars().take(len).collect();
            match n.split_once('@') {
                Some((_, p)) => format!("{short}@{p}"),
                None => short,
            }
        })
        .collect()
}

/// `sessions`.
pub fn sessions(json: bool, db: &Path, a: &SessionsArgs) -> Result<(), CliError> {
    let filter = Filter {
        agent: a.agent.clone(),
        since: a
            .since
            .as_deref()
            .map(|t| parse_day(t, false, "since"))
            .transpose()?,
        until: a
            .until
            .as_deref()
            .map(|t| parse_day(t, true, "until"))
            .transpose()?,
    };
    let store = crate::open_existing(db)?;
    let listing = ctxlog_app::sessions::list(&store, &filter, a.sort.into(), a.desc)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let unreadable = listing.unreadable();
    let outcome = if unreadable.is_empty() {
        Ok(())
    } else {
        Err(CliError::Reported(unreadable.len()))
    };
    if json {
        println!(
            "{}",
            json!({ "ok": unreadable.is_empty(), "sessions": listing.rows })
        );
        return outcome;
    }
    if listing.rows.is_empty() {
        let filtered = if filter.is_set() {
            " match the filters"
        } else {
            ""
        };
        println!("no sessions in {}{filtered}", db.display());
        return outcome;
    }
    print_sessions(&listing);
    for u in &unreadable {
        println!("error: {u}");
    }
    outcome
}

/// The list as a table: the shortest unique name of each session, its
/// date, agent, model and numbers, and a title that says what it is.
fn print_sessions(listing: &Listing) {
    let name = |r: &Listed| match r {
        Listed::Row(r) => r
            .source_session
            .clone()
            .unwrap_or_else(|| r.session.clone()),
        Listed::Unreadable(u) => u.session.clone(),
    };
    let names: Vec<String> = listing.rows.iter().map(name).collect();
    // A session without a source id is named by its ctxlog id, which must
    // not be the prefix of another session's either.
    let with_ids: Vec<String> = listing
        .all_names
        .iter()
        .chain(&listing.all_ids)
        .cloned()
        .collect();
    let by_source = short_names(&names, &listing.all_names);
    let by_id = short_names(&names, &with_ids);
    let table: Vec<Vec<String>> = listing
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| match r {
            Listed::Row(r) if r.source_session.is_some() => session_line(by_source[i].clone(), r),
            Listed::Row(r) => session_line(by_id[i].clone(), r),
            Listed::Unreadable(_) => {
                let mut line = vec![by_id[i].clone()];
                line.extend(std::iter::repeat_n("-".to_owned(), 7));
                line.push("UNREADABLE (below)".into());
                line
            }
        })
        .collect();
    // The id is never cut (it names the session); agent and model are,
    // when a long id leaves the title too little room.
    ui::table_fit_cutting(
        &[
            "ID", "DATE", "AGENT", "MODEL", "STEPS", "PEAK", "COMP", "PRUNE", "TITLE",
        ],
        &table,
        ui::MAX_TABLE_WIDTH,
        &[2, 3],
    );
}

/// One session's line of the table, named `id`.
fn session_line(id: String, r: &SessionRow) -> Vec<String> {
    let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let mut title = text(&r.title);
    if r.replaced_by.is_some() {
        title = format!("(replaced) {title}");
    }
    if r.interrupted {
        title = format!("(import interrupted: import it again) {title}");
    }
    match r.source_session.as_deref().and_then(|s| s.split_once('@')) {
        Some((_, catalog::MANUAL)) => title = format!("(ctxlog's work on it) {title}"),
        Some((_, policy)) => title = format!("(simulated under {policy}) {title}"),
        None => {}
    }
    let date = r.date.as_str();
    vec![
        id,
        format!(
            "{} {}",
            date.get(..10).unwrap_or(date),
            date.get(11..16).unwrap_or("")
        ),
        ui::cut(without_version(&text(&r.agent)), 11),
        ui::cut(without_date(&text(&r.model)), 17),
        r.steps.to_string(),
        ui::tokens(r.peak_tokens),
        r.compactions.to_string(),
        r.pruned_parts.to_string(),
        title,
    ]
}

/// `claude-code-2.0.5` → `claude-code` (the version is in `--json`).
fn without_version(agent: &str) -> &str {
    match agent.rsplit_once('-') {
        Some((name, v)) if v.starts_with(|c: char| c.is_ascii_digit()) => name,
        _ => agent,
    }
}

/// `anthropic/claude-sonnet-4-5-20250929` → `claude-sonnet-4-5` (the whole
/// id is in `--json`).
fn without_date(model: &str) -> &str {
    let model = model.rsplit('/').next().unwrap_or(model);
    match model.rsplit_once('-') {
        Some((name, d)) if d.len() == 8 && d.chars().all(|c| c.is_ascii_digit()) => name,
        _ => model,
    }
}

/// `replay SESSION`: re-derives the state from the whole log.
pub fn replay(json: bool, db: &Path, session: &str) -> Result<(), CliError> {
    let store = crate::open_existing(db)?;
    let session = resolve_session(&store, db, session)?;
    let fail = |e: ctxlog_store::ReadError| CliError::Failed(e.to_string());
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
    let derived = derived(&state);
    if json {
        println!(
            "{}",
            json!({"session": session.to_string(), "events": events, "head": state.head, "digest": digest, "derived": derived})
        );
    } else {
        println!(
            "{session}: {events} events replayed, head {}, digest {digest}",
            state.head
        );
        let d = &derived;
        println!(
            "re-derived: {} messages ({} user, {} assistant), {} steps; policy {}",
            d["messages"],
            d["user_messages"],
            d["assistant_messages"],
            d["steps"],
            d["policy"].as_str().unwrap_or("-")
        );
        println!(
            "  compactions: {} completed, {} failed, {} pending; {} tool outputs pruned (~{} tokens, kept in the log)",
            d["compactions"]["completed"], d["compactions"]["failed"], d["compactions"]["pending"],
            d["pruned"]["parts"], d["pruned"]["tokens"]
        );
        println!(
            "  window: {} messages, ~{} tokens{}",
            d["window"]["messages"],
            d["window"]["estimated_tokens"],
            if d["window"]["pivot"].is_string() {
                ", starting at the latest compaction"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// What a replay re-derived, as JSON.
fn derived(state: &SessionState) -> serde_json::Value {
    use ctxlog_core::{JobStatus, Role};
    let w = ctxlog_core::window(state);
    let jobs = |f: fn(&JobStatus) -> bool| state.jobs.iter().filter(|j| f(&j.status)).count();
    let (steps, _) = ctxlog_app::sessions::steps_and_peak(state);
    let pruned_tokens: u64 = state
        .pruned_parts()
        .filter_map(|(_, p)| p.pruned.as_ref().map(|m| m.tokens))
        .sum();
    json!({
        "policy": state.policy.name,
        "messages": state.messages.len(),
        "user_messages": state.messages.iter().filter(|m| m.role == Role::User).count(),
        "assistant_messages": state.messages.iter().filter(|m| m.role == Role::Assistant).count(),
        "steps": steps,
        "compactions": {
            "completed": jobs(|s| matches!(s, JobStatus::Completed { .. })),
            "failed": jobs(|s| matches!(s, JobStatus::Failed { .. })),
            "pending": state.pending_jobs().count(),
        },
        "pruned": {"parts": state.pruned_parts().count(), "tokens": pruned_tokens},
        "window": {
            "pivot": w.pivot.map(|p| p.to_string()),
            "messages": w.messages.len(),
            "estimated_tokens": w.estimate(&state.policy.estimator),
        },
    })
}

/// `export SESSION --format opencode`: the export itself on stdout, or to
/// `--out` with a short report (JSON with `--json`) on stdout.
pub fn export(json: bool, db: &Path, session: &str, out: Option<&PathBuf>) -> Result<(), CliError> {
    let store = crate::open_existing(db)?;
    let session = resolve_session(&store, db, session)?;
    // The events are folded as they are read, and sealed content read back
    // from the log: memory holds the state, not the session.
    let contents = ctxlog_store::SessionContents::new(&store, session);
    let write = |out: &mut dyn std::io::Write| {
        // The descriptions follow the events, as if they were the
        // session's own (`catalog::descriptions_after`).
        let head = store
            .head(session)
            .map_err(|e| ExportError::Read(e.to_string()))?;
        let events = store
            .read(session, 1)
            .map_err(|e| ExportError::Read(e.to_string()))?
            .take_while(move |e| e.as_ref().map_or(true, |e| e.seq <= head))
            .map(|e| e.map_err(|e| ExportError::Read(e.to_string())));
        let descriptions = catalog::descriptions_after(&store, session, head)
            .map_err(|e| ExportError::Read(e.to_string()))?;
        ctxlog_import::export::opencode_streamed(
            events.chain(descriptions.into_iter().map(Ok)),
            &contents,
            out,
        )
    };
    let result = match out {
        Some(path) => {
            let f = File::create(path)
                .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
            let r = write(&mut std::io::BufWriter::new(f));
            if let Ok(events) = r {
                let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                if json {
                    println!(
                        "{}",
                        json!({"session": session.to_string(), "format": "opencode", "out": path.display().to_string(), "events": events, "bytes": bytes})
                    );
                } else {
                    println!(
                        "exported {session} ({events} events) to {} ({bytes} bytes)",
                        path.display()
                    );
                }
            }
            r.map(|_| ())
        }
        None => match write(&mut std::io::stdout().lock()) {
            Err(ExportError::Io(e)) => crate::stdout_failed(&e),
            Err(ExportError::Json(e)) if e.io_error_kind().is_some() => {
                crate::stdout_failed(&std::io::Error::from(e))
            }
            r => r.map(|_| ()),
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
    /// Policy presets to simulate, comma-separated (`opencode-1.17,codex`);
    /// see `ctxlog presets` [default: opencode-seed, unless --policy-file].
    #[arg(long, value_delimiter = ',')]
    pub policy: Vec<String>,
    /// One more policy, as a JSON file (every constant; `ctxlog presets`
    /// prints the built-in ones in this form).
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
    let mut policies = names
        .iter()
        .map(|p| preset(p))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(path) = &a.policy_file {
        policies.push(crate::read_policy(path)?);
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
pub fn simulate(json: bool, db: &Path, a: &SimulateArgs) -> Result<(), CliError> {
    let policies = simulated_policies(a)?;
    // The recording is labelled with its agent's preset (else the seed's),
    // never with a policy under test.
    let options = ImportOptions {
        policy: Policy::opencode_seed(),
        detect_policy: true,
        limits: a.limits.overrides(),
        max_line_bytes: a.max_line_bytes,
        version: 0,
    };
    let imported = read_recording(json, &a.file, a.format, &options)?
        .ok_or_else(|| CliError::BadInput(format!("{}: no session", a.file.display())))?;
    let source = imported
        .source_session
        .clone()
        .unwrap_or_else(|| a.file.display().to_string());
    let recording = decoded(&imported.events)?;
    // With --model, the recorded model switches no longer matter: one set of
    // limits for the whole run. Otherwise the recording's (with overrides
    // already applied by the importer) are followed.
    let fixed = a
        .limits
        .model
        .is_some()
        .then(|| resolve(&options.limits, None, None).limits);
    let store = if a.keep { Some(open_store(db)?) } else { None };
    let mut runs = Vec::new();
    for policy in &policies {
        let bar = ui::progress(
            json,
            imported.events.len() as u64,
            ui::PROGRESS_MIN_EVENTS,
            &format!("simulate {}", policy.name),
            false,
        );
        let mut config = SimulateConfig::new(policy.clone());
        config.limits = fixed.clone();
        if a.keep {
            config = config.keepable(&source, &recording);
        }
        let result = simulate_recording(&recording, config, |i| bar.set_position(i as u64));
        bar.finish_and_clear();
        let report = result.map_err(|e| {
            CliError::Failed(format!("simulation under {} failed: {e}", policy.name))
        })?;
        let timeline = crate::views::timeline_of(&report.log)?;
        let kept = match &store {
            Some(store) => Some(ctxlog_app::simulation::keep(store, &report).map_err(
                |e| match e {
                    SimulationError::NotKept { ref source, .. }
                        if matches!(**source, CatalogError::Diverged { .. }) =>
                    {
                        CliError::BadInput(e.to_string())
                    }
                    e => CliError::Failed(e.to_string()),
                },
            )?),
            None => None,
        };
        runs.push(Simulated {
            policy: policy.clone(),
            report,
            timeline,
            kept,
        });
    }
    if let Some(store) = &store {
        store
            .flush()
            .map_err(|e| CliError::Failed(format!("{}: {e}", db.display())))?;
    }
    let recorded = crate::views::timeline_of(&recording)?;
    if let Some(path) = &a.report {
        let mut curves = vec![ctxlog_report::Curve {
            label: crate::views::label(&recording),
            events: &recording,
        }];
        for r in &runs {
            curves.push(ctxlog_report::Curve {
                label: r.policy.name.clone(),
                events: &r.report.log,
            });
        }
        let html = ctxlog_report::report(&curves).map_err(|e| CliError::Failed(e.to_string()))?;
        crate::views::write_page(path, &html)?;
    }
    if json {
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
                // The first policy's figures at the top level, as before
                // several policies could be given.
                "decisions": first.report.decisions,
                "policy": first.policy,
                "steps": first.report.steps,
                "turns": first.report.turns,
                "overhead_tokens": first.report.overhead,
                "final_window_tokens": first.report.final_window,
                "source_session": imported.source_session,
                "format": imported.format.name(),
                "recorded": {
                    "policy": recorded.policy,
                    "limits": recorded.limits,
                    "peak_tokens": recorded.peak(),
                    "compactions": recorded.count("summary_completed"),
                    "prunes": recorded.count("parts_pruned"),
                },
                "simulations": simulations,
                "report": a.report.as_ref().map(|p| p.display().to_string()),
            })
        );
        return Ok(());
    }
    let first = &runs[0];
    let limits = &first.timeline.limits;
    println!(
        "{} {}: {} turns, {} steps, overhead ~{} tokens; limits: context {}, output {}, input {}",
        imported.format.name(),
        imported.source_session.as_deref().unwrap_or("-"),
        first.report.turns,
        first.report.steps,
        first.report.overhead,
        if limits.context == 0 {
            "unlimited".into()
        } else {
            limits.context.to_string()
        },
        limits.output.map_or("-".into(), |o| o.to_string()),
        limits.input.map_or("-".into(), |o| o.to_string()),
    );
    for r in &runs {
        println!();
        println!(
            "under {} (auto {}, prune {}, threshold {}%): usable {}, compacts at {}, peak {}",
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
                .map_or("never".into(), |u| u.to_string()),
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
    comparison(&recorded, &runs);
    if let Some(path) = &a.report {
        println!("report: {}", path.display());
    }
    Ok(())
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
                .map_or("-".into(), ui::tokens),
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
    ui::table_fit(
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
        ui::MAX_TABLE_WIDTH,
    );
}

/// Stores a simulated session's events whole (or what is new of them).
fn store_import_events(store: &SledStore, events: EventPack) -> Result<Stored, CliError> {
    catalog::store_recording(store, events).map_err(|e| match e {
        e @ CatalogError::Diverged { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(format!("not stored: {e}")),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_read_as_people_write_them() {
        for (text, want) in [
            ("128000", 128_000),
            ("128_000", 128_000),
            ("128,000", 128_000),
            ("128k", 128_000),
            ("128K", 128_000),
            ("1M", 1_000_000),
            ("1.5M", 1_500_000),
            ("0.5k", 500),
            ("1.047576M", 1_047_576),
            ("0", 0),
        ] {
            assert_eq!(parse_tokens(text), Ok(want), "{text}");
        }
        for bad in [
            "",
            "k",
            "12q",
            "1.2.3k",
            "-5",
            "1.5",
            "0.0001k",
            "99999999999999999999",
        ] {
            assert!(parse_tokens(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn short_names_are_unique_prefixes_of_eight_or_more() {
        let names: Vec<String> = [
            "0199812e-64f0-7f73",
            "0199812e-64f0-aaaa",
            "01998190-fba6",
            "01998190-fba6@codex",
            "ses_0a3f9c1e",
            "abc",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            short_names(&names, &names),
            [
                "0199812e-64f0-7",
                "0199812e-64f0-a",
                "01998190",
                "01998190@codex",
                "ses_0a3f",
                "abc"
            ]
        );
        assert_eq!(without_version("claude-code-2.0.5"), "claude-code");
        assert_eq!(without_version("pi"), "pi");
        assert_eq!(
            without_date("anthropic/claude-sonnet-4-5-20250929"),
            "claude-sonnet-4-5"
        );
        assert_eq!(without_date("gpt-5-codex"), "gpt-5-codex");
    }
}
