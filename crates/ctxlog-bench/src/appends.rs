//! Appends against raw sled: buffered ([`bench_buffered`]), durable
//! ([`bench_durable`]) and group commit ([`bench_group_commit`]).

use crate::measure::{median, median_ratio, process_cpu_seconds, side_by_side, Scratch};
use crate::raw::{raw_db, Record};
use crate::report::Report;
use crate::sizes::{first, Sizes};
use crate::stores::{engine_and_clock, store};
use crate::{failed, BenchError};
use ctxlog_core::{Envelope, Event, ModelLimits, Policy, SessionId};
use ctxlog_engine::{Engine, NewSession};
use ctxlog_sled::Durability;
use ctxlog_sled::SledStore;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// 1. Buffered appends, against raw sled inserts of the same bytes.
pub fn bench_buffered(
    z: &Sizes,
    events: &[Envelope],
    records: &[Record],
    r: &mut Report,
) -> Result<(), BenchError> {
    let cmds = commands(events);
    let per_command = events.len().saturating_sub(1) as f64 / cmds.len() as f64;
    let [raw, commands, singles] = side_by_side(
        z.runs,
        [
            &mut || raw_rate(records, false),
            &mut || {
                let d = Scratch::new("buffered");
                engine_appends(d.path(), Durability::Buffered, events, cmds.clone())
            },
            &mut || {
                let d = Scratch::new("buffered1");
                engine_appends(d.path(), Durability::Buffered, events, singles(events))
            },
        ],
    )?;
    let (raw_insert, buffered, buffered_single) = (
        median(raw.clone())?,
        median(commands.clone())?,
        median(singles.clone())?,
    );
    r.set_ratio("append_buffered_vs_raw", median_ratio(&commands, &raw)?);
    r.set_figure("raw_sled_inserts_per_s", json!(raw_insert));
    r.set_figure("engine_buffered_events_per_s", json!(buffered));
    r.set_figure("events_per_command", json!(per_command));
    r.set_figure(
        "engine_buffered_events_per_s_one_per_append",
        json!(buffered_single),
    );
    r.set_figure(
        "append_buffered_vs_raw_one_per_append",
        json!(median_ratio(&singles, &raw)?),
    );
    Ok(())
}

/// Raw `sled::Tree::insert`s of `records` into a fresh database, each
/// followed by `flush()` when `flush`; records/s.
fn raw_rate(records: &[Record], flush: bool) -> Result<f64, BenchError> {
    let d = Scratch::new("raw");
    let db = raw_db(d.path())?;
    let tree = db.open_tree("events").map_err(|e| failed("raw")(&e))?;
    let t = Instant::now();
    for (k, v) in records {
        tree.insert(k, v.as_slice())
            .map_err(|e| failed("raw")(&e))?;
        if flush {
            db.flush().map_err(|e| failed("raw flush")(&e))?;
        }
    }
    Ok(records.len() as f64 / t.elapsed().as_secs_f64())
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
    let [raw, ours] = side_by_side(
        z.runs,
        [&mut || raw_rate(few_records, true), &mut || {
            durable_rate(few)
        }],
    )?;
    let (raw_flush, durable) = (median(raw.clone())?, median(ours.clone())?);
    r.set_ratio("append_durable_vs_raw_flush", median_ratio(&ours, &raw)?);
    r.set_figure("raw_sled_insert_flush_per_s", json!(raw_flush));
    r.set_figure("engine_durable_appends_per_s", json!(durable));
    Ok(())
}

/// Durable appends/s through the engine, one event each, in a fresh store.
pub(crate) fn durable_rate(events: &[Envelope]) -> Result<f64, BenchError> {
    let d = Scratch::new("durable");
    engine_appends(d.path(), Durability::Durable, events, singles(events))
}

/// 3. Group commit: `writers` durable writers against one, same run.
///
/// Beside the gain, two ceilings of it measured in the same runs, each
/// over the single writer's rate: the committer's serial section (appends
/// over the time callers spent leading groups: no number of writers gets
/// past it) and the CPU (the machine's cores over the CPU time an append
/// of the many writers costs the whole process, where `/proc` tells; its
/// clock ticks every 10 ms, so a run of a second reads it to about 1 %).
pub fn bench_group_commit(
    z: &Sizes,
    events: &[Envelope],
    r: &mut Report,
) -> Result<(), BenchError> {
    let per_writer = &events[..(z.durable as usize / 2 + 1).min(events.len())];
    let mut many_runs = Vec::new();
    let [one, many] = side_by_side(
        z.runs,
        [
            &mut || {
                let d = Scratch::new("gc1");
                Ok(durable_writers(d.path(), per_writer, 1)?.rate)
            },
            &mut || {
                let d = Scratch::new("gc8");
                let run = durable_writers(d.path(), per_writer, z.writers)?;
                many_runs.push(run);
                Ok(run.rate)
            },
        ],
    )?;
    r.set_ratio("group_commit_gain", median_ratio(&many, &one)?);
    let (one, many) = (median(one)?, median(many)?);
    let n = z.writers;
    r.set_figure("durable_appends_per_s_1_writer", json!(one));
    r.set_figure(format!("durable_appends_per_s_{n}_writers"), json!(many));
    let per_flush = median(many_runs.iter().map(|g| g.appends_per_flush).collect())?;
    r.set_figure(
        format!("durable_appends_per_flush_{n}_writers"),
        json!(per_flush),
    );
    let leading = median(many_runs.iter().map(|g| g.leading_us_per_append).collect())?;
    r.set_figure(
        format!("durable_leading_us_per_append_{n}_writers"),
        json!(leading),
    );
    r.set_figure("group_commit_serial_ceiling", json!(1e6 / leading / one));
    let cpu: Option<Vec<f64>> = many_runs.iter().map(|g| g.cpu_us_per_append).collect();
    if let Some(cpu) = cpu {
        let cpu = median(cpu)?;
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as f64;
        r.set_figure(format!("durable_cpu_us_per_append_{n}_writers"), json!(cpu));
        r.set_figure("group_commit_cpu_ceiling", json!(cores * 1e6 / cpu / one));
    }
    Ok(())
}

/// One run of [`durable_writers`].
#[derive(Debug, Clone, Copy)]
pub struct GroupRun {
    /// Appends a second.
    pub rate: f64,
    /// Appends per flush.
    pub appends_per_flush: f64,
    /// Microseconds callers spent leading groups, per append.
    pub leading_us_per_append: f64,
    /// Microseconds of the process's CPU per append, where `/proc` tells.
    pub cpu_us_per_append: Option<f64>,
}

/// A session whose policy never queues compactions by itself (the recorded
/// events carry their own), so the engine appends exactly these events.
fn bench_session(engine: &Engine<SledStore>, events: &[Envelope]) -> Result<SessionId, BenchError> {
    let (policy, limits) = match &first(events)?.event {
        Event::SessionStarted { policy, limits, .. } => (policy.clone(), limits.clone()),
        _ => (Policy::opencode_seed(), ModelLimits::default()),
    };
    let policy = Policy {
        auto: false,
        ..policy
    };
    engine
        .create_session(NewSession::new(limits).policy(policy))
        .map(|session| session.id())
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

/// One event per append.
fn singles(events: &[Envelope]) -> Vec<Vec<Event>> {
    events
        .iter()
        .skip(1)
        .map(|e| vec![e.event.clone()])
        .collect()
}

/// Engine appends of `batches` (each one command); events/s. The clock
/// moves a millisecond per command, as an agent's does (its commands are
/// further apart): event ids are UUIDv7, time first, so the id index grows
/// at its end as it does for an agent. (With a frozen clock every id has
/// the same millisecond and random bits after it, and each index entry
/// lands at a random place of the tree: buffered appends measured 0.45 of
/// raw inserts that way, against 0.5-0.6 with the clock moving.)
fn engine_appends(
    dir: &Path,
    durability: Durability,
    events: &[Envelope],
    batches: Vec<Vec<Event>>,
) -> Result<f64, BenchError> {
    let (engine, clock) = engine_and_clock(store(dir, durability)?, 11)?;
    let session = bench_session(&engine, events)?;
    let session = engine.session(session).map_err(|e| failed("open")(&e))?;
    let n: usize = batches.iter().map(Vec::len).sum();
    let t = Instant::now();
    for b in batches {
        clock.advance(1);
        session.record(b).map_err(|e| failed("append")(&e))?;
    }
    Ok(n as f64 / t.elapsed().as_secs_f64())
}

/// Durable appends through one engine by `writers` threads, each appending
/// `events` (one event an append) to a session of its own, in a fresh
/// store at `dir`.
pub fn durable_writers(
    dir: &Path,
    events: &[Envelope],
    writers: u64,
) -> Result<GroupRun, BenchError> {
    let log = store(dir, Durability::Durable)?;
    let (engine, clock) = engine_and_clock(log.clone(), 13)?;
    let engine = Arc::new(engine);
    let mut sessions = Vec::new();
    for _ in 0..writers {
        sessions.push(bench_session(&engine, events)?);
    }
    let batch: Vec<Event> = events.iter().skip(1).map(|e| e.event.clone()).collect();
    let before = log.stats();
    let cpu_before = process_cpu_seconds();
    let t = Instant::now();
    let handles: Vec<_> = sessions
        .into_iter()
        .map(|s| {
            let (engine, clock) = (engine.clone(), clock.clone());
            let batch = batch.clone();
            std::thread::spawn(move || -> Result<(), String> {
                let session = engine.session(s).map_err(|e| e.to_string())?;
                for e in batch {
                    clock.advance(1);
                    session.record(vec![e]).map_err(|e| e.to_string())?;
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
    let seconds = t.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let stats = log.stats();
    let appends = stats.appends.saturating_sub(before.appends).max(1) as f64;
    Ok(GroupRun {
        rate: (batch.len() as u64 * writers) as f64 / seconds,
        appends_per_flush: appends / stats.flushes.saturating_sub(before.flushes).max(1) as f64,
        leading_us_per_append: stats.leading_nanos.saturating_sub(before.leading_nanos) as f64
            / 1e3
            / appends,
        cpu_us_per_append: cpu.map(|s| s * 1e6 / appends),
    })
}
