//! An export written as the log is read (`opencode_streamed`, what `ctxlog
//! export` does) is the export of the same events held in memory, sealed
//! parts read back from the log one event at a time.

use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::{Body, Envelope, SessionState};
use ctxlog_import::export::{self, ExportError};
use ctxlog_store::{EventLog, Expected, MemoryLog, NewEvent, SessionContents};

/// A generated session of 3,000 events that compacts (so parts are sealed).
fn compacted_session() -> Vec<Envelope> {
    generate(&GenerateConfig {
        seed: 11,
        turns: u32::MAX,
        max_events: 3_000,
        ..GenerateConfig::default()
    })
    .expect("the generator runs")
}

#[test]
fn a_streamed_export_equals_the_export_of_the_events_in_memory() {
    let events = compacted_session();
    let state = SessionState::replay(&events).unwrap();
    let sealed = state
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(p.body, Body::Sealed(_)))
        .count();
    assert!(
        state.sealed > 0 && sealed > 0,
        "the session compacted, so some parts are sealed"
    );
    let session = events[0].session;
    let log = MemoryLog::new();
    log.append(
        session,
        Expected::NoStream,
        events.iter().cloned().map(NewEvent::from).collect(),
    )
    .unwrap();

    let mut in_memory = Vec::new();
    export::opencode(&events, &mut in_memory).unwrap();
    let mut streamed = Vec::new();
    let read = log
        .read(session, 1)
        .unwrap()
        .map(|e| e.map_err(|e| ExportError::Read(e.to_string())));
    let n = export::opencode_streamed(read, &SessionContents::new(&log, session), &mut streamed)
        .unwrap();
    assert_eq!(n, events.len() as u64);
    assert!(streamed == in_memory, "the two exports differ");
}

#[test]
fn a_missing_event_is_an_error_not_an_export() {
    let events = compacted_session();
    // The contents come from another (empty) session: every sealed part's
    // content is missing.
    let empty = MemoryLog::new();
    let contents = SessionContents::new(&empty, events[0].session);
    let err = export::opencode_streamed(events.iter().map(Ok), &contents, Vec::new())
        .expect_err("sealed content that is not in the log");
    assert!(
        matches!(err, ExportError::Content(_)),
        "a located content error: {err}"
    );
}
