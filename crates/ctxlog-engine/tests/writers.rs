//! Many writers on one session: engines that share a log (other processes,
//! other hosts) each decide on their own cached state; the one whose state
//! is behind loses the append, catches up from the log and decides again.

use ctxlog_core::*;
use ctxlog_engine::*;
use ctxlog_store::{EventLog, MemoryLog, SessionStates};
use std::sync::Arc;

fn engine(log: &MemoryLog, seed: u64) -> Engine<MemoryLog> {
    EngineBuilder::new()
        .ids(SeededIds::new(seed))
        .clock(Arc::new(ManualClock::new(1_780_000_000_000)))
        .build(log.clone())
        .unwrap()
}

fn user_texts(state: &SessionState) -> Vec<String> {
    state
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match &p.body {
            Body::Held(body) => match body.as_ref() {
                PartBody::Text { text, .. } => Some(text.clone()),
                _ => None,
            },
            Body::Sealed(_) => None,
        })
        .collect()
}

#[test]
fn a_writer_behind_the_log_decides_again_on_what_it_missed() {
    let log = MemoryLog::new();
    let a = engine(&log, 1);
    let b = engine(&log, 2);
    let limits = ModelLimits {
        context: 100_000,
        ..ModelLimits::default()
    };
    let id = a.create_session(NewSession::new(limits)).unwrap().id();
    a.session(id).unwrap().user("one").unwrap();
    // b caches the session at its head now…
    let on_b = b.session(id).unwrap();
    // …a moves the head…
    a.session(id).unwrap().user("two").unwrap();
    let head_before = log.head(id).unwrap();
    // …and b's message lands after a's, decided on the state that holds it.
    on_b.user("three").unwrap();
    assert!(log.head(id).unwrap() > head_before);
    let replayed = log.replay(id).unwrap();
    assert_eq!(user_texts(&replayed), ["one", "two", "three"]);
    assert_eq!(on_b.query(|s| s.digest()).unwrap(), replayed.digest());
    // b's message follows a's: its causation is a's last event.
    let events: Vec<_> = log.read(id, 1).unwrap().map(Result::unwrap).collect();
    let first_of_b = events
        .iter()
        .position(|e| e.seq == head_before + 1)
        .unwrap();
    assert_eq!(
        events[first_of_b].causation,
        Some(events[first_of_b - 1].id)
    );
    // a, behind now, catches up the same way.
    a.session(id).unwrap().user("four").unwrap();
    assert_eq!(
        user_texts(&log.replay(id).unwrap()),
        ["one", "two", "three", "four"]
    );
}
