//! Storing recordings: in bounded batches, whole, idempotent, extended
//! when the recording grew.

use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::{codec, Envelope, EventPack, Seq, SessionId};
use ctxlog_engine::catalog::{store_recording, Stored, CHUNK_BYTES, CHUNK_EVENTS};
use ctxlog_engine::SNAPSHOT_EVERY;
use ctxlog_store::{Appended, EventLog, Expected, MemoryLog, NewEvent, StoreError};
use std::sync::Mutex;

/// A log that remembers the size of every append it was given.
#[derive(Default)]
struct Counted {
    log: MemoryLog,
    /// (events, encoded bytes) of each append.
    appends: Mutex<Vec<(usize, u64)>>,
}

impl EventLog for Counted {
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        let bytes = events.iter().map(|e| codec::encoded_len(&e.event)).sum();
        self.appends.lock().unwrap().push((events.len(), bytes));
        self.log.append(session, expected, events)
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, StoreError>> + '_>, StoreError> {
        self.log.read(session, from)
    }

    fn head(&self, session: SessionId) -> Result<Seq, StoreError> {
        self.log.head(session)
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, StoreError> {
        self.log.sessions()
    }
}

fn recording(events: u64) -> Vec<Envelope> {
    generate(&GenerateConfig {
        seed: 5,
        turns: u32::MAX,
        max_events: events,
        min_output_chars: 2_000,
        max_output_chars: 20_000,
        ..GenerateConfig::default()
    })
    .expect("the generator runs")
}

fn stored(log: &impl EventLog, session: SessionId) -> Vec<Envelope> {
    log.read(session, 1)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The events held as an importer holds them.
fn pack(events: &[Envelope]) -> EventPack {
    EventPack::try_from(events).unwrap()
}

#[test]
fn a_large_recording_is_stored_whole_in_bounded_batches() {
    let events = recording(3 * CHUNK_EVENTS as u64);
    let total_bytes: u64 = events.iter().map(|e| codec::encoded_len(&e.event)).sum();
    assert!(
        total_bytes > 2 * CHUNK_BYTES && events.len() > 2 * CHUNK_EVENTS,
        "the recording spans several batches by count and by bytes"
    );
    let session = events[0].session;
    let log = Counted::default();
    let result = store_recording(&log, pack(&events)).unwrap();
    assert_eq!(
        result,
        Stored {
            events: events.len(),
            new_events: events.len(),
            grew: false
        }
    );
    assert_eq!(stored(&log, session), events, "stored as recorded");
    let appends = log.appends.lock().unwrap().clone();
    assert!(appends.len() > 2, "several batches: {appends:?}");
    for &(n, bytes) in &appends {
        assert!(n <= CHUNK_EVENTS, "a batch of {n} events");
        assert!(n == 1 || bytes <= CHUNK_BYTES, "a batch of {bytes} bytes");
    }
    assert_eq!(appends.iter().map(|(n, _)| n).sum::<usize>(), events.len());

    // Storing it again writes nothing.
    let again = store_recording(&log, pack(&events)).unwrap();
    assert_eq!(again.new_events, 0);
    assert_eq!(log.appends.lock().unwrap().len(), appends.len());
}

#[test]
fn a_grown_recording_appends_only_what_is_new_in_batches() {
    let events = recording(3 * CHUNK_EVENTS as u64);
    let session = events[0].session;
    // A prefix that ends before the descriptions (a recording cut short).
    let cut = events
        .iter()
        .position(|e| e.event.is_description())
        .unwrap_or(events.len())
        .min(CHUNK_EVENTS / 2);
    let log = Counted::default();
    store_recording(&log, pack(&events[..cut])).unwrap();
    let grown = store_recording(&log, pack(&events)).unwrap();
    assert!(grown.grew);
    assert_eq!(grown.new_events, events.len() - cut);
    assert_eq!(stored(&log, session), events);
    for &(n, _) in log.appends.lock().unwrap().iter() {
        assert!(n <= CHUNK_EVENTS);
    }
}

#[test]
fn a_first_import_keeps_the_snapshot_a_fold_of_the_stored_log_gives() {
    let events = generate(&GenerateConfig {
        seed: 6,
        turns: u32::MAX,
        max_events: SNAPSHOT_EVERY + 1,
        ..GenerateConfig::default()
    })
    .expect("the generator runs");
    let session = events[0].session;
    let dir = std::env::temp_dir().join(format!("ctxlog-catalog-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let store = ctxlog_store::SledStore::open(&dir).unwrap();
        store_recording(&store, pack(&events)).unwrap();
        let loaded = store.load_state(session).unwrap();
        assert_eq!(
            loaded.snapshot,
            Some(events.len() as u64),
            "the import kept a snapshot at its head"
        );
        assert_eq!(loaded.replayed, 0);
        let folded = ctxlog_core::SessionState::replay(&stored(&store, session)).unwrap();
        assert_eq!(loaded.state.digest(), folded.digest());
        assert_eq!(loaded.state, folded);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
