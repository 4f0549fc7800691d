//! `ctxlog stress`: durable appends of synthetic sessions, one line
//! `ACK <session> <seq>` per acknowledged append (flushed at once), so a
//! parent process that kills this one knows exactly what was acknowledged.

use crate::CliError;
use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::SessionId;
use ctxlog_store::{EventLog, Expected, NewEvent, SledStore};
use std::io::Write;
use std::path::Path;
use std::sync::PoisonError;
use std::time::{SystemTime, UNIX_EPOCH};

/// Most threads appending at once (sessions are spread over them).
const MAX_THREADS: usize = 8;

/// A valid synthetic session of exactly `events` events (a prefix of a
/// simulated one), seeded by `seed`.
fn synthetic(seed: u64, events: usize) -> Result<(SessionId, Vec<NewEvent>), String> {
    let mut turns = u32::try_from(events / 10 + 2).unwrap_or(u32::MAX);
    loop {
        let cfg = GenerateConfig {
            seed,
            turns,
            max_output_chars: 8_000,
            start_ms: 1_767_225_600_000 + seed % 1_000_000,
            ..GenerateConfig::default()
        };
        let log =
            generate(&cfg).map_err(|e| format!("the generator wrote an invalid event: {e}"))?;
        if let Some(first) = log.first().filter(|_| log.len() >= events) {
            let session = first.session;
            return Ok((
                session,
                log.into_iter().take(events).map(NewEvent::from).collect(),
            ));
        }
        if turns == u32::MAX {
            return Err(format!(
                "the generator wrote {} events, fewer than {events}",
                log.len()
            ));
        }
        turns = turns.saturating_mul(2);
    }
}

pub(crate) fn run(
    db: &Path,
    sessions: u32,
    events: u32,
    batch: u32,
    seed: Option<u64>,
) -> Result<(), CliError> {
    if sessions == 0 || events == 0 || batch == 0 {
        return Err(CliError::BadInput(
            "--sessions, --events and --batch must be at least 1".into(),
        ));
    }
    let store = crate::open_store(db)?;
    // A nonce so that every run writes new sessions, unless a seed is given.
    let nonce = seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    });
    let threads = (sessions as usize).min(MAX_THREADS);
    let failure = std::sync::Mutex::new(None::<String>);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let store = &store;
            let failure = &failure;
            scope.spawn(move || {
                let mine = (0..sessions as usize).filter(|i| i % threads == t);
                for i in mine {
                    let seed = nonce.wrapping_add((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    if let Err(e) = write_session(store, seed, events as usize, batch as usize) {
                        // A thread that panicked holding the lock left only
                        // this Option behind: still usable.
                        failure
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .get_or_insert(e);
                        return;
                    }
                }
            });
        }
    });
    match failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(e) => Err(CliError::Failed(e)),
        None => Ok(()),
    }
}

fn write_session(store: &SledStore, seed: u64, events: usize, batch: usize) -> Result<(), String> {
    let (session, log) = synthetic(seed, events)?;
    let mut head = 0;
    for chunk in log.chunks(batch) {
        let a = store
            .append(session, Expected::Exactly(head), chunk.to_vec())
            .map_err(|e| format!("append to {session} failed: {e}"))?;
        head = a.last;
        let mut out = std::io::stdout().lock();
        writeln!(out, "ACK {session} {}", a.last)
            .and_then(|()| out.flush())
            .map_err(|e| format!("stdout: {e}"))?;
    }
    Ok(())
}
