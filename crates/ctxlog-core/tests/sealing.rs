//! Sealing: the parts before the window leave their content in the log, the
//! window never reaches them, and every view reads them back unchanged.

mod common;
use common::*;
use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::window::window_order;
use ctxlog_core::*;
use std::collections::BTreeMap;

/// The content each part was last given by a `PartAppended` or
/// `PartUpdated`, found by scanning the events (not through the state).
fn last_bodies(events: &[Envelope]) -> BTreeMap<PartId, PartBody> {
    let mut bodies = BTreeMap::new();
    for e in events {
        match &e.event {
            Event::PartAppended { part, body, .. } | Event::PartUpdated { part, body } => {
                bodies.insert(*part, body.clone());
            }
            _ => {}
        }
    }
    bodies
}

#[test]
fn a_generated_session_seals_its_history_and_reads_it_back() {
    let mut checked = 0;
    for seed in 1..6 {
        let events = generate(&GenerateConfig {
            seed,
            turns: 30,
            ..GenerateConfig::default()
        })
        .unwrap();
        let state = SessionState::replay(&events).unwrap();
        assert!(state
            .jobs
            .iter()
            .any(|j| matches!(j.status, JobStatus::Completed { .. })));
        assert!(state.sealed > 0, "seed {seed}: nothing sealed");
        assert_eq!(state.sealed, state.window_start(), "seed {seed}");
        // The window never reaches a sealed part.
        for i in window_order(&state).1 {
            assert!(
                state.messages[i].parts.iter().all(|p| !p.is_sealed()),
                "seed {seed}: message {i} of the window is sealed"
            );
        }
        // Everything before the start is sealed, and reads back as it was.
        let bodies = last_bodies(&events);
        for (i, m) in state.messages.iter().enumerate() {
            for p in &m.parts {
                assert_eq!(
                    p.is_sealed(),
                    i < state.sealed,
                    "seed {seed}: part {}",
                    p.id
                );
                let read = p.body_in(&events).unwrap();
                assert_eq!(read.kind(), p.kind());
                if let Some(want) = bodies.get(&p.id) {
                    assert_eq!(&*read, want, "seed {seed}: part {}", p.id);
                    checked += 1;
                }
            }
        }
        // The estimate kept from sketches is the rendered window's.
        assert_eq!(
            estimate_window(&state),
            window(&state).estimate(&state.policy.estimator)
        );
        // Snapshots keep what is sealed.
        let back = SessionState::from_snapshot(&state.to_snapshot()).unwrap();
        assert_eq!(back, state);
        assert_eq!(back.digest(), state.digest());
    }
    assert!(checked > 1_000, "only {checked} parts compared");
}

#[test]
fn a_part_of_a_sealed_message_is_sealed_when_it_changes() {
    let mut s = S::new();
    let (_, a, parts) = s.turn(&[100]);
    s.compact("SUMMARY");
    assert!(s.state().part(parts[0]).unwrap().1.is_sealed());
    // A late text part of the sealed message, and an update of a sealed part.
    let late = s.text(a, "late");
    let (_, p) = s.state().part(late).unwrap();
    assert!(p.is_sealed());
    assert!(p.is_nonblank_text());
    let events = s.r.events().to_vec();
    let read = p.body_in(&events).unwrap();
    assert!(matches!(&*read, PartBody::Text { text, .. } if text == "late"));
    // The window is unchanged by either.
    assert!(!window_texts(s.state()).iter().any(|t| t == "late"));
}

#[test]
fn a_summary_whose_tail_starts_before_the_window_is_refused() {
    let mut s = S::new();
    let (u1, _, _) = s.turn(&[10]);
    let (u2, _, _) = s.turn(&[10]);
    s.turn(&[10]);
    let t = s.tick();
    let first =
        s.r.request_compaction(t, false, CompactionTrigger::Manual)
            .unwrap();
    let t = s.tick();
    let second =
        s.r.request_compaction(t, false, CompactionTrigger::Manual)
            .unwrap();
    let t = s.tick();
    s.r.summarize(t, first, "ONE", Some(u2), TokenUsage::default())
        .unwrap();
    let start = s.state().window_start();
    assert_eq!(s.state().messages[start].id, u2);
    // The second job would move the window back to u1, sealed by now.
    let t = s.tick();
    let err =
        s.r.summarize(t, second, "TWO", Some(u1), TokenUsage::default())
            .unwrap_err();
    assert!(
        err.to_string().contains("before the window's start"),
        "{err}"
    );
    // Without the tail it is an ordinary pivot.
    let t = s.tick();
    s.r.summarize(t, second, "TWO", None, TokenUsage::default())
        .unwrap();
    assert_eq!(window(s.state()).pivot, Some(second));
}
