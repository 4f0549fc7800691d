//! More readers than the holder answers at once (each test file is a
//! process of its own: the owner's slots are counted per process).

// Only the generated sessions are used here; the writer is the readers test's.
#[allow(dead_code)]
mod common;

use common::events;
use ctxlog_sled::*;
use ctxlog_store::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Sixteen readers of one process, each connecting and reading a whole
/// session again and again, against a holder that answers at most eight
/// requests of a process at once: a reader beyond the eighth waits for a
/// slot, when it connects as when it asks, and none is refused.
#[test]
fn readers_beyond_the_holders_slots_wait_for_one() {
    let dir: PathBuf = std::env::temp_dir().join(format!("ctxlog-busy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = SledStore::open(&dir).unwrap();
    let (session, evs) = events(7, 600);
    let head = evs.len() as u64;
    store.append(session, Expected::NoStream, evs).unwrap();
    let until = Instant::now() + Duration::from_secs(3);
    let readers: Vec<_> = (0..16)
        .map(|_| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let mut reads = 0u32;
                while Instant::now() < until {
                    let remote = RemoteLog::connect(&dir)
                        .unwrap_or_else(|e| panic!("a reader was refused: {e}"))
                        .expect("served");
                    let read = remote
                        .read(session, 1)
                        .unwrap_or_else(|e| panic!("a read was refused: {e}"))
                        .count() as u64;
                    assert_eq!(read, head);
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let reads: u32 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads >= 16, "{reads} reads");
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
