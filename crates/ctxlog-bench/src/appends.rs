//! Appends against raw sled: buffered ([`bench_buffered`]), durable
//! ([`bench_durable`]) and group commit ([`bench_group_commit`]).

use crate::measure::{measure, Scratch};
use crate::raw::{raw_db, Record};
use crate::report::Report;
use crate::sizes::{first, Sizes};
use crate::stores::{engine, store};
use crate::{failed, BenchError};
use ctxlog_core::{Envelope, Event, ModelLimits, Policy, SessionId};
use ctxlog_engine::Engine;
use ctxlog_store::Durability;
use ctxlog_store::SledStore;
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
    let raw_insert = measure(z.runs, || {
        let d = Scratch::new("raw");
        let db = raw_db(d.path())?;
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
        engine_appends(d.path(), Durability::Buffered, events, cmds.clone())
    })?;
    let buffered_single = measure(z.runs, || {
        let d = Scratch::new("buffered1");
        engine_appends(d.path(), Durability::Buffered, events, singles(events))
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
        let db = raw_db(d.path())?;
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
        engine_appends(d.path(), Durability::Durable, few, singles(few))
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
        concurrent_durable(d.path(), per_writer, 1)
    })?;
    let many = measure(z.runs, || {
        let d = Scratch::new("gc8");
        concurrent_durable(d.path(), per_writer, z.writers)
    })?;
    r.set_ratio("group_commit_gain", many / one);
    r.set_figure("durable_appends_per_s_1_writer", json!(one));
    r.set_figure(
        format!("durable_appends_per_s_{}_writers", z.writers),
        json!(many),
    );
    Ok(())
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

/// One event per append.
fn singles(events: &[Envelope]) -> Vec<Vec<Event>> {
    events
        .iter()
        .skip(1)
        .map(|e| vec![e.event.clone()])
        .collect()
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
        engine
            .record(session, b)
            .map_err(|e| failed("append")(&e))?;
    }
    Ok(n as f64 / t.elapsed().as_secs_f64())
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
                    engine.record(s, vec![e]).map_err(|e| e.to_string())?;
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
