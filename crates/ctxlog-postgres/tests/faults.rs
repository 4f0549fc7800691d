//! The server failing under an engine that appends: killed with SIGKILL
//! and restarted, its connections terminated mid-transaction, a statement
//! timeout. Nothing acknowledged is lost, every failure is a clear error,
//! and the engine goes on once the server is back. Each test runs its own
//! throw-away cluster (`.ci/postgres`), since it kills it; they run where
//! the test server runs (`CTXLOG_TEST_POSTGRES`).

use ctxlog_core::{ModelLimits, SeededIds, SessionId};
use ctxlog_engine::{Engine, EngineBuilder, ManualClock, NewSession};
use ctxlog_postgres::PgLog;
use ctxlog_store::conformance::session_events;
use ctxlog_store::{EventLog, Expected};
use ctxlog_testkit::TempDir;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The first key of the advisory lock that queues a session's appends
/// (`append.rs`).
const SESSION_LOCKS: i32 = 0x6374_786c;

/// A cluster of the test's own, stopped and removed on drop.
struct Cluster {
    dir: TempDir,
    url: String,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.ci/postgres")
}

impl Cluster {
    fn start(test: &str) -> Option<Cluster> {
        // Where the shared test server runs, the server's tools are there.
        ctxlog_testkit::postgres_url(test)?;
        let dir = TempDir::new(test);
        let out = Command::new(script())
            .args(["start", dir.path().to_str().unwrap()])
            .output()
            .expect("run .ci/postgres");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        Some(Cluster { dir, url })
    }

    fn run(&self, what: &str) {
        let out = Command::new(script())
            .args([what, self.dir.path().to_str().unwrap()])
            .output()
            .expect("run .ci/postgres");
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .args(["stop", self.dir.path().to_str().unwrap()])
            .output();
    }
}

fn engine(log: PgLog) -> Engine<PgLog> {
    EngineBuilder::new()
        .ids(SeededIds::new(7))
        .clock(Arc::new(ManualClock::new(1_780_000_000_000)))
        .build(log)
        .unwrap()
}

/// An engine on the log at `url`, and a new session in it.
fn engine_with_session(url: &str) -> (Engine<PgLog>, SessionId) {
    let engine = engine(PgLog::open(url).unwrap());
    let session = engine
        .create_session(NewSession::new(ModelLimits::default()))
        .unwrap()
        .id();
    (engine, session)
}

/// Appends user messages for `for_how_long`, calling `fault` once after
/// `after` acknowledgements; the acknowledged messages and the errors.
fn append_through(
    engine: &Engine<PgLog>,
    session: SessionId,
    after: usize,
    for_how_long: Duration,
    fault: impl FnOnce(),
) -> (Vec<String>, Vec<String>) {
    let mut acked = Vec::new();
    let mut errors = Vec::new();
    let mut fault = Some(fault);
    let end = Instant::now() + for_how_long;
    let mut n = 0;
    while Instant::now() < end || acked.len() < after * 2 {
        let text = format!("message {n}");
        n += 1;
        match engine.session(session).and_then(|s| s.user(&text)) {
            Ok(_) => acked.push(text),
            Err(e) => {
                errors.push(e.to_string());
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        if acked.len() == after {
            if let Some(f) = fault.take() {
                f();
            }
        }
        assert!(n < 100_000, "the engine never recovered: {errors:?}");
    }
    (acked, errors)
}

/// Every acknowledged message is in the session, read afresh.
fn all_there(url: &str, session: SessionId, acked: &[String]) {
    let log = PgLog::open(url).unwrap();
    let stored: BTreeSet<String> = log
        .read(session, 1)
        .unwrap()
        .map(|e| format!("{:?}", e.unwrap().event))
        .collect();
    for text in acked {
        assert!(
            stored.iter().any(|e| e.contains(&format!("\"{text}\""))),
            "acknowledged {text:?} is lost"
        );
    }
    let report = log.verify().unwrap();
    assert!(report.ok(), "{:?}", report.errors);
}

#[test]
fn a_server_killed_and_restarted_loses_nothing_acknowledged() {
    let Some(cluster) = Cluster::start("pg_killed") else {
        return;
    };
    let (engine, session) = engine_with_session(&cluster.url);
    let (acked, errors) = append_through(&engine, session, 100, Duration::from_secs(3), || {
        cluster.run("kill");
        let down = PgLog::open(&cluster.url).unwrap_err().to_string();
        assert!(down.contains("cannot connect"), "{down}");
        std::thread::sleep(Duration::from_millis(500));
        cluster.run("restart");
    });
    assert!(!errors.is_empty(), "the kill was not seen");
    let password = cluster
        .url
        .split('@')
        .next()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap();
    for e in &errors {
        assert!(
            e.contains("127.0.0.1") && !e.contains(password),
            "an error that does not name the server, or shows the password: {e}"
        );
    }
    assert!(acked.len() >= 200, "the engine went on after the restart");
    all_there(&cluster.url, session, &acked);
}

#[test]
fn connections_terminated_mid_transaction_and_a_statement_timeout() {
    let Some(cluster) = Cluster::start("pg_terminated") else {
        return;
    };
    let (engine, session) = engine_with_session(&cluster.url);
    // The killer holds the lock an append to the session takes first, so
    // the next append waits inside its transaction; that backend is then
    // terminated, mid-transaction, five times over.
    let url = cluster.url.clone();
    let killer = std::thread::spawn(move || {
        let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let key = (SESSION_LOCKS, session.to_string());
        let mut terminated = 0;
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(100));
            admin
                .execute(
                    "SELECT pg_advisory_lock($1, hashtext($2))",
                    &[&key.0, &key.1],
                )
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                let rows = admin
                    .query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE application_name = 'ctxlog' AND wait_event_type = 'Lock' \
                           AND state = 'active'",
                        &[],
                    )
                    .unwrap();
                if !rows.is_empty() {
                    terminated += rows.len();
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            admin
                .execute(
                    "SELECT pg_advisory_unlock($1, hashtext($2))",
                    &[&key.0, &key.1],
                )
                .unwrap();
        }
        terminated
    });
    let (acked, errors) = append_through(&engine, session, 50, Duration::from_secs(3), || {});
    let terminated = killer.join().unwrap();
    assert_eq!(
        terminated, 5,
        "an append waiting in its transaction was terminated"
    );
    assert!(
        errors.len() >= 5,
        "each termination failed its append: {errors:?}"
    );
    all_there(&cluster.url, session, &acked);

    // A statement timeout ends an append that runs past it, as an error
    // that says so; nothing of it is stored.
    let slow = PgLog::open(&format!(
        "{}?options=-c%20statement_timeout%3D100",
        cluster.url
    ))
    .unwrap();
    let (s, mut events) = session_events(3, 2);
    events.truncate(1);
    // 48 MiB of text that compresses badly: storing it takes longer.
    let mut rng = ctxlog_testkit::Rng::new(9);
    let big: String = (0..48 << 20)
        .map(|_| char::from(b'a' + rng.below(26) as u8))
        .collect();
    if let ctxlog_core::Event::SessionStarted { title, .. } = &mut events[0].event {
        *title = Some(big);
    }
    let e = slow
        .append(s, Expected::NoStream, events)
        .unwrap_err()
        .to_string();
    assert!(e.contains("statement timeout"), "{e}");
    assert_eq!(PgLog::open(&cluster.url).unwrap().head(s).unwrap(), 0);
}
