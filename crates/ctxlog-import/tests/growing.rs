//! A recording that is still being written: importing any prefix of it
//! gives a prefix of what happened in the whole file (its events but those
//! that describe the session, which may change as it grows), so a later
//! import only appends; storing the prefixes one after another, as a user
//! re-importing a growing file does, ends with exactly what a fresh import
//! stores: the same events at the same seqs, the same digest, description
//! and export.

use ctxlog_app::catalog::{descriptions_after, load_described, store_recording};
use ctxlog_core::{Envelope, EventPack, SessionId};
use ctxlog_import::{import, Format, ImportOptions};
use ctxlog_store::{EventLog, MemoryLog, SessionStates};
use std::path::PathBuf;

/// What happened: the events that do not describe the session.
fn happened(events: &[Envelope]) -> Vec<&Envelope> {
    events
        .iter()
        .filter(|e| !e.event.is_description())
        .collect()
}

/// A session's events as stored.
fn read(log: &MemoryLog, session: SessionId) -> Vec<Envelope> {
    log.read(session, 1)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A session's OpenCode export, its descriptions included.
fn export(log: &MemoryLog, session: SessionId) -> String {
    let mut events = read(log, session);
    let head = events.len() as u64;
    events.extend(descriptions_after(log, session, head).unwrap());
    let mut out = Vec::new();
    ctxlog_import::export::opencode(&events, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The JSONL recordings: the checked-in fixtures, and the real ones in
/// `../shared/sessions` when it is there.
fn recordings() -> Vec<(PathBuf, Format)> {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for root in [
        here.join("../../fixtures/sessions"),
        here.join("../../../shared/sessions"),
    ] {
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
            .events
            .to_vec()
            .unwrap();
        let whole_happened = happened(&whole);
        // The file as a user re-imports it while it grows, line by line.
        let log = MemoryLog::new();
        let mut cuts: Vec<usize> = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        // and inside lines (inside UTF-8 characters too),
        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ bytes.len() as u64;
        for _ in 0..cuts.len().min(60) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cuts.push((x % bytes.len() as u64) as usize);
        }
        // inside multi-byte UTF-8 characters (after a lead byte),
        cuts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b >= 0xC0)
                .map(|(i, _)| i + 1)
                .step_by(7)
                .take(40),
        );
        // and just before the final newline; all in order, as a file grows.
        cuts.push(bytes.len().saturating_sub(1));
        cuts.sort_unstable();
        cuts.dedup();
        for cut in cuts {
            tried += 1;
            let live = ImportOptions::default();
            match import(&bytes[..cut], &name, format, &live) {
                // Nothing of the session is written yet.
                Err(e) if e.holds_no_session() => {}
                Err(e) => failures.push(format!("{name} @{cut}: refused: {e}")),
                Ok(a) => {
                    let events = a.events.to_vec().unwrap();
                    let part = happened(&events);
                    let n = part.len();
                    if n > whole_happened.len() || part[..] != whole_happened[..n] {
                        let at = part
                            .iter()
                            .zip(&whole_happened)
                            .position(|(p, w)| p != w)
                            .unwrap_or(n.min(whole_happened.len()));
                        failures.push(format!(
                            "{name} @{cut}: event {} differs ({:?} vs {:?})",
                            at + 1,
                            part.get(at).map(|e| e.event.kind()),
                            whole_happened.get(at).map(|e| e.event.kind())
                        ));
                    }
                    if let Err(e) = store_recording(&log, a.events.clone()) {
                        failures.push(format!("{name} @{cut}: re-import refused: {e}"));
                    }
                }
            }
        }
        // The whole file last: the store holds what a fresh import does.
        if let Err(e) = store_recording(&log, EventPack::try_from(&whole[..]).unwrap()) {
            failures.push(format!("{name}: the whole file refused: {e}"));
            continue;
        }
        let session = whole[0].session;
        let fresh = MemoryLog::new();
        store_recording(&fresh, EventPack::try_from(&whole[..]).unwrap()).unwrap();
        let (grown_events, fresh_events) = (read(&log, session), read(&fresh, session));
        // The same events at the same seqs: what happened, byte for byte.
        if grown_events != fresh_events {
            let at = grown_events
                .iter()
                .zip(&fresh_events)
                .position(|(g, f)| g != f)
                .unwrap_or(grown_events.len().min(fresh_events.len()));
            failures.push(format!(
                "{name}: the grown store differs from a fresh import from seq {} on ({} vs {} events)",
                at + 1,
                grown_events.len(),
                fresh_events.len()
            ));
        }
        let digest = |l: &MemoryLog| l.replay(session).unwrap().digest();
        if digest(&log) != digest(&fresh) {
            failures.push(format!("{name}: the digests differ"));
        }
        // What a user sees of it: its description and its export.
        let about = |l: &MemoryLog| load_described(l, session).unwrap().state.about;
        if about(&log) != about(&fresh) {
            failures.push(format!("{name}: the descriptions differ"));
        }
        if export(&log, session) != export(&fresh, session) {
            failures.push(format!("{name}: the exports differ"));
        }
        if grown_events
            .windows(2)
            .any(|w| w[1].recorded_at < w[0].recorded_at)
        {
            failures.push(format!("{name}: the grown store's times go backwards"));
        }
    }
    for f in failures.iter().take(60) {
        eprintln!("{f}");
    }
    eprintln!("{tried} prefixes imported and stored in turn");
    assert!(
        failures.is_empty(),
        "{} of {tried} prefixes",
        failures.len()
    );
}

/// A store written before the description stream kept an import's
/// descriptions at the end of the session's events: a later import of the
/// grown file still extends it (its descriptions are passed over), and the
/// latest description is what is read.
#[test]
fn a_session_stored_with_its_descriptions_inline_is_extended() {
    use ctxlog_store::{Expected, NewEvent};
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sessions/claude-code/edge-cases.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    let half = bytes[..bytes.len() / 2]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    let options = ImportOptions::default();
    let old = import(&bytes[..half], "c", Format::ClaudeCode, &options).unwrap();
    let old = old.events.to_vec().unwrap();
    assert!(old.last().unwrap().event.is_description());
    let session = old[0].session;
    // As the older build stored it: everything in one stream.
    let log = MemoryLog::new();
    log.append(
        session,
        Expected::NoStream,
        old.iter().cloned().map(NewEvent::from).collect(),
    )
    .unwrap();
    let whole = import(&bytes[..], "c", Format::ClaudeCode, &options).unwrap();
    let stored = store_recording(&log, whole.events.clone()).unwrap();
    assert!(stored.grew && stored.new_events > 0);
    let events = read(&log, session);
    assert_eq!(events[..old.len()], old[..], "the old events stay");
    let happened = |e: &[Envelope]| -> Vec<Envelope> {
        e.iter()
            .filter(|e| !e.event.is_description())
            .cloned()
            .map(|mut e| {
                e.seq = 0;
                e
            })
            .collect()
    };
    assert_eq!(
        happened(&events),
        happened(&whole.events.to_vec().unwrap()),
        "what happened, all of it, once"
    );
    let fresh = MemoryLog::new();
    store_recording(&fresh, whole.events).unwrap();
    assert_eq!(
        load_described(&log, session).unwrap().state.about,
        load_described(&fresh, session).unwrap().state.about
    );
    // Importing again writes nothing.
    let again = import(&bytes[..], "c", Format::ClaudeCode, &options).unwrap();
    assert_eq!(store_recording(&log, again.events).unwrap().new_events, 0);
}

/// Imports `bytes` cut at each of `cuts` in turn (as a file grows), then
/// whole, into one log; whether it ends as a fresh import (events at their
/// seqs, digest, description, export), or why not.
fn converges(bytes: &[u8], name: &str, format: Format, cuts: &[usize]) -> Result<(), String> {
    let options = ImportOptions::default();
    let log = MemoryLog::new();
    for &cut in cuts {
        match import(&bytes[..cut], name, format, &options) {
            Err(e) if e.holds_no_session() => {}
            Err(e) => return Err(format!("@{cut}: refused: {e}")),
            Ok(a) => {
                store_recording(&log, a.events).map_err(|e| format!("@{cut}: {e}"))?;
            }
        }
    }
    let whole = import(bytes, name, format, &options).map_err(|e| e.to_string())?;
    let session = whole.session;
    store_recording(&log, whole.events.clone()).map_err(|e| format!("whole: {e}"))?;
    let fresh = MemoryLog::new();
    store_recording(&fresh, whole.events).map_err(|e| e.to_string())?;
    if read(&log, session) != read(&fresh, session) {
        return Err("the events differ".into());
    }
    if log.replay(session).unwrap().digest() != fresh.replay(session).unwrap().digest() {
        return Err("the digests differ".into());
    }
    let about = |l: &MemoryLog| load_described(l, session).unwrap().state.about;
    if about(&log) != about(&fresh) || export(&log, session) != export(&fresh, session) {
        return Err("the description or the export differs".into());
    }
    Ok(())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Any growth of any recording, cut anywhere any number of times,
    /// converges (a failing set of cuts shrinks to the fewest that fail).
    #[test]
    fn any_growth_of_any_recording_converges(
        which in 0usize..64,
        mut fractions in proptest::collection::vec(0u32..1_000_000, 0..8),
    ) {
        let files = recordings();
        let (path, format) = &files[which % files.len()];
        let bytes = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        fractions.sort_unstable();
        let cuts: Vec<usize> = fractions
            .iter()
            .map(|f| (bytes.len() as u64 * u64::from(*f) / 1_000_000) as usize)
            .collect();
        let result = converges(&bytes, &name, *format, &cuts);
        proptest::prop_assert!(result.is_ok(), "{name} cut at {cuts:?}: {:?}", result);
    }
}
