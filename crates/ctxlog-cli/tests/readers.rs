//! Readers in other processes while a writer holds the store: the writer's
//! process serves them (sled lets one process open a store), with every
//! event it acknowledged before the reader started; a holder that does not
//! answer is named.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;

/// A fresh store path; `long` makes it longer than a Unix socket path may
/// be, so that the socket is reached through the directory's descriptor.
fn store(name: &str, long: bool) -> PathBuf {
    let mut dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    if long {
        dir = dir.join("a-store-path-longer-than-a-unix-socket-address-may-be-".repeat(2));
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    dir
}

/// `ctxlog stress` holding the store, and the last seq it acknowledged per
/// session.
struct Writer {
    child: Child,
    acked: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl Writer {
    fn start(db: &Path, sessions: u32, events: u32) -> Writer {
        let mut child = common::ctxlog_on(db, &["stress", "--sessions", &sessions.to_string()])
            .args(["--events", &events.to_string(), "--seed", "41"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let acked = Arc::new(Mutex::new(BTreeMap::new()));
        let out = BufReader::new(child.stdout.take().unwrap());
        let into = acked.clone();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let f: Vec<&str> = line.split_whitespace().collect();
                if let ["ACK", session, seq] = f[..] {
                    let seq: u64 = seq.parse().unwrap();
                    let mut acked = into.lock().unwrap();
                    let last = acked.entry(session.to_string()).or_insert(0);
                    *last = (*last).max(seq);
                }
            }
        });
        let started = Instant::now();
        while acked.lock().unwrap().len() < sessions as usize {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the writer acknowledged nothing"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Writer { child, acked }
    }

    fn acked(&self) -> BTreeMap<String, u64> {
        self.acked.lock().unwrap().clone()
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs every command at once, each in its own process; their outputs.
fn run_at_once(db: &Path, commands: &[Vec<&str>]) -> Vec<Output> {
    let children: Vec<Child> = commands
        .iter()
        .map(|args| {
            common::ctxlog_on(db, args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

fn out_text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Every read command, run at once from separate processes while `stress`
/// appends, succeeds through the writer and sees at least what was
/// acknowledged before it started; heads only grow; after the writer is
/// killed the store opens directly and holds every acknowledged event.
#[test]
fn readers_in_other_processes_see_every_acknowledged_event_while_a_writer_runs() {
    let db = store("readers", true);
    // More than any machine writes in the rounds below (the writer is
    // killed after them): how fast it writes must not decide whether
    // readers meet it. Two earlier bounds (20k, then 80k events) were
    // written before the third round once the writer got faster.
    let mut writer = Writer::start(&db, 2, u32::MAX);
    let pid = writer.child.id();
    let held = format!("is held by process {pid}");
    let mut last_heads: BTreeMap<String, u64> = BTreeMap::new();
    let mut served_rounds = 0;
    // Three rounds: each reads the whole first session, which grows while
    // the writer runs, so more rounds only make the test longer.
    for _ in 0..3 {
        let acked = writer.acked();
        let first = acked.keys().next().unwrap().clone();
        let commands: Vec<Vec<&str>> = vec![
            vec!["--json", "sessions"],
            vec!["--json", "verify"],
            vec!["replay", &first],
            vec!["audit", &first],
            vec!["window", &first],
            vec!["--json", "export", &first],
        ];
        let outs = run_at_once(&db, &commands);
        if !writer.running() {
            break;
        }
        served_rounds += 1;
        for (args, o) in commands.iter().zip(&outs) {
            let text = out_text(o);
            assert_eq!(o.status.code(), Some(0), "{args:?}: {text}");
            assert!(
                String::from_utf8_lossy(&o.stderr).contains(&held),
                "{args:?} was not served by the writer: {text}"
            );
        }
        let listed = common::json_of(&outs[0]);
        let mut heads = BTreeMap::new();
        for s in listed["sessions"].as_array().unwrap() {
            let id = s["session"].as_str().unwrap().to_string();
            heads.insert(id, s["events"].as_u64().unwrap());
        }
        let verified = common::json_of(&outs[1]);
        assert_eq!(verified["ok"], true, "{verified}");
        for (session, seq) in &acked {
            assert!(
                heads[session] >= *seq,
                "sessions: {session} {heads:?} < {seq}"
            );
            let head = verified["heads"][session].as_u64().unwrap();
            assert!(head >= *seq, "verify: {session} {head} < {seq}");
            assert!(
                last_heads.get(session).is_none_or(|h| heads[session] >= *h),
                "{session} went back from {last_heads:?} to {heads:?}"
            );
        }
        let replayed = String::from_utf8_lossy(&outs[2].stdout).to_string();
        let head: u64 = replayed
            .split("head ")
            .nth(1)
            .and_then(|t| t.split(',').next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("replay: {replayed}"));
        assert!(head >= acked[&first], "replay: {replayed}");
        last_heads = heads;
    }
    assert!(
        served_rounds >= 3,
        "the writer finished before the readers could be tested ({served_rounds} rounds)"
    );
    let acked = writer.acked();
    drop(writer);
    // The killed writer left its socket; nobody answers it, so the reader
    // opens the store itself.
    let o = common::ctxlog_on(&db, &["--json", "verify"])
        .output()
        .unwrap();
    let verified = common::json_of(&o);
    assert_eq!(verified["ok"], true, "{}", out_text(&o));
    assert!(!String::from_utf8_lossy(&o.stderr).contains(&held));
    for (session, seq) in &acked {
        assert!(verified["heads"][session].as_u64().unwrap() >= *seq);
    }
    let _ = std::fs::remove_dir_all(&db);
}

/// A holder that does not answer (stopped here) is named, with its command
/// line, about a second after the reader asks; the reader exits 1.
#[test]
fn a_holder_that_does_not_answer_is_named() {
    let db = store("unanswered", false);
    let writer = Writer::start(&db, 1, 20_000);
    let pid = writer.child.id().to_string();
    let signal = |s: &str| {
        let status = Command::new("kill").args([s, &pid]).status().unwrap();
        assert!(status.success());
    };
    signal("-STOP");
    let o = common::ctxlog_on(&db, &["sessions"]).output().unwrap();
    signal("-CONT");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(
        err.contains(&format!("held by process {pid}")) && err.contains("stress"),
        "{err}"
    );
    assert!(err.contains("did not serve this reader"), "{err}");
    drop(writer);
    let _ = std::fs::remove_dir_all(&db);
}

/// A command that writes while another process holds the store writes
/// through that process, and says so; nothing speaks of damage.
#[test]
fn a_write_while_another_process_holds_the_store_goes_through_it() {
    let db = store("write-in-use", false);
    let writer = Writer::start(&db, 1, 20_000);
    let pid = writer.child.id();
    let fixture = common::root().join("fixtures/sessions/pi/edge-cases.jsonl");
    let o = common::ctxlog_on(&db, &["import"])
        .arg(&fixture)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    assert!(
        err.contains(&format!("held by process {pid}: writing through it")),
        "{err}"
    );
    let o = common::ctxlog_on(&db, &["compact", "no-such-session"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(err.contains("no session \"no-such-session\""), "{err}");
    assert!(!err.contains("damaged") && !err.contains("backup"), "{err}");
    let o = common::ctxlog_on(&db, &["sessions", "--json"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("5e1f0c2a-9b8d-4e7f-a6c5-b4d3e2f1a0b9"),
        "{}",
        out_text(&o)
    );
    drop(writer);
    let _ = std::fs::remove_dir_all(&db);
}

/// Read commands started at once on a store nobody holds: the first to open
/// it serves the others, and outlives its own work until they are answered;
/// every one succeeds with the same answer.
#[test]
fn readers_started_at_once_on_a_free_store_all_succeed() {
    let db = store("readers-at-once", false);
    let made = common::ctxlog_on(&db, &["stress", "--sessions", "2", "--events", "3000"])
        .args(["--batch", "25", "--seed", "43"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", out_text(&made));
    let listed = common::json_of(
        &common::ctxlog_on(&db, &["--json", "sessions"])
            .output()
            .unwrap(),
    );
    let first = listed["sessions"][0]["session"]
        .as_str()
        .unwrap()
        .to_string();
    let mut served = 0;
    for _ in 0..3 {
        let commands: Vec<Vec<&str>> = (0..8)
            .map(|i| match i % 3 {
                0 => vec!["--json", "sessions"],
                1 => vec!["replay", &first],
                _ => vec!["--json", "verify"],
            })
            .collect();
        let outs = run_at_once(&db, &commands);
        for (i, o) in outs.iter().enumerate() {
            assert_eq!(o.status.code(), Some(0), "{}", out_text(o));
            served += usize::from(String::from_utf8_lossy(&o.stderr).contains("is held by"));
            if i % 3 == 0 {
                assert_eq!(common::json_of(o)["sessions"], listed["sessions"]);
            }
            if i % 3 == 1 {
                let text = String::from_utf8_lossy(&o.stdout);
                assert!(text.contains("3000 events replayed, head 3000"), "{text}");
            }
        }
    }
    eprintln!("{served} of 24 readers were served by another reader");
    assert!(
        served > 0,
        "no reader was served by the one that held the store"
    );
    assert!(
        !db.join("owner.sock").exists(),
        "every reader closed the store"
    );
    let _ = std::fs::remove_dir_all(&db);
}
