//! What the store's tests of readers beside a writer share: generated
//! sessions, a durable writer appending them one event per append, and the
//! check that every acknowledged event is stored.

use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::{EventId, SessionId};
use ctxlog_sled::SledStore;
use ctxlog_store::{EventLog, Expected, NewEvent};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The events each session's writer had acknowledged, in order.
pub type Acked = Vec<(SessionId, Vec<EventId>)>;

/// The first `n` events of a generated session.
pub fn events(seed: u64, n: usize) -> (SessionId, Vec<NewEvent>) {
    let cfg = GenerateConfig {
        seed,
        turns: (n / 12 + 2) as u32,
        max_output_chars: 2_000,
        ..GenerateConfig::default()
    };
    let events = generate(&cfg).unwrap();
    let session = events[0].session;
    (
        session,
        events.into_iter().take(n).map(NewEvent::from).collect(),
    )
}

/// A thread appending `sessions` generated sessions of `per_session`
/// events (seeds from `first_seed`), one event per durable append, until
/// they are written or `stop` is set; it returns what was acknowledged.
pub fn spawn_writer(
    store: &SledStore,
    first_seed: u64,
    sessions: u64,
    per_session: usize,
    stop: &Arc<AtomicBool>,
) -> JoinHandle<Acked> {
    let (store, stop) = (store.clone(), stop.clone());
    std::thread::spawn(move || {
        let mut acked = Acked::new();
        for n in 0..sessions {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let (session, evs) = events(first_seed + n, per_session);
            let mut ids = Vec::new();
            for (i, e) in evs.into_iter().enumerate() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let expected = if i == 0 {
                    Expected::NoStream
                } else {
                    Expected::Exactly(i as u64)
                };
                let id = e.id;
                store.append(session, expected, vec![e]).unwrap();
                ids.push(id);
            }
            acked.push((session, ids));
        }
        acked
    })
}

/// Every acknowledged event is stored, in order, and nothing else.
pub fn assert_all_stored(store: &SledStore, acked: &Acked) {
    for (session, ids) in acked {
        let stored: Vec<EventId> = store
            .read(*session, 1)
            .unwrap()
            .map(|e| e.unwrap().id)
            .collect();
        assert_eq!(&stored, ids, "session {session}");
    }
}
