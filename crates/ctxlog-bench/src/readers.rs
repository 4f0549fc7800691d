//! Readers beside a writer ([`bench_readers`]): one durable writer appends
//! one event per append to the store while 0, 1 and 20 other `ctxlog`
//! processes read it through the writer's process (`verify`, `export`,
//! `replay` of a large session, over and over). Reported: the rate of
//! acknowledgements with readers against the rate without, in the same
//! run, and the longest gap between two acknowledgements in each phase.

use crate::measure::Scratch;
use crate::memory::ctxlog_args;
use crate::report::Report;
use crate::sizes::{generated, generator_config, Sizes};
use crate::stores::{store, write_generated};
use crate::{failed, BenchError};
use ctxlog_sled::{Durability, SledStore};
use ctxlog_store::{EventLog, Expected, NewEvent};
use serde_json::json;
use std::ffi::{OsStr, OsString};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Starts this `ctxlog` binary with the arguments as a child process (its
/// output discarded) and returns it running. The CLI passes itself.
pub type SpawnCtxlog<'a> = &'a dyn Fn(&[OsString]) -> Result<Child, BenchError>;

/// What the writer did in one phase.
struct Phase {
    /// Acknowledgements per second.
    rate: f64,
    /// The longest time between two acknowledgements (or from the start to
    /// the first).
    longest_gap: Duration,
    /// Reader processes that ran (and were started again when they ended).
    reads: u64,
}

/// Stage 10: acknowledgements while readers read, against none.
pub fn bench_readers(z: &Sizes, r: &mut Report, spawn: SpawnCtxlog<'_>) -> Result<(), BenchError> {
    let dir = Scratch::new("readers");
    let (big, _) = write_generated(dir.path(), &generator_config(43, z.replay))?;
    // Let sled release its lock before the store is opened again.
    std::thread::sleep(Duration::from_millis(100));
    let store = store(dir.path(), Durability::Durable)?;
    let seconds = if z.runs <= 3 { 3.0 } else { 8.0 };
    let id = big.to_string();
    let commands: [Vec<&dyn AsRef<OsStr>>; 3] = [
        vec![&"verify"],
        vec![&"export", &id, &"--format", &"opencode"],
        vec![&"replay", &id],
    ];
    let commands: Vec<Vec<OsString>> = commands
        .iter()
        .map(|c| ctxlog_args(dir.path(), c))
        .collect();
    let mut seed = 1000;
    let mut phase = |readers: usize| {
        seed += 100;
        run_phase(&store, seed, readers, seconds, &commands, spawn)
    };
    let none = phase(0)?;
    let one = phase(1)?;
    let twenty = phase(20)?;
    r.set_ratio("acks_one_reader_vs_none", one.rate / none.rate);
    r.set_ratio("acks_20_readers_vs_none", twenty.rate / none.rate);
    for (name, p) in [
        ("no_reader", &none),
        ("one_reader", &one),
        ("20_readers", &twenty),
    ] {
        r.set_figure(format!("acks_per_s_{name}"), json!(p.rate));
        r.set_figure(
            format!("longest_ack_gap_ms_{name}"),
            json!(p.longest_gap.as_secs_f64() * 1000.0),
        );
        r.set_figure(format!("reader_runs_{name}"), json!(p.reads));
    }
    Ok(())
}

/// Appends for `seconds` while `readers` reader processes run `commands`
/// in turn (each started again when it ends).
fn run_phase(
    store: &SledStore,
    seed: u64,
    readers: usize,
    seconds: f64,
    commands: &[Vec<OsString>],
    spawn: SpawnCtxlog<'_>,
) -> Result<Phase, BenchError> {
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let store = store.clone();
        let stop = stop.clone();
        std::thread::spawn(move || append_until(&store, seed, &stop))
    };
    let started = Instant::now();
    let mut children: Vec<Option<Child>> = (0..readers).map(|_| None).collect();
    let mut reads = 0u64;
    let mut outcome = Ok(());
    while started.elapsed().as_secs_f64() < seconds && outcome.is_ok() {
        for (i, slot) in children.iter_mut().enumerate() {
            let ended = match slot {
                None => true,
                Some(c) => c.try_wait().map(|s| s.is_some()).unwrap_or(true),
            };
            if ended {
                let args = &commands[(reads as usize + i) % commands.len()];
                match spawn(args) {
                    Ok(child) => {
                        *slot = Some(child);
                        reads += 1;
                    }
                    Err(e) => outcome = Err(e),
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    for child in children.iter_mut().flatten() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let (acks, longest_gap, elapsed) = writer
        .join()
        .map_err(|_| BenchError::Failed("bench: readers: the writer panicked".into()))??;
    outcome?;
    Ok(Phase {
        rate: acks as f64 / elapsed.as_secs_f64(),
        longest_gap,
        reads,
    })
}

/// Appends one event per durable append, session after session, until
/// `stop`; (acknowledgements, longest gap, time taken).
fn append_until(
    store: &SledStore,
    seed: u64,
    stop: &AtomicBool,
) -> Result<(u64, Duration, Duration), BenchError> {
    let started = Instant::now();
    let mut last = started;
    let mut longest = Duration::ZERO;
    let mut acks = 0u64;
    for n in 0.. {
        let events = generated(seed + n, 1_000)?;
        let session = events.first().map(|e| e.session).ok_or_else(|| {
            BenchError::Failed("bench: readers: an empty generated session".into())
        })?;
        for (i, e) in events.into_iter().enumerate() {
            if stop.load(Ordering::SeqCst) {
                return Ok((acks, longest, started.elapsed()));
            }
            let expected = if i == 0 {
                Expected::NoStream
            } else {
                Expected::Exactly(i as u64)
            };
            store
                .append(session, expected, vec![NewEvent::from(e)])
                .map_err(|e| failed("readers: append")(&e))?;
            let now = Instant::now();
            longest = longest.max(now - last);
            last = now;
            acks += 1;
        }
    }
    Ok((acks, longest, started.elapsed()))
}
