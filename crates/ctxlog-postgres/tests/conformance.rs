//! The log conformance suite on PostgreSQL: each check on fresh logs, each
//! in a schema of its own, dropped afterwards. Needs a server
//! (`CTXLOG_TEST_POSTGRES`); skipped with a message without one, outside CI.

use ctxlog_postgres::{PgLog, PgOptions};
use ctxlog_store::conformance::Harness;
use std::sync::atomic::{AtomicU32, Ordering};

/// Fresh logs on the test server, each in its own schema.
struct Pg {
    url: String,
    schemas: Vec<String>,
}

impl Pg {
    fn from_env(test: &str) -> Option<Pg> {
        Some(Pg {
            url: ctxlog_testkit::postgres_url(test)?,
            schemas: Vec::new(),
        })
    }
}

impl Harness for Pg {
    type Log = PgLog;

    fn fresh(&mut self) -> PgLog {
        static N: AtomicU32 = AtomicU32::new(0);
        let schema = format!(
            "conformance_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        self.schemas.push(schema.clone());
        PgLog::open_with(
            &self.url,
            PgOptions {
                schema: Some(schema),
            },
        )
        .expect("a fresh log opens")
    }

    fn verify(&self, log: &PgLog) -> Result<(), String> {
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

impl Drop for Pg {
    fn drop(&mut self) {
        let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) else {
            return;
        };
        for schema in &self.schemas {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"));
        }
    }
}

ctxlog_store::conformance_tests!(match Pg::from_env(module_path!()) {
    Some(pg) => pg,
    None => return,
});
