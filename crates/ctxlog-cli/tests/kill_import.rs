//! Interrupted imports and compactions never lock users out: a child
//! `ctxlog import` or `ctxlog compact` is killed with SIGKILL at a random
//! moment; after every kill the store must open, verify, hold each session
//! as a prefix of what importing it whole stores (an import appends in
//! batches: a kill leaves the batches before it), every session must
//! replay, and importing the file again must make its session whole.

mod common;
use common::Rng;
use ctxlog_core::{Envelope, SessionId};
use ctxlog_sled::SledStore;
use ctxlog_store::{EventLog, SessionStates};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// At least this many kill cycles...
const MIN_CYCLES: u32 = 100;
/// ...and more while this much time has not passed (at most `MAX_CYCLES`).
const BUDGET: Duration = Duration::from_secs(40);
/// Upper bound on cycles.
const MAX_CYCLES: u32 = 400;

/// The recordings imported: the fixtures, and the real sessions when present.
fn recordings() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["fixtures/sessions", "../shared/sessions"] {
        for format in ["opencode", "claude-code", "codex", "pi"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir).join(format)) else {
                continue;
            };
            let mut found: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            found.sort();
            files.extend(found);
        }
    }
    files
}

/// Runs `cmd`, killing it with SIGKILL after `after` if it is still running;
/// whether it was killed.
fn run_killed_after(mut cmd: Command, after: Duration) -> bool {
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    while started.elapsed() < after {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let killed = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    killed
}

/// Every session of the store at `db` with its events; the store opens,
/// verifies and every session replays.
fn check(db: &Path, context: &str) -> BTreeMap<SessionId, Vec<Envelope>> {
    let store =
        SledStore::open(db).unwrap_or_else(|e| panic!("{context}: the store does not open: {e}"));
    let report = store.verify().unwrap();
    assert!(report.ok(), "{context}: verify: {:?}", report.errors);
    let mut sessions = BTreeMap::new();
    for (s, _) in store.sessions().unwrap() {
        if ctxlog_core::is_description_stream(s) {
            // Descriptions: not a session to replay, read below.
            let events: Vec<Envelope> = store
                .read(s, 1)
                .and_then(|it| it.collect())
                .unwrap_or_else(|e| panic!("{context}: stream {s} does not read: {e}"));
            sessions.insert(s, events);
            continue;
        }
        store
            .replay(s)
            .unwrap_or_else(|e| panic!("{context}: session {s} does not replay: {e}"));
        let events: Vec<Envelope> = store
            .read(s, 1)
            .and_then(|it| it.collect())
            .unwrap_or_else(|e| panic!("{context}: session {s} does not read: {e}"));
        sessions.insert(s, events);
    }
    sessions
}

#[test]
fn killed_imports_and_compactions_leave_stores_that_open_whole() {
    let files = recordings();
    assert!(files.len() >= 4);
    let base = std::env::temp_dir().join(format!("ctxlog-kill-import-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    // The whole sessions, from a store that imported everything undisturbed; and
    // how long each import takes, to kill inside it.
    let reference = base.join("reference");
    let mut took = Vec::new();
    for f in &files {
        let t = Instant::now();
        let ok = ctxlog(&reference, &["import", f.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(ok.success(), "{}", f.display());
        took.push(t.elapsed());
    }
    let whole = check(&reference, "reference");
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("kill import test seed {seed}");
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    let (mut cycles, mut killed, mut session_checks) = (0u32, 0u32, 0u32);
    let mut db = base.join("store-0");
    let mut imported = 0usize;
    while cycles < MIN_CYCLES || (started.elapsed() < BUDGET && cycles < MAX_CYCLES) {
        if imported == files.len() {
            let _ = std::fs::remove_dir_all(&db);
            db = base.join(format!("store-{cycles}"));
            imported = 0;
        }
        let i = imported;
        let limit = took[i].as_micros() as u64 + 1;
        let after = Duration::from_micros(rng.next_u64() % limit);
        let compaction = rng.next_u64().is_multiple_of(4);
        let context = format!(
            "cycle {cycles}: {} {} killed after {after:?} (seed {seed}), store {}",
            if compaction { "compact of" } else { "import" },
            files[i].display(),
            db.display()
        );
        let cmd = if compaction && i > 0 {
            // Compact one of the sessions imported so far (the first by id).
            let prev = check(&db, &context);
            let session = prev.keys().next().map(|s| s.to_string());
            match session {
                Some(s) => ctxlog(&db, &["compact", &s]),
                None => ctxlog(&db, &["import", files[i].to_str().unwrap()]),
            }
        } else {
            ctxlog(&db, &["import", files[i].to_str().unwrap()])
        };
        killed += u32::from(run_killed_after(cmd, after));
        let stored = check(&db, &context);
        for (s, events) in &stored {
            if ctxlog_core::is_description_stream(*s) {
                // A history of descriptions and import marks: each import
                // adds its own, so it is no prefix of the reference's.
                continue;
            }
            let want: &[Envelope] = whole.get(s).map_or(&[], |w| w);
            // An import leaves a prefix of the whole session (the batches
            // appended before the kill); a compaction only adds events
            // after it.
            let shared = events.len().min(want.len());
            assert!(
                events[..shared] == want[..shared],
                "{context}: session {s} is not a prefix of its import ({} of {} events)",
                events.len(),
                want.len()
            );
        }
        session_checks += stored.len() as u32;
        if !compaction || i == 0 {
            imported += 1;
            // Importing again completes what the kill cut short.
            let ok = ctxlog(&db, &["import", files[i].to_str().unwrap()])
                .status()
                .unwrap();
            assert!(ok.success(), "{context}: importing again failed");
            // and clears the mark the kill may have left.
            let listed = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
                .arg("--db")
                .arg(&db)
                .args(["sessions", "--json"])
                .output()
                .unwrap();
            let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
            for row in listed["sessions"].as_array().unwrap() {
                assert_eq!(
                    row["interrupted"], false,
                    "{context}: after importing again: {row}"
                );
            }
            for (s, events) in check(&db, &context) {
                let want = whole.get(&s).map_or(0, Vec::len);
                assert!(
                    events.len() >= want,
                    "{context}: after importing again, session {s} holds {} of its {want} events",
                    events.len()
                );
            }
        }
        cycles += 1;
    }
    eprintln!(
        "{cycles} cycles, {killed} killed mid-command, {session_checks} session checks, {:?}",
        started.elapsed()
    );
    assert!(
        killed > cycles / 4,
        "too few kills landed mid-command: {killed} of {cycles}"
    );
    let _ = std::fs::remove_dir_all(&base);
}

/// `ctxlog args` on `db`, its output discarded.
fn ctxlog(db: &Path, args: &[&str]) -> Command {
    let mut c = common::ctxlog_on(db, args);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    c
}
