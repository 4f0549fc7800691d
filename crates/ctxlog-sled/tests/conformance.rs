//! The log conformance suite (`ctxlog_store::conformance`), unchanged, on
//! the durable `SledStore`.

use ctxlog_sled::SledStore;
use ctxlog_store::conformance::Harness;
use ctxlog_testkit::TempDir;

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

mod sled_store {
    ctxlog_store::conformance_tests!(super::Sled::default());
}
