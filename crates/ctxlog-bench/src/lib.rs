//! ctxlog-bench: the measurements behind `ctxlog bench`.
//!
//! It measures ctxlog against raw sled (appends buffered and durable, group
//! commit, replay against a raw scan, bytes on disk) and against recomputing
//! from scratch (the cost of one agent step as the history grows, against
//! re-folding the whole log), the import of an OpenCode export against plain
//! JSON parsing (and the import's peak memory against the file's size),
//! `simulate` at two sizes per preset, the peak memory of the commands a
//! user runs on a 1,000,000-event session (each in a child process), and what a user would pick instead: OpenCode's storage
//! shape (JSON rows in SQLite, re-read at every step) and an append-only
//! JSONL file with `fdatasync` ([`bench_baselines`]), and the rate of
//! durable appends while other processes read the store ([`bench_readers`]),
//! and what an agent's hook holds the agent for ([`bench_hooks`]), and what
//! `ctxlog serve` takes to open its pages ([`bench_serve`]). Each figure is measured in the same run as its baseline
//! and reported as a ratio: absolute speeds drift on a shared machine;
//! the log on PostgreSQL against a plain insert loop ([`bench_postgres`]);
//! ratios measured side by side do not.
//!
//! Every measurement runs once to warm up (discarded), then `runs` times;
//! the median is reported ([`measure`]). Sessions come from the seeded
//! generator (`ctxlog_core::generate`), so every run measures the same
//! events. Nothing here asserts a speed: [`run`] returns a [`Report`], and
//! [`GOALS`] only says what each ratio is aimed at.
//!
//! This is the one crate besides the store that opens sled directly, as the
//! baseline ([`raw_db`], [`raw_scan_rate`]).
//!
//! Files:
//! - `appends.rs`: Appends against raw sled.
//! - `baseline.rs`: What a user would pick instead of ctxlog, measured on the
//!   same generated workload in the same run (`bench_baselines`).
//! - `hooks.rs`: What an agent's hook costs the agent (`bench_hooks`).
//! - `import.rs`: The import of an OpenCode export against plain JSON parsing
//!   of the same file, and the whole `ctxlog import`'s peak memory against
//!   the file's size (`bench_import`).
//! - `memory.rs`: The peak memory of the commands a user runs on large
//!   sessions (`bench_memory`), each in a child process of its own.
//! - `otel.rs`: `ctxlog otel export` against `ctxlog import`, and its
//!   memory at two session lengths (`bench_otel`).
//! - `postgres.rs`: The log on PostgreSQL (`bench_postgres`), when a server
//!   is named.
//! - `raw.rs`: The raw sled baselines.
//! - `readers.rs`: Readers beside a writer (`bench_readers`).
//! - `replay.rs`: Replay against raw sled (`bench_replay`.
//! - `report.rs`: What a run reports.
//! - `search.rs`: Search over a store of generated sessions (`bench_search`).
//! - `serve.rs`: `ctxlog serve` on a store of many sessions and on a long
//!   session: list and page answers, memory, Chromium's open times
//!   (`bench_serve`).
//! - `sizes.rs`: How big a bench run is (`Sizes`) and the seeded sessions it
//!   measures (`generated`).
//! - `steps.rs`: The cost of one agent step as the history grows, against
//!   re-folding the whole log for every step (`bench_steps`).
//! - `stores.rs`: The stores the measurements run on.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod appends;
mod baseline;
mod hooks;
mod import;
mod measure;
mod memory;
mod otel;
mod postgres;
mod raw;
mod readers;
mod replay;
mod report;
mod search;
mod serve;
mod simulate;
mod sizes;
mod steps;
mod stores;

pub use appends::{bench_buffered, bench_durable, bench_group_commit, durable_writers, GroupRun};
pub use baseline::{bench_baselines, bench_durable_baselines};
pub use hooks::bench_hooks;
pub use import::bench_import;
pub use measure::{measure, median, Scratch};
pub use memory::{bench_memory, ChildRun, RunCtxlog};
pub use postgres::bench_postgres;
pub use raw::{encoded, raw_db, raw_scan_rate, Record};
pub use readers::{bench_readers, SpawnCtxlog};
pub use replay::{bench_replay, replay_for_rss, RssReport};
pub use report::{machine, Goal, Report, GOALS};
pub use search::bench_search;
pub use serve::bench_serve;
pub use simulate::bench_simulate;
pub use sizes::{generated, generator_config, Sizes};
pub use steps::bench_steps;

use serde_json::json;
use std::time::Instant;

/// Why a bench run stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A measurement could not be taken; the message says which and why.
    #[error("{0}")]
    Failed(String),
}

/// The error of a failed `what`: `bench: {what}: {cause}`.
pub(crate) fn failed(what: &str) -> impl Fn(&dyn std::fmt::Display) -> BenchError + '_ {
    move |e| BenchError::Failed(format!("bench: {what}: {e}"))
}

/// The number of times [`run`] calls `progress`.
pub const STAGES: u64 = 15;

/// A part of a run that `ctxlog bench --only` can run alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Buffered and durable appends, group commit, the log on PostgreSQL,
    /// and the durable baselines (JSONL with `fdatasync`, SQLite).
    Appends,
    /// Replay against a raw scan.
    Replay,
    /// One agent step as history grows; OpenCode's storage shape.
    Steps,
    /// Import against JSON parsing.
    Import,
    /// `simulate` and the peak memory of the commands.
    Memory,
    /// Durable appends beside reader processes.
    Readers,
    /// The search index: its cost, its size, query latency.
    Search,
    /// What an agent's hook costs the agent.
    Hooks,
    /// `ctxlog serve` on a store of many sessions and on a long session.
    Serve,
    /// `ctxlog otel export`: its speed against the import's, its memory.
    Otel,
}

impl Stage {
    /// Every stage with the name `--only` takes, in run order.
    const BY_NAME: [(&'static str, Stage); 10] = [
        ("appends", Stage::Appends),
        ("replay", Stage::Replay),
        ("steps", Stage::Steps),
        ("import", Stage::Import),
        ("memory", Stage::Memory),
        ("readers", Stage::Readers),
        ("search", Stage::Search),
        ("hooks", Stage::Hooks),
        ("serve", Stage::Serve),
        ("otel", Stage::Otel),
    ];

    /// The names `--only` takes, in run order.
    pub const NAMES: [&'static str; 10] = {
        let mut names = [""; 10];
        let mut i = 0;
        while i < names.len() {
            names[i] = Self::BY_NAME[i].0;
            i += 1;
        }
        names
    };

    /// The stage a name from [`Stage::NAMES`] means.
    pub fn named(name: &str) -> Option<Stage> {
        Self::BY_NAME
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
    }
}

/// Runs the benchmark at [`Sizes::QUICK`] or [`Sizes::FULL`] (only the
/// stage `only` names, when it names one), the PostgreSQL figures on the
/// server `postgres` names; `progress` is called [`STAGES`] times as it
/// goes.
pub fn run(
    quick: bool,
    only: Option<Stage>,
    progress: &mut dyn FnMut(),
    run_ctxlog: RunCtxlog<'_>,
    spawn_ctxlog: SpawnCtxlog<'_>,
    postgres: Option<&str>,
) -> Result<Report, BenchError> {
    let z = Sizes::of(quick);
    let started = Instant::now();
    let mut r = Report::new(quick, &z);
    let on = |stage: Stage| only.is_none_or(|o| o == stage);

    // 1–3. Appends (buffered, durable, group commit) on the same events.
    if on(Stage::Appends) {
        let events = generated(7, z.append)?;
        let records = encoded(&events)?;
        bench_buffered(&z, &events, &records, &mut r)?;
        progress();
        bench_durable(&z, &events, &records, &mut r)?;
        progress();
        bench_group_commit(&z, &events, &mut r)?;
        progress();
        // The same appends on PostgreSQL, when a server is named.
        bench_postgres(&z, postgres, &events, &records, &mut r)?;
        progress();
        bench_durable_baselines(&z, &mut r)?;
    } else {
        (0..4).for_each(|_| progress());
    }
    if on(Stage::Replay) {
        bench_replay(&z, &mut r)?;
    }
    progress();
    if on(Stage::Steps) {
        bench_steps(&z, &mut r, progress)?;
        // After the replay: its byte ratio divides that stage's figure.
        bench_baselines(&z, &mut r)?;
    } else {
        // `bench_steps` reports progress twice.
        (0..2).for_each(|_| progress());
    }
    progress();
    if on(Stage::Import) {
        bench_import(&z, &mut r, run_ctxlog)?;
    }
    progress();
    if on(Stage::Memory) {
        bench_simulate(&z, &mut r)?;
        bench_memory(&z, &mut r, run_ctxlog)?;
    }
    progress();
    if on(Stage::Readers) {
        bench_readers(&z, &mut r, spawn_ctxlog)?;
    }
    progress();
    if on(Stage::Search) {
        bench_search(&z, &mut r, postgres)?;
    }
    progress();
    if on(Stage::Hooks) {
        bench_hooks(&z, &mut r, run_ctxlog)?;
    }
    progress();
    if on(Stage::Serve) {
        bench_serve(&z, &mut r, run_ctxlog)?;
    }
    progress();
    if on(Stage::Otel) {
        otel::bench_otel(&z, &mut r, run_ctxlog)?;
    }
    progress();
    r.set_figure("bench_seconds", json!(started.elapsed().as_secs_f64()));
    Ok(r)
}
