//! What the conformance suite (`tests/conformance.rs`) does not cover of
//! the sled store: its snapshots and flushes through the trait, and its
//! configuration.

use ctxlog_sled::{SledStore, StoreConfig};
use ctxlog_store::conformance::session_events;
use ctxlog_store::{EventLog, Expected, OpenError, SessionStates};
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
