//! `ctxlog`: the command line of the ctxlog engine.
//!
//! Exit codes: 0 success, 1 the operation failed, 2 bad input or usage.

use clap::{Parser, Subcommand};
use ctxlog_app::catalog;
use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::window::ToolResult;
use ctxlog_core::{audit, Role, SessionId, Window, WindowPart};
use ctxlog_core::{
    plan_prune, window, Envelope, JobStatus, ModelLimits, Policy, RefusedEvent, SessionState,
};
use ctxlog_engine::openai::{OpenAiConfig, OpenAiSummarizer};
use ctxlog_engine::{Engine, EngineBuilder, EngineError, JobOutcome};
use ctxlog_store::{EventLog, OpenError, Reader, SledStore};
use recorded::SimulateArgs;
use serde_json::json;
use std::sync::Arc;

/// `println!` that never panics on output: a closed stdout (`ctxlog sessions
/// | head -1`) ends the program quietly with exit 0, any other write error
/// with a message and exit 1. Every module of the binary uses this one.
/// `eprintln!` through [`write_stderr`]: recorded text in a warning or an
/// error cannot act on the terminal either.
macro_rules! eprintln {
    ($($arg:tt)*) => {
        $crate::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

macro_rules! println {
    () => {
        $crate::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod bench;
mod damaged;
mod demo;
mod follow;
mod memory;
mod recorded;
mod stress;
mod ui;
mod views;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// `ctxlog --help`: the commands grouped by task (a test checks that every
/// command is listed).
const HELP_TEMPLATE: &str = "\
{about}

{usage-heading} {usage}

Bring sessions in:
  import         recordings: files, directories, opencode.db, stdin; --discover, --follow

See a session:
  sessions       the stored sessions: date, agent, model, steps, peak tokens, compactions
  timeline       a row per step: tokens, usable context, percent used, what happened
  report         one HTML page: the context curve, prunes and compactions, the window at any step
  window         the exact model input, at the head or right after --at SEQ
  audit          every prune and compaction, with the agent's ids and the tokens
  export         an OpenCode export or a Markdown transcript

Compare policies:
  simulate       run a recording under other presets (--policy a,b); --keep, --report
  presets        the built-in policies as JSON (edit one, pass it with --policy-file)
  compact        compact a stored session by hand, now

Check the store:
  verify         every record against the witness of what was acknowledged
  salvage        copy what is intact out of a damaged store
  replay         re-derive a session's state and its digest

Try and measure:
  demo           the Quick start: import, audit and simulate the built-in fixture
  generate       a seeded synthetic session through the whole lifecycle
  replay-events  replay a JSON-lines file of events
  stress         append synthetic sessions durably, printing each acknowledgement
  bench          ratios against raw sled and against recomputing

`ctxlog help <command>` tells more of each.

Options:
{options}{after-help}";

#[derive(Parser)]
#[command(
    name = "ctxlog",
    version,
    about = "Event-sourced context log for LLM agent sessions",
    help_template = HELP_TEMPLATE,
    after_help = "Examples:\n  ctxlog demo\n  ctxlog import --discover\n  ctxlog sessions --sort peak --desc\n  ctxlog timeline 0199812e\n  ctxlog report 0199812e --out session.html\n  ctxlog simulate rollout.jsonl --policy opencode-1.17,codex --context 128k --report compare.html\n\nExit codes: 0 success, 1 the operation failed, 2 bad input or usage."
)]
pub(crate) struct Cli {
    /// Print one JSON document on stdout instead of human output.
    #[arg(long, global = true)]
    json: bool,
    /// The store directory (a sled database, private to its owner), before
    /// or after the command; default `$CTXLOG_DB`, else
    /// `$XDG_DATA_HOME/ctxlog`, else `~/.local/share/ctxlog`.
    #[arg(long, global = true, env = "CTXLOG_DB", default_value_os_t = default_store())]
    db: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Import the built-in OpenCode fixture (an already compacted and pruned
    /// session) into a throw-away store, print its audit, and simulate it
    /// under a policy with pruning on: the Quick start's main command.
    #[command(after_help = "Example:\n  ctxlog demo\n  ctxlog demo --json")]
    Demo,
    /// Generate a seeded synthetic session, run it through the compaction
    /// lifecycle and report what the reducers derived.
    #[command(
        after_help = "Example:\n  ctxlog generate --seed 7 --turns 30 --events-out session.jsonl"
    )]
    Generate {
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
    #[command(after_help = "Example:\n  ctxlog replay-events session.jsonl")]
    ReplayEvents {
        /// The file (one envelope per line, as `generate --events-out` writes).
        file: PathBuf,
    },
    /// Print the built-in policy presets as JSON.
    #[command(after_help = "Example:\n  ctxlog presets > policy.json")]
    Presets,
    /// Append synthetic sessions durably, printing `ACK <session> <seq>` as
    /// each append is acknowledged.
    #[command(
        after_help = "Example:\n  ctxlog --db /tmp/s stress --sessions 8 --events 500 --seed 1"
    )]
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
        /// Seed of the synthetic sessions (default: from the clock, so every
        /// run writes new sessions).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Check every record of the store (CRC, chain, contiguity, heads) and
    /// the log against the witness of what was acknowledged. Exit 1 when
    /// anything is wrong; `--json` prints `{"ok", "heads", "errors": [{"kind",
    /// "session", "seq", "file", "offset", "detail"}]}`.
    #[command(after_help = "Example:\n  ctxlog --db ctxlog-data verify --json")]
    Verify,
    /// Copy every intact event of a damaged store into a new store, session
    /// by session up to its first damaged or lost event, and print what could
    /// not be saved (exit 1 when anything could not).
    #[command(after_help = "Example:\n  ctxlog salvage ctxlog-data ctxlog-data.salvaged")]
    Salvage {
        /// The damaged store.
        from: PathBuf,
        /// The new store (a path that does not exist yet).
        to: PathBuf,
    },
    /// Import a recorded session (OpenCode export, Claude Code, Codex or pi)
    /// into the store; bad input writes nothing, and an import killed
    /// midway leaves a prefix, marked interrupted, that importing again
    /// completes. Importing the same file again writes nothing (the ids
    /// derive from the recording's own session id); importing it after it
    /// grew appends what is new, at any moment, even while the agent is
    /// writing it, and ends as one import of the whole file would.
    #[command(
        after_help = "Example:\n  ctxlog import ~/.codex/sessions/2025/09/25/rollout-….jsonl\n  ctxlog import export.json --format opencode --context 128000\n  ctxlog import ~/.claude/projects/my-project/current-session.jsonl   (while Claude Code writes it)"
    )]
    Import(recorded::ImportArgs),
    /// List the stored sessions: date, agent, model, steps, peak tokens,
    /// compactions, pruned parts and title (every field with --json).
    #[command(
        after_help = "Example:\n  ctxlog sessions\n  ctxlog sessions --agent claude --since 2025-09-01 --sort peak --desc\n  ctxlog --db other-store sessions --json"
    )]
    Sessions(recorded::SessionsArgs),
    /// Re-derive a session's state from its whole log; prints its digest.
    #[command(after_help = "Example:\n  ctxlog replay ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v --json")]
    Replay {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        session: String,
    },
    /// Write a stored session as an OpenCode export (markers, summaries and
    /// pruned marks included) or a Markdown transcript, to stdout or `--out`.
    #[command(
        after_help = "Example:\n  ctxlog export 0199812e-64f0-7f73-91fc-095dda01c36e --format opencode > session.json\n  ctxlog export 0199812e --format markdown --out session.md"
    )]
    Export {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        session: String,
        /// The output format.
        #[arg(long, value_enum, default_value_t = ExportFormat::Opencode)]
        format: ExportFormat,
        /// Write to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Redact secrets (keys, tokens, passwords) from the whole transcript
        /// (Markdown only; the log is not changed).
        #[arg(long)]
        redact: bool,
    },
    /// Run a recording through the engine in memory under a
    /// policy, as if the agent had run under it, and print the decisions
    /// (prunes, compactions, summaries, continues, stalls).
    #[command(
        after_help = "Example:\n  ctxlog simulate rollout.jsonl --policy opencode-1.17 --json\n  ctxlog simulate session.jsonl --context 100000 --prune true --prune-protect 20000"
    )]
    Simulate(SimulateArgs),
    /// Benchmark ctxlog against raw sled and against recomputing from
    /// scratch; ratios measured in one run (build with --release).
    #[command(
        after_help = "Example:\n  cargo run --release -p ctxlog-cli -- bench --quick --json"
    )]
    Bench {
        /// A smaller run (under a minute), as CI runs it.
        #[arg(long)]
        quick: bool,
    },
    /// The bench's child process: replay a session and report peak memory.
    #[command(hide = true)]
    BenchReplayRss {
        /// The session id.
        session: String,
    },
    /// Print the exact model input of a stored session, at its head or as it
    /// was right after event `--at SEQ`.
    #[command(after_help = "Example:\n  ctxlog window ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v --at 40")]
    Window {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        session: String,
        /// Show the window as it was right after this event.
        #[arg(long)]
        at: Option<u64>,
        /// `ctxlog`: messages and parts; as the agent sends it (JSON):
        /// `openai` the chat-completions `messages` of OpenCode, `anthropic`
        /// the Messages API `messages` of pi, `claude-code` those of Claude
        /// Code, `responses` the Responses API `input` of Codex.
        #[arg(long, value_enum, default_value = "ctxlog")]
        format: WindowFormat,
    },
    /// One row per model step of a stored session: the tokens the provider
    /// reported, the usable context and how much of it was used, the window
    /// estimate, and what happened after the step (prunes, compactions,
    /// summaries, continues, stalls).
    #[command(
        after_help = "Example:\n  ctxlog timeline 0199812e-64f0-7f73-91fc-095dda01c36e\n  ctxlog timeline ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v --json\n\n--json prints {\"session\", \"policy\", \"limits\", \"steps\": [{\"seq\", \"time\", \"tokens\": {\"input\", \"output\", \"reasoning\", \"cache_read\", \"cache_write\", \"total\", \"total_reported\"}, \"count\", \"usable\", \"percent\", \"threshold\", \"overflow\", \"window_estimate\", \"events\": [{\"seq\", \"kind\", \"parts\", \"tokens\", \"what\"}]}]}."
    )]
    Timeline {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        session: String,
    },
    /// Write one self-contained HTML page of a stored session: the context
    /// curve per step against the usable line and the threshold, markers for
    /// prunes and compactions, the exact window after any step, what each
    /// prune and compaction removed, each summary. `--with` adds other
    /// stored sessions (a simulation kept with `simulate --keep`) to the
    /// same chart.
    #[command(
        after_help = "Example:\n  ctxlog report 0199812e-64f0-7f73-91fc-095dda01c36e --out session.html\n  ctxlog report SESSION --with SESSION@opencode-1.17 --out compare.html"
    )]
    Report {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        session: String,
        /// More sessions on the same chart.
        #[arg(long = "with", value_name = "SESSION")]
        with: Vec<String>,
        /// The HTML file to write.
        #[arg(long)]
        out: PathBuf,
        /// Redact secrets (keys, tokens, passwords) from everything the page
        /// shows (the log is not changed).
        #[arg(long)]
        redact: bool,
    },
    /// Every prune, compaction request, start, attempt, summary, failure,
    /// pause and continue of a stored session.
    #[command(after_help = "Example:\n  ctxlog audit ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v")]
    Audit {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        session: String,
    },
    /// Compact a stored session by hand and run the job now (a job already
    /// pending, e.g. one cut off by a crash, runs instead of a new one).
    #[command(
        after_help = "Example:\n  ctxlog compact ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v --summarizer openai"
    )]
    Compact {
        /// The session: a ctxlog id, the recording's own id, or a unique prefix
        /// of either (as `sessions` shows it); `<id>@<policy>` names a kept
        /// simulation.
        session: String,
        /// The summarizer.
        #[arg(long, value_enum, default_value_t = SummarizerKind::Extractive)]
        summarizer: SummarizerKind,
    },
}

/// Formats `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ExportFormat {
    /// `opencode export` JSON.
    Opencode,
    /// A Markdown transcript (compactions, summaries and cleared outputs
    /// marked), for an issue or a review.
    Markdown,
}

/// Summarizers the command line can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SummarizerKind {
    /// Deterministic, built from the log, no network.
    Extractive,
    /// An OpenAI-compatible endpoint: `OPENAI_BASE_URL`, `OPENAI_API_KEY`,
    /// `CTXLOG_COMPACTION_MODEL`.
    Openai,
}

/// The store when neither `--db` nor `$CTXLOG_DB` names one: the user's
/// data directory (`$XDG_DATA_HOME/ctxlog`, else `~/.local/share/ctxlog`,
/// as the XDG base directory specification has it), the same from any
/// directory; `./ctxlog-data` only when there is no home.
fn default_store() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).map(PathBuf::from);
    var("XDG_DATA_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| {
            var("HOME")
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".local/share"))
        })
        .map_or_else(|| PathBuf::from("ctxlog-data"), |d| d.join("ctxlog"))
}

/// A failure, with the exit code it maps to.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error("{0}")]
    BadInput(String),
    #[error("{0}")]
    Failed(String),
    /// The failure is already in the command's output.
    #[error("{0} problem(s) found")]
    Reported(usize),
    /// Inputs refused, already named in the command's output (bad input:
    /// exit 2).
    #[error("{0} input(s) refused; nothing of them was written")]
    Refused(usize),
}

impl CliError {
    fn code(&self) -> u8 {
        match self {
            CliError::BadInput(_) | CliError::Refused(_) => 2,
            CliError::Failed(_) | CliError::Reported(_) => 1,
        }
    }
}

/// Writes to stdout; see the `println!` above.
/// Recorded text is made inert on the way out ([`inert`]).
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    let text = std::fmt::format(args);
    write_stdout_raw(&inert(&text, JSON_OUTPUT.load(Ordering::Relaxed)));
}

/// Writes `text` to stdout as it is: only for what ctxlog itself styles
/// (a bold table header), never recorded text.
pub(crate) fn write_stdout_raw(text: &str) {
    if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes()) {
        stdout_failed(&e);
    }
}

/// Writes to stderr, recorded text made inert; a closed stderr is ignored.
pub(crate) fn write_stderr(args: std::fmt::Arguments<'_>) {
    let text = std::fmt::format(args);
    let _ = std::io::stderr()
        .lock()
        .write_all(inert(&text, false).as_bytes());
}

/// Whether stdout carries JSON (`--json`), set once at start.
static JSON_OUTPUT: AtomicBool = AtomicBool::new(false);

/// `text` with nothing that can act on a terminal: in text output, control
/// characters and bidirectional overrides become visible symbols
/// ([`ctxlog_core::printable::lines`]); in JSON (whose strings already
/// escape C0) the C1 and bidirectional characters left are written as
/// `\uXXXX` escapes, the same value.
fn inert(text: &str, json: bool) -> std::borrow::Cow<'_, str> {
    if !json {
        return ctxlog_core::printable::lines(text);
    }
    let active = |c: char| matches!(c, '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{7f}');
    if !text.chars().any(active) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if active(c) {
            let _ = std::fmt::Write::write_fmt(&mut out, format_args!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Ends the program after a failed write to stdout: quietly (exit 0) when
/// the reader went away, else with the error (exit 1).
pub(crate) fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("ctxlog: cannot write to stdout: {e}");
    std::process::exit(1);
}

fn main() -> ExitCode {
    memory::limit_arenas();
    // A panic inside the store's calls into sled becomes a located error
    // (`StoreError::SledPanicked`), printed once like any other.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !ctxlog_store::in_guarded_call() {
            default_hook(info);
        }
    }));
    let cli = Cli::parse();
    JSON_OUTPUT.store(cli.json, Ordering::Relaxed);
    let result = run(&cli);
    // A reader this process serves is not cut off by its exit.
    ctxlog_store::wait_for_readers(std::time::Duration::from_secs(30));
    remove_read_copies();
    memory::report_peak();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ (CliError::Reported(_) | CliError::Refused(_))) => {
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
        Command::Demo => demo::run(cli.json),
        Command::Generate {
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
                None => Policy::named(policy).map_err(|e| CliError::BadInput(e.to_string()))?,
            };
            let cfg = GenerateConfig {
                seed: *seed,
                turns: *turns,
                policy,
                limits: ModelLimits {
                    context: *context,
                    input: None,
                    output: Some(*output),
                },
                ..GenerateConfig::default()
            };
            generate_session(cli.json, &cfg, events_out.as_deref())
        }
        Command::ReplayEvents { file } => replay_events(cli.json, file),
        Command::Stress {
            sessions,
            events,
            batch,
            seed,
        } => stress::run(&cli.db, *sessions, *events, *batch, *seed),
        Command::Verify => verify(cli),
        Command::Salvage { from, to } => salvage(cli.json, from, to),
        Command::Import(args) => recorded::import(cli.json, &cli.db, args),
        Command::Sessions(args) => recorded::sessions(cli.json, &cli.db, args),
        Command::Replay { session } => recorded::replay(cli.json, &cli.db, session),
        Command::Export {
            format: ExportFormat::Opencode,
            redact: true,
            ..
        } => Err(CliError::BadInput(
            "--redact applies to --format markdown: an OpenCode export is the session as recorded"
                .into(),
        )),
        Command::Export {
            session,
            format: ExportFormat::Opencode,
            out,
            redact: false,
        } => recorded::export(cli.json, &cli.db, session, out.as_ref()),
        Command::Export {
            session,
            format: ExportFormat::Markdown,
            out,
            redact,
        } => views::export_markdown(cli, session, out.as_deref(), *redact),
        Command::Simulate(args) => recorded::simulate(cli.json, &cli.db, args),
        Command::Bench { quick } => bench::run(cli.json, *quick),
        Command::BenchReplayRss { session } => bench::replay_rss_child(cli.json, &cli.db, session),
        Command::Window {
            session,
            at,
            format,
        } => show_window(cli, session, *at, *format),
        Command::Audit { session } => show_audit(cli, session),
        Command::Timeline { session } => views::show_timeline(cli, session),
        Command::Report {
            session,
            with,
            out,
            redact,
        } => views::write_report(cli, session, with, out, *redact),
        Command::Compact {
            session,
            summarizer,
        } => compact(cli, session, *summarizer),
        Command::Presets => presets(),
    }
}

/// `generate`: simulate, optionally write the events, report.
fn generate_session(
    as_json: bool,
    cfg: &GenerateConfig,
    events_out: Option<&Path>,
) -> Result<(), CliError> {
    let events = generate(cfg)
        .map_err(|e| CliError::Failed(format!("the generator wrote an invalid event: {e}")))?;
    if let Some(path) = events_out {
        write_events(path, &events)?;
    }
    let state = SessionState::replay(&events)
        .map_err(|e| CliError::Failed(format!("replay failed: {e}")))?;
    report(as_json, &events, &state);
    Ok(())
}

/// `replay-events FILE`: fold the file's envelopes, report.
fn replay_events(as_json: bool, file: &Path) -> Result<(), CliError> {
    let events = read_events(file)?;
    let mut state = SessionState::new();
    for (line, e) in &events {
        state.evolve(e).map_err(|err: RefusedEvent| {
            CliError::BadInput(format!("{}:{line}: {err}", file.display()))
        })?;
    }
    let events: Vec<Envelope> = events.into_iter().map(|(_, e)| e).collect();
    report(as_json, &events, &state);
    Ok(())
}

/// `presets`: the built-in policies as pretty JSON.
fn presets() -> Result<(), CliError> {
    let presets: Vec<Policy> = Policy::preset_names()
        .iter()
        .filter_map(|n| Policy::preset(n))
        .collect();
    let text = serde_json::to_string_pretty(&presets)
        .map_err(|e| CliError::Failed(format!("cannot serialize the presets: {e}")))?;
    println!("{text}");
    Ok(())
}

/// Copies of read-only stores made by [`open_existing`], removed when the
/// command ends.
static READ_COPIES: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Opens the store at `db` for a command that only reads: a path that is not
/// a store is bad input (exit 2) and nothing is created; a store another
/// process holds is read through that process; a store that cannot be
/// written (a read-only file system or copy) is read through a copy in the
/// temp directory, since sled opens its files for writing.
pub(crate) fn open_existing(db: &Path) -> Result<Reader, CliError> {
    require_store(db)?;
    let cannot_open = |e: OpenError| match e {
        // These name the store and its holder already.
        e @ (OpenError::InUse { .. } | OpenError::Unanswered { .. }) => {
            CliError::Failed(e.to_string())
        }
        e => CliError::Failed(damaged::unopened(db, &e)),
    };
    match std::fs::OpenOptions::new().append(true).open(db.join("db")) {
        Ok(_) => {
            let reader = Reader::open(db).map_err(cannot_open)?;
            tell_widened(db, reader.widened());
            if let Some(pid) = reader.served_by() {
                // A process writes this store: what this one does with what
                // it reads must not take the cores from it.
                ctxlog_store::yield_to_writer();
                eprintln!(
                    "ctxlog: {} is held by process {pid}: reading what it has made durable, through it",
                    db.display()
                );
            }
            Ok(reader)
        }
        Err(e)
            if e.kind() == std::io::ErrorKind::PermissionDenied
                || e.kind() == std::io::ErrorKind::ReadOnlyFilesystem =>
        {
            let copy = std::env::temp_dir().join(format!("ctxlog-read-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&copy);
            // The copy holds what the store holds: private before a byte
            // of it is written.
            ctxlog_store::private::create_dir(&copy)
                .map_err(|e| CliError::Failed(format!("{}: {e}", copy.display())))?;
            READ_COPIES
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(copy.clone());
            copy_store(db, &copy, true).map_err(|e| {
                CliError::Failed(format!(
                    "{}: cannot copy the read-only store: {e}",
                    db.display()
                ))
            })?;
            eprintln!(
                "ctxlog: {} cannot be written: reading a copy of it",
                db.display()
            );
            Ok(Reader::from(open_store(&copy)?))
        }
        Err(e) => Err(CliError::Failed(format!(
            "{}: {e}",
            db.join("db").display()
        ))),
    }
}

/// Bad input (exit 2) unless `db` is a store; a store this user may not
/// read says so.
pub(crate) fn require_store(db: &Path) -> Result<(), CliError> {
    if let Err(e) = std::fs::read_dir(db) {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            return Err(CliError::Failed(
                OpenError::Io {
                    path: db.to_owned(),
                    error: e,
                }
                .to_string(),
            ));
        }
    }
    if let Some(gone) = damaged::log_gone(db) {
        return Err(gone);
    }
    if db.join("db").is_file() {
        Ok(())
    } else {
        Err(CliError::BadInput(format!(
            "{}: not a ctxlog store (no such directory, or no sled `db` file in it)",
            db.display()
        )))
    }
}

/// Copies the files of a store (the witness first: it never claims more
/// than the log copied after it holds), writable.
fn copy_store(from: &Path, to: &Path, witness_first: bool) -> std::io::Result<()> {
    ctxlog_store::private::create_dir(to)?;
    let mut entries: Vec<_> = std::fs::read_dir(from)?.flatten().collect();
    entries.sort_by_key(|e| {
        (
            !(witness_first && e.file_name() == "witness"),
            e.file_name(),
        )
    });
    for e in entries {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_socket() {
            // The socket a serving process listens on is not data.
            continue;
        }
        if src.is_dir() {
            copy_store(&src, &dst, false)?;
        } else {
            std::fs::copy(&src, &dst)?;
            // Writable (sled opens for writing) and private.
            std::fs::set_permissions(
                &dst,
                std::fs::Permissions::from_mode(ctxlog_store::private::FILE_MODE),
            )?;
        }
    }
    Ok(())
}

/// Removes the copies [`open_existing`] made.
fn remove_read_copies() {
    for c in READ_COPIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .drain(..)
    {
        let _ = std::fs::remove_dir_all(c);
    }
}

pub(crate) fn open_store(db: &Path) -> Result<SledStore, CliError> {
    // A store whose log is gone is never quietly replaced by an empty one.
    if let Some(gone) = damaged::log_gone(db) {
        return Err(gone);
    }
    let store = SledStore::open(db).map_err(|e| CliError::Failed(damaged::unopened(db, &e)))?;
    tell_widened(db, store.widened());
    Ok(store)
}

/// Says which files of the store at `db` other users could read before
/// opening made them private.
fn tell_widened(db: &Path, widened: &[String]) {
    if let Some(first) = widened.first() {
        eprintln!(
            "ctxlog: {} could be read by other users: made private to its owner (0700/0600; {} files and directories, such as {first})",
            db.display(),
            widened.len()
        );
    }
}

fn verify(cli: &Cli) -> Result<(), CliError> {
    let store = open_existing(&cli.db)?;
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
                    "kind": e.kind,
                    "session": e.session.map(|s| s.to_string()),
                    "seq": e.seq,
                    "file": e.file.as_ref().map(|f| cli.db.join(f).display().to_string()),
                    "offset": e.offset,
                    "detail": e.detail,
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
            cli.db.display(),
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

fn salvage(json_out: bool, from: &Path, to: &Path) -> Result<(), CliError> {
    if to.exists() {
        return Err(CliError::BadInput(format!(
            "{}: already exists; salvage writes a new store",
            to.display()
        )));
    }
    let source = open_existing(from)?;
    let target = open_store(to)?;
    let report = ctxlog_store::salvage(&source, &target)
        .map_err(|e| CliError::Failed(format!("salvage failed: {e}")))?;
    target
        .flush()
        .map_err(|e| CliError::Failed(format!("salvage: {}: {e}", to.display())))?;
    if json_out {
        let saved: serde_json::Map<String, serde_json::Value> = report
            .saved
            .iter()
            .map(|(s, q)| (s.to_string(), json!(q)))
            .collect();
        let unsaved: Vec<_> = report
            .unsaved
            .iter()
            .map(|u| json!({"session": u.session.to_string(), "seq": u.seq, "detail": u.detail}))
            .collect();
        println!(
            "{}",
            json!({"complete": report.complete(), "saved": saved, "unsaved": unsaved})
        );
    } else {
        let events: u64 = report.saved.values().sum();
        println!(
            "saved {} sessions, {events} events, into {}",
            report.saved.len(),
            to.display()
        );
        for u in &report.unsaved {
            println!(
                "NOT SAVED: session {} from seq {}: {}",
                u.session, u.seq, u.detail
            );
        }
    }
    if report.complete() {
        Ok(())
    } else {
        Err(CliError::Reported(report.unsaved.len()))
    }
}

/// Opens the store for reading (see [`open_existing`]) and finds `text` in
/// it (a ctxlog id or a source id).
pub(crate) fn stored_session(cli: &Cli, text: &str) -> Result<(Reader, SessionId), CliError> {
    let store = open_existing(&cli.db)?;
    let session = recorded::resolve_session(&store, &cli.db, text)?;
    Ok((store, session))
}

/// Opens the store itself, never a copy, for a command that writes, and
/// finds `text` in it.
fn stored_session_to_write(cli: &Cli, text: &str) -> Result<(SledStore, SessionId), CliError> {
    require_store(&cli.db)?;
    let store = open_store(&cli.db)?;
    let session = recorded::resolve_session(&store, &cli.db, text)?;
    Ok((store, session))
}

fn engine<L: EventLog>(store: L, summarizer: SummarizerKind) -> Result<Engine<L>, CliError> {
    let mut builder = EngineBuilder::new();
    if summarizer == SummarizerKind::Openai {
        builder = builder.summarizer(Arc::new(OpenAiSummarizer::new(OpenAiConfig::from_env())));
    }
    builder
        .build(store)
        .map_err(|e| CliError::BadInput(e.to_string()))
}

/// A fresh directory name under the system temp dir for a throw-away store
/// (the caller removes it).
pub fn temp_dir(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "ctxlog-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ))
}

/// How `window` prints the model input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum WindowFormat {
    /// ctxlog's messages and parts.
    Ctxlog,
    /// The chat-completions `messages` array, as OpenCode sends it.
    Openai,
    /// The Anthropic Messages API `messages` array, as pi sends it.
    Anthropic,
    /// The Anthropic Messages API `messages` array, as Claude Code sends it
    /// (consecutive user messages joined; its reminders not recorded).
    ClaudeCode,
    /// The OpenAI Responses API `input` items, as Codex sends them.
    Responses,
}

fn show_window(
    cli: &Cli,
    session: &str,
    at: Option<u64>,
    format: WindowFormat,
) -> Result<(), CliError> {
    let (store, session) = stored_session(cli, session)?;
    let engine = engine(store, SummarizerKind::Extractive)?;
    let failed = |e: EngineError| match e {
        EngineError::NoSuchSeq { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(e.to_string()),
    };
    // At the head, the engine's state is read in place: a copy of a long
    // session's state would double the command's memory.
    match at {
        Some(seq) => print_window(
            cli,
            &engine,
            session,
            &engine.state_at(session, seq).map_err(failed)?,
            format,
        ),
        None => engine
            .query(session, |state| {
                print_window(cli, &engine, session, state, format)
            })
            .map_err(failed)?,
    }
}

/// Prints the window of `state` (see [`show_window`]).
fn print_window(
    cli: &Cli,
    engine: &Engine<Reader>,
    session: SessionId,
    state: &SessionState,
    format: WindowFormat,
) -> Result<(), CliError> {
    let w = window(state);
    let sent = match format {
        WindowFormat::Ctxlog => None,
        WindowFormat::Openai => {
            Some(("openai", "messages", ctxlog_engine::chat::chat_messages(&w)))
        }
        WindowFormat::Anthropic => Some((
            "anthropic",
            "messages",
            ctxlog_engine::anthropic::anthropic_messages(&w),
        )),
        WindowFormat::ClaudeCode => Some((
            "claude-code",
            "messages",
            ctxlog_engine::anthropic::claude_code_messages(&w),
        )),
        WindowFormat::Responses => Some((
            "responses",
            "input",
            ctxlog_engine::responses::responses_input(&w),
        )),
    };
    if let Some((name, key, items)) = sent {
        let mut doc = json!({
            "format": name,
            "omitted": ["system", "tools"],
            "note": "ctxlog does not record the system prompt or the tool definitions; a provider receives them before and beside these messages",
        });
        doc[key] = serde_json::Value::Array(items);
        println!("{doc}");
        return Ok(());
    }
    if cli.json {
        let view = ctxlog_app::views::WindowView::of(state, &w, state.head, None);
        println!("{}", json!(view));
        return Ok(());
    }
    let at = engine
        .store()
        .read(session, state.head)
        .ok()
        .and_then(|mut r| r.next())
        .and_then(Result::ok)
        .map_or(state.started_at, |e| e.recorded_at);
    window_header(state, &w, session, at);
    for m in &w.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for p in &m.parts {
            let line = match p {
                WindowPart::Text(t) => t.clone(),
                WindowPart::Reasoning(t) => format!("(reasoning) {t}"),
                WindowPart::File(a) => {
                    format!("(file) {}", a.filename.as_deref().unwrap_or(&a.url))
                }
                WindowPart::Tool {
                    tool,
                    input,
                    result,
                    ..
                } => match result {
                    ToolResult::Output { text, .. } => {
                        format!("[{tool} {}] {}", input.to_json_string(), text)
                    }
                    ToolResult::Error(e) => {
                        format!("[{tool} {}] error: {e}", input.to_json_string())
                    }
                },
            };
            println!("{role:>9}: {line}");
        }
    }
    Ok(())
}

/// What `window` prints above the messages: where in the session, the
/// tokens the last step reported against the estimate, the usable budget.
fn window_header(state: &SessionState, w: &Window, session: SessionId, at: u64) {
    let estimator = state.policy.estimator;
    println!(
        "session {session}{} · after seq {} · {} · policy {}",
        state
            .source_id
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default(),
        state.head,
        ctxlog_import::time::format_rfc3339_ms(at),
        state.policy.name
    );
    let recorded = state.last_finished.as_ref().map(|l| {
        let t = ctxlog_core::StepTokens::of(&l.tokens);
        format!(
            "{} tokens at the last step (input {}, cache read {}, cache write {}, output {})",
            t.total, t.input, t.cache_read, t.cache_write, t.output
        )
    });
    println!(
        "recorded: {} · estimated window: ~{} tokens in {} messages{} · usable {} (threshold {})",
        recorded.unwrap_or_else(|| "no step yet".into()),
        w.estimate(&estimator),
        w.messages.len(),
        if w.pivot.is_some() {
            ", from a compaction"
        } else {
            ""
        },
        state
            .policy
            .usable(&state.limits)
            .map_or("unlimited".into(), |u| u.to_string()),
        state
            .policy
            .threshold(&state.limits)
            .map_or("-".into(), |u| u.to_string()),
    );
    println!("system prompt: not recorded (ctxlog keeps the messages; the agent sends its system prompt and tool definitions beside them)");
    println!();
}

pub(crate) fn read_log(
    store: &impl EventLog,
    session: SessionId,
) -> Result<Vec<Envelope>, CliError> {
    store
        .read(session, 1)
        .map_err(|e| CliError::Failed(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::Failed(e.to_string()))
}

/// [`read_log`], then the session's descriptions placed after its events
/// (`catalog::descriptions_after`): what a report or a transcript reads.
pub(crate) fn read_described(
    store: &impl EventLog,
    session: SessionId,
) -> Result<Vec<Envelope>, CliError> {
    let mut events = read_log(store, session)?;
    let head = events.last().map_or(0, |e| e.seq);
    events.extend(
        catalog::descriptions_after(store, session, head)
            .map_err(|e| CliError::Failed(e.to_string()))?,
    );
    Ok(events)
}

fn show_audit(cli: &Cli, session: &str) -> Result<(), CliError> {
    let (store, session) = stored_session(cli, session)?;
    let lines = ctxlog_app::views::audit_lines(&read_log(&store, session)?);
    if cli.json {
        println!(
            "{}",
            json!({"session": session.to_string(), "entries": lines})
        );
        return Ok(());
    }
    let entries: Vec<_> = lines.into_iter().map(|l| l.entry).collect();
    print_audit(&entries);
    if entries.is_empty() {
        println!("nothing was pruned or compacted in {session}");
    }
    Ok(())
}

/// The audit trail as a table.
pub(crate) fn print_audit(entries: &[ctxlog_core::AuditEntry]) {
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            vec![
                e.seq.to_string(),
                ctxlog_import::time::format_rfc3339_ms(e.at),
                e.kind.clone(),
                e.tokens.map_or("-".into(), |t| t.to_string()),
                e.what.clone(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        ui::table(&["SEQ", "TIME", "KIND", "TOKENS", "WHAT"], &rows);
    }
}

fn compact(cli: &Cli, session: &str, summarizer: SummarizerKind) -> Result<(), CliError> {
    let (store, named) = stored_session_to_write(cli, session)?;
    let catalog_failed = |e: catalog::CatalogError| match e {
        e @ catalog::CatalogError::Replaced { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(e.to_string()),
    };
    // A session that mirrors a recording stays as the recording made it, so
    // later imports of the recording still extend it: the compaction is
    // kept in its copy `<source>@manual`.
    let (session, copy) = if catalog::mirrors_recording(&store, named).map_err(catalog_failed)? {
        let (copy, made) = catalog::manual_copy(&store, named).map_err(catalog_failed)?;
        (
            copy,
            Some((made, catalog::source_of(&store, copy).ok().flatten())),
        )
    } else {
        (named, None)
    };
    if let (Some((made, name)), false) = (&copy, cli.json) {
        let name = name.as_deref().unwrap_or("-");
        eprintln!(
            "ctxlog: {named} mirrors a recording, which later imports extend: the compaction is kept in {name} ({session}){}; `ctxlog report {named} --with {name}` shows both",
            if *made { ", a copy made now" } else { "" }
        );
    }
    let engine = engine(store, summarizer)?;
    let fail = |e: EngineError| CliError::Failed(e.to_string());
    // A job already pending (queued, or started and cut off by a crash) runs
    // instead of a new one.
    let pending = engine
        .query(session, |s| s.pending_jobs().next().map(|j| j.marker))
        .map_err(fail)?;
    let before = engine.window_estimate(session).map_err(fail)?;
    let job = match pending {
        Some(job) => job,
        None => engine.request_compaction(session).map_err(fail)?,
    };
    let outcomes = engine.run_pending(session).map_err(fail)?;
    let mine = outcomes.iter().find(|o| match o {
        JobOutcome::Completed { job: j, .. } | JobOutcome::Failed { job: j, .. } => *j == job,
    });
    let doc = match mine {
        Some(JobOutcome::Completed {
            summary,
            redactions,
            ..
        }) => json!({
            "ok": true, "session": session.to_string(), "job": job.to_string(),
            "recording_session": copy.is_some().then(|| named.to_string()),
            "kept_as": copy.as_ref().and_then(|(_, name)| name.clone()),
            "summary": summary.to_string(), "redactions": redactions,
            "window_tokens_before": before,
            "window_tokens_after": engine.window_estimate(session).map_err(fail)?,
        }),
        Some(JobOutcome::Failed { error, .. }) => {
            return Err(CliError::Failed(format!(
                "compaction of {session} failed: {error}"
            )))
        }
        None => return Err(CliError::Failed("the compaction job did not run".into())),
    };
    if cli.json {
        println!("{doc}");
    } else {
        let after = doc["window_tokens_after"].as_u64().unwrap_or(0);
        println!(
            "compacted {session}: job {job}, summary {}; window ~{before} -> ~{after} tokens ({} saved)",
            doc["summary"].as_str().unwrap_or(""),
            before.saturating_sub(after)
        );
    }
    Ok(())
}

pub(crate) fn read_policy(path: &Path) -> Result<Policy, CliError> {
    let file = File::open(path)
        .map_err(|e| CliError::BadInput(format!("{}: cannot open: {e}", path.display())))?;
    let policy: Policy = serde_json::from_reader(BufReader::new(file))
        .map_err(|e| CliError::BadInput(format!("{}: not a policy: {e}", path.display())))?;
    if !(1..=100).contains(&policy.threshold_percent) {
        return Err(CliError::BadInput(format!(
            "{}: `threshold_percent` must be from 1 to 100, not {}",
            path.display(),
            policy.threshold_percent
        )));
    }
    Ok(policy)
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
        .filter_map(|p| p.completed_output_units())
        .map(|units| estimator.estimate_units(units))
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
    let timeline = audit(events);
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
        println!("  #{:<6} {}", t.seq, t.what);
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_grouped_help_lists_every_command() {
        let cli = Cli::command();
        for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
            let name = sub.get_name();
            assert!(
                HELP_TEMPLATE.contains(&format!("\n  {name} ")),
                "`ctxlog --help` does not list {name}"
            );
        }
        cli.debug_assert();
    }
}
