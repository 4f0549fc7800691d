//! A held store takes writes: every `ctxlog` process that writes a sled
//! store another process holds writes through that process, and one that
//! finds no holder becomes one. Ten imports start at once on a store that
//! `import --follow` holds (eight of different sessions, two of the same
//! one), the holder is killed with SIGKILL while they run, and every import
//! must succeed, with every session as importing it alone stores it.

mod common;
use ctxlog_core::Envelope;
use ctxlog_store::EventLog;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Turns of each generated recording (three events and a step each).
const TURNS: usize = 600;

fn import(db: &Path, file: &Path) -> Child {
    common::ctxlog_on(db, &["import"])
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn writes_go_through_the_holder_and_survive_its_kill() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("shared-writes");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let files: Vec<PathBuf> = (0..8)
        .map(|n| {
            let f = work.join(format!("s{n}.jsonl"));
            std::fs::write(&f, common::pi_recording(n, TURNS)).unwrap();
            f
        })
        .collect();
    let held = work.join("held.jsonl");
    std::fs::write(&held, common::pi_recording(99, 3)).unwrap();

    // What importing each alone stores.
    let alone = work.join("alone");
    for f in files.iter().chain([&held]) {
        common::succeeds(&alone, &["import", f.to_str().unwrap()]);
    }
    let expected = common::contents(&alone);

    let db = work.join("store");
    let mut holder = common::ctxlog_on(&db, &["import", "--follow", "--interval", "100"])
        .arg(&held)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The holder serves once its socket answers.
    let started = Instant::now();
    while ctxlog_sled::RemoteLog::connect(&db)
        .ok()
        .flatten()
        .is_none()
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the holder never served"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let holder_pid = holder.id();

    let mut imports: Vec<Child> = files.iter().map(|f| import(&db, f)).collect();
    // The same recording twice at once.
    imports.push(import(&db, &files[0]));
    imports.push(import(&db, &files[0]));
    // Killed in the middle: once the first import's events are durable
    // through it, while the others still write.
    let holder_log = ctxlog_sled::RemoteLog::connect(&db)
        .ok()
        .flatten()
        .expect("the holder serves");
    let started = Instant::now();
    while holder_log.sessions().map_or(0, |s| s.len()) < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no import wrote through the holder"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let running = imports
        .iter_mut()
        .map(|c| c.try_wait().unwrap().is_none())
        .filter(|&r| r)
        .count();
    let _ = Command::new("kill")
        .args(["-KILL", &holder_pid.to_string()])
        .status();
    let _ = holder.wait();

    let mut through_holder = 0;
    for (n, child) in imports.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "import {n} failed: {err}\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!err.contains("damaged") && !err.contains("backup"), "{err}");
        through_holder += usize::from(err.contains(&format!("held by process {holder_pid}")));
    }
    assert!(
        through_holder > 0,
        "no import wrote through the holder ({running} running at the kill)"
    );
    assert!(
        running > 0,
        "every import ended before the holder was killed: make the recordings longer"
    );
    // Nothing acknowledged is lost, nothing is stored twice: the store
    // holds every session exactly as importing it alone does.
    let stored = common::contents(&db);
    assert_eq!(
        stored.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (session, events) in &expected {
        let got = &stored[session];
        if !ctxlog_core::is_description_stream(*session) {
            assert_eq!(got.len(), events.len(), "session {session}");
            for (a, b) in got.iter().zip(events) {
                assert_eq!(
                    (a.seq, a.id, &a.event),
                    (b.seq, b.id, &b.event),
                    "session {session}"
                );
            }
            continue;
        }
        // Each import that stores in several batches marks where it will
        // end first: two imports of one recording at once may both do so.
        // The descriptions themselves are the same.
        let described = |events: &[Envelope]| -> Vec<ctxlog_core::Event> {
            events
                .iter()
                .filter(|e| !matches!(e.event, ctxlog_core::Event::ImportStarted { .. }))
                .map(|e| e.event.clone())
                .collect()
        };
        assert_eq!(described(got), described(events), "stream {session}");
    }
    let _ = std::fs::remove_dir_all(&work);
}
