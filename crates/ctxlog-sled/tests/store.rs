//! The store against a real sled database on disk.

use ctxlog_core::*;
use ctxlog_sled::*;
use ctxlog_store::conformance::{session_events, sid};
use ctxlog_store::record;
use ctxlog_store::*;
use ctxlog_testkit::TempDir;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

#[test]
fn expected_version_cases() {
    let dir = TempDir::new("store");
    let store = SledStore::open(dir.path()).unwrap();
    let (s, ev) = session_events(1, 10);
    let a = store
        .append(s, Expected::NoStream, ev[..3].to_vec())
        .unwrap();
    assert_eq!((a.first, a.last, a.duplicate), (1, 3, false));
    match store
        .append(s, Expected::NoStream, ev[3..4].to_vec())
        .unwrap_err()
    {
        AppendError::WrongExpectedVersion {
            expected: Expected::NoStream,
            actual: 3,
            ..
        } => {}
        e => panic!("{e}"),
    }
    match store
        .append(s, Expected::Exactly(2), ev[3..4].to_vec())
        .unwrap_err()
    {
        e @ AppendError::WrongExpectedVersion {
            expected: Expected::Exactly(2),
            actual: 3,
            ..
        } => {
            let msg = e.to_string();
            assert!(msg.contains("head 2") && msg.contains("head is 3"), "{msg}");
        }
        e => panic!("{e}"),
    }
    assert_eq!(
        store
            .append(s, Expected::Exactly(3), ev[3..5].to_vec())
            .unwrap()
            .last,
        5
    );
    assert_eq!(
        store
            .append(s, Expected::Any, ev[5..6].to_vec())
            .unwrap()
            .last,
        6
    );
    // Exactly(0) is "no stream"
    let (t, tev) = session_events(2, 2);
    assert!(store.append(t, Expected::Exactly(1), tev.clone()).is_err());
    assert_eq!(store.append(t, Expected::Exactly(0), tev).unwrap().last, 2);
    assert!(matches!(
        store.append(s, Expected::Any, vec![]),
        Err(AppendError::EmptyAppend)
    ));
    assert_eq!(store.head(s).unwrap(), 6);
    assert_eq!(store.head(sid(9)).unwrap(), 0);
    let read: Vec<Envelope> = store.read(s, 1).unwrap().map(Result::unwrap).collect();
    assert_eq!(read.len(), 6);
    assert_eq!(
        read.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=6).collect::<Vec<_>>()
    );
    assert_eq!(store.read(s, 5).unwrap().count(), 2);
    assert!(store.verify().unwrap().ok());
}

#[test]
fn idempotent_retry_and_conflicts() {
    let dir = TempDir::new("store");
    let store = SledStore::open(dir.path()).unwrap();
    let (s, ev) = session_events(3, 8);
    let first = store
        .append(s, Expected::NoStream, ev[..4].to_vec())
        .unwrap();
    store
        .append(s, Expected::Exactly(4), ev[4..6].to_vec())
        .unwrap();
    // the same batch again, even with a stale expected version, returns its original position
    let again = store
        .append(s, Expected::NoStream, ev[..4].to_vec())
        .unwrap();
    assert_eq!(
        (again.first, again.last, again.duplicate),
        (first.first, first.last, true)
    );
    let again = store.append(s, Expected::Any, ev[4..6].to_vec()).unwrap();
    assert_eq!((again.first, again.last, again.duplicate), (5, 6, true));
    assert_eq!(store.head(s).unwrap(), 6);
    // same id, different content
    let mut changed = ev[1].clone();
    changed.recorded_at += 1;
    assert!(matches!(
        store.append(s, Expected::Any, vec![changed]),
        Err(AppendError::IdConflict { seq: 2, .. })
    ));
    // same id to another session
    assert!(matches!(
        store.append(sid(7), Expected::Any, vec![ev[0].clone()]),
        Err(AppendError::IdConflict { .. })
    ));
    // a batch mixing stored and new events, or repeating an id
    assert!(matches!(
        store.append(s, Expected::Any, ev[5..8].to_vec()),
        Err(AppendError::PartialDuplicate { .. })
    ));
    assert!(matches!(
        store.append(s, Expected::Any, vec![ev[6].clone(), ev[6].clone()]),
        Err(AppendError::PartialDuplicate { .. })
    ));
    // nothing of the failed appends was written
    assert_eq!(store.head(s).unwrap(), 6);
    assert_eq!(store.head(sid(7)).unwrap(), 0);
    assert!(store.verify().unwrap().ok());
    assert_eq!(store.replay(s).unwrap().head, 6);
}

#[test]
fn concurrent_appenders_to_one_session_never_fork_it() {
    let dir = TempDir::new("store");
    let store = SledStore::open(dir.path()).unwrap();
    let s = sid(1);
    let threads = 8;
    let per = 40;
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let store = store.clone();
            scope.spawn(move || {
                let mut ids = SeededIds::new(100 + t);
                for i in 0..per {
                    let ev = NewEvent {
                        id: EventId(ids.next_uuid(1_000 + i)),
                        recorded_at: 1_000 + i,
                        causation: None,
                        correlation: None,
                        event: Event::LimitsChanged {
                            limits: ModelLimits {
                                context: t * 1000 + i,
                                input: None,
                                output: None,
                            },
                        },
                    };
                    // half use Any; half read the head and retry on a version race
                    if i % 2 == 0 {
                        store.append(s, Expected::Any, vec![ev]).unwrap();
                    } else {
                        loop {
                            let head = store.head(s).unwrap();
                            match store.append(s, Expected::Exactly(head), vec![ev.clone()]) {
                                Ok(_) => break,
                                Err(AppendError::WrongExpectedVersion { .. }) => continue,
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                }
            });
        }
    });
    let total = threads * per;
    assert_eq!(store.head(s).unwrap(), total);
    // group commit: eight writers waiting on flushes share them
    let stats = store.stats();
    assert_eq!(stats.appends, total);
    assert!(stats.flushes < stats.appends, "no grouping: {stats:?}");
    // one caller leads at a time: the serial section fits in the wall time
    let wall = started.elapsed().as_nanos() as u64;
    assert!(
        stats.leading_nanos > 0 && stats.leading_nanos <= wall,
        "leading {} ns in {wall} ns",
        stats.leading_nanos
    );
    let events: Vec<Envelope> = store.read(s, 1).unwrap().map(Result::unwrap).collect();
    assert_eq!(events.len() as u64, total);
    let ids: BTreeSet<EventId> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids.len() as u64, total, "every event exactly once");
    let report = store.verify().unwrap();
    assert!(report.ok(), "{:?}", report.errors);
    assert_eq!(report.heads[&s], total);
}

#[test]
fn many_sessions_in_parallel_replay_to_their_states() {
    let dir = TempDir::new("store");
    let store = SledStore::open(dir.path()).unwrap();
    let sessions: Vec<(SessionId, Vec<NewEvent>)> =
        (0..12).map(|i| session_events(50 + i, 120)).collect();
    std::thread::scope(|scope| {
        for (s, ev) in &sessions {
            let store = store.clone();
            scope.spawn(move || {
                let mut head = 0;
                for batch in ev.chunks(7) {
                    head = store
                        .append(*s, Expected::Exactly(head), batch.to_vec())
                        .unwrap()
                        .last;
                }
            });
        }
    });
    let report = store.verify().unwrap();
    assert!(report.ok(), "{:?}", report.errors);
    assert_eq!(report.sessions, 12);
    assert_eq!(report.events, 12 * 120);
    let listed: BTreeMap<SessionId, Seq> = store.sessions().unwrap().into_iter().collect();
    for (s, ev) in &sessions {
        assert_eq!(listed[s], 120);
        let want: Vec<Envelope> = ev
            .iter()
            .enumerate()
            .map(|(i, e)| e.at(*s, i as u64 + 1))
            .collect();
        assert_eq!(
            store.replay(*s).unwrap(),
            SessionState::replay(&want).unwrap()
        );
    }
}

/// Appends `events` to the new session `s` one event per append, so that
/// each record is a value of its own (a pack holds the records of one
/// append), for tests that damage single records by key.
fn append_one_by_one(store: &SledStore, s: SessionId, events: Vec<NewEvent>) {
    for (head, e) in events.into_iter().enumerate() {
        store
            .append(s, Expected::Exactly(head as Seq), vec![e])
            .unwrap();
    }
}

fn corrupt(dir: &std::path::Path, f: impl FnOnce(&sled::Tree)) {
    let db = sled::open(dir).unwrap();
    f(&db.open_tree("events").unwrap());
    db.flush().unwrap();
}

#[test]
fn flipped_deleted_and_swapped_records_are_named() {
    let dir = TempDir::new("store");
    let (a, ev_a) = session_events(5, 20);
    let (b, ev_b) = session_events(6, 20);
    let (c, ev_c) = session_events(7, 20);
    let (d, ev_d) = session_events(8, 20);
    {
        let store = SledStore::open(dir.path()).unwrap();
        for (s, ev) in [(a, ev_a), (b, ev_b), (c, ev_c), (d, ev_d)] {
            append_one_by_one(&store, s, ev);
        }
        assert!(store.verify().unwrap().ok());
    }
    corrupt(dir.path(), |t| {
        // flip one byte in the payload of a:7
        let k = record::key(a, 7);
        let mut v = t.get(k).unwrap().unwrap().to_vec();
        v[10] ^= 0x40;
        t.insert(k, v).unwrap();
        // delete b:12
        t.remove(record::key(b, 12)).unwrap();
        // swap c:3 and c:4
        let (k3, k4) = (record::key(c, 3), record::key(c, 4));
        let (v3, v4) = (t.get(k3).unwrap().unwrap(), t.get(k4).unwrap().unwrap());
        t.insert(k3, v4).unwrap();
        t.insert(k4, v3).unwrap();
        // delete the last record of d
        t.remove(record::key(d, 20)).unwrap();
    });
    let store = SledStore::open(dir.path()).unwrap();
    let report = store.verify().unwrap();
    assert!(!report.ok());
    let named: Vec<(SessionId, Seq)> = report
        .errors
        .iter()
        .map(|e| (e.session.unwrap(), e.seq.unwrap()))
        .collect();
    assert!(named.contains(&(a, 7)), "{:?}", report.errors);
    assert!(named.contains(&(b, 12)), "{:?}", report.errors);
    assert!(
        named.contains(&(c, 3)) && named.contains(&(c, 4)),
        "{:?}",
        report.errors
    );
    let flip = report.errors.iter().find(|e| e.session == Some(a)).unwrap();
    assert!(flip.detail.contains("CRC32C"), "{flip}");
    // one damaged record is one error, not a cascade down the session
    assert_eq!(
        report
            .errors
            .iter()
            .filter(|e| e.session == Some(a))
            .count(),
        1,
        "{:?}",
        report.errors
    );
    // reading stops at the damage with an error naming it, never skipping it
    let mut seen = 0;
    let mut err = None;
    for e in store.read(a, 1).unwrap() {
        match e {
            Ok(_) => seen += 1,
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    assert_eq!(seen, 6);
    assert!(matches!(err, Some(ReadError::Corrupt { seq: 7, .. })));
    let gap = store.read(b, 10).unwrap().nth(2).unwrap().unwrap_err();
    assert!(matches!(gap, ReadError::Corrupt { seq: 12, .. }), "{gap}");
    // a read never ends quietly below the head
    let tail = store.read(d, 18).unwrap().collect::<Vec<_>>();
    assert_eq!(tail.len(), 3);
    assert!(
        matches!(tail[2], Err(ReadError::Corrupt { seq: 20, .. })),
        "{:?}",
        tail[2]
    );
    assert!(store.replay(d).is_err());
    // a retry over a damaged record names the damage
    let (_, ev_a_again) = session_events(5, 20);
    match store.append(a, Expected::Any, ev_a_again[6..7].to_vec()) {
        Err(AppendError::Read(ReadError::Corrupt { seq: 7, .. })) => {}
        other => panic!("{other:?}"),
    }
    // a damaged session fails loudly; new sessions still append and replay
    assert!(
        store.replay(a).is_err(),
        "a damaged session does not replay silently"
    );
    let (e, ev_e) = session_events(18, 10);
    store.append(e, Expected::NoStream, ev_e).unwrap();
    assert_eq!(store.replay(e).unwrap().head, 10);
}

#[test]
fn a_record_from_a_newer_format_is_refused_by_name_and_nothing_is_lost() {
    let dir = TempDir::new("store");
    let (a, ev_a) = session_events(9, 10);
    {
        let store = SledStore::open(dir.path()).unwrap();
        append_one_by_one(&store, a, ev_a.clone());
    }
    corrupt(dir.path(), |t| {
        let k = record::key(a, 10);
        let mut v = t.get(k).unwrap().unwrap().to_vec();
        v[0] = 3; // format 3, with a valid CRC: a genuine newer record
        let n = v.len();
        let crc = crc32c::crc32c(&v[..n - 4]);
        v[n - 4..].copy_from_slice(&crc.to_le_bytes());
        t.insert(k, v).unwrap();
        // and a truncated value at 9
        let k9 = record::key(a, 9);
        let v9 = t.get(k9).unwrap().unwrap();
        t.insert(k9, &v9[..20]).unwrap();
    });
    let store = SledStore::open(dir.path()).unwrap();
    let report = store.verify().unwrap();
    let msgs: Vec<String> = report.errors.iter().map(|e| e.to_string()).collect();
    assert!(
        msgs.iter()
            .any(|m| m.contains("seq 10") && m.contains("unsupported record: format 3")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|m| m.contains("seq 9")), "{msgs:?}");
    let got: Vec<_> = store.read(a, 1).unwrap().collect();
    assert_eq!(
        got.iter().filter(|r| r.is_ok()).count(),
        8,
        "records before the damage still read"
    );
    // appending after a bad record still works and verify keeps naming the bad ones
    assert_eq!(store.head(a).unwrap(), 10);
}

#[test]
fn followers_see_every_durable_event_once_across_restarts() {
    let dir = TempDir::new("store");
    let store = SledStore::open(dir.path()).unwrap();
    let sessions: Vec<_> = (0..3).map(|i| session_events(20 + i, 60)).collect();
    // some events before the follower starts
    for (s, ev) in &sessions {
        store
            .append(*s, Expected::NoStream, ev[..10].to_vec())
            .unwrap();
    }
    let mut delivered: Vec<(SessionId, Seq)> = Vec::new();
    let mut follower = Follower::new(&store, BTreeMap::new());
    delivered.extend(
        follower
            .poll(Duration::from_millis(10))
            .unwrap()
            .iter()
            .map(|e| (e.session, e.seq)),
    );
    assert_eq!(delivered.len(), 30);
    let writer = {
        let store = store.clone();
        let sessions = sessions.clone();
        std::thread::spawn(move || {
            for i in (10..60).step_by(5) {
                for (s, ev) in &sessions {
                    store
                        .append(*s, Expected::Exactly(i as u64), ev[i..i + 5].to_vec())
                        .unwrap();
                }
            }
        })
    };
    // consume some, then "crash" the follower and restart from its checkpoints
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while delivered.len() < 90 {
        assert!(
            std::time::Instant::now() < deadline,
            "follower stalled at {} events",
            delivered.len()
        );
        delivered.extend(
            follower
                .poll(Duration::from_millis(200))
                .unwrap()
                .iter()
                .map(|e| (e.session, e.seq)),
        );
    }
    let checkpoints = follower.checkpoints().clone();
    drop(follower);
    let mut follower = Follower::new(&store, checkpoints);
    writer.join().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "follower stalled at {} events",
            delivered.len()
        );
        let got = follower.poll(Duration::from_millis(200)).unwrap();
        if got.is_empty() && delivered.len() >= 180 {
            break;
        }
        delivered.extend(got.iter().map(|e| (e.session, e.seq)));
    }
    let unique: BTreeSet<_> = delivered.iter().copied().collect();
    assert_eq!(unique.len(), delivered.len(), "no duplicate");
    assert_eq!(delivered.len(), 180, "no gap");
    for (s, _) in &sessions {
        let seqs: Vec<Seq> = delivered
            .iter()
            .filter(|(x, _)| x == s)
            .map(|(_, q)| *q)
            .collect();
        assert_eq!(seqs, (1..=60).collect::<Vec<_>>(), "in order");
    }
}

#[test]
fn notifications_come_only_after_the_flush_and_name_the_head() {
    let dir = TempDir::new("store");
    let store = SledStore::open(dir.path()).unwrap();
    let sub = store.subscribe();
    let (s, ev) = session_events(30, 10);
    store
        .append(s, Expected::NoStream, ev[..4].to_vec())
        .unwrap();
    store
        .append(s, Expected::Exactly(4), ev[4..].to_vec())
        .unwrap();
    let mut got = Vec::new();
    while got.last().map(|n: &Notification| n.seq) != Some(10) {
        for n in sub.recv_timeout(Duration::from_secs(5)).unwrap() {
            assert!(
                store.durable_head(n.session) >= n.seq,
                "notified before durable"
            );
            got.push(n);
        }
    }
    assert!(got.iter().all(|n| n.session == s));
    assert_eq!(store.durable_head(s), 10);
}

#[test]
fn buffered_mode_acknowledges_then_flushes() {
    let dir = TempDir::new("store");
    let mut cfg = StoreConfig::new(dir.path());
    cfg.durability = Durability::Buffered;
    cfg.buffered_flush_ms = 20;
    let (s, ev) = session_events(31, 30);
    {
        let store = SledStore::open_with(cfg.clone()).unwrap();
        let sub = store.subscribe();
        for (i, e) in ev.iter().enumerate() {
            store
                .append(s, Expected::Exactly(i as u64), vec![e.clone()])
                .unwrap();
        }
        // the notification arrives once the periodic flush has run
        let mut last = 0;
        while last < 30 {
            for n in sub.recv_timeout(Duration::from_secs(5)).unwrap() {
                last = n.seq;
            }
        }
        assert_eq!(store.durable_head(s), 30);
    }
    let store = SledStore::open_with(cfg).unwrap();
    assert_eq!(store.head(s).unwrap(), 30);
    assert!(store.verify().unwrap().ok());
}

#[test]
fn buffered_mode_flushes_on_time_under_a_steady_stream() {
    let dir = TempDir::new("store");
    let mut cfg = StoreConfig::new(dir.path());
    cfg.durability = Durability::Buffered;
    cfg.buffered_flush_ms = 10;
    let store = SledStore::open_with(cfg).unwrap();
    let (s, ev) = session_events(32, 400);
    let start = std::time::Instant::now();
    let mut durable_while_streaming = 0;
    for (i, e) in ev.iter().enumerate() {
        store
            .append(s, Expected::Exactly(i as u64), vec![e.clone()])
            .unwrap();
        if start.elapsed() > Duration::from_millis(50) && store.durable_head(s) > 0 {
            durable_while_streaming = store.durable_head(s);
        }
        std::thread::sleep(Duration::from_micros(300));
    }
    assert!(
        durable_while_streaming > 0,
        "appends arriving faster than the interval must not postpone the flush forever"
    );
    let stats = store.stats();
    assert!(
        stats.flushes >= 1 && stats.flushes < stats.appends,
        "{stats:?}"
    );
    store.flush().unwrap();
    assert_eq!(store.durable_head(s), 400);
}

#[test]
fn snapshot_plus_tail_equals_full_replay_and_bad_snapshots_fall_back() {
    let dir = TempDir::new("store");
    let store = SledStore::open(dir.path()).unwrap();
    let (s, ev) = session_events(40, 200);
    store
        .append(s, Expected::NoStream, ev[..120].to_vec())
        .unwrap();
    let at120 = store.load_state(s).unwrap();
    assert_eq!((at120.snapshot, at120.replayed), (None, 120));
    store.save_snapshot(&at120.state).unwrap();
    store
        .append(s, Expected::Exactly(120), ev[120..].to_vec())
        .unwrap();
    let loaded = store.load_state(s).unwrap();
    assert_eq!((loaded.snapshot, loaded.replayed), (Some(120), 80));
    let full = store.replay(s).unwrap();
    assert_eq!(loaded.state, full);
    assert_eq!(loaded.state.digest(), full.digest());
    drop(store);
    // damage the snapshot: load falls back to a full replay
    {
        let db = sled::open(dir.path()).unwrap();
        let t = db.open_tree("snapshots").unwrap();
        let (k, v) = t.iter().next().unwrap().unwrap();
        let mut v = v.to_vec();
        v[3] ^= 1;
        t.insert(k, v).unwrap();
        // and a snapshot of another reducer version is ignored
        let mut other = s.as_bytes().to_vec();
        other.extend_from_slice(&(REDUCER_VERSION + 1).to_be_bytes());
        other.extend_from_slice(&150u64.to_be_bytes());
        t.insert(other, vec![1, 2, 3]).unwrap();
        // and a damaged, short key of this version does not panic
        let mut short = s.as_bytes().to_vec();
        short.extend_from_slice(&REDUCER_VERSION.to_be_bytes());
        short.push(7);
        t.insert(short, vec![0]).unwrap();
        db.flush().unwrap();
    }
    let store = SledStore::open(dir.path()).unwrap();
    let loaded = store.load_state(s).unwrap();
    assert_eq!((loaded.snapshot, loaded.replayed), (None, 200));
    assert_eq!(loaded.state, full);
}

#[test]
fn a_closed_store_reopens_with_everything_acknowledged() {
    let dir = TempDir::new("store");
    let (s, ev) = session_events(41, 50);
    {
        let store = SledStore::open(dir.path()).unwrap();
        for (i, chunk) in ev.chunks(5).enumerate() {
            store
                .append(s, Expected::Exactly(i as u64 * 5), chunk.to_vec())
                .unwrap();
        }
    }
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.head(s).unwrap(), 50);
    assert_eq!(store.durable_head(s), 50);
    assert!(store.verify().unwrap().ok());
}

/// A real flush failure: the store lives on a tiny tmpfs that fills up. The
/// failed append is not acknowledged and every later call fails (poisoned).
/// Needs permission to mount; skips with a message otherwise.
#[test]
fn a_failed_flush_poisons_the_store() {
    let dir = TempDir::new("store");
    std::fs::create_dir_all(dir.path()).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(dir.path())
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !mounted {
        eprintln!("skipping a_failed_flush_poisons_the_store: cannot mount a tmpfs here");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            // lazy: the poisoned store deliberately leaks its open files
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.0)
                .status();
        }
    }
    let _unmount = Unmount(dir.path().to_path_buf());
    // A watchdog: a hang in sled after ENOSPC fails the test instead of CI.
    let (done_tx, done_rx) = crossbeam_channel::bounded(1);
    let path = dir.path().join("db");
    std::thread::spawn(move || {
        fill_until_poisoned(path);
        let _ = done_tx.send(());
    });
    done_rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the poisoning test hung");
}

fn fill_until_poisoned(path: PathBuf) {
    let store = SledStore::open(path).unwrap();
    let s = sid(3);
    let mut ids = SeededIds::new(3);
    let big = "x".repeat(256 * 1024);
    let mut acked = 0u64;
    let err = loop {
        let e = NewEvent {
            id: EventId(ids.next_uuid(1)),
            recorded_at: 1,
            causation: None,
            correlation: None,
            event: Event::PolicyChanged {
                policy: Policy {
                    name: big.clone(),
                    ..Policy::default()
                },
            },
        };
        match store.append(s, Expected::Exactly(acked), vec![e]) {
            Ok(a) => acked = a.last,
            Err(e) => break e,
        }
        assert!(acked < 1000, "the tmpfs never filled up");
    };
    assert!(
        matches!(err, AppendError::Poisoned(_) | AppendError::Backend(_)),
        "{err}"
    );
    assert!(matches!(store.head(s), Err(ReadError::Poisoned(_))));
    assert!(matches!(store.verify(), Err(ReadError::Poisoned(_))));
    let e = NewEvent {
        id: EventId(ids.next_uuid(2)),
        recorded_at: 2,
        causation: None,
        correlation: None,
        event: Event::LimitsChanged {
            limits: ModelLimits::default(),
        },
    };
    assert!(matches!(
        store.append(sid(4), Expected::Any, vec![e]),
        Err(AppendError::Poisoned(_))
    ));
    eprintln!("poisoned after {acked} acknowledged appends: {err}");
}

#[test]
fn a_refused_append_leaves_no_trace_even_when_its_first_events_encode() {
    // The writer applies a group of appends in one transaction that commits
    // whatever the individual outcomes: an append refused half-way (its last
    // event is over the record size limit) must write none of its events.
    let dir = TempDir::new("store");
    let store = SledStore::open(dir.path()).unwrap();
    let (s, ev) = session_events(5, 4);
    let mut huge = ev[3].clone();
    huge.event = Event::PartsRestored {
        parts: Vec::new(),
        reason: "x".repeat(codec::MAX_ENCODED_BYTES as usize + 1),
    };
    let batch = vec![ev[0].clone(), ev[1].clone(), ev[2].clone(), huge];
    match store.append(s, Expected::NoStream, batch).unwrap_err() {
        AppendError::Encode { .. } => {}
        other => panic!("{other}"),
    }
    assert_eq!(store.head(s).unwrap(), 0);
    assert_eq!(store.read(s, 1).unwrap().count(), 0);
    // its ids were not indexed: the same events append as new
    let a = store
        .append(s, Expected::NoStream, ev[..3].to_vec())
        .unwrap();
    assert_eq!((a.first, a.last, a.duplicate), (1, 3, false));
    assert!(store.verify().unwrap().ok());
}

/// What sled leaves after it took a flipped bit in its log for a torn write
/// and truncated there: `session`'s values starting after `keep` gone and
/// its head back to `head`, the value it had at `keep`, as if they had
/// never been written.
fn truncate_like_sled(dir: &std::path::Path, session: SessionId, keep: Seq, head: sled::IVec) {
    let db = sled::open(dir).unwrap();
    let events = db.open_tree("events").unwrap();
    let heads = db.open_tree("heads").unwrap();
    let past = record::key(session, keep + 1)..=record::key(session, Seq::MAX);
    for kv in events.range(past) {
        events.remove(kv.unwrap().0).unwrap();
    }
    heads.insert(session.as_bytes(), head).unwrap();
    db.flush().unwrap();
}

/// The head value sled holds for `session` in the closed store at `dir`.
fn head_value(dir: &std::path::Path, session: SessionId) -> sled::IVec {
    let db = sled::open(dir).unwrap();
    let heads = db.open_tree("heads").unwrap();
    heads.get(session.as_bytes()).unwrap().unwrap()
}

/// Acknowledged events that sled lost without noticing are named, by the
/// witness, as lost: a read stops where the loss starts, appends to the
/// session are refused, verify reports the seq range, and it stays so
/// after every reopen. Other sessions are untouched.
#[test]
fn acknowledged_events_that_sled_lost_are_named_never_silent() {
    let dir = TempDir::new("store");
    let (a, ev_a) = session_events(21, 30);
    let (b, ev_b) = session_events(22, 10);
    {
        let store = SledStore::open(dir.path()).unwrap();
        store
            .append(a, Expected::NoStream, ev_a[..18].to_vec())
            .unwrap();
        store.append(b, Expected::NoStream, ev_b).unwrap();
    }
    let head_at_18 = head_value(dir.path(), a);
    {
        let store = SledStore::open(dir.path()).unwrap();
        store
            .append(a, Expected::Exactly(18), ev_a[18..].to_vec())
            .unwrap();
        assert!(store.verify().unwrap().ok());
    }
    truncate_like_sled(dir.path(), a, 18, head_at_18);
    for _ in 0..2 {
        let store = SledStore::open(dir.path()).unwrap();
        assert_eq!(store.head(a).unwrap(), 18, "sled's own view");
        let got: Vec<_> = store.read(a, 1).unwrap().collect();
        assert_eq!(got.iter().filter(|r| r.is_ok()).count(), 18);
        match got.last() {
            Some(Err(ReadError::Lost { session, detail })) => {
                assert_eq!(*session, a);
                assert!(detail.contains("events 19 to 30"), "{detail}");
                assert!(detail.contains("ctxlog salvage"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert!(store.replay(a).is_err());
        assert!(matches!(
            store.append(a, Expected::Any, session_events(23, 1).1),
            Err(AppendError::Read(ReadError::Lost { .. }))
        ));
        assert_eq!(store.replay(b).unwrap().head, 10);
        let report = store.verify().unwrap();
        assert!(!report.ok());
        let lost: Vec<_> = report.errors.iter().filter(|e| e.kind == "lost").collect();
        assert_eq!(lost.len(), 1, "{:?}", report.errors);
        assert_eq!((lost[0].session, lost[0].seq), (Some(a), Some(19)));
        assert_eq!(lost[0].file.as_deref(), Some("witness"));
        assert!(lost[0].offset.is_some());
    }
    // Salvage copies what is intact and says what is not.
    let to = TempDir::new("store");
    let report = {
        let from = SledStore::open(dir.path()).unwrap();
        let into = SledStore::open(to.path()).unwrap();
        salvage(&ctxlog_sled::SharedStore::from(from.clone()), &into).unwrap()
    };
    assert_eq!(report.saved[&a], 18);
    assert_eq!(report.saved[&b], 10);
    assert_eq!(report.unsaved.len(), 1, "{:?}", report.unsaved);
    assert_eq!((report.unsaved[0].session, report.unsaved[0].seq), (a, 19));
    assert!(report.unsaved[0].detail.contains("events 19 to 30"));
    let salvaged = SledStore::open(to.path()).unwrap();
    assert!(salvaged.verify().unwrap().ok());
    assert_eq!(salvaged.replay(a).unwrap().head, 18);
    assert_eq!(salvaged.replay(b).unwrap().head, 10);
}

/// A process killed while sled wrote a snapshot leaves an empty
/// `snap.*.generating` file that sled 0.34's recovery reads as corruption:
/// the store still opens, whole.
#[test]
fn a_snapshot_sled_did_not_finish_does_not_lock_the_store() {
    let dir = TempDir::new("store");
    let (a, ev_a) = session_events(31, 12);
    {
        let store = SledStore::open(dir.path()).unwrap();
        store.append(a, Expected::NoStream, ev_a).unwrap();
    }
    std::fs::write(dir.path().join("snap.FFFFFFFFFFFFFFFF.generating"), b"").unwrap();
    {
        let store = SledStore::open(dir.path()).unwrap();
        assert!(store.verify().unwrap().ok());
        assert_eq!(store.replay(a).unwrap().head, 12);
    }
    // A damaged snapshot and config file: set aside, rebuilt from the log.
    for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
        let name = f.file_name().to_string_lossy().into_owned();
        if name.starts_with("snap.") || name == "conf" {
            let mut b = std::fs::read(f.path()).unwrap();
            let at = b.len() / 2;
            b[at] ^= 0x10;
            std::fs::write(f.path(), b).unwrap();
        }
    }
    let store = SledStore::open(dir.path()).unwrap();
    assert!(store.verify().unwrap().ok());
    assert_eq!(store.replay(a).unwrap().head, 12);
    assert!(dir.path().join("unreadable-sled-snapshots").is_dir());
}

/// A witness cut short before its header was complete (a kill as the store
/// was created) is started again from the log's heads, so a later loss is
/// still named.
#[test]
fn a_witness_cut_at_creation_is_restarted_from_the_heads() {
    let dir = TempDir::new("store");
    let (a, ev_a) = session_events(41, 10);
    {
        let store = SledStore::open(dir.path()).unwrap();
        store
            .append(a, Expected::NoStream, ev_a[..7].to_vec())
            .unwrap();
    }
    let head_at_7 = head_value(dir.path(), a);
    {
        let store = SledStore::open(dir.path()).unwrap();
        store
            .append(a, Expected::Exactly(7), ev_a[7..].to_vec())
            .unwrap();
    }
    let witness = dir.path().join("witness");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&witness)
        .unwrap()
        .set_len(5)
        .unwrap();
    drop(SledStore::open(dir.path()).unwrap());
    assert!(std::fs::metadata(&witness).unwrap().len() > 16);
    truncate_like_sled(dir.path(), a, 7, head_at_7);
    let store = SledStore::open(dir.path()).unwrap();
    let got: Vec<_> = store.read(a, 1).unwrap().collect();
    assert!(
        matches!(got.last(), Some(Err(ReadError::Lost { .. }))),
        "{:?}",
        got.last()
    );
}

/// A store whose creation was cut short (sled wrote its `conf` and was
/// killed before its log existed, as `kill_import.rs` saw twice) held
/// nothing: it opens, and is created again.
#[test]
fn a_store_killed_before_its_log_existed_opens() {
    let dir = TempDir::new("store");
    std::fs::create_dir_all(dir.path().join("blobs")).unwrap();
    std::fs::write(
        dir.path().join("conf"),
        "segment_size: 524288\nuse_compression: false\nversion: 0.34\n",
    )
    .unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let (a, ev_a) = session_events(47, 6);
    store.append(a, Expected::NoStream, ev_a).unwrap();
    assert!(store.verify().unwrap().ok());
    drop(store);
    assert!(dir
        .join("unreadable-sled-snapshots/conf-without-a-log")
        .is_file());
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.replay(a).unwrap().head, 6);
}

/// What the holder of a store serves over its socket equals what it reads
/// itself (sessions, heads, events, verification), in buffered mode only
/// up to what is flushed; appends through it are refused; a closed store
/// removes its socket, and a socket a killed holder left is replaced.
#[test]
fn the_holder_serves_what_is_durable_and_nothing_more() {
    let dir = TempDir::new("store");
    let mut config = StoreConfig::new(dir.path());
    config.durability = Durability::Buffered;
    config.buffered_flush_ms = 3_600_000;
    let store = SledStore::open_with(config).unwrap();
    let (a, ev_a) = session_events(70, 40);
    let (b, ev_b) = session_events(71, 30);
    store
        .append(a, Expected::NoStream, ev_a[..25].to_vec())
        .unwrap();
    store.append(b, Expected::NoStream, ev_b.clone()).unwrap();
    store.flush().unwrap();
    // Acknowledged in buffered mode, not yet flushed: not served.
    store
        .append(a, Expected::Exactly(25), ev_a[25..].to_vec())
        .unwrap();
    assert_eq!(store.head(a).unwrap(), 40);

    let remote = RemoteLog::connect(dir.path())
        .unwrap()
        .expect("the holder serves");
    assert_eq!(remote.pid(), std::process::id());
    assert_eq!(remote.sessions().unwrap(), {
        let mut s = vec![(a, 25), (b, 30)];
        s.sort();
        s
    });
    assert_eq!(remote.head(a).unwrap(), 25);
    let local: Vec<Envelope> = store.read(a, 1).unwrap().map(Result::unwrap).collect();
    let served: Vec<Envelope> = remote.read(a, 1).unwrap().map(Result::unwrap).collect();
    assert_eq!(served, local[..25]);
    let tail: Vec<Envelope> = remote.read(b, 29).unwrap().map(Result::unwrap).collect();
    assert_eq!(tail.iter().map(|e| e.seq).collect::<Vec<_>>(), [29, 30]);
    assert_eq!(remote.replay(b).unwrap(), store.replay(b).unwrap());
    // Appends are made by the holder: refusals keep their kind, and a
    // retried batch answers where it landed.
    let (_, fresh) = session_events(72, 1);
    match remote.append(b, Expected::Exactly(29), fresh) {
        Err(AppendError::WrongExpectedVersion { actual: 30, .. }) => {}
        other => panic!("{other:?}"),
    }
    let again = remote.append(b, Expected::NoStream, ev_b.clone()).unwrap();
    assert_eq!((again.first, again.last, again.duplicate), (1, 30, true));
    store.flush().unwrap();
    assert_eq!(remote.head(a).unwrap(), 40);
    let report = remote.verify().unwrap();
    assert_eq!(report, store.verify().unwrap());
    assert!(report.ok() && report.events == 70);

    let socket = dir.path().join("owner.sock");
    assert!(socket.exists());
    drop(store);
    assert!(!socket.exists(), "a closed store removes its socket");
    assert!(RemoteLog::connect(dir.path()).unwrap().is_none());
    match remote.sessions() {
        Err(ReadError::Unanswered { why, .. }) => assert!(why.contains("stopped"), "{why}"),
        other => panic!("{other:?}"),
    }

    // A socket left by a holder that was killed: nobody answers it, and the
    // next holder replaces it.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    assert!(RemoteLog::connect(dir.path()).unwrap().is_none());
    let reader = SharedStore::open(dir.path()).unwrap();
    assert!(reader.served_by().is_none());
    assert_eq!(reader.head(a).unwrap(), 40);
    assert!(RemoteLog::connect(dir.path()).unwrap().is_some());

    // A reader whose holder lets go of the store between two calls opens
    // the store itself and goes on.
    let served = SharedStore::open(dir.path()).unwrap();
    assert_eq!(served.served_by(), Some(std::process::id()));
    assert_eq!(served.head(b).unwrap(), 30);
    drop(reader);
    assert_eq!(served.sessions().unwrap().len(), 2);
    let events: Vec<Envelope> = served.read(a, 1).unwrap().map(Result::unwrap).collect();
    assert_eq!(events, local);
    assert!(served.verify().unwrap().ok());
}

/// `n` events whose ids `ids` draws at the milliseconds `ms` gives each.
fn events_at(ids: &mut SeededIds, n: u64, ms: impl Fn(u64) -> u64) -> Vec<NewEvent> {
    (0..n)
        .map(|i| NewEvent {
            id: EventId(ids.next_uuid(ms(i))),
            recorded_at: ms(i),
            causation: None,
            correlation: None,
            event: Event::LimitsChanged {
                limits: ModelLimits {
                    context: 1_000 + i,
                    input: None,
                    output: None,
                },
            },
        })
        .collect()
}

/// The number of entries of each tree of the id index of the closed store
/// at `dir`: (`ids`, `id-runs`).
fn index_entries(dir: &std::path::Path) -> (usize, usize) {
    let db = sled::open(dir).unwrap();
    let count = |t: &str| db.open_tree(t).unwrap().iter().count();
    (count("ids"), count("id-runs"))
}

/// Time-ordered ids (a millisecond per append, several events in each, in
/// no order within it) are indexed as runs: a session appended alone is
/// one entry whatever its length, sessions taking turns one entry per
/// turn. A retried batch is still found at its place, in any session,
/// after a reopen, and an id stored in one session is refused in another.
#[test]
fn time_ordered_ids_are_indexed_as_runs_and_still_find_every_retry() {
    let dir = TempDir::new("store");
    let (a, b, c) = (sid(61), sid(62), sid(63));
    let mut ids = SeededIds::new(61);
    // Turns: a alone for 10 appends, then a and b alternating for 6.
    let mut batches: Vec<(SessionId, Vec<NewEvent>)> = Vec::new();
    for turn in 0..16u64 {
        let s = if turn >= 10 && turn % 2 == 1 { b } else { a };
        batches.push((s, events_at(&mut ids, 5, |_| 1_000 + turn)));
    }
    let mut placed = Vec::new();
    {
        let store = SledStore::open(dir.path()).unwrap();
        for (s, batch) in &batches {
            let at = store.append(*s, Expected::Any, batch.clone()).unwrap();
            assert!(!at.duplicate);
            placed.push(at);
        }
        assert!(store.verify().unwrap().ok());
    }
    // a: one run for turns 0–10, then one per turn of its own (12, 14);
    // b: one per turn (11, 13, 15). No entry per event.
    assert_eq!(index_entries(dir.path()), (0, 6));
    let store = SledStore::open(dir.path()).unwrap();
    for ((s, batch), at) in batches.iter().zip(&placed) {
        let again = store.append(*s, Expected::Any, batch.clone()).unwrap();
        assert_eq!(
            (again.first, again.last, again.duplicate),
            (at.first, at.last, true)
        );
    }
    match store.append(c, Expected::Any, batches[3].1[2..3].to_vec()) {
        Err(AppendError::IdConflict { .. }) => {}
        other => panic!("{other:?}"),
    }
    // An id drawn earlier than every stored one goes to the entries.
    let early = events_at(&mut SeededIds::new(9), 2, |_| 10);
    let at = store.append(c, Expected::NoStream, early.clone()).unwrap();
    assert_eq!(
        store.append(c, Expected::Any, early).unwrap(),
        Appended {
            duplicate: true,
            ..at
        }
    );
    assert!(store.verify().unwrap().ok());
    drop(store);
    assert_eq!(index_entries(dir.path()), (2, 6));
}

/// The byte range of record `index` in a pack (the layout of `pack.rs`).
fn packed_record(v: &[u8], index: usize) -> std::ops::Range<usize> {
    let count = u16::from_le_bytes([v[1], v[2]]) as usize;
    let len = |i: usize| u32::from_le_bytes(v[3 + 4 * i..7 + 4 * i].try_into().unwrap()) as usize;
    let start = 3 + 4 * count + (0..index).map(len).sum::<usize>();
    start..start + len(index)
}

/// Damage inside a pack is placed at one seq: a flipped byte in one
/// record is that record's error alone (the records before it read, the
/// ones after it verify); a pack whose lengths do not read is named at its
/// first seq, once, and the next append's records still read.
#[test]
fn damage_inside_a_pack_is_named_at_its_seq() {
    let dir = TempDir::new("store");
    let mut ids = SeededIds::new(71);
    let a = sid(71);
    {
        let store = SledStore::open(dir.path()).unwrap();
        store
            .append(
                a,
                Expected::NoStream,
                events_at(&mut ids, 20, |i| 5_000 + i),
            )
            .unwrap();
        store
            .append(
                a,
                Expected::Exactly(20),
                events_at(&mut ids, 5, |i| 6_000 + i),
            )
            .unwrap();
    }
    corrupt(dir.path(), |t| {
        let k = record::key(a, 1);
        let mut v = t.get(k).unwrap().unwrap().to_vec();
        assert_eq!(v[0], 2, "20 small events are packed under the first seq");
        let seventh = packed_record(&v, 6);
        v[seventh.start + 10] ^= 0x40;
        t.insert(k, v).unwrap();
    });
    {
        let store = SledStore::open(dir.path()).unwrap();
        let report = store.verify().unwrap();
        assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
        assert_eq!(report.errors[0].seq, Some(7));
        assert!(
            report.errors[0].detail.contains("CRC32C"),
            "{:?}",
            report.errors
        );
        assert_eq!(report.events, 25);
        let got: Vec<_> = store.read(a, 1).unwrap().collect();
        assert_eq!(got.len(), 7);
        assert!(matches!(got[6], Err(ReadError::Corrupt { seq: 7, .. })));
        assert_eq!(store.read(a, 8).unwrap().filter(|e| e.is_ok()).count(), 18);
    }
    corrupt(dir.path(), |t| {
        let k = record::key(a, 1);
        let mut v = t.get(k).unwrap().unwrap().to_vec();
        v[1] = 0xff; // the count: the lengths no longer fill the pack
        t.insert(k, v).unwrap();
    });
    let store = SledStore::open(dir.path()).unwrap();
    let report = store.verify().unwrap();
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert_eq!(report.errors[0].seq, Some(1));
    assert!(
        report.errors[0].detail.contains("do not read"),
        "{:?}",
        report.errors
    );
    let first = store.read(a, 1).unwrap().next().unwrap();
    assert!(
        matches!(first, Err(ReadError::Corrupt { seq: 1, .. })),
        "{first:?}"
    );
    let from_5 = store.read(a, 5).unwrap().next().unwrap();
    assert!(
        matches!(from_5, Err(ReadError::Corrupt { seq: 5, .. })),
        "{from_5:?}"
    );
    assert_eq!(store.read(a, 21).unwrap().filter(|e| e.is_ok()).count(), 5);
}
