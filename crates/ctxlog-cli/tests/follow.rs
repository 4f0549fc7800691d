//! `import --follow` while agents write their recordings: the fixtures of
//! three formats (and a real Claude Code session from `../shared/sessions`
//! when present) are written into a directory a chunk at a time, cut at any
//! byte; the follower is killed with SIGKILL and started again at random
//! moments, and read commands run meanwhile (served by the follower). Every
//! read succeeds; in the end the store verifies and holds exactly what one
//! import of the complete files holds, and importing again changes nothing.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{ctxlog_at as ctxlog, Rng};

fn start(db: &Path, dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .arg("--db")
        .arg(db)
        .args(["--json", "import", "--follow", "--interval", "20"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the follower")
}

/// `sessions --json`, by session (the count of events included: the
/// descriptions appended on the way are in a stream of their own).
fn sessions(db: &Path) -> Vec<Value> {
    let o = ctxlog(db, &["--json", "sessions"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut listed: Vec<Value> = serde_json::from_slice::<Value>(&o.stdout).unwrap()["sessions"]
        .as_array()
        .unwrap()
        .clone();
    listed.sort_by_key(|s| s["session"].as_str().unwrap_or_default().to_owned());
    listed
}

/// What `window` (`--json` and as text, which names the head seq) and
/// `export` print for every session of `db`.
fn contents(db: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    sessions(db)
        .iter()
        .map(|s| {
            let id = s["session"].as_str().unwrap();
            let out = |args: &[&str]| {
                let o = ctxlog(db, args);
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                o.stdout
            };
            let mut window = out(&["--json", "window", id]);
            window.extend(out(&["window", id]));
            (window, out(&["export", id]))
        })
        .collect()
}

#[test]
fn follow_keeps_up_with_growing_files_and_survives_sigkill() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut sources: Vec<PathBuf> = ["claude-code", "codex", "pi"]
        .iter()
        .map(|f| root.join(format!("fixtures/sessions/{f}/edge-cases.jsonl")))
        .collect();
    let shared = root.join("../shared/sessions/claude-code/full-session.jsonl");
    if shared.is_file() {
        sources.push(shared);
    } else {
        eprintln!("(../shared/sessions absent: the fixtures only)");
    }
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("follow");
    let _ = std::fs::remove_dir_all(&work);
    let (dir, db) = (work.join("recordings"), work.join("store"));
    std::fs::create_dir_all(&dir).unwrap();
    let contents_of: Vec<Vec<u8>> = sources.iter().map(|s| std::fs::read(s).unwrap()).collect();
    let written = |k: usize| dir.join(format!("session-{k}.jsonl"));

    let mut rng = Rng::new(0x000F_0110_u64);
    let mut follower = start(&db, &dir);
    let mut kills = 0;
    let mut reads = 0;
    let mut at = vec![0usize; sources.len()];
    while at.iter().zip(&contents_of).any(|(a, c)| a < &c.len()) {
        // The agents write a chunk each, cut anywhere.
        for (k, c) in contents_of.iter().enumerate() {
            let next = (at[k] + 1 + rng.below(900) as usize).min(c.len());
            if next > at[k] {
                std::fs::write(written(k), &c[..next]).unwrap();
                at[k] = next;
            }
        }
        std::thread::sleep(Duration::from_millis(rng.below(60)));
        match rng.below(6) {
            0 => {
                follower.kill().unwrap();
                follower.wait().unwrap();
                kills += 1;
                follower = start(&db, &dir);
            }
            1 if db.exists() => {
                // A read while the follower holds the store.
                let o = ctxlog(&db, &["--json", "sessions"]);
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                reads += 1;
            }
            _ => {}
        }
    }
    assert!(kills > 0, "the follower was killed at least once");

    // What one import of the complete files holds.
    let fresh = work.join("fresh");
    let o = ctxlog(&fresh, &["import", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let expected = sessions(&fresh);
    let deadline = Instant::now() + Duration::from_secs(60);
    while sessions(&db) != expected {
        assert!(
            Instant::now() < deadline,
            "the follower did not catch up: {:?} vs {expected:?}",
            sessions(&db)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    follower.kill().unwrap();
    follower.wait().unwrap();
    let o = ctxlog(&db, &["--json", "verify"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(
        contents(&db) == contents(&fresh),
        "the followed store reads as one import of the finished files"
    );
    // Importing again, the agents done, changes nothing.
    let o = ctxlog(&db, &["--json", "import", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let again: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(again["unchanged"], sources.len(), "{again}");
    eprintln!("{kills} kills, {reads} reads while following");
}
