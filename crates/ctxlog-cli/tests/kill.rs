//! No acknowledged event is lost to kill -9: a child `ctxlog stress` is
//! killed with SIGKILL at random moments; after each kill the store is
//! reopened and every acknowledged event must be there, sequences contiguous,
//! chains verified, and every session must replay.

mod common;
use common::Rng;
use ctxlog_core::SessionId;
use ctxlog_sled::SledStore;
use ctxlog_store::{EventLog, SessionStates};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// At least this many kill cycles...
const MIN_CYCLES: u32 = 100;
/// ...and more while this much time has not passed (at most `MAX_CYCLES`).
const BUDGET: Duration = Duration::from_secs(30);
/// Upper bound on cycles.
const MAX_CYCLES: u32 = 300;

fn parse_ack(line: &str) -> Option<(SessionId, u64)> {
    let mut f = line.split(' ');
    if f.next()? != "ACK" {
        return None;
    }
    let session = SessionId(uuid::Uuid::from_str(f.next()?).ok()?);
    let seq = f.next()?.parse().ok()?;
    Some((session, seq))
}

#[test]
fn no_acknowledged_event_is_lost_to_sigkill() {
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("kill -9 test seed {seed}");
    let mut rng = Rng::new(seed);
    let base = std::env::temp_dir().join(format!("ctxlog-kill-{}", std::process::id()));
    let started = Instant::now();
    let mut cycles = 0u32;
    let mut acked_total = 0usize;
    let mut mid_write_kills = 0u32;
    // Everything acknowledged in the current database, across its cycles: a
    // later recovery must not lose what an earlier cycle was told.
    let mut acked: BTreeMap<SessionId, u64> = BTreeMap::new();
    while cycles < MIN_CYCLES || (started.elapsed() < BUDGET && cycles < MAX_CYCLES) {
        // A fresh database every 25 cycles keeps each verification short;
        // within a database, later cycles reopen what earlier kills left.
        let db = base.join(format!("db{}", cycles / 25));
        if cycles.is_multiple_of(25) {
            acked.clear();
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
            .args(["stress", "--sessions", "3", "--events", "800", "--batch"])
            .arg((1 + rng.next_u64() % 4).to_string())
            .arg("--db")
            .arg(&db)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ctxlog stress");
        let stdout = child.stdout.take().unwrap();
        let (first_tx, first_rx) = crossbeam_channel::bounded(1);
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = first_tx.try_send(());
                lines.push(line);
            }
            lines
        });
        // Most kills land while the child is writing (after its first
        // acknowledgement); one in eight lands anywhere, startup included.
        if !rng.next_u64().is_multiple_of(8) {
            let _ = first_rx.recv_timeout(Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(rng.next_u64() % 60));
        } else {
            std::thread::sleep(Duration::from_millis(rng.next_u64() % 100));
        }
        let finished = matches!(child.try_wait(), Ok(Some(_)));
        child.kill().ok(); // SIGKILL
        child.wait().unwrap();
        let lines = reader.join().unwrap();
        if !finished && !lines.is_empty() {
            mid_write_kills += 1;
        }
        for line in &lines {
            // A line cut by the kill is not an acknowledgement we can read; a
            // whole line is.
            if let Some((s, q)) = parse_ack(line) {
                let e = acked.entry(s).or_insert(0);
                *e = (*e).max(q);
                acked_total += 1;
            }
        }
        let store = SledStore::open(&db).expect("reopen after SIGKILL");
        let report = store.verify().unwrap();
        assert!(
            report.ok(),
            "cycle {cycles} (seed {seed}): {:?}",
            report.errors
        );
        for (s, q) in &acked {
            let head = store.head(*s).unwrap();
            assert!(
                head >= *q,
                "cycle {cycles} (seed {seed}): session {s} acknowledged {q}, head {head}"
            );
            let state = store
                .replay(*s)
                .unwrap_or_else(|e| panic!("cycle {cycles}: {s} does not replay: {e}"));
            assert_eq!(state.head, head);
        }
        for (s, head) in &report.heads {
            let events: Vec<_> = store.read(*s, 1).unwrap().map(Result::unwrap).collect();
            assert_eq!(events.len() as u64, *head, "contiguous from 1");
        }
        drop(store);
        cycles += 1;
    }
    let _ = std::fs::remove_dir_all(&base);
    eprintln!("{cycles} kill cycles, {acked_total} acknowledgements checked, {mid_write_kills} kills while writing, {:?}", started.elapsed());
    assert!(
        mid_write_kills >= cycles / 2,
        "too few kills landed while the child was writing ({mid_write_kills}/{cycles})"
    );
}
