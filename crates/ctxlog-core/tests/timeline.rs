//! The timeline: every lifecycle event in the row of the step before it,
//! and the rows a [`TimelineFold`] hands out one at a time the same as the
//! timeline of the whole slice.

use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::*;

/// `events` cut right after the last assistant message began, with a usage
/// report on it and then a policy change: a session whose last step is
/// still open, its last event a lifecycle event (the open row's).
fn with_open_step(events: &[Envelope]) -> Vec<Envelope> {
    let at = events
        .iter()
        .rposition(|e| {
            matches!(
                e.event,
                Event::MessageAppended {
                    role: Role::Assistant,
                    ..
                }
            )
        })
        .expect("an assistant message");
    let Event::MessageAppended { message, .. } = events[at].event else {
        unreachable!()
    };
    let mut cut = events[..=at].to_vec();
    let last = cut[at].clone();
    cut.push(Envelope {
        seq: last.seq + 1,
        id: EventId(uuid::Uuid::from_u128(
            0x0199_0000_0000_7000_8000_0000_0000_00ff,
        )),
        event: Event::UsageReported {
            message,
            tokens: TokenUsage {
                input: 1_234,
                ..TokenUsage::default()
            },
        },
        ..last.clone()
    });
    cut.push(Envelope {
        seq: last.seq + 2,
        id: EventId(uuid::Uuid::from_u128(
            0x0199_0000_0000_7000_8000_0000_0000_01ff,
        )),
        event: Event::PolicyChanged {
            policy: Policy::opencode_seed(),
        },
        ..last
    });
    cut
}

/// `events` with the last completed tool output taken back (its part waits
/// again, as the Agents SDK's `pop_item` records it).
fn with_output_taken_back(events: &[Envelope]) -> Vec<Envelope> {
    let (part, call_id, tool) = events
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::PartAppended {
                part,
                body:
                    PartBody::Tool {
                        call_id,
                        tool,
                        state: ToolState::Completed { .. },
                    },
                ..
            }
            | Event::PartUpdated {
                part,
                body:
                    PartBody::Tool {
                        call_id,
                        tool,
                        state: ToolState::Completed { .. },
                    },
            } => Some((*part, call_id.clone(), tool.clone())),
            _ => None,
        })
        .expect("a completed tool output");
    let mut more = events.to_vec();
    let last = events.last().unwrap().clone();
    more.push(Envelope {
        seq: last.seq + 1,
        id: EventId(uuid::Uuid::from_u128(
            0x0199_0000_0000_7000_8000_0000_0000_02ff,
        )),
        event: Event::PartUpdated {
            part,
            body: PartBody::Tool {
                call_id,
                tool,
                state: ToolState::Pending {
                    input: Json::Null,
                    raw: String::new(),
                },
            },
        },
        ..last
    });
    more
}

/// A generated session of 40 turns with many failures, seeded by `seed`.
fn generated(seed: u64) -> Vec<Envelope> {
    generate(&GenerateConfig {
        seed,
        turns: 40,
        failure_percent: 15,
        ..GenerateConfig::default()
    })
    .unwrap()
}

#[test]
fn every_lifecycle_event_is_in_the_row_of_the_step_before_it() {
    let mut open_rows = 0;
    let mut withdrawn = 0;
    for seed in 1..5 {
        let whole = generated(seed);
        let taken_back = with_output_taken_back(&whole);
        for events in [whole.clone(), with_open_step(&whole), taken_back] {
            let t = timeline(&events).unwrap();
            assert!(t.steps.len() > 10, "seed {seed}: {} steps", t.steps.len());
            withdrawn += t.count("output_withdrawn");
            let last = t.steps.last().unwrap();
            if last.open {
                open_rows += 1;
                assert_eq!(last.events.last().unwrap().kind, "policy_changed");
            }
            let entries = audit(&events);
            let attached: Vec<Seq> = t
                .steps
                .iter()
                .flat_map(|r| r.events.iter().map(|e| e.seq))
                .collect();
            let named: Vec<Seq> = entries.iter().map(|e| e.seq).collect();
            // The timeline's auditor asks the state what the audit's
            // remembers: the same entries.
            assert_eq!(attached, named, "seed {seed}: every entry, once, in order");
            let kinds = |k: &str| entries.iter().filter(|e| e.kind == k).count();
            assert_eq!(t.count("output_withdrawn"), kinds("output_withdrawn"));
            for (i, row) in t.steps.iter().enumerate() {
                let next = t.steps.get(i + 1).map_or(Seq::MAX, |r| r.seq);
                for e in &row.events {
                    assert!(e.seq < next, "seed {seed}: {} after step {}", e.seq, next);
                    assert!(i == 0 || e.seq >= row.seq, "seed {seed}: {}", e.seq);
                }
            }
            // One row at a time: the same rows, each with the error known
            // when it was handed out.
            let mut fold = TimelineFold::new();
            let mut rows = Vec::new();
            for e in &events {
                rows.extend(fold.push(e).unwrap());
            }
            let end = fold.finish();
            rows.extend(end.rows);
            assert_eq!(rows.len(), t.steps.len(), "seed {seed}");
            for (mut row, whole) in rows.into_iter().zip(&t.steps) {
                row.error = end.errors.get(&row.message).cloned();
                assert_eq!(&row, whole, "seed {seed}");
            }
            assert_eq!((end.policy, end.limits), (t.policy.clone(), t.limits));
        }
    }
    assert_eq!(open_rows, 4, "every cut session ends with an open row");
    assert_eq!(withdrawn, 4, "every output taken back is in the timeline");
}

/// An auditor folded beside the state, told whether a tool part had an
/// output and naming source ids from the state, writes the same trail as
/// one that remembers every id.
#[test]
fn an_auditor_beside_the_state_writes_the_same_trail() {
    let mut named = 0;
    for seed in 1..5 {
        let whole = generated(seed);
        for events in [with_open_step(&whole), with_output_taken_back(&whole)] {
            let remembered = audit(&events);
            let mut state = SessionState::new();
            let mut auditor = Auditor::beside_state();
            let mut told = Vec::new();
            for e in &events {
                let had = had_output(&state, &e.event);
                state.evolve(e).unwrap();
                if let Some(mut entry) = auditor.push_told(e, had) {
                    assert!(entry.source_ids.iter().all(Option::is_none));
                    entry.source_ids = entry.ids.iter().map(|id| source_in(&state, id)).collect();
                    told.push(entry);
                }
            }
            assert_eq!(told, remembered, "seed {seed}");
            named += told
                .iter()
                .flat_map(|e| &e.source_ids)
                .filter(|s| s.is_some())
                .count();
        }
    }
    assert!(named > 100, "{named} source ids named");
}
