//! Importing a recording while the agent writes it: each real recording
//! (`../shared/sessions`, skipped when absent) is imported with `--live` as
//! it grows, cut at line ends and inside lines, then whole; every import
//! succeeds and the store ends equal to a fresh import of the whole file:
//! the same session, window and export. (Its log may hold more versions of
//! the session's description, appended as they changed on the way.)

use serde_json::Value;
use std::path::{Path, PathBuf};

mod common;
use common::ctxlog_at as ctxlog;

fn sessions(db: &Path) -> Value {
    let o = ctxlog(db, &["--json", "sessions"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice::<Value>(&o.stdout).unwrap()["sessions"].clone()
}

/// `sessions` but the count of events.
fn sessions_but_events(db: &Path) -> Value {
    let mut listed = sessions(db);
    for s in listed.as_array_mut().unwrap() {
        s.as_object_mut().unwrap().remove("events");
    }
    listed
}

/// What `args` prints, which must succeed.
fn output(db: &Path, args: &[&str]) -> Vec<u8> {
    let o = ctxlog(db, args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

#[test]
fn a_growing_recording_imported_again_and_again_ends_as_a_fresh_import() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/sessions");
    let mut files = Vec::new();
    for dir in ["claude-code", "codex", "pi"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            eprintln!("skipped: {} is absent", root.join(dir).display());
            return;
        };
        files.extend(entries.flatten().map(|e| e.path()));
    }
    files.sort();
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("growing");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    for (k, path) in files.iter().enumerate() {
        let bytes = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let fresh = work.join(format!("fresh-{k}"));
        let o = ctxlog(&fresh, &["import", path.to_str().unwrap()]);
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let expected = sessions_but_events(&fresh);
        let session = expected[0]["session"].as_str().unwrap().to_owned();
        // The same file name throughout, as an agent appends to it.
        let growing = work.join(format!("growing-{k}.jsonl"));
        let db = work.join(format!("store-{k}"));
        let line_ends: Vec<usize> = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        let mut cuts = Vec::new();
        for step in 1..=8 {
            let at = bytes.len() * step / 9;
            cuts.push(at); // inside a line, or inside a UTF-8 character
            if let Some(end) = line_ends.iter().find(|e| **e >= at) {
                cuts.push(*end);
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        for cut in cuts {
            std::fs::write(&growing, &bytes[..cut]).unwrap();
            let o = ctxlog(&db, &["import", "--live", growing.to_str().unwrap()]);
            assert!(
                o.status.success(),
                "{name} cut at byte {cut}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::fs::write(&growing, &bytes).unwrap();
        let o = ctxlog(&db, &["import", growing.to_str().unwrap()]);
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(sessions_but_events(&db), expected, "{name}");
        for args in [&["--json", "window", &session][..], &["export", &session]] {
            assert!(
                output(&db, args) == output(&fresh, args),
                "{name}: `{}` differs from a fresh import's",
                args.join(" ")
            );
        }
    }
}
