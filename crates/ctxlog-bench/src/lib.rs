//! ctxlog-bench: the measurements behind `ctxlog bench`.
//!
//! It measures ctxlog against raw sled (appends buffered and durable, group
//! commit, replay against a raw scan, bytes on disk) and against recomputing
//! from scratch (the cost of one agent step as the history grows, against
//! re-folding the whole log), the import of an OpenCode export against plain
//! JSON parsing, `simulate` at two sizes per preset, and the peak memory of
//! a large replay. Each figure is measured in the same run as its baseline
//! and reported as a ratio: absolute speeds drift on a shared machine;
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
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use ctxlog_core::generate::{generate, generate_into, GenerateConfig};
use ctxlog_core::{
    window, Envelope, Event, FinishReason, Json, ModelLimits, PartBody, Policy, SeededIds,
    SessionId, SessionState, TokenUsage, ToolState,
};
use ctxlog_engine::summarize::{SummarizeError, Summarizer, SummaryOutput, SummaryRequest};
use ctxlog_engine::{Engine, ManualClock, Step};
use ctxlog_import::{export, Format, ImportOptions};
use ctxlog_store::{record, Durability, EventLog, Expected, NewEvent, SledStore, StoreConfig};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Why a bench run stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A measurement could not be taken; the message says which and why.
    #[error("{0}")]
    Failed(String),
}

/// Sizes of one bench run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Measured runs of each figure (after one warm-up); the median is kept.
    pub runs: usize,
    /// Events of the session the buffered appends write.
    pub append: u64,
    /// Events the durable appends write (one flush each).
    pub durable: u64,
    /// Concurrent durable writers of the group-commit figure.
    pub writers: u64,
    /// Events of the replayed log.
    pub replay: u64,
    /// Events of history of the small step-cost session.
    pub small: u64,
    /// Events of history of the large step-cost session (and of the re-fold).
    pub large: u64,
    /// Steps measured on each step-cost session.
    pub steps: usize,
    /// Events of the imported OpenCode export.
    pub import: u64,
    /// Events of the session replayed for peak memory.
    pub rss: u64,
    /// Events of the smaller recording `simulate` runs (the larger has twice).
    pub simulate: u64,
}

impl Sizes {
    /// `ctxlog bench --quick`: a check that the bench runs, in under a minute.
    pub const QUICK: Sizes = Sizes {
        runs: 3,
        append: 5_000,
        durable: 150,
        writers: 8,
        replay: 20_000,
        small: 1_000,
        large: 100_000,
        steps: 100,
        import: 10_000,
        rss: 100_000,
        simulate: 10_000,
    };

    /// `ctxlog bench`: the figures BENCHMARKS.md reports.
    pub const FULL: Sizes = Sizes {
        runs: 5,
        append: 50_000,
        durable: 1_000,
        writers: 8,
        replay: 200_000,
        small: 1_000,
        large: 100_000,
        steps: 300,
        import: 100_000,
        rss: 1_000_000,
        simulate: 40_000,
    };

    /// [`Sizes::QUICK`] or [`Sizes::FULL`].
    pub fn of(quick: bool) -> Sizes {
        if quick {
            Sizes::QUICK
        } else {
            Sizes::FULL
        }
    }
}

/// The generator's settings for bench sessions: heavy-tailed tool outputs
/// (Pareto from 400 chars, cut at 40,000), a 128k window, compaction and
/// pruning as the seed policy does them.
pub fn generator_config(seed: u64, events: u64) -> GenerateConfig {
    GenerateConfig {
        seed,
        turns: u32::MAX,
        max_events: events,
        min_output_chars: 400,
        max_output_chars: 40_000,
        ..GenerateConfig::default()
    }
}

/// A generated bench session of about `events` events
/// ([`generator_config`]).
pub fn generated(seed: u64, events: u64) -> Result<Vec<Envelope>, BenchError> {
    generate(&generator_config(seed, events))
        .map_err(|e| BenchError::Failed(format!("generator: {e}")))
}

fn failed(what: &str) -> impl Fn(&dyn std::fmt::Display) -> BenchError + '_ {
    move |e| BenchError::Failed(format!("bench: {what}: {e}"))
}

/// The median of measurements; an error when there are none.
pub fn median(mut v: Vec<f64>) -> Result<f64, BenchError> {
    if v.is_empty() {
        return Err(BenchError::Failed("bench: no measurements".into()));
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Ok(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The first event (the session's start) of generated events.
fn first(events: &[Envelope]) -> Result<&Envelope, BenchError> {
    events
        .first()
        .ok_or_else(|| BenchError::Failed("bench: the generator wrote no events".into()))
}

/// One warm-up, then `runs` measurements; the median.
pub fn measure(
    runs: usize,
    mut f: impl FnMut() -> Result<f64, BenchError>,
) -> Result<f64, BenchError> {
    f()?;
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs {
        v.push(f()?);
    }
    median(v)
}

/// A fresh directory for one measurement (under the system temp dir),
/// removed when dropped.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// A directory named after `tag` that does not exist yet.
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "ctxlog-bench-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let _ = std::fs::remove_dir_all(&p);
        Scratch(p)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The raw baseline: sled opened directly at `path`, with the store's
/// settings (no background flusher).
pub fn raw_db(path: &Path) -> Result<sled::Db, BenchError> {
    // The same sled settings as the store: no background flusher.
    sled::Config::new()
        .path(path)
        .flush_every_ms(None)
        .open()
        .map_err(|e| failed("raw sled")(&e))
}

fn store(path: &Path, durability: Durability) -> Result<SledStore, BenchError> {
    let mut c = StoreConfig::new(path);
    c.durability = durability;
    SledStore::open_with(c).map_err(|e| failed("store")(&e))
}

fn engine(store: SledStore, seed: u64) -> Result<Engine, BenchError> {
    Engine::builder()
        .clock(Arc::new(ManualClock::new(1_800_000_000_000)))
        .ids(SeededIds::new(seed))
        .build(store)
        .map_err(|e| failed("engine")(&e))
}

/// A stored record: its key and bytes.
pub type Record = ([u8; 24], Vec<u8>);

/// The records the store writes for `events`, keyed as it keys them.
pub fn encoded(events: &[Envelope]) -> Result<Vec<Record>, BenchError> {
    let mut prev = record::genesis(first(events)?.session);
    let mut out = Vec::with_capacity(events.len());
    for e in events {
        let (bytes, chain) = record::encode(e, &prev).map_err(|e| failed("encode")(&e))?;
        prev = chain;
        out.push((record::key(e.session, e.seq), bytes));
    }
    Ok(out)
}

/// A session whose policy never queues compactions by itself (the recorded
/// events carry their own), so the engine appends exactly these events.
fn bench_session(engine: &Engine, events: &[Envelope]) -> Result<SessionId, BenchError> {
    let (policy, limits) = match &first(events)?.event {
        Event::SessionStarted { policy, limits, .. } => (policy.clone(), limits.clone()),
        _ => (Policy::opencode_seed(), ModelLimits::default()),
    };
    let policy = Policy {
        auto: false,
        ..policy
    };
    engine
        .start_session(policy, limits, None)
        .map_err(|e| failed("start")(&e))
}

/// The session's events cut into the commands an agent issues: a message
/// with its parts and its finish is one append; anything else is its own.
fn commands(events: &[Envelope]) -> Vec<Vec<Event>> {
    let mut out: Vec<Vec<Event>> = Vec::new();
    for e in events.iter().skip(1) {
        let joins = matches!(
            e.event,
            Event::PartAppended { .. } | Event::PartUpdated { .. } | Event::StepFinished { .. }
        );
        match out.last_mut() {
            Some(cmd) if joins => cmd.push(e.event.clone()),
            _ => out.push(vec![e.event.clone()]),
        }
    }
    out
}

/// Engine appends of `batches` (each one command); events/s.
fn engine_appends(
    dir: &Path,
    durability: Durability,
    events: &[Envelope],
    batches: Vec<Vec<Event>>,
) -> Result<f64, BenchError> {
    let engine = engine(store(dir, durability)?, 11)?;
    let session = bench_session(&engine, events)?;
    let n: usize = batches.iter().map(Vec::len).sum();
    let t = Instant::now();
    for b in batches {
        engine.apply(session, b).map_err(|e| failed("append")(&e))?;
    }
    Ok(n as f64 / t.elapsed().as_secs_f64())
}

/// One event per append.
fn singles(events: &[Envelope]) -> Vec<Vec<Event>> {
    events
        .iter()
        .skip(1)
        .map(|e| vec![e.event.clone()])
        .collect()
}

/// Durable appends by `writers` threads, each to its own session; events/s.
fn concurrent_durable(dir: &Path, events: &[Envelope], writers: u64) -> Result<f64, BenchError> {
    let engine = Arc::new(engine(store(dir, Durability::Durable)?, 13)?);
    let mut sessions = Vec::new();
    for _ in 0..writers {
        sessions.push(bench_session(&engine, events)?);
    }
    let batch: Vec<Event> = events.iter().skip(1).map(|e| e.event.clone()).collect();
    let t = Instant::now();
    let handles: Vec<_> = sessions
        .into_iter()
        .map(|s| {
            let engine = engine.clone();
            let batch = batch.clone();
            std::thread::spawn(move || -> Result<(), String> {
                for e in batch {
                    engine.apply(s, vec![e]).map_err(|e| e.to_string())?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| BenchError::Failed("bench: a writer panicked".into()))?
            .map_err(|e| BenchError::Failed(format!("bench: writer: {e}")))?;
    }
    Ok((batch.len() as u64 * writers) as f64 / t.elapsed().as_secs_f64())
}

/// Writes `events` straight to a store at `dir` (batches of 1,000), flushed.
fn write_log(dir: &Path, events: &[Envelope]) -> Result<SessionId, BenchError> {
    let s = store(dir, Durability::Buffered)?;
    let session = first(events)?.session;
    let mut head = 0;
    for chunk in events.chunks(1_000) {
        let batch: Vec<NewEvent> = chunk.iter().cloned().map(NewEvent::from).collect();
        let expected = if head == 0 {
            Expected::NoStream
        } else {
            Expected::Exactly(head)
        };
        head = s
            .append(session, expected, batch)
            .map_err(|e| failed("write log")(&e))?
            .last;
    }
    s.flush().map_err(|e| failed("flush")(&e))?;
    Ok(session)
}

fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            total += if p.is_dir() {
                dir_bytes(&p)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            };
        }
    }
    total
}

/// One agent step as an agent makes it: record the step (message, a text
/// part, a tool output, its usage; the overflow check runs), then build the
/// window for the next call. Seconds.
fn one_step(
    engine: &Engine,
    session: SessionId,
    parent: ctxlog_core::MessageId,
    i: usize,
) -> Result<f64, BenchError> {
    let output = format!("line {i}: ok\n").repeat(150);
    let parts = vec![
        PartBody::Text {
            text: format!("step {i}: checking the next file"),
            synthetic: false,
            time: None,
        },
        PartBody::Tool {
            call_id: format!("bench_{i}"),
            tool: "read".into(),
            state: ToolState::Completed {
                input: Json::Null,
                output,
                title: None,
                metadata: Json::Null,
                start: 0,
                end: 0,
                attachments: Vec::new(),
            },
        },
    ];
    let tokens = TokenUsage {
        input: 1_000,
        output: 100,
        ..TokenUsage::default()
    };
    let t = Instant::now();
    let step = Step {
        parts,
        tokens,
        finish: FinishReason::ToolCalls,
        ..Step::new(parent)
    };
    engine
        .record_step(session, step)
        .map_err(|e| failed("step")(&e))?;
    let w = engine.window(session).map_err(|e| failed("window")(&e))?;
    let secs = t.elapsed().as_secs_f64();
    non_empty(&w)?;
    Ok(secs)
}

/// Every measured window has messages (the step or the fold went wrong
/// otherwise).
fn non_empty(w: &ctxlog_core::Window) -> Result<(), BenchError> {
    if w.messages.is_empty() {
        return Err(BenchError::Failed("bench: an empty window".into()));
    }
    Ok(())
}

/// A summarizer whose summary is the same whatever the history, so the step
/// benchmark compares equal windows.
struct FixedSummarizer;

impl Summarizer for FixedSummarizer {
    fn name(&self) -> &str {
        "fixed"
    }
    fn summarize(&self, _: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        Ok(SummaryOutput {
            text: "## Objective\n- keep going through the files\n".repeat(20),
            tokens: TokenUsage::default(),
            finish: FinishReason::Stop,
            redacted: 0,
        })
    }
}

/// A session of `n` generated events in a store, compacted at its head by a
/// fixed summary (so the window starts at the same fresh pivot whatever the
/// history), with a user message to answer: (engine, session, parent).
fn step_session(
    dir: &Path,
    n: u64,
) -> Result<(Engine, SessionId, ctxlog_core::MessageId), BenchError> {
    let events = generated(21, n)?;
    let session = write_log(dir, &events)?;
    drop(events);
    let engine = Engine::builder()
        .clock(Arc::new(ManualClock::new(1_800_000_000_000)))
        .ids(SeededIds::new(23))
        .summarizer(Arc::new(FixedSummarizer))
        .build(store(dir, Durability::Buffered)?)
        .map_err(|e| failed("engine")(&e))?;
    engine
        .request_compaction(session)
        .map_err(|e| failed("compact")(&e))?;
    engine
        .run_pending(session)
        .map_err(|e| failed("compact")(&e))?;
    let parent = engine
        .user_message(session, "go on with the next file")
        .map_err(|e| failed("prompt")(&e))?;
    Ok((engine, session, parent))
}

/// Median step cost at two history sizes, measured interleaved (a step on
/// one, then on the other) so machine noise falls on both alike; seconds.
fn step_costs(
    small_dir: &Path,
    large_dir: &Path,
    small: u64,
    large: u64,
    steps: usize,
) -> Result<(f64, f64, Engine, SessionId), BenchError> {
    let (se, ss, sp) = step_session(small_dir, small)?;
    let (le, ls, lp) = step_session(large_dir, large)?;
    for i in 0..5 {
        one_step(&se, ss, sp, i)?; // warm-up
        one_step(&le, ls, lp, i)?;
    }
    let (mut a, mut b) = (Vec::with_capacity(steps), Vec::with_capacity(steps));
    for i in 0..steps {
        a.push(one_step(&se, ss, sp, 5 + i)?);
        b.push(one_step(&le, ls, lp, 5 + i)?);
    }
    Ok((median(a)?, median(b)?, le, ls))
}

/// What a stateless implementation does for one step: read the whole log,
/// fold it, check overflow, build the window. Seconds.
fn refold(store: &SledStore, session: SessionId) -> Result<f64, BenchError> {
    let t = Instant::now();
    let mut state = SessionState::new();
    for e in store.read(session, 1).map_err(|e| failed("read")(&e))? {
        let e = e.map_err(|e| failed("read")(&e))?;
        state.evolve(&e).map_err(|e| failed("fold")(&e))?;
    }
    let _ = state.overflow();
    let w = window(&state);
    let secs = t.elapsed().as_secs_f64();
    non_empty(&w)?;
    Ok(secs)
}

/// What the child process of the RSS figure measured
/// ([`replay_for_rss`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RssReport {
    /// The head of the replayed session.
    pub events: u64,
    /// The process's peak resident memory (`VmHWM`), in bytes; 0 where
    /// `/proc/self/status` does not say.
    pub peak_rss_bytes: u64,
    /// Seconds to open the store and fold the session.
    pub seconds: f64,
}

/// The RSS figure's measurement, run in a process of its own: open the
/// store at `db`, fold `session` to its state, read the peak memory.
pub fn replay_for_rss(db: &Path, session: SessionId) -> Result<RssReport, BenchError> {
    let t = Instant::now();
    let s = SledStore::open(db).map_err(|e| failed("open")(&e))?;
    let mut state = SessionState::new();
    for e in s.read(session, 1).map_err(|e| failed("read")(&e))? {
        let e = e.map_err(|e| failed("read")(&e))?;
        state.evolve(&e).map_err(|e| failed("fold")(&e))?;
    }
    let seconds = t.elapsed().as_secs_f64();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    Ok(RssReport {
        events: state.head,
        peak_rss_bytes: kb * 1024,
        seconds,
    })
}

/// The machine the bench ran on: cores, cpu, memory, kernel, os, arch and
/// build (debug or release).
pub fn machine() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_owned());
    let mem_kb = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse::<u64>().ok());
    json!({
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "cpu": cpu,
        "memory_bytes": mem_kb.map(|k| k * 1024),
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "build": if cfg!(debug_assertions) { "debug" } else { "release" },
    })
}

/// A ratio's goal, for the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Goal {
    /// The ratio's name in [`Report::ratios`].
    pub ratio: &'static str,
    /// The value aimed at.
    pub goal: f64,
    /// Whether higher is better (the goal is a minimum) or lower (a maximum).
    pub higher: bool,
}

impl Goal {
    /// Whether `value` meets the goal (a NaN never does).
    pub fn met(&self, value: f64) -> bool {
        if self.higher {
            value >= self.goal
        } else {
            value <= self.goal
        }
    }
}

const fn goal(ratio: &'static str, goal: f64, higher: bool) -> Goal {
    Goal {
        ratio,
        goal,
        higher,
    }
}

/// The goals of the issue, one per ratio, in the order of the table.
pub const GOALS: &[Goal] = &[
    goal("append_buffered_vs_raw", 0.5, true),
    goal("append_durable_vs_raw_flush", 0.8, true),
    goal("group_commit_gain", 4.0, true),
    goal("replay_vs_raw_scan", 0.3, true),
    goal("step_cost_growth", 1.5, false),
    goal("incremental_vs_refold", 100.0, true),
    goal("import_vs_parse", 0.3, true),
];

/// What one run measured: the ratios the goals are about, every other
/// figure, and where and how it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The ratios of [`GOALS`], each against its baseline of the same run.
    pub ratios: Map<String, Value>,
    /// Every other figure (rates, seconds, bytes), by name.
    pub figures: BTreeMap<String, Value>,
    /// [`machine`].
    pub machine: Value,
    /// Whether the sizes were [`Sizes::QUICK`].
    pub quick: bool,
    /// Measured runs per figure.
    pub runs: usize,
}

impl Report {
    /// An empty report for a run of `sizes`.
    pub fn new(quick: bool, sizes: &Sizes) -> Self {
        Report {
            ratios: Map::new(),
            figures: BTreeMap::new(),
            machine: machine(),
            quick,
            runs: sizes.runs,
        }
    }

    /// Records a ratio.
    pub fn set_ratio(&mut self, name: &str, value: f64) {
        self.ratios.insert(name.into(), json!(value));
    }

    /// Records a figure.
    pub fn set_figure(&mut self, name: impl Into<String>, value: Value) {
        self.figures.insert(name.into(), value);
    }
}

/// How the RSS figure is measured in a child process: given the store
/// directory and the session, (peak RSS bytes, seconds). The `ctxlog`
/// binary runs itself (`bench-replay-rss`, which calls [`replay_for_rss`]).
pub type ReplayRss<'a> = &'a dyn Fn(&Path, SessionId) -> Result<(u64, f64), BenchError>;

/// The number of times [`run`] calls `progress`.
pub const STAGES: u64 = 8;

/// Runs the benchmark at [`Sizes::QUICK`] or [`Sizes::FULL`]; `progress`
/// is called [`STAGES`] times as it goes.
pub fn run(
    quick: bool,
    progress: &mut dyn FnMut(),
    replay_rss: ReplayRss<'_>,
) -> Result<Report, BenchError> {
    let z = Sizes::of(quick);
    let started = Instant::now();
    let mut r = Report::new(quick, &z);

    // 1–3. Appends (buffered, durable, group commit) on the same events.
    let events = generated(7, z.append)?;
    let records = encoded(&events)?;
    bench_buffered(&z, &events, &records, &mut r)?;
    progress();
    bench_durable(&z, &events, &records, &mut r)?;
    progress();
    bench_group_commit(&z, &events, &mut r)?;
    drop(events);
    drop(records);
    progress();

    bench_replay(&z, &mut r)?;
    progress();
    bench_steps(&z, &mut r, progress)?;
    bench_import(&z, &mut r)?;
    progress();
    bench_simulate(&z, &mut r)?;
    bench_rss(&z, &mut r, replay_rss)?;
    progress();
    r.set_figure("bench_seconds", json!(started.elapsed().as_secs_f64()));
    Ok(r)
}

/// 1. Buffered appends, against raw sled inserts of the same bytes.
pub fn bench_buffered(
    z: &Sizes,
    events: &[Envelope],
    records: &[Record],
    r: &mut Report,
) -> Result<(), BenchError> {
    let raw_insert = measure(z.runs, || {
        let d = Scratch::new("raw");
        let db = raw_db(&d.0)?;
        let tree = db.open_tree("events").map_err(|e| failed("raw")(&e))?;
        let t = Instant::now();
        for (k, v) in records {
            tree.insert(k, v.as_slice())
                .map_err(|e| failed("raw")(&e))?;
        }
        Ok(records.len() as f64 / t.elapsed().as_secs_f64())
    })?;
    let cmds = commands(events);
    let per_command = events.len().saturating_sub(1) as f64 / cmds.len() as f64;
    let buffered = measure(z.runs, || {
        let d = Scratch::new("buffered");
        engine_appends(&d.0, Durability::Buffered, events, cmds.clone())
    })?;
    let buffered_single = measure(z.runs, || {
        let d = Scratch::new("buffered1");
        engine_appends(&d.0, Durability::Buffered, events, singles(events))
    })?;
    r.set_ratio("append_buffered_vs_raw", buffered / raw_insert);
    r.set_figure("raw_sled_inserts_per_s", json!(raw_insert));
    r.set_figure("engine_buffered_events_per_s", json!(buffered));
    r.set_figure("events_per_command", json!(per_command));
    r.set_figure(
        "engine_buffered_events_per_s_one_per_append",
        json!(buffered_single),
    );
    r.set_figure(
        "append_buffered_vs_raw_one_per_append",
        json!(buffered_single / raw_insert),
    );
    Ok(())
}

/// 2. Durable appends, one per event, against raw sled insert + flush.
pub fn bench_durable(
    z: &Sizes,
    events: &[Envelope],
    records: &[Record],
    r: &mut Report,
) -> Result<(), BenchError> {
    let n = (z.durable as usize + 1)
        .min(events.len())
        .min(records.len());
    let (few, few_records) = (&events[..n], &records[..n]);
    let raw_flush = measure(z.runs, || {
        let d = Scratch::new("raw-flush");
        let db = raw_db(&d.0)?;
        let tree = db.open_tree("events").map_err(|e| failed("raw")(&e))?;
        let t = Instant::now();
        for (k, v) in few_records {
            tree.insert(k, v.as_slice())
                .map_err(|e| failed("raw")(&e))?;
            db.flush().map_err(|e| failed("raw flush")(&e))?;
        }
        Ok(few_records.len() as f64 / t.elapsed().as_secs_f64())
    })?;
    let durable = measure(z.runs, || {
        let d = Scratch::new("durable");
        engine_appends(&d.0, Durability::Durable, few, singles(few))
    })?;
    r.set_ratio("append_durable_vs_raw_flush", durable / raw_flush);
    r.set_figure("raw_sled_insert_flush_per_s", json!(raw_flush));
    r.set_figure("engine_durable_appends_per_s", json!(durable));
    Ok(())
}

/// 3. Group commit: `writers` durable writers against one, same run.
pub fn bench_group_commit(
    z: &Sizes,
    events: &[Envelope],
    r: &mut Report,
) -> Result<(), BenchError> {
    let per_writer = &events[..(z.durable as usize / 2 + 1).min(events.len())];
    let one = measure(z.runs, || {
        let d = Scratch::new("gc1");
        concurrent_durable(&d.0, per_writer, 1)
    })?;
    let many = measure(z.runs, || {
        let d = Scratch::new("gc8");
        concurrent_durable(&d.0, per_writer, z.writers)
    })?;
    r.set_ratio("group_commit_gain", many / one);
    r.set_figure("durable_appends_per_s_1_writer", json!(one));
    r.set_figure(
        format!("durable_appends_per_s_{}_writers", z.writers),
        json!(many),
    );
    Ok(())
}

/// 4. Replay: open + fold to state, against open + scan + decode.
pub fn bench_replay(z: &Sizes, r: &mut Report) -> Result<(), BenchError> {
    let log = Scratch::new("replay");
    let replay_events = generated(9, z.replay)?;
    let replay_encoded: u64 = encoded(&replay_events)?
        .iter()
        .map(|(_, v)| v.len() as u64)
        .sum();
    let n_replay = replay_events.len() as u64;
    let session = write_log(&log.0, &replay_events)?;
    drop(replay_events);
    // Let sled release its lock before the measured opens.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let on_disk = dir_bytes(&log.0);
    let ours = measure(z.runs, || {
        let t = Instant::now();
        let s = SledStore::open(&log.0).map_err(|e| failed("open")(&e))?;
        let mut state = SessionState::new();
        for e in s.read(session, 1).map_err(|e| failed("read")(&e))? {
            let e = e.map_err(|e| failed("read")(&e))?;
            state.evolve(&e).map_err(|e| failed("fold")(&e))?;
        }
        let rate = state.head as f64 / t.elapsed().as_secs_f64();
        drop(s);
        std::thread::sleep(std::time::Duration::from_millis(20));
        Ok(rate)
    })?;
    let raw_scan = measure(z.runs, || raw_scan_rate(&log.0, session))?;
    r.set_ratio("replay_vs_raw_scan", ours / raw_scan);
    r.set_figure("replay_events_per_s", json!(ours));
    r.set_figure("raw_scan_decode_events_per_s", json!(raw_scan));
    r.set_figure(
        "disk_bytes_per_event_vs_encoded",
        json!((on_disk as f64 / n_replay as f64) / (replay_encoded as f64 / n_replay as f64)),
    );
    r.set_figure(
        "encoded_bytes_per_event",
        json!(replay_encoded as f64 / n_replay as f64),
    );
    r.set_figure(
        "disk_bytes_per_event",
        json!(on_disk as f64 / n_replay as f64),
    );
    r.set_figure("replay_log_events", json!(n_replay));
    Ok(())
}

/// The raw baseline of the replay: open sled, scan the session's keys and
/// decode every record; events/s.
pub fn raw_scan_rate(dir: &Path, session: SessionId) -> Result<f64, BenchError> {
    let t = Instant::now();
    let db = raw_db(dir)?;
    let tree = db.open_tree("events").map_err(|e| failed("raw")(&e))?;
    let mut n = 0u64;
    for kv in tree.scan_prefix(session.0.as_bytes()) {
        let (k, v) = kv.map_err(|e| failed("raw scan")(&e))?;
        let (s, seq) = record::parse_key(&k).ok_or_else(|| BenchError::Failed("bad key".into()))?;
        let d = record::decode(&v, s, seq).map_err(|e| failed("decode")(&e))?;
        n += u64::from(d.envelope.seq > 0);
    }
    let rate = n as f64 / t.elapsed().as_secs_f64();
    drop(tree);
    drop(db);
    std::thread::sleep(std::time::Duration::from_millis(20));
    Ok(rate)
}

/// 5–6. Step cost at `small` and `large` events of history; re-fold at
/// `large`. Calls `progress` once per figure.
pub fn bench_steps(
    z: &Sizes,
    r: &mut Report,
    progress: &mut dyn FnMut(),
) -> Result<(), BenchError> {
    let small_dir = Scratch::new("steps-small");
    let large_dir = Scratch::new("steps-large");
    let (small, large, large_engine, large_session) =
        step_costs(&small_dir.0, &large_dir.0, z.small, z.large, z.steps)?;
    drop(small_dir);
    r.set_ratio("step_cost_growth", large / small);
    r.set_figure("step_seconds_1k", json!(small));
    r.set_figure(format!("step_seconds_{}", z.large), json!(large));
    progress();
    let refold_secs = measure(z.runs, || refold(large_engine.store(), large_session))?;
    r.set_ratio("incremental_vs_refold", refold_secs / large);
    r.set_figure(format!("refold_seconds_{}", z.large), json!(refold_secs));
    drop(large_engine);
    drop(large_dir);
    progress();
    Ok(())
}

/// `simulate` of a recording at two sizes (n and 2n events) under each
/// preset: the seconds, and the growth (time ratio over size ratio: 1 is
/// linear, 2 would be quadratic).
pub fn bench_simulate(z: &Sizes, r: &mut Report) -> Result<(), BenchError> {
    use ctxlog_engine::simulate::{simulate_recording, SimulateConfig};
    let small = generated(31, z.simulate)?;
    let large = generated(31, 2 * z.simulate)?;
    let time = |events: &[Envelope], policy: &Policy| {
        measure(z.runs, || {
            let t = Instant::now();
            simulate_recording(events, SimulateConfig::new(policy.clone()), |_| {})
                .map_err(|e| failed("simulate")(&e))?;
            Ok(t.elapsed().as_secs_f64())
        })
    };
    for name in Policy::preset_names() {
        let policy = Policy::preset(name).ok_or_else(|| failed("preset")(name))?;
        let (a, b) = (time(&small, &policy)?, time(&large, &policy)?);
        let size_ratio = large.len() as f64 / small.len().max(1) as f64;
        r.set_figure(format!("simulate_seconds_{name}_{}", small.len()), json!(a));
        r.set_figure(format!("simulate_seconds_{name}_{}", large.len()), json!(b));
        r.set_figure(format!("simulate_growth_{name}"), json!(b / a / size_ratio));
    }
    Ok(())
}

/// 7. Import of an OpenCode export against plain serde_json parsing.
pub fn bench_import(z: &Sizes, r: &mut Report) -> Result<(), BenchError> {
    let exp = Scratch::new("import");
    std::fs::create_dir_all(&exp.0).map_err(|e| failed("dir")(&e))?;
    let file = exp.0.join("session.json");
    {
        let events = generated(31, z.import)?;
        let f = std::fs::File::create(&file).map_err(|e| failed("export")(&e))?;
        export::opencode(&events, std::io::BufWriter::new(f)).map_err(|e| failed("export")(&e))?;
    }
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let mb = bytes as f64 / 1e6;
    let import_rate = measure(z.runs, || {
        let t = Instant::now();
        let f = std::fs::File::open(&file).map_err(|e| failed("open")(&e))?;
        let imported = ctxlog_import::import(
            BufReader::new(f),
            "bench",
            Format::OpenCode,
            &ImportOptions::default(),
        )
        .map_err(|e| failed("import")(&e))?;
        if imported.events.is_empty() {
            return Err(BenchError::Failed(
                "bench: the import read no events".into(),
            ));
        }
        Ok(mb / t.elapsed().as_secs_f64())
    })?;
    let parse_rate = measure(z.runs, || {
        let t = Instant::now();
        let f = std::fs::File::open(&file).map_err(|e| failed("open")(&e))?;
        let v: Value =
            serde_json::from_reader(BufReader::new(f)).map_err(|e| failed("parse")(&e))?;
        if !v.is_object() {
            return Err(BenchError::Failed(
                "bench: the export is not an object".into(),
            ));
        }
        Ok(mb / t.elapsed().as_secs_f64())
    })?;
    r.set_ratio("import_vs_parse", import_rate / parse_rate);
    r.set_figure("import_mb_per_s", json!(import_rate));
    r.set_figure("serde_json_parse_mb_per_s", json!(parse_rate));
    r.set_figure("import_file_bytes", json!(bytes));
    Ok(())
}

/// Peak RSS of replaying a large session, in a child process
/// (`replay_rss`).
pub fn bench_rss(z: &Sizes, r: &mut Report, replay_rss: ReplayRss<'_>) -> Result<(), BenchError> {
    let big = Scratch::new("rss");
    let (session, head) = write_generated(&big.0, &generator_config(41, z.rss))?;
    std::thread::sleep(std::time::Duration::from_millis(100));
    let (rss, secs) = replay_rss(&big.0, session)?;
    r.set_figure(format!("replay_peak_rss_bytes_{}_events", head), json!(rss));
    r.set_figure(format!("replay_seconds_{}_events", head), json!(secs));
    Ok(())
}

/// Streams a generated session into a store at `dir` batch by batch (it
/// never holds the whole log), flushed and closed; (session, head).
fn write_generated(dir: &Path, cfg: &GenerateConfig) -> Result<(SessionId, u64), BenchError> {
    let s = store(dir, Durability::Buffered)?;
    let mut head = 0u64;
    let mut session = None;
    let mut err = None;
    generate_into(cfg, |batch| {
        if err.is_some() {
            return;
        }
        let Some(first) = batch.first() else {
            return;
        };
        let sid = *session.get_or_insert(first.session);
        let n = batch.len() as u64;
        let expected = if head == 0 {
            Expected::NoStream
        } else {
            Expected::Exactly(head)
        };
        match s.append(
            sid,
            expected,
            batch.into_iter().map(NewEvent::from).collect(),
        ) {
            Ok(_) => head += n,
            Err(e) => err = Some(e),
        }
    })
    .map_err(|e| failed("generator")(&e))?;
    if let Some(e) = err {
        return Err(failed("write")(&e));
    }
    s.flush().map_err(|e| failed("flush")(&e))?;
    drop(s);
    let session = session.ok_or_else(|| BenchError::Failed("bench: empty session".into()))?;
    Ok((session, head))
}
