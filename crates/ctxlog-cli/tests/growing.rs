//! Importing recordings while the agents write them, as a user does: the
//! JSONL fixtures (and the real recordings of `../shared/sessions` when
//! present) are laid out where the agents keep them under a fake home and
//! written a chunk at a time, cut anywhere (between steps, inside a step,
//! inside a line or a UTF-8 character, just before the final newline);
//! `import --discover`, with no flag, runs after every chunk. Every run
//! succeeds, and the store ends exactly as one import of the finished files:
//! the same sessions and events (`sessions --json`, counts included), the
//! same digests, windows, timelines and exports.

use serde_json::Value;
use std::path::{Path, PathBuf};

mod common;
use common::Rng;

/// What `args` prints, which must succeed.
fn output(home: &Path, db: &Path, args: &[&str]) -> Vec<u8> {
    let o = common::run_home(home, db, args);
    assert!(
        o.status.success(),
        "`{}`: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// The recordings to grow, and where each agent keeps such a file under a
/// home.
fn recordings() -> Vec<(PathBuf, PathBuf)> {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for root in [
        here.join("../../fixtures/sessions"),
        here.join("../../../shared/sessions"),
    ] {
        for (agent, place) in [
            ("claude-code", ".claude/projects/-work-app"),
            ("codex", ".codex/sessions/2025/09/25"),
            ("pi", ".pi/agent/sessions/--work-app--"),
        ] {
            let Ok(entries) = std::fs::read_dir(root.join(agent)) else {
                eprintln!("skipped: {} is absent", root.join(agent).display());
                continue;
            };
            let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            files.sort();
            for (k, f) in files.into_iter().enumerate() {
                // Codex names its files rollout-…; the others keep theirs.
                let name = match agent {
                    "codex" => format!("rollout-{k}-{}", f.file_name().unwrap().to_string_lossy()),
                    _ => format!("{k}-{}", f.file_name().unwrap().to_string_lossy()),
                };
                out.push((f, PathBuf::from(place).join(name)));
            }
        }
    }
    out
}

#[test]
fn discover_while_the_agents_write_ends_as_one_import_of_the_finished_files() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("growing");
    let _ = std::fs::remove_dir_all(&work);
    let (home, db) = (work.join("home"), work.join("store"));
    let files = recordings();
    let contents: Vec<Vec<u8>> = files
        .iter()
        .map(|(f, _)| std::fs::read(f).unwrap())
        .collect();
    let mut at = vec![0usize; files.len()];
    let mut rng = Rng::new(0x6120_0029);
    let mut runs = 0;
    while at.iter().zip(&contents).any(|(a, c)| a < &c.len()) {
        for (k, c) in contents.iter().enumerate() {
            let next = (at[k] + 1 + rng.below(c.len() as u64 / 30 + 1) as usize).min(c.len());
            // Half the files stop once just before their final newline.
            let next = if next == c.len() && at[k] + 1 < c.len() && k % 2 == 0 {
                c.len() - 1
            } else {
                next
            };
            let next = next.max(at[k]);
            let path = home.join(&files[k].1);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &c[..next]).unwrap();
            at[k] = next;
        }
        let o = common::run_home(&home, &db, &["--json", "import", "--discover"]);
        assert!(
            o.status.success(),
            "run {runs}: {}\n{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
        runs += 1;
    }
    // A user who imports once, when the agents are done.
    let fresh = work.join("fresh");
    output(&home, &fresh, &["--json", "import", "--discover"]);
    let listed = output(&home, &db, &["--json", "sessions"]);
    assert!(
        listed == output(&home, &fresh, &["--json", "sessions"]),
        "the sessions differ:\n{}\nvs\n{}",
        String::from_utf8_lossy(&listed),
        String::from_utf8_lossy(&output(&home, &fresh, &["--json", "sessions"]))
    );
    let listed: Value = serde_json::from_slice(&listed).unwrap();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), files.len(), "one session per recording");
    for s in sessions {
        let id = s["session"].as_str().unwrap();
        assert_eq!(s["interrupted"], false);
        for args in [
            &["--json", "replay", id][..],
            &["--json", "window", id],
            &["--json", "timeline", id],
            &["export", id],
        ] {
            assert!(
                output(&home, &db, args) == output(&home, &fresh, args),
                "{}: `{}` differs from one import's",
                s["source_session"],
                args.join(" ")
            );
        }
    }
    eprintln!("{runs} imports while {} recordings grew", files.len());
}
