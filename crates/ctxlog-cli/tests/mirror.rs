//! What a user does in ctxlog to a session that mirrors a recording never
//! blocks a later import of it: a manual `compact` is kept in the copy
//! `<source>@manual`, limits given on a later import are adopted, and the
//! recording's session stays exactly what an import of the file gives.

use std::path::{Path, PathBuf};

mod common;
use common::ctxlog_at as ctxlog;

/// What `args` prints, which must succeed.
fn output(db: &Path, args: &[&str]) -> Vec<u8> {
    let o = ctxlog(db, args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

fn work(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The Claude Code fixture and a prefix of it (its first `lines` lines).
fn recording(dir: &Path, lines: usize) -> (PathBuf, String, String) {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sessions/claude-code/edge-cases.jsonl");
    let whole = std::fs::read_to_string(fixture).unwrap();
    let prefix: String = whole.split_inclusive('\n').take(lines).collect();
    (dir.join("session.jsonl"), prefix, whole)
}

#[test]
fn a_manual_compaction_is_kept_beside_the_recording_which_still_grows() {
    let dir = work("mirror-compact");
    let db = dir.join("store");
    let (file, prefix, whole) = recording(&dir, 12);
    let f = file.to_str().unwrap();
    std::fs::write(&file, &prefix).unwrap();
    let first = common::json_at(&db, &["import", f]);
    let (mirror, source) = (
        first["session"].as_str().unwrap().to_owned(),
        first["source_session"].as_str().unwrap().to_owned(),
    );

    let compacted = common::json_at(&db, &["compact", &mirror]);
    assert_eq!(compacted["recording_session"], mirror.as_str());
    let name = format!("{source}@manual");
    assert_eq!(compacted["kept_as"], name.as_str());
    let copy = compacted["session"].as_str().unwrap().to_owned();
    assert_ne!(copy, mirror);

    // The unchanged file imports again (nothing new), then the grown one.
    let again = common::json_at(&db, &["import", f]);
    assert_eq!(again["new_events"], 0, "{again}");
    std::fs::write(&file, &whole).unwrap();
    let grown = common::json_at(&db, &["import", f]);
    assert!(grown["new_events"].as_u64().unwrap() > 0, "{grown}");

    // The recording's session is what one import of the file gives.
    let fresh = dir.join("fresh");
    common::json_at(&fresh, &["import", f]);
    for args in [
        &["--json", "replay", &mirror][..],
        &["--json", "window", &mirror],
        &["export", &mirror],
    ] {
        assert!(
            output(&db, args) == output(&fresh, args),
            "`{}` differs from one import's",
            args.join(" ")
        );
    }

    // The copy holds the compaction, and resolves by its name.
    let audit = common::json_at(&db, &["audit", &name]);
    let kinds: Vec<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"summary_completed"), "{kinds:?}");
    let listed = common::json_at(&db, &["sessions"]);
    let rows = listed["sessions"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "the recording and its copy: {listed}");

    // Once the recording grew, compacting again makes a new copy of it and
    // the older copy is marked replaced.
    let again = common::json_at(&db, &["compact", &mirror]);
    let newer = again["session"].as_str().unwrap().to_owned();
    assert_ne!(newer, copy);
    let listed = common::json_at(&db, &["sessions"]);
    let old = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["session"] == copy.as_str())
        .unwrap()
        .clone();
    assert_eq!(old["replaced_by"], newer.as_str());
    let resolved = common::json_at(&db, &["replay", &name]);
    assert_eq!(resolved["session"], newer.as_str());
    // Both shown on one page.
    let page = dir.join("both.html");
    let o = ctxlog(
        &db,
        &[
            "report",
            &mirror,
            "--with",
            &name,
            "--out",
            page.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("by hand ("),
        "the copy is labelled as ctxlog's work"
    );
}

#[test]
fn limits_given_on_a_later_import_are_adopted_and_block_nothing() {
    let dir = work("mirror-limits");
    let db = dir.join("store");
    let (file, _, whole) = recording(&dir, 0);
    std::fs::write(&file, &whole).unwrap();
    let f = file.to_str().unwrap();
    let first = common::json_at(&db, &["import", f]);
    let session = first["session"].as_str().unwrap().to_owned();
    let before = common::json_at(&db, &["timeline", &session]);
    assert_ne!(before["limits"]["context"], 1_000_000);

    // The advice of the unknown-model warning, followed.
    let adopted = common::json_at(&db, &["import", f, "--context", "1000000"]);
    assert_eq!(adopted["new_events"], 1, "one limits_changed: {adopted}");
    let after = common::json_at(&db, &["timeline", &session]);
    assert_eq!(after["limits"]["context"], 1_000_000);
    // Again with the same limits, and without any: nothing to adopt, and
    // the limits stay.
    for args in [&["import", f, "--context", "1000000"][..], &["import", f]] {
        let again = common::json_at(&db, args);
        assert_eq!(again["new_events"], 0, "{again}");
    }
    assert_eq!(
        common::json_at(&db, &["timeline", &session])["limits"]["context"],
        1_000_000
    );
    // A policy given later is adopted too.
    let policy = common::json_at(&db, &["import", f, "--policy", "opencode-1.17"]);
    assert_eq!(policy["new_events"], 1, "{policy}");
    assert_eq!(
        common::json_at(&db, &["timeline", &session])["policy"],
        "opencode-1.17"
    );
    let audit = common::json_at(&db, &["audit", &session]);
    assert!(
        audit["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "policy_changed"),
        "{audit}"
    );
}
