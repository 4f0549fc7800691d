//! Property tests over simulated sessions: incremental = replay, snapshot +
//! tail = replay, prune idempotence, protected parts never pruned, the window
//! after a pivot, pruned outputs kept, and the codec round trip.

use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::json::JsonNumber;
use ctxlog_core::*;
use proptest::prelude::*;

fn config() -> impl Strategy<Value = GenerateConfig> {
    (
        any::<u64>(),
        1u32..10,
        1u32..6,
        0u32..4,
        prop_oneof![
            Just(Policy::opencode_seed()),
            Just(Policy {
                prune: true,
                ..Policy::opencode_1_17()
            })
        ],
        prop_oneof![Just(30_000u64), Just(60_000), Just(128_000), Just(0)],
        0u32..15,
        any::<bool>(),
    )
        .prop_map(
            |(seed, turns, steps, tools, mut policy, context, failure, small_prune)| {
                if small_prune {
                    policy.prune_protect = 4_000;
                    policy.prune_minimum = 2_000;
                }
                GenerateConfig {
                    seed,
                    turns,
                    max_steps_per_turn: steps,
                    max_tools_per_step: tools,
                    min_output_chars: 2_000,
                    max_output_chars: 200_000,
                    failure_percent: failure,
                    policy,
                    limits: ModelLimits {
                        context,
                        input: None,
                        output: Some(8_000),
                    },
                    ..GenerateConfig::default()
                }
            },
        )
}

/// Index of the `n`-th most recent user message, if there are that many.
fn nth_recent_user(state: &SessionState, n: usize) -> Option<usize> {
    state
        .messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| m.role == Role::User)
        .nth(n - 1)
        .map(|(i, _)| i)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn incremental_equals_replay_and_snapshot_plus_tail(cfg in config(), cut in 0.0f64..1.0) {
        let events = generate(&cfg).unwrap();
        let full = SessionState::replay(&events).unwrap();
        // the same events after a trip through JSON lines and through the
        // binary codec (as a store or an export would carry them)
        let via_json: Vec<Envelope> = events.iter().map(|e| serde_json::from_str(&serde_json::to_string(e).unwrap()).unwrap()).collect();
        let via_codec: Vec<Envelope> = events.iter().map(|e| codec::decode(&codec::encode(e).unwrap()).unwrap()).collect();
        for other in [&via_json, &via_codec] {
            let state = SessionState::replay(other).unwrap();
            prop_assert_eq!(&state, &full);
            prop_assert_eq!(state.digest(), full.digest());
        }
        // incremental views agree with a re-fold at every prefix boundary we sample
        let mut inc = SessionState::new();
        for (i, e) in events.iter().enumerate() {
            inc.evolve(e).unwrap();
            if i % 37 == 0 {
                let refold = SessionState::replay(&events[..=i]).unwrap();
                prop_assert_eq!(window(&inc), window(&refold));
                prop_assert_eq!(inc.overflow(), refold.overflow());
            }
        }
        prop_assert_eq!(inc.digest(), full.digest());
        // snapshot at a random point, decoded, plus the tail
        let k = ((events.len() as f64) * cut) as usize;
        let head = SessionState::replay(&events[..k]).unwrap();
        let mut resumed = SessionState::from_snapshot(&head.to_snapshot()).unwrap();
        for e in &events[k..] {
            resumed.evolve(e).unwrap();
        }
        prop_assert_eq!(&resumed, &full);
        prop_assert_eq!(resumed.digest(), full.digest());
        // the same config generates the same log
        prop_assert_eq!(generate(&cfg).unwrap(), events);
    }

    #[test]
    fn prune_rules_hold_at_every_step(cfg in config()) {
        let events = generate(&cfg).unwrap();
        let mut state = SessionState::new();
        for e in &events {
            if let Event::PartsPruned { parts, .. } = &e.event {
                let guard = nth_recent_user(&state, state.policy.prune_protect_turns as usize)
                    .expect("a prune needs the protected turns to exist");
                let before: Vec<String> = parts.iter().map(|p| output_in(state.history_part(p.part).unwrap().1, &events)).collect();
                for p in parts {
                    let (m, part) = state.history_part(p.part).unwrap();
                    prop_assert!(!state.policy.is_protected_tool(part.tool_name().unwrap()), "protected tool pruned");
                    prop_assert!(state.history_index(m.id).unwrap() < guard, "part of the last two user turns pruned");
                }
                state.evolve(e).unwrap();
                for (p, out) in parts.iter().zip(before) {
                    let (_, part) = state.history_part(p.part).unwrap();
                    prop_assert!(part.pruned.is_some());
                    prop_assert_eq!(output_in(part, &events), out, "stored output changed");
                }
                // a second prune right after marks nothing
                let again = plan_prune(&state, &state.policy.clone());
                prop_assert!(again.to_event(&state.policy).is_none(), "second prune would mark {:?}", again.parts);
            } else {
                state.evolve(e).unwrap();
            }
        }
    }

    #[test]
    fn second_prune_marks_nothing_under_any_policy(cfg in config(), protect in 0u64..60_000, minimum in 0u64..30_000) {
        let events = generate(&cfg).unwrap();
        let mut state = SessionState::replay(&events).unwrap();
        let policy = Policy { prune: true, prune_protect: protect, prune_minimum: minimum, ..state.policy.clone() };
        let first = plan_prune(&state, &policy);
        if let Some(event) = first.to_event(&policy) {
            let env = Envelope { seq: state.head + 1, event, ..events.last().unwrap().clone() };
            state.evolve(&env).unwrap();
        }
        let second = plan_prune(&state, &policy);
        prop_assert!(second.to_event(&policy).is_none());
    }

    #[test]
    fn after_a_completed_pivot_the_window_holds_nothing_from_before_it(cfg in config()) {
        let events = generate(&cfg).unwrap();
        let mut state = SessionState::new();
        for e in &events {
            state.evolve(e).unwrap();
            let w = window(&state);
            let Some(pivot) = state.pivot() else {
                prop_assert_eq!(w.pivot, None);
                continue;
            };
            prop_assert_eq!(w.pivot, Some(pivot.marker));
            let first = match pivot.tail_start {
                Some(t) => state.message_index(t).unwrap(),
                None => state.message_index(pivot.marker).unwrap(),
            };
            for m in &w.messages {
                prop_assert!(state.message_index(m.id).unwrap() >= first, "message from before the pivot in the window");
            }
            prop_assert_eq!(w.messages[0].id, pivot.marker);
            prop_assert_eq!(Some(w.messages[1].id), pivot.summary);
        }
    }

    #[test]
    fn every_event_round_trips_through_the_codec(cfg in config()) {
        for e in generate(&cfg).unwrap() {
            let bytes = codec::encode(&e).unwrap();
            let back: Envelope = codec::decode(&bytes).unwrap();
            prop_assert_eq!(back, e);
        }
    }

    #[test]
    fn json_round_trips_through_bincode_and_json(v in json_strategy()) {
        let back: Json = codec::decode(&codec::encode(&v).unwrap()).unwrap();
        prop_assert_eq!(&back, &v);
        let text = serde_json::to_string(&v).unwrap();
        let again: Json = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&again, &v);
        prop_assert_eq!(v.to_json_string(), text);
    }

    #[test]
    fn json_length_is_measured_without_building_the_string(v in json_strategy()) {
        prop_assert_eq!(v.json_utf16_len(), ctxlog_core::policy::utf16_len(&v.to_json_string()));
    }

    /// The window estimate computed in place equals the estimate of the
    /// window as built, at every event of generated sessions.
    #[test]
    fn estimate_window_equals_the_built_window(seed in 0u64..1_000) {
        let cfg = GenerateConfig { seed, turns: 6, ..GenerateConfig::default() };
        let mut state = SessionState::new();
        for e in generate(&cfg).unwrap() {
            state.evolve(&e).unwrap();
            prop_assert_eq!(
                estimate_window(&state),
                window(&state).estimate(&state.policy.estimator)
            );
        }
        // Another estimator from here on: every kept estimate is redone.
        let mut policy = state.policy.clone();
        policy.estimator = policy::Estimator::CharsPerToken { chars_per_token: 3 };
        let change = Envelope {
            session: state.session.unwrap(),
            seq: state.head + 1,
            id: EventId(uuid::Uuid::from_u128(u128::from(seed) + 1)),
            recorded_at: 0,
            causation: None,
            correlation: None,
            event: Event::PolicyChanged { policy },
        };
        state.evolve(&change).unwrap();
        prop_assert_eq!(
            estimate_window(&state),
            window(&state).estimate(&state.policy.estimator)
        );
    }
}

fn json_strategy() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<u64>().prop_map(|n| Json::Number(JsonNumber::PosInt(n))),
        (i64::MIN..0).prop_map(|n| Json::Number(JsonNumber::NegInt(n))),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| Json::Number(JsonNumber::Float(f))),
        ".{0,12}".prop_map(Json::String),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Json::Array),
            prop::collection::vec(("[a-z]{1,6}", inner), 0..5).prop_map(Json::Object),
        ]
    })
}

/// The generator settings the lifecycle-coverage tests run: 8 seeds at three
/// context sizes, with failures at 5 %.
fn lifecycle_configs() -> impl Iterator<Item = GenerateConfig> {
    (0..8).flat_map(|seed| {
        [30_000u64, 60_000, 128_000].map(|context| GenerateConfig {
            seed,
            failure_percent: 5,
            limits: ModelLimits {
                context,
                input: None,
                output: Some(8_000),
            },
            ..GenerateConfig::default()
        })
    })
}

/// The properties above are only as strong as the logs the generator writes:
/// over a handful of seeds it must exercise compactions (completed and
/// failed), prunes, tool errors and aborted steps.
#[test]
fn the_generator_exercises_the_whole_lifecycle() {
    let (mut completed, mut failed, mut prunes, mut tool_errors, mut aborted) = (0, 0, 0, 0, 0);
    for cfg in lifecycle_configs() {
        let events = generate(&cfg).unwrap();
        let state = SessionState::replay_keeping_history(&events).unwrap();
        completed += state
            .jobs
            .iter()
            .filter(|j| matches!(j.status, JobStatus::Completed { .. }))
            .count();
        failed += state
            .jobs
            .iter()
            .filter(|j| matches!(j.status, JobStatus::Failed { .. }))
            .count();
        prunes += events
            .iter()
            .filter(|e| matches!(e.event, Event::PartsPruned { .. }))
            .count();
        tool_errors += state
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .filter(|p| p.tool_status() == Some("error"))
            .count();
        aborted += state
            .messages
            .iter()
            .filter(|m| m.error.is_some() && !m.summary)
            .count();
    }
    eprintln!("COUNTS {completed} {failed} {prunes} {tool_errors} {aborted}");
    assert!(completed >= 10, "completed compactions: {completed}");
    assert!(failed >= 1, "failed compactions: {failed}");
    assert!(prunes >= 5, "prunes: {prunes}");
    assert!(tool_errors >= 1, "tool errors: {tool_errors}");
    assert!(aborted >= 1, "aborted steps: {aborted}");
}

/// The generator drives the whole lifecycle through `decide`, so over a
/// handful of seeds its logs hold every event kind there is, but the one
/// only an import writes (`source_fields`, `session_described`,
/// `session_replaced`, `import_started` and `usage_reported`, tested with
/// the importers, the catalog and `import --replace`), the one only an
/// agent's undo writes (`messages_withdrawn`, tested with the Agents SDK
/// session) and the one only an agent's hook writes (`captured`, tested
/// with `ctxlog hook` and the real agents).
#[test]
fn the_generator_emits_every_event_kind() {
    let mut seen = std::collections::BTreeSet::from([
        "source_fields",
        "session_described",
        "session_replaced",
        "import_started",
        "usage_reported",
        "messages_withdrawn",
        "captured",
    ]);
    for cfg in lifecycle_configs() {
        for e in generate(&cfg).unwrap() {
            seen.insert(e.event.kind());
        }
    }
    let missing: Vec<_> = EVENT_KINDS.iter().filter(|k| !seen.contains(*k)).collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}

/// The output of a completed tool part, held or read back from the log.
fn output_in(part: &ctxlog_core::Part, events: &[Envelope]) -> String {
    match &*part.body_in(events).expect("the log holds it") {
        PartBody::Tool {
            state: ToolState::Completed { output, .. },
            ..
        } => output.clone(),
        other => panic!("not a completed tool part: {other:?}"),
    }
}
