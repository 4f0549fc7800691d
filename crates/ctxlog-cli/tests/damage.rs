//! Damage test: a store of several real sessions, damaged one way at a time
//! (a flipped bit, a zeroed range, a truncation, a deleted file, over every
//! file of the store), then read through the `ctxlog` binary as a user
//! would. Every trial must end with no panic and no silent wrong answer:
//! `verify` says ok only when every session replays to its original digest,
//! a replay that succeeds gives the original digest, and every reported
//! problem is located (session and seq, or file). A command that hangs
//! (sled can block forever on some damage: about one trial in 1,500 here)
//! is killed after 60 s, counted, and its threads' stacks kept beside the
//! trial.
//!
//! Seeded: `CTXLOG_DAMAGE_SEED` and `CTXLOG_DAMAGE_TRIALS` change the set.

mod common;
use common::Rng;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `ctxlog --json --db DB ARGS`, killed after 60 s: a hang is reported as
/// an exit without a code and `HUNG` on stderr, with every thread's stack in
/// `DB.hang.txt` when gdb is installed.
fn ctxlog(db: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .arg("--json")
        .arg("--db")
        .arg(db)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > Duration::from_secs(60) {
            let stacks = Command::new("gdb")
                .args([
                    "-batch",
                    "-p",
                    &child.id().to_string(),
                    "-ex",
                    "thread apply all bt",
                ])
                .output();
            if let Ok(s) = stacks {
                let _ = std::fs::write(db.with_extension("hang.txt"), s.stdout);
            }
            let _ = child.kill();
            let mut out = child.wait_with_output().unwrap();
            out.stderr.extend_from_slice(b"\nHUNG");
            return out;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn files_of(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_of(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// One way of damaging one file; the description names both.
fn damage(rng: &mut Rng, file: &Path) -> String {
    let len = std::fs::metadata(file).unwrap().len();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    match rng.below(4) {
        0 if len > 0 => {
            let mut bytes = std::fs::read(file).unwrap();
            let at = rng.below(len) as usize;
            let bit = rng.below(8);
            bytes[at] ^= 1 << bit;
            std::fs::write(file, bytes).unwrap();
            format!("{name}: bit {bit} of byte {at} flipped")
        }
        1 if len > 0 => {
            let mut bytes = std::fs::read(file).unwrap();
            let at = rng.below(len) as usize;
            let n = (1 + rng.below(4096) as usize).min(bytes.len() - at);
            bytes[at..at + n].fill(0);
            std::fs::write(file, bytes).unwrap();
            format!("{name}: {n} bytes zeroed at {at}")
        }
        2 if len > 0 => {
            let at = rng.below(len);
            std::fs::OpenOptions::new()
                .write(true)
                .open(file)
                .unwrap()
                .set_len(at)
                .unwrap();
            format!("{name}: truncated to {at} bytes")
        }
        _ => {
            std::fs::remove_file(file).unwrap();
            format!("{name}: deleted")
        }
    }
}

/// Every session of the store with its head and digest.
fn digests(db: &Path) -> BTreeMap<String, String> {
    let out = ctxlog(db, &["sessions"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut digests = BTreeMap::new();
    for s in v["sessions"].as_array().unwrap() {
        let id = s["session"].as_str().unwrap().to_owned();
        let out = ctxlog(db, &["replay", &id]);
        assert!(out.status.success());
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        digests.insert(id, r["digest"].as_str().unwrap().to_owned());
    }
    digests
}

/// Commands that hung (killed after 60 s), over all trials.
static HANGS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// How a trial ended: every session intact and verify ok, damage
/// reported by verify, or a store that did not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ending {
    Intact,
    Reported,
    Unopened,
}

/// What went wrong in one trial, if anything, and how it ended.
fn trial(db: &Path, want: &BTreeMap<String, String>) -> (Vec<String>, Ending) {
    let mut wrong = Vec::new();
    let check_no_panic = |what: &str, out: &Output, wrong: &mut Vec<String>| {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.ends_with("HUNG") {
            // sled can block forever on some damage (about 1 trial in 1,500
            // here); not a wrong answer, but counted and kept for a look.
            eprintln!(
                "damage: {} {what} hung; stacks in {}",
                db.display(),
                db.with_extension("hang.txt").display()
            );
            HANGS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        } else if err.contains("panicked") || out.status.code() == Some(101) {
            wrong.push(format!("{what}: panicked: {err}"));
        }
    };
    let verify = ctxlog(db, &["verify"]);
    check_no_panic("verify", &verify, &mut wrong);
    if String::from_utf8_lossy(&verify.stderr).ends_with("HUNG") {
        return (wrong, Ending::Unopened);
    }
    let verified_ok = verify.status.success();
    let mut ending = if verified_ok {
        Ending::Intact
    } else {
        Ending::Reported
    };
    match serde_json::from_slice::<Value>(&verify.stdout) {
        Ok(v) if v.get("errors").is_some() => {
            for e in v["errors"].as_array().into_iter().flatten() {
                // A place: a session and seq, a file and offset, or a file
                // that is missing.
                let file_placed = e["file"].as_str().is_some_and(|f| {
                    e["offset"].is_u64()
                        || !db.join(f).exists()
                        || e["detail"]
                            .as_str()
                            .is_some_and(|d| d.contains("file was missing"))
                });
                let placed = (e["session"].is_string() && e["seq"].is_u64()) || file_placed;
                if !placed {
                    wrong.push(format!("verify: an error without a location: {e}"));
                }
            }
            if v["ok"].as_bool() != Some(verified_ok) {
                wrong.push(format!(
                    "verify: ok is {} but exit {:?}",
                    v["ok"],
                    verify.status.code()
                ));
            }
        }
        _ => {
            ending = Ending::Unopened;
            // The store did not open: the error must name a file of it and
            // say, from the witness, what was acknowledged there.
            let err = String::from_utf8_lossy(&verify.stderr);
            let names_a_file = ["db", "conf", "blobs", "witness", "snap."]
                .iter()
                .any(|f| err.contains(&db.join(f).display().to_string()));
            let says_what_was_acknowledged =
                err.contains("acknowledged") || err.contains("witness") && err.contains("byte");
            if verified_ok || !names_a_file || !says_what_was_acknowledged {
                wrong.push(format!("verify: an unlocated failure: {err}"));
            }
        }
    }
    // Every session is listed (with why it does not read, if it does not),
    // or the listing fails: a session never just disappears.
    let listed = ctxlog(db, &["sessions"]);
    check_no_panic("sessions", &listed, &mut wrong);
    if listed.status.success() {
        let v: Value = serde_json::from_slice(&listed.stdout).unwrap_or(Value::Null);
        let names: Vec<&str> = v["sessions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["session"].as_str())
            .collect();
        for session in want.keys() {
            if !names.contains(&session.as_str()) {
                wrong.push(format!(
                    "sessions: SILENT: {session} is not listed and the listing says ok"
                ));
            }
        }
    }
    // Writing into a damaged store: stored or refused, never a panic.
    let out = ctxlog(
        db,
        &[
            "stress",
            "--sessions",
            "1",
            "--events",
            "40",
            "--batch",
            "8",
            "--seed",
            "5",
        ],
    );
    check_no_panic("stress", &out, &mut wrong);
    for (session, digest) in want {
        let out = ctxlog(db, &["replay", session]);
        check_no_panic("replay", &out, &mut wrong);
        if out.status.success() {
            let got: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            if got["digest"].as_str() != Some(digest) {
                wrong.push(format!(
                    "replay {session}: SILENT wrong answer: digest {} instead of {digest}",
                    got["digest"]
                ));
            }
        } else if verified_ok {
            wrong.push(format!(
                "verify said ok but replay {session} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    (wrong, ending)
}

#[test]
fn damage_is_never_silent_never_a_panic_and_always_located() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("damage");
    let _ = std::fs::remove_dir_all(&work);
    let pristine = work.join("pristine");
    for f in [
        "fixtures/sessions/opencode/compacted-and-pruned.json",
        "fixtures/sessions/claude-code/edge-cases.jsonl",
        "fixtures/sessions/codex/edge-cases.jsonl",
        "fixtures/sessions/pi/edge-cases.jsonl",
    ] {
        let out = ctxlog(
            &pristine,
            &["import", common::root().join(f).to_str().unwrap()],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Real sessions, when present, make a store with large values (sled
    // blob files) and longer logs.
    let shared = common::root().join("../shared/sessions");
    let mut sessions = 4;
    for f in [
        "pi/large-session.jsonl",
        "codex/rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl",
    ] {
        let file = shared.join(f);
        if !file.exists() {
            eprintln!("SKIPPED: {} is absent", file.display());
            continue;
        }
        let out = ctxlog(&pristine, &["import", file.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        sessions += 1;
    }
    let want = digests(&pristine);
    assert_eq!(want.len(), sessions);
    let seed: u64 = std::env::var("CTXLOG_DAMAGE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_123);
    let trials: u64 = std::env::var("CTXLOG_DAMAGE_TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let mut rng = Rng::new(seed | 1);
    let mut failures = Vec::new();
    let mut endings: BTreeMap<Ending, u64> = BTreeMap::new();
    for n in 0..trials {
        let db = work.join(format!("trial-{n:03}"));
        copy_dir(&pristine, &db);
        let files = files_of(&db);
        let file = &files[rng.below(files.len() as u64) as usize];
        let what = damage(&mut rng, file);
        let (wrong, ending) = trial(&db, &want);
        *endings.entry(ending).or_default() += 1;
        if wrong.is_empty() {
            let _ = std::fs::remove_dir_all(&db);
        } else {
            failures.push(format!(
                "trial {n} ({what}, kept in {}):\n  {}",
                db.display(),
                wrong.join("\n  ")
            ));
        }
    }
    eprintln!(
        "damage trials (seed {seed}): {endings:?}, {} command(s) hung",
        HANGS.load(std::sync::atomic::Ordering::SeqCst)
    );
    assert!(
        failures.is_empty(),
        "{} of {trials} trials (seed {seed}) went wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A store whose log file is gone, its witness intact: every command says
/// the log is missing, names it, lists what was acknowledged, and creates
/// nothing (an import does not start a new, empty log in its place).
#[test]
fn a_store_whose_log_is_gone_says_what_was_acknowledged() {
    let db = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("log-gone");
    let _ = std::fs::remove_dir_all(&db);
    let fixture = common::root().join("fixtures/sessions/opencode/compacted-and-pruned.json");
    let out = ctxlog(&db, &["import", fixture.to_str().unwrap()]);
    assert!(out.status.success());
    let session = serde_json::from_slice::<Value>(&out.stdout).unwrap()["session"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::remove_file(db.join("db")).unwrap();
    for args in [
        vec!["verify"],
        vec!["sessions"],
        vec!["import", fixture.to_str().unwrap()],
    ] {
        let out = ctxlog(&db, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "{}: the store's log is missing",
                db.join("db").display()
            )),
            "{args:?}: {err}"
        );
        assert!(
            err.contains(&format!("session {session} seqs 1–")),
            "{args:?}: {err}"
        );
        assert!(!db.join("db").exists(), "{args:?} created a log");
    }
    let _ = std::fs::remove_dir_all(&db);
}
