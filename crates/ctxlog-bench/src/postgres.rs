//! The log on PostgreSQL ([`bench_postgres`]), when a server is named:
//! durable appends against the floor (a plain loop inserting the same rows
//! with the same client, one transaction each), 8 writers against 1, and
//! the cost of one agent step at three sizes of history, against the same
//! workload on a durable sled store. Each measurement works in a schema of
//! its own, dropped afterwards.

use crate::measure::{measure, median, Scratch};
use crate::raw::Record;
use crate::report::Report;
use crate::sizes::{generated, Sizes};
use crate::steps::{compacted_at_head, one_step};
use crate::stores::store;
use crate::{failed, BenchError};
use ctxlog_core::{Envelope, SessionId};
use ctxlog_engine::Engine;
use ctxlog_postgres::{PgLog, PgOptions, Target};
use ctxlog_sled::Durability;
use ctxlog_store::{EventLog, Expected, NewEvent};
use serde_json::json;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// Histories the step cost is measured at.
const HISTORIES: [u64; 3] = [1_000, 10_000, 100_000];

/// Events per append when a history is written.
const LOAD_BATCH: usize = 512;

/// A schema of the bench's own, dropped when this is.
pub(crate) struct Schema {
    target: Target,
    name: String,
}

impl Schema {
    pub(crate) fn new(target: &Target, tag: &str) -> Schema {
        static N: AtomicU32 = AtomicU32::new(0);
        Schema {
            target: target.clone(),
            name: format!(
                "bench_{}_{tag}_{}",
                std::process::id(),
                N.fetch_add(1, Ordering::SeqCst)
            ),
        }
    }

    pub(crate) fn log(&self) -> Result<PgLog, BenchError> {
        PgLog::open_at(
            self.target.clone(),
            PgOptions {
                schema: Some(self.name.clone()),
            },
        )
        .map_err(|e| failed("postgres")(&e))
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Ok(mut c) = self.target.connect() {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name));
        }
    }
}

/// The PostgreSQL figures, when `url` names a server; else the report
/// says they were skipped.
pub fn bench_postgres(
    z: &Sizes,
    url: Option<&str>,
    events: &[Envelope],
    records: &[Record],
    r: &mut Report,
) -> Result<(), BenchError> {
    let Some(url) = url else {
        r.set_figure(
            "postgres",
            json!("skipped: no server (ctxlog bench --postgres URL, or CTXLOG_BENCH_POSTGRES)"),
        );
        return Ok(());
    };
    let target = Target::parse(url).map_err(|e| BenchError::Failed(format!("bench: {e}")))?;
    r.set_figure("postgres", json!(target.to_string()));
    let n = (z.durable as usize + 1)
        .min(events.len())
        .min(records.len());
    let floor = measure(z.runs, || plain_inserts(&target, &records[..n]))?;
    let durable = measure(z.runs, || durable_appends(&target, &events[..n]))?;
    r.set_ratio("pg_append_vs_insert_floor", durable / floor);
    r.set_figure("pg_plain_inserts_per_s", json!(floor));
    r.set_figure("pg_durable_appends_per_s", json!(durable));

    let per_writer = &events[..(z.durable as usize / 2 + 1).min(events.len())];
    let one = measure(z.runs, || writers(&target, per_writer, 1))?;
    let many = measure(z.runs, || writers(&target, per_writer, z.writers))?;
    r.set_ratio("pg_writers_gain", many / one);
    r.set_figure("pg_durable_appends_per_s_1_writer", json!(one));
    r.set_figure(
        format!("pg_durable_appends_per_s_{}_writers", z.writers),
        json!(many),
    );

    step_costs(z, &target, r)
}

/// The floor: the same rows inserted by a plain loop, one transaction
/// each, with the same client; rows/s.
fn plain_inserts(target: &Target, records: &[Record]) -> Result<f64, BenchError> {
    let schema = Schema::new(target, "floor");
    let mut c = target.connect().map_err(|e| failed("postgres")(&e))?;
    let sql = |e: ::postgres::Error| failed("floor")(&e);
    c.batch_execute(&format!(
        "CREATE SCHEMA \"{0}\"; SET search_path TO \"{0}\"; \
         CREATE TABLE floor (session uuid, seq bigint, record bytea, PRIMARY KEY (session, seq))",
        schema.name
    ))
    .map_err(sql)?;
    let insert = c
        .prepare("INSERT INTO floor (session, seq, record) VALUES ($1, $2, $3)")
        .map_err(sql)?;
    let session = uuid::Uuid::from_u128(1);
    let t = Instant::now();
    for (seq, (_, record)) in (1_i64..).zip(records) {
        c.execute(&insert, &[&session, &seq, &record.as_slice()])
            .map_err(sql)?;
    }
    Ok(records.len() as f64 / t.elapsed().as_secs_f64())
}

/// ctxlog's durable appends, one event each; appends/s.
fn durable_appends(target: &Target, events: &[Envelope]) -> Result<f64, BenchError> {
    let schema = Schema::new(target, "append");
    let log = schema.log()?;
    let session = SessionId(uuid::Uuid::from_u128(2));
    let t = Instant::now();
    for (seq, e) in (0..).zip(events) {
        let expected = if seq == 0 {
            Expected::NoStream
        } else {
            Expected::Exactly(seq)
        };
        log.append(session, expected, vec![NewEvent::from(e.clone())])
            .map_err(|e| failed("append")(&e))?;
    }
    Ok(events.len() as f64 / t.elapsed().as_secs_f64())
}

/// `n` threads appending durably, each to its own session; appends/s.
fn writers(target: &Target, events: &[Envelope], n: u64) -> Result<f64, BenchError> {
    let schema = Schema::new(target, "writers");
    let log = schema.log()?;
    let t = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|w| {
            let log = log.clone();
            let events: Vec<NewEvent> = events
                .iter()
                .map(|e| {
                    let mut e = NewEvent::from(e.clone());
                    // Ids of this writer's own.
                    e.id = ctxlog_core::EventId(uuid::Uuid::from_u128(
                        (u128::from(w) << 64) | e.id.0.as_u128() as u64 as u128,
                    ));
                    e
                })
                .collect();
            std::thread::spawn(move || -> Result<(), String> {
                let session = SessionId(uuid::Uuid::from_u128(100 + u128::from(w)));
                for (seq, e) in (0..).zip(events) {
                    let expected = if seq == 0 {
                        Expected::NoStream
                    } else {
                        Expected::Exactly(seq)
                    };
                    log.append(session, expected, vec![e])
                        .map_err(|e| e.to_string())?;
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
    Ok((events.len() as u64 * n) as f64 / t.elapsed().as_secs_f64())
}

/// The step cost at [`HISTORIES`] on PostgreSQL, measured interleaved (a
/// step on each in turn, so machine noise falls on all alike), and at the
/// first on a durable sled store.
fn step_costs(z: &Sizes, target: &Target, r: &mut Report) -> Result<(), BenchError> {
    let mut schemas = Vec::new();
    let mut ready_sessions = Vec::new();
    for history in HISTORIES {
        let schema = Schema::new(target, "steps");
        let log = schema.log()?;
        load(&log, &generated(21, history)?)?;
        ready_sessions.push(ready(log)?);
        schemas.push(schema);
    }
    let dir = Scratch::new("pg-vs-sled");
    let sled = store(dir.path(), Durability::Durable)?;
    load(&sled, &generated(21, HISTORIES[0])?)?;
    let (sled_engine, sled_session, sled_parent) = ready(sled)?;
    let mut seconds = vec![Vec::with_capacity(z.steps); HISTORIES.len()];
    let mut sled_seconds = Vec::with_capacity(z.steps);
    for i in 0..z.steps + 5 {
        for ((engine, session, parent), times) in ready_sessions.iter().zip(&mut seconds) {
            let s = one_step(engine, *session, *parent, i)?;
            if i >= 5 {
                times.push(s);
            }
        }
        let s = one_step(&sled_engine, sled_session, sled_parent, i)?;
        if i >= 5 {
            sled_seconds.push(s);
        }
    }
    let mut costs = Vec::new();
    for (history, times) in HISTORIES.iter().zip(seconds) {
        let cost = median(times)?;
        r.set_figure(format!("pg_step_seconds_{}k", history / 1_000), json!(cost));
        costs.push(cost);
    }
    let sled_cost = median(sled_seconds)?;
    r.set_figure("sled_durable_step_seconds_1k", json!(sled_cost));
    if let (Some(first), Some(last)) = (costs.first(), costs.last()) {
        r.set_ratio("pg_step_cost_growth", last / first);
        r.set_figure("pg_step_vs_sled_durable", json!(first / sled_cost));
    }
    drop(ready_sessions);
    drop(schemas);
    Ok(())
}

/// Writes `events` (one session) in batches.
pub(crate) fn load(log: &impl EventLog, events: &[Envelope]) -> Result<(), BenchError> {
    let mut at = 0;
    for chunk in events.chunks(LOAD_BATCH) {
        let session = chunk[0].session;
        let expected = if at == 0 {
            Expected::NoStream
        } else {
            Expected::Exactly(at)
        };
        let batch = chunk.iter().cloned().map(NewEvent::from).collect();
        at = log
            .append(session, expected, batch)
            .map_err(|e| failed("load")(&e))?
            .last;
    }
    Ok(())
}

/// An engine on `log`'s session, compacted at its head by a fixed summary
/// with a user message to answer (as the sled step bench does).
fn ready<L: EventLog>(
    log: L,
) -> Result<(Engine<L>, SessionId, ctxlog_core::MessageId), BenchError> {
    let session = log
        .sessions()
        .map_err(|e| failed("sessions")(&e))?
        .first()
        .map(|(s, _)| *s)
        .ok_or_else(|| BenchError::Failed("bench: no session loaded".into()))?;
    compacted_at_head(log, session)
}
