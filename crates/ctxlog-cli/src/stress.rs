//! `ctxlog stress`: durable appends of synthetic sessions, one line
//! `ACK <session> <seq>` per acknowledged append (flushed at once), so a
//! parent process that kills this one knows exactly what was acknowledged.

use crate::CliError;
use ctxlog_app::logs::{AnyLog, Location};
use ctxlog_core::generate::{generate_into, GenerateConfig};
use ctxlog_core::SessionId;
use ctxlog_store::{EventLog, Expected, NewEvent};
use std::io::Write;
use std::sync::PoisonError;
use std::time::{SystemTime, UNIX_EPOCH};

/// Most threads appending at once (sessions are spread over them).
const MAX_THREADS: usize = 8;

/// The generator's settings for a synthetic session seeded by `seed` that
/// reaches `events` events: as many turns as it takes (generation stops at
/// the end of the first turn past `events`; the rest is not appended).
fn synthetic(seed: u64, events: u64) -> GenerateConfig {
    GenerateConfig {
        seed,
        turns: u32::MAX,
        max_events: events,
        max_output_chars: 8_000,
        start_ms: 1_767_225_600_000 + seed % 1_000_000,
        ..GenerateConfig::default()
    }
}

pub(crate) fn run(
    db: &Location,
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
    let store = crate::store::open_store(db)?;
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
                    if let Err(e) = write_session(store, seed, u64::from(events), batch as usize) {
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

/// Generates a session and appends it as it goes, `batch` events per
/// append, printing each acknowledgement: the session is never whole in
/// memory, and the first acknowledgement comes after the first turn.
fn write_session(store: &AnyLog, seed: u64, events: u64, batch: usize) -> Result<(), String> {
    let mut writer = Writer {
        store,
        session: None,
        head: 0,
        pending: Vec::with_capacity(batch),
        failure: None,
    };
    let generated = generate_into(&synthetic(seed, events), |turn| {
        for e in turn {
            if writer.failure.is_some() || writer.head + writer.pending.len() as u64 >= events {
                return;
            }
            writer.session = Some(e.session);
            writer.pending.push(NewEvent::from(e));
            if writer.pending.len() == batch {
                writer.append();
            }
        }
    })
    .map_err(|e| format!("the generator wrote an invalid event: {e}"))?;
    writer.append();
    if let Some(f) = writer.failure {
        return Err(f);
    }
    if writer.head < events {
        return Err(format!(
            "the generator wrote {generated} events, fewer than {events}"
        ));
    }
    Ok(())
}

/// Appends what the generator made, in batches.
struct Writer<'a> {
    store: &'a AnyLog,
    session: Option<SessionId>,
    head: u64,
    pending: Vec<NewEvent>,
    /// The first failure; nothing is appended after it.
    failure: Option<String>,
}

impl Writer<'_> {
    /// Appends the pending events and prints the acknowledgement.
    fn append(&mut self) {
        let Some(session) = self.session.filter(|_| self.failure.is_none()) else {
            return;
        };
        if self.pending.is_empty() {
            return;
        }
        let chunk = std::mem::take(&mut self.pending);
        let acked = self
            .store
            .append(session, Expected::Exactly(self.head), chunk)
            .map_err(|e| format!("append to {session} failed: {e}"))
            .and_then(|a| {
                self.head = a.last;
                let mut out = std::io::stdout().lock();
                writeln!(out, "ACK {session} {}", a.last)
                    .and_then(|()| out.flush())
                    .map_err(|e| format!("stdout: {e}"))
            });
        if let Err(e) = acked {
            self.failure = Some(e);
        }
    }
}
