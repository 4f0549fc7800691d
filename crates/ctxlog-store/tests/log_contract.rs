//! What the conformance suite (`tests/conformance.rs`) does not cover: a
//! memory log shared by its clones, the sled store's snapshots and flushes
//! through the trait, and its configuration.

use ctxlog_store::conformance::{read_all, session_events};
use ctxlog_store::*;
use ctxlog_testkit::TempDir;

#[test]
fn the_trait_serves_snapshots_and_flushes_of_the_sled_store() {
    let dir = TempDir::new("contract");
    let sled = SledStore::open(dir.path()).unwrap();
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
    assert_eq!(
        read_all(&log, s, 1)
            .iter()
            .map(|e| e.seq)
            .collect::<Vec<_>>(),
        (1..=40).collect::<Vec<_>>()
    );
}

#[test]
fn a_zero_queue_or_group_is_a_config_error() {
    let dir = TempDir::new("contract");
    for (max_group, queue) in [(0, 1), (1, 0)] {
        let config = StoreConfig {
            max_group,
            queue,
            ..StoreConfig::new(dir.path())
        };
        assert!(matches!(
            SledStore::open_with(config),
            Err(OpenError::InvalidConfig(_))
        ));
    }
}
