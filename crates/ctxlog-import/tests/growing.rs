//! A recording that is still being written: importing any prefix of it
//! gives a prefix of the events of the whole file, so a later import only
//! appends.

use ctxlog_import::{import, Format, ImportOptions};
use std::path::PathBuf;

fn recordings() -> Vec<(PathBuf, Format)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/sessions");
    let mut out = Vec::new();
    for (dir, format) in [
        ("claude-code", Format::ClaudeCode),
        ("codex", Format::Codex),
        ("pi", Format::Pi),
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            eprintln!("skipped: {} is absent", root.join(dir).display());
            continue;
        };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        out.extend(files.into_iter().map(|f| (f, format)));
    }
    out
}

#[test]
fn every_prefix_of_a_recording_imports_to_a_prefix_of_its_events() {
    let mut failures = Vec::new();
    let mut tried = 0;
    for (path, format) in recordings() {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let whole = import(&bytes[..], &name, format, &ImportOptions::default())
            .unwrap_or_else(|e| panic!("{e}"))
            .events;
        let mut cuts: Vec<usize> = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        // and inside lines
        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ bytes.len() as u64;
        for _ in 0..cuts.len().min(60) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cuts.push((x % bytes.len() as u64) as usize);
        }
        for cut in cuts {
            tried += 1;
            let live = ImportOptions {
                live: true,
                ..ImportOptions::default()
            };
            match import(&bytes[..cut], &name, format, &live) {
                // Nothing of the session is written yet.
                Err(e) if e.holds_no_session() => {}
                Err(e) => failures.push(format!("{name} @{cut}: refused: {e}")),
                Ok(a) => {
                    let n = a.events.len();
                    if n > whole.len() || a.events[..] != whole[..n] {
                        let at = a
                            .events
                            .iter()
                            .zip(&whole)
                            .position(|(p, w)| p != w)
                            .unwrap_or(n.min(whole.len()));
                        failures.push(format!(
                            "{name} @{cut}: event {} differs ({:?} vs {:?})",
                            at + 1,
                            a.events.get(at).map(|e| e.event.kind()),
                            whole.get(at).map(|e| e.event.kind())
                        ));
                    }
                }
            }
        }
    }
    for f in failures.iter().take(60) {
        eprintln!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} of {tried} prefixes",
        failures.len()
    );
}
