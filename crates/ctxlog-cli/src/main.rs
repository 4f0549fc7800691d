//! `ctxlog`: the command line of the ctxlog engine.
//!
//! Exit codes: 0 success, 1 the operation failed, 2 bad input or usage.
//!
//! Files:
//! - `args.rs`: the command line as clap reads it (`Cli`, `Command`), and
//!   `--help` grouped by task.
//! - `audit.rs`: `audit`.
//! - `bench.rs`: (feature `bench` only) `ctxlog bench`: runs `ctxlog_bench`
//!   behind a progress bar, passing itself as the child `ctxlog`.
//! - `check.rs`: `verify` and `salvage`.
//! - `compact.rs`: `compact`.
//! - `completion.rs`: Shell completion.
//! - `copy.rs`: `copy FROM TO`.
//! - `damaged.rs`: What the CLI says of a store it cannot read at all.
//! - `demo.rs`: `ctxlog demo`.
//! - `doctor.rs`: `ctxlog doctor`.
//! - `error.rs`: How a command fails.
//! - `events.rs`: Files of events.
//! - `export.rs`: `export`.
//! - `hook.rs`: `ctxlog hook AGENT`.
//! - `hooks.rs`: `ctxlog hooks install|uninstall|status`.
//! - `import/`: `import`.
//! - `location.rs`: Which store a command works on.
//! - `mcp.rs`: `mcp`.
//! - `memory.rs`: Glibc capped at two malloc arenas before any thread starts,
//!   and the peak memory written at exit when `CTXLOG_PEAK_RSS_FILE` names a
//!   file, for the bench's child runs.
//! - `output.rs`: What is written: a `println!` that ends quietly on a closed
//!   stdout, `println!`/`eprintln!` that show the control characters of
//!   recorded text as symbols (or `\u` escapes in JSON); the JSON failure
//!   envelope `{"ok": false, "error": {"kind", "message", "exit_code"}}` for
//!   every failure, clap's included; `completions`.
//! - `recall.rs`: `recall`.
//! - `recording.rs`: `--format` and the limit arguments; reading an input
//!   (`-`: stdin) through `ctxlog_app::inputs` behind a progress bar, its
//!   warnings on stderr; `--policy-file` (one policy, or `presets`' list and
//!   `--policy NAME`); `presets`.
//! - `redaction.rs`: What views and exports share.
//! - `replay.rs`: `replay`.
//! - `report.rs`: `report`.
//! - `search.rs`: `search` and `index`.
//! - `selection.rs`: `Selection`: the `--agent`, `--project`, `--since`,
//!   `--until` both take, and their span in a zone.
//! - `otel.rs`: `otel export`.
//! - `serve.rs`: `serve`.
//! - `sessions.rs`: `sessions`.
//! - `simulate.rs`: `simulate`.
//! - `store.rs`: `open_existing` (read-only commands: through the holder via
//!   `SharedStore::open`, else directly; through a private temporary copy
//!   when the store cannot be written, or is another user's and root reads
//!   it), `open_store` (writes: through the holder too), what a store that
//!   does not open is called (busy, another user's, out of reach, or damaged
//!   only when sled cannot read it), naming a session.
//! - `stress.rs`: `ctxlog stress`.
//! - `timeline.rs`: `ctxlog timeline`.
//! - `ui.rs`: Progress bars only on a terminal; tables fitted to
//!   `terminal_width` (`COLUMNS`, else the terminal's, else unbounded when
//!   piped), from rows `Measured` one at a time and printed one at a time
//!   (`Table`), so a table need not hold its rows: each `Column` is kept, a
//!   number, or free text that gives way first (widest first, to its `min`),
//!   ranked columns left out lowest first, a compact form under
//!   `COMPACT_BELOW` (60); colour only on a terminal without `NO_COLOR`.
//! - `usage.rs`: `usage`.
//! - `window.rs`: `window`.

use crate::audit::show_audit;
use crate::check::salvage;
use crate::check::verify;
use crate::events::replay_events;
use crate::store::remove_read_copies;
use crate::window::show_window;
use clap::Parser;

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

mod args;
mod audit;
#[cfg(feature = "bench")]
mod bench;
mod check;
mod compact;
mod completion;
mod copy;
mod damaged;
mod demo;
mod doctor;
mod error;
mod events;
mod export;
mod hook;
mod hooks;
mod import;
mod location;
mod mcp;
mod memory;
mod otel;
mod output;
mod recall;
mod recording;
mod redaction;
mod replay;
mod report;
mod search;
mod selection;
mod serve;
mod sessions;
mod simulate;
mod store;
mod stress;
mod timeline;
mod ui;
mod usage;
mod window;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

pub(crate) use args::{Cli, Command, ExportFormat, SummarizerKind};
pub(crate) use error::CliError;
pub(crate) use location::{default_store, LocationParser};
pub(crate) use output::{stdout_failed, write_stderr, write_stdout, write_stdout_raw};

fn main() -> ExitCode {
    // A shell asking what completes a word is answered, and nothing else.
    completion::answer_if_asked();
    memory::limit_arenas();
    // A panic inside the store's calls into sled becomes a located error
    // (`StoreError::SledPanicked`), printed once like any other.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !ctxlog_store::backend::in_guarded_call() {
            default_hook(info);
        }
    }));
    let cli = Cli::try_parse().unwrap_or_else(|e| output::command_line_refused(e));
    output::JSON_OUTPUT.store(cli.json, Ordering::Relaxed);
    let result = run(&cli);
    // A reader this process serves is not cut off by its exit.
    ctxlog_sled::wait_for_readers(std::time::Duration::from_secs(30));
    remove_read_copies();
    ctxlog_app::search_index::remove_private_index();
    memory::report_peak();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            output::report_failure(&e, cli.json);
            ExitCode::from(e.code())
        }
    }
}

fn run(cli: &Cli) -> Result<(), CliError> {
    match &cli.command {
        Command::Demo => demo::run(cli.json),
        Command::Generate(args) => events::generate(cli.json, args),
        Command::ReplayEvents { file } => replay_events(cli.json, file),
        Command::Stress {
            sessions,
            events,
            batch,
            seed,
        } => stress::run(&cli.db, *sessions, *events, *batch, *seed),
        Command::Verify => verify(cli),
        Command::Salvage { from, to } => salvage(cli.json, from, to),
        Command::Copy { from, to } => copy::copy(cli.json, from, to),
        Command::Import(args) => import::import(cli.json, &cli.db, args),
        Command::Sessions(args) => sessions::sessions(cli.json, &cli.zone(), &cli.db, args),
        Command::Usage(args) => usage::usage(cli.json, &cli.zone(), cli.utc, &cli.db, args),
        Command::Replay { session } => replay::replay(cli.json, &cli.db, session),
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
        } => export::export(cli.json, &cli.db, session, out.as_ref()),
        Command::Export {
            session,
            format: ExportFormat::Markdown,
            out,
            redact,
        } => export::export_markdown(cli, session, out.as_deref(), *redact),
        Command::Simulate(args) => simulate::simulate(cli.json, &cli.db, args),
        #[cfg(feature = "bench")]
        Command::Bench(args) => bench::run(cli.json, args),
        #[cfg(feature = "bench")]
        Command::BenchReplayRss { session } => bench::replay_rss_child(cli.json, &cli.db, session),
        Command::Window {
            session,
            at,
            format,
        } => show_window(cli, session, *at, *format),
        Command::Audit { session } => show_audit(cli, session),
        Command::Timeline { session } => timeline::show_timeline(cli, session),
        Command::Report {
            session,
            with,
            out,
            redact,
        } => report::write_report(cli, session, with, out, *redact),
        Command::Compact {
            session,
            summarizer,
        } => compact::compact(cli, session, *summarizer),
        Command::Search(args) => search::search(cli, args),
        Command::Recall(args) => recall::recall(cli, args),
        Command::Index(args) => search::index(cli, args),
        Command::Serve(args) => serve::serve(cli, args),
        Command::Otel(args) => otel::otel(cli, args),
        Command::Mcp(args) => mcp::mcp(cli, args),
        Command::Hooks(args) => hooks::hooks(cli, args),
        Command::Hook(args) => hook::hook(cli, args),
        Command::Doctor => doctor::doctor(cli),
        Command::Presets => recording::print_presets(),
        Command::Completions { shell } => {
            completion::print_script(*shell);
            Ok(())
        }
    }
}

/// Now, ms since the epoch: the command line's clock, for relative dates
/// (`7d`, `yesterday`) and the zone's offset today.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
