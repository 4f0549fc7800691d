//! The `EventLog` contract, checked against both implementations: the
//! durable `SledStore` (in a temporary directory) and the in-memory
//! `MemoryLog`.

use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::*;
use ctxlog_store::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
fn tempdir() -> TempDir {
    static N: AtomicU32 = AtomicU32::new(0);
    let p = std::env::temp_dir().join(format!(
        "ctxlog-contract-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&p);
    TempDir(p)
}

/// A valid session log of about `n` events, as events to append.
fn session_events(seed: u64, n: usize) -> (SessionId, Vec<NewEvent>) {
    let cfg = GenerateConfig {
        seed,
        turns: (n / 12 + 2) as u32,
        max_output_chars: 4_000,
        ..GenerateConfig::default()
    };
    let events = generate(&cfg).unwrap();
    let session = events[0].session;
    (
        session,
        events.into_iter().take(n).map(NewEvent::from).collect(),
    )
}

fn sid(n: u8) -> SessionId {
    SessionId(uuid::Uuid::from_bytes([n; 16]))
}

/// Runs `check` on a fresh `SledStore` and on a fresh `MemoryLog`.
fn both(check: impl Fn(&dyn EventLog)) {
    let dir = tempdir();
    let sled = SledStore::open(&dir.0).unwrap();
    check(&sled);
    sled.verify()
        .map(|r| assert!(r.ok(), "{:?}", r.errors))
        .unwrap();
    check(&MemoryLog::new());
}

fn read_all(log: &dyn EventLog, s: SessionId, from: Seq) -> Vec<Envelope> {
    log.read(s, from)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

fn seqs(log: &dyn EventLog, s: SessionId, from: Seq) -> Vec<Seq> {
    read_all(log, s, from).iter().map(|e| e.seq).collect()
}

#[test]
fn expected_versions_are_checked() {
    both(|log| {
        let (s, ev) = session_events(1, 10);
        let a = log.append(s, Expected::NoStream, ev[..3].to_vec()).unwrap();
        assert_eq!((a.session, a.first, a.last, a.duplicate), (s, 1, 3, false));
        for (expected, n) in [(Expected::NoStream, 3), (Expected::Exactly(2), 3)] {
            match log.append(s, expected, ev[3..4].to_vec()).unwrap_err() {
                StoreError::WrongExpectedVersion {
                    session,
                    expected: e,
                    actual,
                } => assert_eq!((session, e, actual), (s, expected, n)),
                e => panic!("{e}"),
            }
        }
        // a new session: Exactly(0) is "no stream", Exactly(1) is not
        let other = sid(3);
        assert!(matches!(
            log.append(other, Expected::Exactly(1), ev[3..4].to_vec()),
            Err(StoreError::WrongExpectedVersion { actual: 0, .. })
        ));
        assert_eq!(log.head(other).unwrap(), 0);
        let a = log
            .append(s, Expected::Exactly(3), ev[3..5].to_vec())
            .unwrap();
        assert_eq!((a.first, a.last), (4, 5));
        let a = log.append(s, Expected::Any, ev[5..6].to_vec()).unwrap();
        assert_eq!((a.first, a.last), (6, 6));
        assert_eq!(log.head(s).unwrap(), 6);
        assert_eq!(seqs(log, s, 1), (1..=6).collect::<Vec<_>>());
    });
}

#[test]
fn an_empty_append_is_refused() {
    both(|log| {
        let s = sid(1);
        assert!(matches!(
            log.append(s, Expected::Any, Vec::new()),
            Err(StoreError::EmptyAppend)
        ));
        assert!(matches!(
            log.append(s, Expected::NoStream, Vec::new()),
            Err(StoreError::EmptyAppend)
        ));
        assert_eq!(log.head(s).unwrap(), 0);
        assert!(log.sessions().unwrap().is_empty());
        assert!(seqs(log, s, 1).is_empty());
    });
}

#[test]
fn retries_are_idempotent_and_conflicts_refused() {
    both(|log| {
        let (s, ev) = session_events(3, 8);
        log.append(s, Expected::NoStream, ev[..4].to_vec()).unwrap();
        log.append(s, Expected::Exactly(4), ev[4..6].to_vec())
            .unwrap();
        // the same batch, even with a stale expected version
        let again = log.append(s, Expected::NoStream, ev[..4].to_vec()).unwrap();
        assert_eq!((again.first, again.last, again.duplicate), (1, 4, true));
        let again = log.append(s, Expected::Any, ev[4..6].to_vec()).unwrap();
        assert_eq!((again.first, again.last, again.duplicate), (5, 6, true));
        // a contiguous part of a stored batch is a retry too
        let again = log
            .append(s, Expected::Exactly(1), ev[1..3].to_vec())
            .unwrap();
        assert_eq!((again.first, again.last, again.duplicate), (2, 3, true));
        // same id, different content
        let mut changed = ev[1].clone();
        changed.recorded_at += 1;
        match log.append(s, Expected::Any, vec![changed]).unwrap_err() {
            StoreError::IdConflict { id, session, seq } => {
                assert_eq!((id, session, seq), (ev[1].id, s, 2))
            }
            e => panic!("{e}"),
        }
        // stored ids, not contiguous or out of order
        assert!(matches!(
            log.append(s, Expected::Any, vec![ev[0].clone(), ev[2].clone()]),
            Err(StoreError::IdConflict { seq: 3, .. })
        ));
        assert!(matches!(
            log.append(s, Expected::Any, vec![ev[1].clone(), ev[0].clone()]),
            Err(StoreError::IdConflict { seq: 1, .. })
        ));
        // same id to another session
        assert!(matches!(
            log.append(sid(7), Expected::Any, vec![ev[0].clone()]),
            Err(StoreError::IdConflict { seq: 1, .. })
        ));
        // a batch mixing stored and new events, or repeating an id
        match log.append(s, Expected::Any, ev[5..8].to_vec()).unwrap_err() {
            StoreError::PartialDuplicate { id } => assert_eq!(id, ev[5].id),
            e => panic!("{e}"),
        }
        match log
            .append(s, Expected::Any, vec![ev[6].clone(), ev[6].clone()])
            .unwrap_err()
        {
            StoreError::PartialDuplicate { id } => assert_eq!(id, ev[6].id),
            e => panic!("{e}"),
        }
        // nothing of the failed appends was written
        assert_eq!(log.head(s).unwrap(), 6);
        assert_eq!(log.head(sid(7)).unwrap(), 0);
        assert_eq!(log.sessions().unwrap(), vec![(s, 6)]);
        assert_eq!(log.replay(s).unwrap().head, 6);
        // and the refused events can still be appended where they belong
        let a = log
            .append(s, Expected::Exactly(6), ev[6..8].to_vec())
            .unwrap();
        assert_eq!((a.first, a.last, a.duplicate), (7, 8, false));
    });
}

#[test]
fn reads_start_anywhere_and_heads_follow_appends() {
    both(|log| {
        let (s, ev) = session_events(5, 12);
        assert_eq!(log.head(s).unwrap(), 0);
        log.append(s, Expected::NoStream, ev[..5].to_vec()).unwrap();
        log.append(s, Expected::Exactly(5), ev[5..12].to_vec())
            .unwrap();
        assert_eq!(log.head(s).unwrap(), 12);
        assert_eq!(seqs(log, s, 0), (1..=12).collect::<Vec<_>>());
        assert_eq!(seqs(log, s, 1), (1..=12).collect::<Vec<_>>());
        assert_eq!(seqs(log, s, 5), (5..=12).collect::<Vec<_>>());
        assert_eq!(seqs(log, s, 12), vec![12]);
        assert!(seqs(log, s, 13).is_empty());
        assert!(seqs(log, s, Seq::MAX).is_empty());
        assert!(seqs(log, sid(9), 1).is_empty());
        // the envelopes are the events, stamped
        let read = read_all(log, s, 5);
        for (e, n) in read.iter().zip(&ev[4..]) {
            assert_eq!(e, &n.at(s, e.seq));
        }
    });
}

#[test]
fn sessions_come_in_session_id_order() {
    both(|log| {
        let (_, ev) = session_events(7, 6);
        // appended out of order; event ids are unique across the log
        for (n, e) in [(9u8, &ev[0]), (1, &ev[1]), (5, &ev[2])] {
            log.append(sid(n), Expected::NoStream, vec![e.clone()])
                .unwrap();
        }
        assert_eq!(
            log.sessions().unwrap(),
            vec![(sid(1), 1), (sid(5), 1), (sid(9), 1)]
        );
    });
}

/// The outcome of an append, comparable across implementations.
fn outcome(r: Result<Appended, StoreError>) -> Result<Appended, String> {
    r.map_err(|e| e.to_string())
}

#[test]
fn the_same_appends_give_the_same_log() {
    let dir = tempdir();
    let sled = SledStore::open(&dir.0).unwrap();
    let memory = MemoryLog::new();
    let logs: [&dyn EventLog; 2] = [&sled, &memory];
    let sessions: Vec<(SessionId, Vec<NewEvent>)> =
        (0..4).map(|seed| session_events(20 + seed, 60)).collect();
    // Interleaved batches of growing size, with retries, stale versions and
    // repeats mixed in; every outcome must be the same in both logs.
    let mut outcomes: [Vec<Result<Appended, String>>; 2] = [Vec::new(), Vec::new()];
    let mut at = vec![0usize; sessions.len()];
    let mut round = 0;
    while at.iter().zip(&sessions).any(|(a, (_, ev))| *a < ev.len()) {
        for (i, (s, ev)) in sessions.iter().enumerate() {
            if at[i] >= ev.len() {
                continue;
            }
            let end = (at[i] + 1 + (round + i) % 7).min(ev.len());
            let batch = ev[at[i]..end].to_vec();
            let expected = match (round + i) % 3 {
                0 => Expected::Any,
                1 if at[i] == 0 => Expected::NoStream,
                _ => Expected::Exactly(at[i] as Seq),
            };
            for (log, out) in logs.iter().zip(outcomes.iter_mut()) {
                out.push(outcome(log.append(*s, expected, batch.clone())));
                // a retry, and a stale expected version
                out.push(outcome(log.append(*s, expected, batch.clone())));
                out.push(outcome(log.append(
                    *s,
                    Expected::Exactly(at[i] as Seq),
                    ev[end..(end + 1).min(ev.len())].to_vec(),
                )));
            }
            at[i] = end;
        }
        round += 1;
    }
    assert_eq!(outcomes[0], outcomes[1]);
    assert!(outcomes[0].iter().any(|o| o.is_err()));
    assert!(outcomes[0]
        .iter()
        .any(|o| o.as_ref().is_ok_and(|a| a.duplicate)));
    assert_eq!(sled.sessions().unwrap(), memory.sessions().unwrap());
    for (s, _) in &sessions {
        for from in [0, 1, 17, 60, 61] {
            assert_eq!(read_all(&sled, *s, from), read_all(&memory, *s, from));
        }
        let (a, b) = (sled.replay(*s).unwrap(), memory.replay(*s).unwrap());
        assert_eq!(a.digest(), b.digest());
        let loaded = EventLog::load_state(&memory, *s).unwrap();
        assert_eq!((loaded.snapshot, loaded.replayed), (None, a.head));
        assert_eq!(loaded.state.digest(), a.digest());
        assert_eq!(
            EventLog::load_state(&sled, *s).unwrap().state.digest(),
            a.digest()
        );
    }
    EventLog::flush(&sled).unwrap();
    EventLog::flush(&memory).unwrap();
    assert!(sled.verify().unwrap().ok());
}

#[test]
fn the_trait_serves_snapshots_and_flushes_of_the_sled_store() {
    let dir = tempdir();
    let sled = SledStore::open(&dir.0).unwrap();
    let (s, ev) = session_events(30, 40);
    sled.append(s, Expected::NoStream, ev[..30].to_vec())
        .unwrap();
    sled.save_snapshot(&sled.replay(s).unwrap()).unwrap();
    sled.append(s, Expected::Exactly(30), ev[30..].to_vec())
        .unwrap();
    let log: &dyn EventLog = &sled;
    let loaded = log.load_state(s).unwrap();
    assert_eq!((loaded.snapshot, loaded.replayed), (Some(30), 10));
    assert_eq!(loaded.state.digest(), log.replay(s).unwrap().digest());
    log.flush().unwrap();
    assert_eq!(sled.durable_head(s), 40);
}

#[test]
fn a_follower_follows_either_log() {
    fn follow<L: Followable + Clone + 'static>(log: &L) {
        let (s, ev) = session_events(40, 20);
        log.append(s, Expected::NoStream, ev[..8].to_vec()).unwrap();
        let mut follower = Follower::new(log, BTreeMap::new());
        let first = follower.poll(Duration::from_millis(10)).unwrap();
        assert_eq!(
            first.iter().map(|e| e.seq).collect::<Vec<_>>(),
            (1..=8).collect::<Vec<_>>()
        );
        log.append(s, Expected::Exactly(8), ev[8..].to_vec())
            .unwrap();
        let mut seen = Vec::new();
        while seen.len() < 12 {
            let got = follower.poll(Duration::from_secs(5)).unwrap();
            assert!(!got.is_empty(), "no notification");
            seen.extend(got.into_iter().map(|e| e.seq));
        }
        assert_eq!(seen, (9..=20).collect::<Vec<_>>());
        assert_eq!(follower.checkpoints().get(&s), Some(&20));
        // a checkpoint at the end of the seqs delivers nothing and does not panic
        let mut done = Follower::new(log, BTreeMap::from([(s, Seq::MAX)]));
        assert!(done.poll(Duration::from_millis(1)).unwrap().is_empty());
    }
    let dir = tempdir();
    follow(&SledStore::open(&dir.0).unwrap());
    follow(&MemoryLog::new());
}

#[test]
fn a_memory_log_is_shared_by_its_clones_and_threads() {
    let log = MemoryLog::new();
    let (s, ev) = session_events(50, 40);
    let handles: Vec<_> = ev
        .chunks(5)
        .map(|chunk| {
            let (log, chunk) = (log.clone(), chunk.to_vec());
            std::thread::spawn(move || log.append(s, Expected::Any, chunk).unwrap())
        })
        .collect();
    let mut ranges: Vec<_> = handles
        .into_iter()
        .map(|h| {
            let a = h.join().unwrap();
            (a.first, a.last)
        })
        .collect();
    ranges.sort();
    assert_eq!(
        ranges,
        (0..8).map(|i| (i * 5 + 1, i * 5 + 5)).collect::<Vec<_>>()
    );
    assert_eq!(log.head(s).unwrap(), 40);
    assert_eq!(seqs(&log, s, 1), (1..=40).collect::<Vec<_>>());
}

#[test]
fn a_zero_queue_or_group_is_a_config_error() {
    let dir = tempdir();
    for (max_group, queue) in [(0, 1), (1, 0)] {
        let config = StoreConfig {
            max_group,
            queue,
            ..StoreConfig::new(&dir.0)
        };
        assert!(matches!(
            SledStore::open_with(config),
            Err(StoreError::InvalidConfig(_))
        ));
    }
}
