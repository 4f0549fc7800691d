//! Many hooks at once on one store: eight sessions' recordings grow while
//! their agents' hooks call `ctxlog hook` after every turn, all at once,
//! beside `import --follow` holding the store, which is killed with
//! SIGKILL in the middle, while `sessions` and `search` read it. Every
//! hook returns 0 and none fails for being second; every read succeeds;
//! nothing a hook stored is lost; every session ends as importing its
//! recording alone stores it; the store verifies.

mod common;
mod hooks;

use ctxlog_core::Envelope;
use ctxlog_store::EventLog;
use hooks::Hooked;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SESSIONS: usize = 8;
const TURNS: usize = 160;
/// The hook runs after every this many turns.
const TURNS_PER_CALL: usize = 20;

/// Grows `file` to `recording` turn by turn, calling the hook as pi's
/// extension would after each `TURNS_PER_CALL` turns; each call's exit
/// status.
fn grow_and_call(hooked: &Hooked, file: &Path, recording: &str, n: usize) -> Vec<bool> {
    let lines: Vec<&str> = recording.lines().collect();
    let mut f = std::fs::File::create(file).unwrap();
    // The header, then four lines a turn.
    f.write_all(format!("{}\n", lines[0]).as_bytes()).unwrap();
    let mut statuses = Vec::new();
    for (t, turn) in lines[1..].chunks(4).enumerate() {
        f.write_all(format!("{}\n", turn.join("\n")).as_bytes())
            .unwrap();
        if (t + 1) % TURNS_PER_CALL != 0 {
            continue;
        }
        let payload = json!({
            "hook_event_name": "agent_end",
            "session_id": format!("session-{n}"),
            "transcript_path": file,
            "cwd": "/",
        });
        let mut child = hooked
            .ctxlog(Path::new(env!("CARGO_BIN_EXE_ctxlog")), &["hook", "pi"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        statuses.push(out.status.success() && out.stdout.is_empty());
    }
    statuses
}

#[test]
fn eight_sessions_hooks_at_once_survive_the_holders_kill() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hook-storm");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join("home")).unwrap();
    let hooked = Hooked::new(&work, &work.join("home"));
    let recordings: Vec<String> = (0..SESSIONS)
        .map(|n| common::pi_recording(n, TURNS))
        .collect();
    let files: Vec<PathBuf> = (0..SESSIONS)
        .map(|n| work.join(format!("s{n}.jsonl")))
        .collect();
    let held = work.join("held.jsonl");
    std::fs::write(&held, common::pi_recording(99, 3)).unwrap();

    // What importing each alone stores.
    let alone = work.join("alone");
    for (f, r) in files.iter().zip(&recordings) {
        std::fs::write(f, r).unwrap();
        common::succeeds(&alone, &["import", f.to_str().unwrap()]);
    }
    let expected = common::contents(&alone);

    let mut holder = hooked
        .ctxlog(
            Path::new(env!("CARGO_BIN_EXE_ctxlog")),
            &["import", "--follow", "--interval", "100"],
        )
        .arg(&held)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while ctxlog_sled::RemoteLog::connect(&hooked.db)
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
    let done = std::sync::atomic::AtomicBool::new(false);
    let (statuses, killed_at) = std::thread::scope(|scope| {
        let calls: Vec<_> = files
            .iter()
            .zip(&recordings)
            .enumerate()
            .map(|(n, (f, r))| {
                let hooked = &hooked;
                scope.spawn(move || grow_and_call(hooked, f, r, n))
            })
            .collect();
        // Readers all along: the session list and a search (which brings
        // the index up to the log as it grows).
        let reader = scope.spawn(|| read_while(&hooked, &done));
        // Killed in the middle: once hooks stored some sessions through it.
        let holder_log = ctxlog_sled::RemoteLog::connect(&hooked.db).ok().flatten();
        let started = Instant::now();
        while holder_log
            .as_ref()
            .and_then(|l| l.sessions().ok())
            .map_or(0, |s| s.len())
            < 6
        {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no hook stored through the holder"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let killed_at = now_ms();
        let _ = Command::new("kill")
            .args(["-KILL", &holder.id().to_string()])
            .status();
        let statuses: Vec<_> = calls.into_iter().map(|c| c.join().unwrap()).collect();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let reads = reader.join().unwrap();
        assert!(reads > 0, "no read ran beside the hooks");
        (statuses, killed_at)
    });
    let _ = holder.wait();
    hooked.settle();
    for (n, s) in statuses.iter().enumerate() {
        assert_eq!(s.len(), TURNS / TURNS_PER_CALL, "session {n}");
        assert!(
            s.iter().all(|ok| *ok),
            "session {n}: a hook did not exit 0 quietly: {s:?}"
        );
    }
    let runs = hooked.runs();
    let failed: Vec<_> = runs.iter().filter(|r| r["result"] == "failed").collect();
    assert!(failed.is_empty(), "hooks failed: {failed:#?}");

    // Nothing a hook stored is lost: each session's head is at least what
    // every hook said it stored, and the session is what importing its
    // recording alone stores (its descriptions too, but for the marks of
    // where imports would end and the hooks' captures).
    let stored = common::contents(&hooked.db);
    let mut acknowledged = 0;
    for r in runs.iter().filter(|r| r["result"] == "stored") {
        let session: ctxlog_core::SessionId =
            ctxlog_core::SessionId(r["session"].as_str().unwrap().parse().unwrap());
        let head = r["head"].as_u64().unwrap() as usize;
        assert!(
            stored[&session].len() >= head,
            "{session} lost what a hook stored: {r}"
        );
        acknowledged += 1;
    }
    assert!(acknowledged >= SESSIONS, "{runs:#?}");
    let after_kill = runs
        .iter()
        .filter(|r| r["result"] == "stored" && r["at"].as_u64().unwrap() > killed_at)
        .count();
    assert!(
        after_kill > 0,
        "every hook ran before the holder's kill: make the recordings longer"
    );
    let described = |events: &[Envelope]| -> Vec<ctxlog_core::Event> {
        events
            .iter()
            .filter(|e| {
                !matches!(
                    e.event,
                    ctxlog_core::Event::ImportStarted { .. } | ctxlog_core::Event::Captured { .. }
                )
            })
            .map(|e| e.event.clone())
            .collect()
    };
    for (session, events) in &expected {
        let got = &stored[session];
        if ctxlog_core::is_description_stream(*session) {
            assert_eq!(described(got), described(events), "stream {session}");
            continue;
        }
        assert_eq!(got.len(), events.len(), "session {session}");
        for (a, b) in got.iter().zip(events) {
            assert_eq!(
                (a.seq, a.id, &a.event),
                (b.seq, b.id, &b.event),
                "session {session}"
            );
        }
    }
    let verify = hooked.json(&["verify"]);
    assert_eq!(verify["ok"], true, "{verify}");
    let _ = std::fs::remove_dir_all(&work);
}

/// Lists the sessions and searches them over and over until `done`;
/// every read must succeed. How many ran.
fn read_while(hooked: &Hooked, done: &std::sync::atomic::AtomicBool) -> usize {
    let mut reads = 0;
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        for args in [&["sessions"][..], &["search", "\"step 7 of session\""][..]] {
            let out = hooked
                .ctxlog(Path::new(env!("CARGO_BIN_EXE_ctxlog")), args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "ctxlog {args:?} beside the hooks: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            reads += 1;
        }
    }
    reads
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}
