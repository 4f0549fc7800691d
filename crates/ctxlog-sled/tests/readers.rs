//! Readers served through the owner while it appends (each test file is a
//! process of its own: the owner's slots are counted per process).

mod common;

use common::{assert_all_stored, spawn_writer};
use ctxlog_sled::*;
use ctxlog_store::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Readers served while the writer appends: verifications report no false
/// error for appends in flight (the scan runs beside the writer, the heads
/// are checked on its thread), reads see only durable events, and every
/// acknowledged event is there.
#[test]
fn readers_beside_a_writer_see_a_consistent_store() {
    let dir: PathBuf = std::env::temp_dir().join(format!("ctxlog-readers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = SledStore::open(&dir).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_writer(&store, 100, 40, 300, &stop);
    let readers: Vec<_> = (0..4)
        .map(|r| {
            let dir = dir.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut verifies = 0;
                while !stop.load(Ordering::SeqCst) {
                    let remote = RemoteLog::connect(&dir).unwrap().expect("served");
                    if r % 2 == 0 {
                        let report = remote.verify().unwrap();
                        assert!(
                            report.ok(),
                            "a false error beside the writer: {:?}",
                            report.errors
                        );
                        verifies += 1;
                    } else {
                        for (s, head) in remote.sessions().unwrap() {
                            let read: Vec<_> =
                                remote.read(s, 1).unwrap().map(|e| e.unwrap().seq).collect();
                            assert!(
                                read.len() as u64 >= head.min(1)
                                    && read.windows(2).all(|w| w[1] == w[0] + 1)
                            );
                        }
                    }
                }
                verifies
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::SeqCst);
    let acked = writer.join().unwrap();
    let verifies: u32 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(verifies > 0, "verifications ran");
    assert_all_stored(&store, &acked);
    let report = store.verify().unwrap();
    assert!(report.ok(), "{:?}", report.errors);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
