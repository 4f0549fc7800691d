//! Storing recordings: in bounded batches, whole, idempotent, extended
//! when the recording grew.

use ctxlog_app::catalog::{
    descriptions_after, interrupted, store_recording, Stored, CHUNK_BYTES, CHUNK_EVENTS,
};
use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::{codec, Envelope, Event, EventPack, Seq, SessionId};
use ctxlog_engine::SNAPSHOT_EVERY;
use ctxlog_store::{
    AppendError, Appended, EventLog, Expected, MemoryLog, NewEvent, ReadError, SessionStates,
};
use std::sync::Mutex;

/// A log that remembers the size of every append it was given, and fails
/// every append after the first `fail_after` (a process killed midway).
#[derive(Default)]
struct Counted {
    log: MemoryLog,
    /// (events, encoded bytes) of each append.
    appends: Mutex<Vec<(usize, u64)>>,
    fail_after: Option<usize>,
}

impl EventLog for Counted {
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, AppendError> {
        let bytes = events.iter().map(|e| codec::encoded_len(&e.event)).sum();
        let mut appends = self.appends.lock().unwrap();
        if self.fail_after.is_some_and(|n| appends.len() >= n) {
            return Err(AppendError::Closed);
        }
        appends.push((events.len(), bytes));
        self.log.append(session, expected, events)
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, ReadError>> + '_>, ReadError> {
        self.log.read(session, from)
    }

    fn head(&self, session: SessionId) -> Result<Seq, ReadError> {
        self.log.head(session)
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, ReadError> {
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
    // The events, and first the mark that says where the import ends.
    assert_eq!(appends[0].0, 1);
    assert_eq!(
        appends.iter().map(|(n, _)| n).sum::<usize>(),
        events.len() + 1
    );
    let marks = descriptions_after(&log, session, 0).unwrap();
    assert!(matches!(
        marks[..],
        [Envelope { event: Event::ImportStarted { head, descriptions: 1 }, .. }]
            if head == events.len() as u64
    ));
    assert!(!interrupted(&log, session).unwrap());

    // Storing it again writes nothing.
    let again = store_recording(&log, pack(&events)).unwrap();
    assert_eq!(again.new_events, 0);
    assert_eq!(log.appends.lock().unwrap().len(), appends.len());
}

/// An import killed between two batches leaves a prefix of the recording
/// that says it is one; the next import completes it and clears the mark.
#[test]
fn an_import_cut_short_is_marked_interrupted_until_one_completes_it() {
    let events = recording(3 * CHUNK_EVENTS as u64);
    let session = events[0].session;
    for kept in 1..4 {
        let cut_short = Counted {
            fail_after: Some(kept),
            ..Counted::default()
        };
        assert!(store_recording(&cut_short, pack(&events)).is_err());
        let prefix = stored(&cut_short.log, session);
        assert!(prefix.len() < events.len());
        assert_eq!(prefix[..], events[..prefix.len()], "a prefix is stored");
        assert!(
            interrupted(&cut_short.log, session).unwrap(),
            "after {kept} appends the session says it is cut short"
        );
        let log = cut_short.log;
        let completed = store_recording(&log, pack(&events)).unwrap();
        assert_eq!(completed.new_events, events.len() - prefix.len());
        assert_eq!(stored(&log, session), events);
        assert!(!interrupted(&log, session).unwrap(), "completed: no mark");
    }
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
        let store = ctxlog_sled::SledStore::open(&dir).unwrap();
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
