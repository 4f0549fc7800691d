//! The log conformance suite (`ctxlog_store::conformance`) on this
//! crate's log, the in-memory `MemoryLog` (the reference), and what the
//! suite does not cover of it: a memory log shared by its clones.

use ctxlog_store::conformance::Harness;
use ctxlog_store::conformance::{read_all, session_events};
use ctxlog_store::{EventLog, Expected, MemoryLog};

/// Fresh in-memory logs.
struct Memory;

impl Harness for Memory {
    type Log = MemoryLog;

    fn fresh(&mut self) -> MemoryLog {
        MemoryLog::new()
    }

    fn verify(&self, _log: &MemoryLog) -> Result<(), String> {
        // Nothing is stored in a form that can be damaged.
        Ok(())
    }

    fn keeps_snapshots(&self) -> bool {
        false
    }
}

mod memory_log {
    ctxlog_store::conformance_tests!(super::Memory);
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
