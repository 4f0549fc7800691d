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
    let mut dropped = 0;
    for seed in 1..6 {
        let events = generate(&GenerateConfig {
            seed,
            turns: 30,
            ..GenerateConfig::default()
        })
        .unwrap();
        let state = SessionState::replay_keeping_history(&events).unwrap();
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
        // A snapshot keeps what the state that drops closed messages keeps,
        // and both retentions have the same digest.
        let windowed = SessionState::replay(&events).unwrap();
        dropped += windowed.evicted.messages;
        assert_eq!(
            windowed.messages.len() as u64 + windowed.evicted.messages,
            state.messages.len() as u64
        );
        assert_eq!(windowed.digest(), state.digest(), "seed {seed}");
        assert_eq!(windowed.tally(), state.tally(), "seed {seed}");
        assert_eq!(window(&windowed), window(&state), "seed {seed}");
        let back = SessionState::from_snapshot(&state.to_snapshot()).unwrap();
        assert_eq!(back, windowed);
        assert_eq!(back.digest(), state.digest());
    }
    assert!(checked > 1_000, "only {checked} parts compared");
    assert!(dropped > 0, "no closed message was dropped");
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

/// A generated session long enough that a pivot dropped messages, with the
/// state that drops them and the one that keeps its history.
fn dropped_session() -> (Vec<Envelope>, SessionState, SessionState) {
    for seed in 1..20 {
        let events = generate(&GenerateConfig {
            seed,
            turns: 40,
            ..GenerateConfig::default()
        })
        .unwrap();
        let windowed = SessionState::replay(&events).unwrap();
        if windowed.has_dropped() {
            let history = SessionState::replay_keeping_history(&events).unwrap();
            return (events, windowed, history);
        }
    }
    panic!("no generated session dropped a message");
}

#[test]
fn late_events_on_dropped_messages_are_taken_and_change_only_the_history() {
    let (events, mut windowed, mut history) = dropped_session();
    assert!(history.present_from() > 0);
    let dropped = &history.messages[..history.present_from()];
    let assistant = dropped
        .iter()
        .find(|m| m.role == Role::Assistant && !m.summary)
        .expect("a dropped agent message")
        .id;
    assert!(windowed.message(assistant).is_none());
    assert!(history.message(assistant).is_none(), "dropped in both");
    let tally = windowed.tally();
    let last = events.last().unwrap().clone();
    let late = |seq: u64, event: Event| Envelope {
        seq,
        id: EventId(uuid::Uuid::from_u128(
            0x0199_0000_0000_7000_8000_0000_0000_0000 + u128::from(seq),
        )),
        event,
        ..last.clone()
    };
    let usage = TokenUsage {
        input: 7,
        ..TokenUsage::default()
    };
    let lates = [
        late(
            last.seq + 1,
            Event::UsageReported {
                message: assistant,
                tokens: usage,
            },
        ),
        late(
            last.seq + 2,
            Event::MessageErrored {
                message: assistant,
                error: MessageError {
                    name: "Late".into(),
                    message: "a late error".into(),
                },
            },
        ),
    ];
    for e in &lates {
        windowed.evolve(e).unwrap();
        history.evolve(e).unwrap();
    }
    // The history's copy changed; the figures and the digest did not.
    let kept = history.history_message(assistant).unwrap();
    assert_eq!(kept.tokens.as_deref(), Some(&usage));
    assert_eq!(kept.error.as_ref().map(|e| e.name.as_str()), Some("Late"));
    assert_eq!(windowed.tally(), tally);
    assert_eq!(windowed.digest(), history.digest());
    // An id the state never knew is taken too once messages were dropped
    // (it may be a dropped one); before that it is refused.
    let unknown = MessageId(uuid::Uuid::from_u128(42));
    let e = late(
        last.seq + 3,
        Event::UsageReported {
            message: unknown,
            tokens: usage,
        },
    );
    windowed.evolve(&e).unwrap();
    let fresh = SessionState::replay(&events[..2]).unwrap();
    let mut fresh2 = fresh.clone();
    let mut e = late(
        3,
        Event::UsageReported {
            message: unknown,
            tokens: usage,
        },
    );
    e.session = events[0].session;
    assert!(fresh2.evolve(&e).is_err());
    assert_eq!(fresh2, fresh);
}

/// The timeline names the error of each step's message, also of a message
/// a pivot dropped from the state before its error was recorded (an agent
/// records an error after the step it ends).
#[test]
fn the_timeline_names_the_error_of_a_dropped_message() {
    let (mut events, windowed, _) = dropped_session();
    let before = timeline(&events).unwrap();
    let row = before
        .steps
        .iter()
        .find(|r| windowed.message(r.message).is_none())
        .expect("a step of a dropped message");
    assert_eq!(row.error, None);
    let last = events.last().unwrap().clone();
    events.push(Envelope {
        seq: last.seq + 1,
        id: EventId(uuid::Uuid::from_u128(
            0x0199_0000_0000_7000_8000_0000_0000_0001,
        )),
        event: Event::MessageErrored {
            message: row.message,
            error: MessageError {
                name: "MessageOutputLengthError".into(),
                message: "the output limit was reached".into(),
            },
        },
        ..last
    });
    let after = timeline(&events).unwrap();
    let same = after.steps.iter().find(|r| r.seq == row.seq).unwrap();
    assert_eq!(same.error.as_deref(), Some("MessageOutputLengthError"));
}
