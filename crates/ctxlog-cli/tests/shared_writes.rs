//! A held store takes writes: every `ctxlog` process that writes a sled
//! store another process holds writes through that process, and one that
//! finds no holder becomes one. Ten imports start at once on a store that
//! `import --follow` holds (eight of different sessions, two of the same
//! one), the holder is killed with SIGKILL while they run, and every import
//! must succeed, with every session as importing it alone stores it.

mod common;
use ctxlog_core::{Envelope, SessionId};
use ctxlog_store::{EventLog, SledStore};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Turns of each generated recording (three events and a step each).
const TURNS: usize = 600;

/// A pi recording of `turns` turns whose session id ends in `n`: a
/// prompt, a tool call, its output (2 KB) and an answer per turn.
fn pi_recording(path: &Path, n: usize, turns: usize) {
    use std::fmt::Write;
    let id = format!("5e1f0c2a-9b8d-4e7f-a6c5-{n:012}");
    let mut out = format!(
        "{{\"type\":\"session\",\"id\":\"{id}\",\"timestamp\":\"2025-11-20T10:00:00.000Z\",\"cwd\":\"/home/dev/p{n}\",\"provider\":\"anthropic\",\"modelId\":\"claude-sonnet-4-5\",\"thinkingLevel\":\"off\"}}\n"
    );
    let output = format!("line of output {n}\n").repeat(100);
    let output = serde_json::to_string(&output).unwrap();
    for t in 0..turns {
        let ms = 1_763_632_800_000u64 + (t as u64) * 10_000;
        let at = |k: u64| {
            let ms = ms + k;
            let secs = ms / 1000;
            format!(
                "2025-11-20T{:02}:{:02}:{:02}.{:03}Z",
                10 + (secs - 1_763_632_800) / 3600,
                (secs / 60) % 60,
                secs % 60,
                ms % 1000
            )
        };
        let input = 1000 + 40 * t as u64;
        writeln!(out, "{{\"type\":\"message\",\"timestamp\":\"{}\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"step {t} of session {n}\"}}],\"timestamp\":{}}}}}", at(0), ms).unwrap();
        writeln!(out, "{{\"type\":\"message\",\"timestamp\":\"{}\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"toolCall\",\"id\":\"call_{t}\",\"name\":\"bash\",\"arguments\":{{\"command\":\"ls {t}\"}}}}],\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"usage\":{{\"input\":{input},\"output\":20,\"cacheRead\":0,\"cacheWrite\":0}},\"stopReason\":\"toolUse\",\"timestamp\":{}}}}}", at(1000), ms + 1000).unwrap();
        writeln!(out, "{{\"type\":\"message\",\"timestamp\":\"{}\",\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"call_{t}\",\"toolName\":\"bash\",\"content\":[{{\"type\":\"text\",\"text\":{output}}}],\"isError\":false,\"timestamp\":{}}}}}", at(2000), ms + 2000).unwrap();
        writeln!(out, "{{\"type\":\"message\",\"timestamp\":\"{}\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"done {t}\"}}],\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"usage\":{{\"input\":{},\"output\":5,\"cacheRead\":0,\"cacheWrite\":0}},\"stopReason\":\"stop\",\"timestamp\":{}}}}}", at(3000), input + 30, ms + 3000).unwrap();
    }
    std::fs::write(path, out).unwrap();
}

/// Every session of the store at `db` (description streams included)
/// with its events, read after the store verifies.
fn contents(db: &Path) -> BTreeMap<SessionId, Vec<Envelope>> {
    let store = SledStore::open(db).unwrap();
    let report = store.verify().unwrap();
    assert!(report.ok(), "verify: {:?}", report.errors);
    store
        .sessions()
        .unwrap()
        .into_iter()
        .map(|(s, _)| (s, store.read(s, 1).unwrap().map(Result::unwrap).collect()))
        .collect()
}

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
            pi_recording(&f, n, TURNS);
            f
        })
        .collect();
    let held = work.join("held.jsonl");
    pi_recording(&held, 99, 3);

    // What importing each alone stores.
    let alone = work.join("alone");
    for f in files.iter().chain([&held]) {
        common::succeeds(&alone, &["import", f.to_str().unwrap()]);
    }
    let expected = contents(&alone);

    let db = work.join("store");
    let mut holder = common::ctxlog_on(&db, &["import", "--follow", "--interval", "100"])
        .arg(&held)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The holder serves once its socket answers.
    let started = Instant::now();
    while ctxlog_store::RemoteLog::connect(&db)
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
    let holder_log = ctxlog_store::RemoteLog::connect(&db)
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
    let stored = contents(&db);
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
