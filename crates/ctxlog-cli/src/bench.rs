//! `ctxlog bench`: runs the measurements of `ctxlog_bench` (ctxlog against
//! raw sled and against recomputing from scratch, each figure a ratio to
//! its baseline of the same run) behind a progress bar, and prints them.
//! Nothing here asserts a speed.

use crate::memory;
use crate::{ui, CliError};
use ctxlog_app::logs::Location;
use ctxlog_bench::{BenchError, ChildRun, Report, Scratch, GOALS, STAGES};
use ctxlog_core::SessionId;
use serde_json::{json, Map, Value};
use std::ffi::OsString;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

impl From<BenchError> for CliError {
    fn from(e: BenchError) -> Self {
        match e {
            BenchError::Failed(m) => CliError::Failed(m),
        }
    }
}

fn failed(what: &str) -> impl Fn(&dyn std::fmt::Display) -> BenchError + '_ {
    move |e| BenchError::Failed(format!("bench: {what}: {e}"))
}

/// Runs this binary with `args` in a child process (its errors to a file,
/// shown when it fails) and measures its time and peak memory (which it
/// writes at exit to the file [`memory::PEAK_RSS_FILE`] names).
fn run_ctxlog(args: &[OsString]) -> Result<ChildRun, BenchError> {
    let exe = std::env::current_exe().map_err(|e| failed("current exe")(&e))?;
    let named = || {
        args.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let dir = Scratch::new("child");
    let log = dir.path().join("stderr");
    let peak_file = dir.path().join("peak");
    let stderr = std::fs::create_dir_all(dir.path())
        .and_then(|()| std::fs::File::create(&log))
        .map_err(|e| failed("child's stderr")(&e))?;
    let started = Instant::now();
    let child = std::process::Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .env(memory::PEAK_RSS_FILE, &peak_file)
        .status()
        .map_err(|e| failed("child")(&e))?;
    let seconds = started.elapsed().as_secs_f64();
    if !child.success() {
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        return Err(BenchError::Failed(format!(
            "bench: `ctxlog {}` failed ({child}): {}",
            named(),
            said.trim()
        )));
    }
    let peak = std::fs::read_to_string(&peak_file)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .ok_or_else(|| {
            BenchError::Failed(format!(
                "bench: `ctxlog {}` did not say its peak memory (no /proc/self/status?)",
                named()
            ))
        })?;
    Ok(ChildRun {
        peak_rss_bytes: peak,
        seconds,
    })
}

/// Starts this binary with `args` as a child process, its output discarded
/// (the readers of `bench_readers`).
fn spawn_ctxlog(args: &[OsString]) -> Result<std::process::Child, BenchError> {
    let exe = std::env::current_exe().map_err(|e| failed("current exe")(&e))?;
    std::process::Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| failed("child")(&e))
}

/// The hidden child of the RSS figure: open, replay, report `VmHWM`.
pub fn replay_rss_child(json_out: bool, db: &Location, session: &str) -> Result<(), CliError> {
    let session = uuid::Uuid::parse_str(session)
        .map(SessionId)
        .map_err(|e| CliError::BadInput(format!("{session:?}: {e}")))?;
    let Some(dir) = db.dir() else {
        return Err(CliError::BadInput(format!(
            "{db}: the replay memory figure is measured on a sled store"
        )));
    };
    let r = ctxlog_bench::replay_for_rss(dir, session)?;
    if json_out {
        println!(
            "{}",
            json!({"events": r.events, "peak_rss_bytes": r.peak_rss_bytes, "seconds": r.seconds})
        );
    } else {
        println!(
            "replayed {} events in {:.2}s, peak RSS {} KiB",
            r.events,
            r.seconds,
            r.peak_rss_bytes / 1024
        );
    }
    Ok(())
}

/// The exit status of a bench that stopped making progress.
pub const STALLED_EXIT: i32 = 3;

/// Ends the process when the bench makes no progress for `limit`: a stage
/// that hangs (sled 0.34 can deadlock under load, spacejam/sled#1412) is
/// named, with every thread's stack when `gdb` is installed, and exits with
/// [`STALLED_EXIT`] instead of running forever.
struct Watchdog {
    stages: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
}

impl Watchdog {
    fn start(limit: Duration) -> Watchdog {
        let stages = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let (seen, finished) = (stages.clone(), done.clone());
        std::thread::spawn(move || {
            let (mut last, mut since) = (0, Instant::now());
            while !finished.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(200));
                let now = seen.load(Ordering::SeqCst);
                if now != last {
                    (last, since) = (now, Instant::now());
                } else if since.elapsed() >= limit {
                    stalled(now, limit);
                }
            }
        });
        Watchdog { stages, done }
    }

    fn progressed(&self) {
        self.stages.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
    }
}

/// Reports a stalled bench (with the threads' stacks when `gdb` can say)
/// and exits.
fn stalled(stage: u64, limit: Duration) -> ! {
    eprintln!(
        "ctxlog bench: stage {} of {STAGES} made no progress in {}s: stalled; every thread's stack follows when gdb is installed",
        stage + 1,
        limit.as_secs()
    );
    let _ = std::process::Command::new("gdb")
        .args(["-batch", "-p", &std::process::id().to_string()])
        .args(["-ex", "thread apply all bt"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::inherit())
        .stderr(std::process::Stdio::inherit())
        .status();
    std::process::exit(STALLED_EXIT);
}

/// `ctxlog bench`'s options.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// A smaller run (under a minute), as CI runs it.
    #[arg(long)]
    quick: bool,
    /// Run one stage only (its figures and ratios; the others are left
    /// out).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(ctxlog_bench::Stage::NAMES))]
    only: Option<String>,
    /// A PostgreSQL server to measure the log on (a database the bench
    /// may make schemas in); without it those figures are skipped.
    #[arg(long, env = "CTXLOG_BENCH_POSTGRES", hide_env_values = true)]
    postgres: Option<String>,
}

/// Runs the benchmark.
pub fn run(json_out: bool, args: &BenchArgs) -> Result<(), CliError> {
    let quick = args.quick;
    // clap allows only the stage names.
    let only = args.only.as_deref().and_then(ctxlog_bench::Stage::named);
    let postgres = args.postgres.as_deref();
    let bar = ui::progress(json_out, STAGES, 0, "bench", false);
    if cfg!(debug_assertions) && !json_out {
        eprintln!(
            "ctxlog: warning: a debug build; run `cargo run --release -p ctxlog-cli -- bench`"
        );
    }
    // The quick bench takes well under a minute per stage, the full one a
    // few minutes; `CTXLOG_BENCH_STALL_SECS` sets another limit.
    let limit = std::env::var("CTXLOG_BENCH_STALL_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 300 } else { 1800 });
    let watchdog = Watchdog::start(Duration::from_secs(limit));
    let report = ctxlog_bench::run(
        quick,
        only,
        &mut || {
            watchdog.progressed();
            bar.inc(1)
        },
        &run_ctxlog,
        &spawn_ctxlog,
        postgres,
    )?;
    drop(watchdog);
    bar.finish_and_clear();
    print_report(json_out, report);
    Ok(())
}

/// Prints the report: one JSON document, or the ratio and figure tables.
fn print_report(json_out: bool, r: Report) {
    let Report {
        ratios,
        figures,
        machine: m,
        quick,
        runs,
    } = r;
    let figures: Map<String, Value> = figures.into_iter().collect();
    let mode = if quick { "quick" } else { "full" };
    if json_out {
        println!(
            "{}",
            json!({"ok": true, "ratios": ratios, "figures": figures, "machine": m, "mode": mode, "runs": runs})
        );
        return;
    }
    let rows: Vec<Vec<String>> = GOALS
        .iter()
        .filter(|g| ratios.contains_key(g.ratio))
        .map(|g| {
            let v = ratios
                .get(g.ratio)
                .and_then(Value::as_f64)
                .unwrap_or(f64::NAN);
            vec![
                g.ratio.to_string(),
                format!("{v:.3}"),
                format!("{} {}", if g.higher { ">=" } else { "<=" }, g.goal),
                if g.met(v) { "met" } else { "MISSED" }.into(),
            ]
        })
        .collect();
    println!("ctxlog bench ({mode}, median of {runs} runs after a warm-up)");
    ui::table(&["RATIO", "VALUE", "GOAL", ""], &rows);
    println!();
    // The ratios without a goal: ctxlog against what a user would pick
    // instead (above 1: ctxlog is that many times faster or smaller).
    let others: Vec<Vec<String>> = ratios
        .iter()
        .filter(|(k, _)| !GOALS.iter().any(|g| g.ratio == k.as_str()))
        .map(|(k, v)| {
            vec![
                k.clone(),
                v.as_f64().map_or("-".into(), |f| format!("{f:.3}")),
            ]
        })
        .collect();
    if !others.is_empty() {
        println!(
            "against what a user would pick instead (how many times ctxlog is faster or smaller)"
        );
        ui::table(&["RATIO", "VALUE"], &others);
        println!();
    }
    let rows: Vec<Vec<String>> = figures
        .iter()
        .map(|(k, v)| {
            let s = match v.as_f64() {
                Some(f) if f.fract() != 0.0 && f.abs() < 1.0 => format!("{f:.6}"),
                Some(f) if f.fract() != 0.0 => format!("{f:.1}"),
                _ => v.to_string(),
            };
            vec![k.clone(), s]
        })
        .collect();
    ui::table(&["FIGURE", "VALUE"], &rows);
    println!(
        "\nmachine: {} cores, {}, {} build",
        m["cores"],
        m["cpu"].as_str().unwrap_or("unknown cpu"),
        m["build"].as_str().unwrap_or("")
    );
}
