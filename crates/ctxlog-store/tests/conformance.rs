//! The log conformance suite (`ctxlog_store::conformance`) on both logs
//! of this crate: the in-memory `MemoryLog` and the durable `SledStore`.

use ctxlog_store::conformance::Harness;
use ctxlog_store::{MemoryLog, SledStore};
use ctxlog_testkit::TempDir;

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

/// Fresh sled stores, each in its own temporary directory.
#[derive(Default)]
struct Sled {
    dirs: Vec<TempDir>,
}

impl Harness for Sled {
    type Log = SledStore;

    fn fresh(&mut self) -> SledStore {
        let dir = TempDir::new("conformance");
        let store = SledStore::open(dir.path()).expect("a fresh store opens");
        self.dirs.push(dir);
        store
    }

    fn verify(&self, log: &SledStore) -> Result<(), String> {
        let report = log.verify().map_err(|e| e.to_string())?;
        if report.ok() {
            Ok(())
        } else {
            Err(format!("{:?}", report.errors))
        }
    }

    fn keeps_snapshots(&self) -> bool {
        true
    }
}

mod memory_log {
    ctxlog_store::conformance_tests!(super::Memory);
}

mod sled_store {
    ctxlog_store::conformance_tests!(super::Sled::default());
}
