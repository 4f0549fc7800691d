//! The stores the measurements run on: opening a store or an engine at a
//! directory, and filling a store with generated events.

use crate::sizes::first;
use crate::{failed, BenchError};
use ctxlog_core::generate::{generate_into, GenerateConfig};
use ctxlog_core::{Envelope, SeededIds, SessionId};
use ctxlog_engine::{Engine, EngineBuilder, ManualClock};
use ctxlog_sled::{Durability, SledStore, StoreConfig};
use ctxlog_store::{EventLog, Expected, NewEvent};
use std::path::Path;
use std::sync::Arc;

/// A store at `path` with the given durability.
pub(crate) fn store(path: &Path, durability: Durability) -> Result<SledStore, BenchError> {
    let mut c = StoreConfig::new(path);
    c.durability = durability;
    SledStore::open_with(c).map_err(|e| failed("store")(&e))
}

/// An engine over `store` with a manual clock (which the caller may
/// advance) and ids seeded by `seed`; and that clock.
pub(crate) fn engine_and_clock(
    store: SledStore,
    seed: u64,
) -> Result<(Engine<SledStore>, Arc<ManualClock>), BenchError> {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = EngineBuilder::new()
        .clock(clock.clone())
        .ids(SeededIds::new(seed))
        .build(store)
        .map_err(|e| failed("engine")(&e))?;
    Ok((engine, clock))
}

/// Writes `events` straight to a store at `dir` (batches of 1,000), flushed.
pub(crate) fn write_log(dir: &Path, events: &[Envelope]) -> Result<SessionId, BenchError> {
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

/// Streams a generated session into a store at `dir` batch by batch (it
/// never holds the whole log), flushed and closed; (session, head).
pub(crate) fn write_generated(
    dir: &Path,
    cfg: &GenerateConfig,
) -> Result<(SessionId, u64), BenchError> {
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
