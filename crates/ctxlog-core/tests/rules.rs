//! Table-driven tests of each rule: window, overflow, prune plan, pending
//! jobs, tail, and refused events.

mod common;
use common::*;
use ctxlog_core::window::{
    estimate_window, window, ToolResult, COMPACTION_QUESTION, INTERRUPTED_TOOL, PRUNED_PLACEHOLDER,
};
use ctxlog_core::*;

// ---------------------------------------------------------------- window

#[test]
fn window_without_compaction_is_the_whole_history() {
    let mut s = S::new();
    s.turn(&[10]);
    s.turn(&[20]);
    let w = window(s.state());
    assert_eq!(w.pivot, None);
    assert_eq!(w.messages.len(), 4);
    assert_eq!(
        window_texts(s.state()),
        [
            "do it",
            "read:xxxxxxxxxx…(40 chars)",
            "done",
            "do it",
            "read:xxxxxxxxxx…(80 chars)",
            "done"
        ]
    );
}

#[test]
fn completed_pivot_starts_the_window_at_the_marker() {
    let mut s = S::new();
    s.turn(&[10]);
    let (job, summary) = s.compact("SUMMARY ONE");
    let after = s.user("next");
    let w = window(s.state());
    assert_eq!(w.pivot, Some(job));
    let ids: Vec<_> = w.messages.iter().map(|m| m.id).collect();
    assert_eq!(ids, [job, summary, after]);
    assert_eq!(
        window_texts(s.state()),
        [COMPACTION_QUESTION, "SUMMARY ONE", "next"]
    );
    assert_eq!(w.messages[0].role, Role::User);
    assert_eq!(w.messages[1].role, Role::Assistant);
}

#[test]
fn latest_completed_pivot_wins() {
    let mut s = S::new();
    s.turn(&[10]);
    s.compact("ONE");
    s.turn(&[10]);
    let (job2, _) = s.compact("TWO");
    assert_eq!(window(s.state()).pivot, Some(job2));
    assert_eq!(window_texts(s.state()), [COMPACTION_QUESTION, "TWO"]);
}

#[test]
fn pivot_whose_summary_has_no_finish_does_not_filter() {
    let mut s = S::new();
    s.turn(&[10]);
    let t = s.tick();
    let job =
        s.r.request_compaction(t, true, CompactionTrigger::Manual)
            .unwrap();
    let summary_message = MessageId(s.r.uuid(t));
    s.record(Event::CompactionStarted {
        job,
        summary_message,
        agent: None,
        model: None,
        prompt: None,
        tail_start: None,
        source_id: None,
    })
    .unwrap();
    s.text(summary_message, "HALF WRITTEN SUMMARY");
    let w = window(s.state());
    assert_eq!(w.pivot, None);
    // whole history, the marker question, and no half-written summary
    assert_eq!(
        window_texts(s.state()),
        [
            "do it",
            "read:xxxxxxxxxx…(40 chars)",
            "done",
            COMPACTION_QUESTION
        ]
    );
    assert_eq!(s.state().pending_jobs().count(), 1);
    // a failed job leaves the window exactly as it was before the request
    s.record(Event::CompactionFailed {
        job,
        error: "timeout".into(),
    })
    .unwrap();
    assert_eq!(window(s.state()).pivot, None);
    assert_eq!(
        window_texts(s.state()),
        ["do it", "read:xxxxxxxxxx…(40 chars)", "done"],
        "the failed marker is not sent"
    );
    assert_eq!(s.state().pending_jobs().count(), 0);
}

#[test]
fn pruned_output_is_replaced_and_attachments_dropped_but_stored_output_kept() {
    let mut s = S::new();
    let u = s.user("look");
    let a = s.assistant(u);
    let t = s.tick();
    let att = Attachment {
        mime: "image/png".into(),
        filename: Some("x.png".into()),
        url: "data:...".into(),
    };
    let part =
        s.r.part(
            t,
            a,
            PartBody::Tool {
                call_id: "c1".into(),
                tool: "read".into(),
                state: ToolState::Completed {
                    input: Json::Null,
                    output: "SECRET OUTPUT".into(),
                    title: None,
                    metadata: Json::Null,
                    start: t,
                    end: t,
                    attachments: vec![att.clone()],
                },
            },
        )
        .unwrap();
    s.record(Event::PartsPruned {
        parts: vec![PrunedPart { part, tokens: 3 }],
        total_tokens: 3,
        policy: "manual".into(),
    })
    .unwrap();
    let w = window(s.state());
    let WindowPart::Tool { result, .. } = &w.messages[1].parts[0] else {
        panic!("tool part expected")
    };
    assert_eq!(
        result,
        &ToolResult::Output {
            text: PRUNED_PLACEHOLDER.into(),
            attachments: vec![]
        }
    );
    let (_, stored) = s.state().part(part).unwrap();
    assert_eq!(stored.completed_output(), Some("SECRET OUTPUT"));
    assert!(stored.pruned.is_some());
    // restore brings it back
    s.record(Event::PartsRestored {
        parts: vec![part],
        reason: "undo".into(),
    })
    .unwrap();
    let w = window(s.state());
    let WindowPart::Tool { result, .. } = &w.messages[1].parts[0] else {
        panic!()
    };
    assert_eq!(
        result,
        &ToolResult::Output {
            text: "SECRET OUTPUT".into(),
            attachments: vec![att]
        }
    );
}

#[test]
fn unfinished_tools_render_as_interrupted_and_errored_messages_are_skipped() {
    let mut s = S::new();
    let u = s.user("go");
    let a = s.assistant(u);
    let t = s.tick();
    s.r.part(
        t,
        a,
        PartBody::Tool {
            call_id: "c".into(),
            tool: "bash".into(),
            state: ToolState::Running {
                input: Json::Null,
                title: None,
                start: t,
            },
        },
    )
    .unwrap();
    let b = s.assistant(u);
    s.text(b, "partial answer");
    s.record(Event::MessageErrored {
        message: b,
        error: MessageError {
            name: "MessageAbortedError".into(),
            message: "aborted".into(),
        },
    })
    .unwrap();
    let c = s.assistant(u);
    s.text(c, "broken");
    s.record(Event::MessageErrored {
        message: c,
        error: MessageError {
            name: "APIError".into(),
            message: "500".into(),
        },
    })
    .unwrap();
    assert_eq!(
        window_texts(s.state()),
        [
            "go".to_string(),
            format!("bash!{INTERRUPTED_TOOL}"),
            "partial answer".into()
        ]
    );
}

#[test]
fn tail_is_kept_after_the_summary_in_order() {
    let mut s = S::with(Policy::opencode_1_17(), limits());
    s.turn(&[5_000]); // with turns 2 and 3 kept, this one no longer fits the 8k tail
    let (u2, a2, _) = s.turn(&[3_000]);
    let (u3, a3, _) = s.turn(&[1_000]);
    let t = s.tick();
    let job =
        s.r.request_compaction(t, false, CompactionTrigger::Manual)
            .unwrap();
    let policy = s.state().policy.clone();
    // budget = clamp(168_000 / 4, 2k, 8k) = 8k: turns 3 (≈1k) and 2 (≈3k) fit, turn 1 (5k) would not
    assert_eq!(
        ctxlog_core::tail::tail_budget(&policy, s.state()),
        Some(8_000)
    );
    let tail = select_tail(s.state(), &policy, job);
    assert_eq!(tail, Some(u2));
    let t = s.tick();
    let summary =
        s.r.summarize(t, job, "S", tail, TokenUsage::default())
            .unwrap();
    let next = s.user("after");
    let ids: Vec<_> = window(s.state()).messages.iter().map(|m| m.id).collect();
    assert_eq!(ids, [job, summary, u2, a2, u3, a3, next]);
}

#[test]
fn tail_splits_a_turn_that_does_not_fit() {
    let mut s = S::with(Policy::opencode_1_17(), limits());
    let u = s.user("first");
    let a1 = s.assistant(u);
    s.tool_tokens(a1, "read", 7_000);
    s.step(a1, 10);
    let a2 = s.assistant(u);
    s.tool_tokens(a2, "read", 2_000);
    s.step(a2, 10);
    s.turn(&[5_000]);
    let t = s.tick();
    let job =
        s.r.request_compaction(t, true, CompactionTrigger::Manual)
            .unwrap();
    let policy = s.state().policy.clone();
    // newest turn ≈5k fits; the first turn (≈9k) does not, its suffix a2 (≈2k) does
    assert_eq!(select_tail(s.state(), &policy, job), Some(a2));
    // the seed policy keeps no tail
    assert_eq!(select_tail(s.state(), &Policy::opencode_seed(), job), None);
}

// ---------------------------------------------------------------- overflow

#[test]
fn overflow_is_checked_on_the_last_step_and_never_for_a_summary() {
    let mut s = S::new(); // usable = 200k - min(64k, 32k) = 168k
    let u = s.user("x");
    let a = s.assistant(u);
    s.text(a, "y");
    let cases: &[(u64, bool)] = &[(167_999, false), (168_000, false), (168_001, true)];
    for &(input, want) in cases {
        let a = s.assistant(u);
        s.text(a, "y");
        s.step(a, input);
        let c = s.state().overflow().unwrap();
        assert_eq!(
            (c.count, c.usable, c.overflow),
            (input, Some(168_000), want),
            "input {input}"
        );
    }
    // a summary with a huge usage is never checked
    let t = s.tick();
    let job =
        s.r.request_compaction(t, true, CompactionTrigger::Manual)
            .unwrap();
    let t = s.tick();
    s.r.summarize(
        t,
        job,
        "S",
        None,
        TokenUsage {
            input: 10_000_000,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(s.state().overflow(), None);
    // a step on a summary message is refused
    let summary = s.state().job(job).unwrap().summary.unwrap();
    let part = PartId(s.r.uuid(1));
    let err = s
        .record(Event::StepFinished {
            message: summary,
            part,
            reason: FinishReason::Stop,
            tokens: TokenUsage::default(),
            cost_micros: None,
        })
        .unwrap_err();
    assert_eq!(err.violation, Violation::StepOnSummary(summary));
}

#[test]
fn policy_change_and_limits_change_apply_to_the_check() {
    let mut s = S::new();
    s.turn(&[]); // last step: input 1000
    let set_limits = |s: &mut S, context| {
        s.record(Event::LimitsChanged {
            limits: ModelLimits {
                context,
                input: None,
                output: Some(100),
            },
        })
        .unwrap();
        s.state().overflow().unwrap()
    };
    assert_eq!(set_limits(&mut s, 1_100).usable, Some(1_000));
    assert!(!set_limits(&mut s, 1_100).overflow); // 1000 > 1000 is false
    assert!(set_limits(&mut s, 1_099).overflow);
    assert!(!set_limits(&mut s, 0).overflow); // unlimited
    set_limits(&mut s, 1_099);
    let off = Policy {
        auto: false,
        ..Policy::opencode_seed()
    };
    s.record(Event::PolicyChanged { policy: off }).unwrap();
    assert!(!s.state().overflow().unwrap().overflow);
    let o17 = Policy::opencode_1_17();
    s.record(Event::PolicyChanged { policy: o17 }).unwrap();
    assert!(s.state().overflow().unwrap().overflow);
}

// ---------------------------------------------------------------- prune

fn tokens_of(plan: &PrunePlan) -> Vec<u64> {
    plan.parts.iter().map(|p| p.tokens).collect()
}

#[test]
fn prune_plan_table() {
    // Each case: tool outputs (tokens) of an old turn, oldest first, followed by
    // two recent turns with big outputs that are always protected.
    struct Case {
        name: &'static str,
        old: &'static [u64],
        want_parts: &'static [u64],
        want_apply: bool,
    }
    let cases = [
        Case {
            name: "under protect",
            old: &[40_000],
            want_parts: &[],
            want_apply: false,
        },
        // total reaches exactly protect: nothing selected (> not >=)
        Case {
            name: "exactly protect",
            old: &[10_000, 40_000],
            want_parts: &[10_000],
            want_apply: false,
        },
        // the part that crosses protect is itself selected
        Case {
            name: "crossing part",
            old: &[25_000, 39_999, 2],
            want_parts: &[39_999, 25_000],
            want_apply: true,
        },
        // pruned == minimum: not applied (strictly more is needed)
        Case {
            name: "pruned == minimum",
            old: &[20_000, 40_000],
            want_parts: &[20_000],
            want_apply: false,
        },
        Case {
            name: "minimum + 1",
            old: &[20_001, 40_000],
            want_parts: &[20_001],
            want_apply: true,
        },
        Case {
            name: "several",
            old: &[5_000, 10_000, 10_000, 40_000],
            want_parts: &[10_000, 10_000, 5_000],
            want_apply: true,
        },
    ];
    for c in cases {
        let mut s = S::new();
        s.turn(c.old);
        s.turn(&[100_000]); // 2nd most recent turn: protected
        s.turn(&[100_000]); // most recent turn: protected
        let plan = plan_prune(s.state(), &s.state().policy.clone());
        assert_eq!(tokens_of(&plan), c.want_parts, "{}: parts", c.name);
        assert_eq!(plan.apply, c.want_apply, "{}: apply", c.name);
        assert_eq!(
            plan.prunable_tokens,
            c.want_parts.iter().sum::<u64>(),
            "{}",
            c.name
        );
        assert_eq!(
            plan.to_event(&s.state().policy).is_some(),
            c.want_apply,
            "{}",
            c.name
        );
    }
}

#[test]
fn prune_skips_the_last_two_user_turns() {
    let mut s = S::new();
    let (_, _, old) = s.turn(&[30_000, 30_000]);
    let (_, _, second) = s.turn(&[200_000]);
    let (_, _, last) = s.turn(&[200_000]);
    let plan = plan_prune(s.state(), &s.state().policy.clone());
    let ids: Vec<_> = plan.parts.iter().map(|p| p.part).collect();
    assert_eq!(ids, [old[0]]); // the newer 30k is kept by protect, the older selected
    assert!(!ids.contains(&second[0]) && !ids.contains(&last[0]));
    // with only one user turn nothing is ever selected
    let mut s = S::new();
    s.turn(&[500_000, 500_000]);
    assert!(plan_prune(s.state(), &s.state().policy.clone())
        .parts
        .is_empty());
}

#[test]
fn prune_stops_at_summary_and_at_an_already_pruned_part() {
    // summary boundary: parts before the pivot are never walked
    let mut s = S::new();
    s.turn(&[100_000, 100_000]);
    s.compact("S");
    s.turn(&[30_000]);
    s.turn(&[1]);
    s.turn(&[1]);
    let plan = plan_prune(s.state(), &s.state().policy.clone());
    assert_eq!(plan.stop, PruneStop::Summary);
    assert!(plan.parts.is_empty());

    // already-pruned boundary
    let mut s = S::new();
    let (_, _, older) = s.turn(&[100_000]);
    let (_, _, old) = s.turn(&[30_000, 10_000]);
    s.record(Event::PartsPruned {
        parts: vec![PrunedPart {
            part: old[0],
            tokens: 30_000,
        }],
        total_tokens: 30_000,
        policy: "manual".into(),
    })
    .unwrap();
    s.turn(&[1]);
    s.turn(&[1]);
    let plan = plan_prune(s.state(), &s.state().policy.clone());
    assert_eq!(plan.stop, PruneStop::AlreadyPruned);
    assert!(
        plan.parts.is_empty(),
        "the 100k part behind the pruned one is not reached"
    );
    assert!(s.state().part(older[0]).unwrap().1.pruned.is_none());
}

#[test]
fn protected_tools_are_never_selected_and_do_not_count() {
    let mut s = S::new();
    let u = s.user("x");
    let a = s.assistant(u);
    let read = s.tool_tokens(a, "read", 30_000);
    let skill = s.tool_tokens(a, "skill", 500_000);
    s.tool_tokens(a, "read", 40_000);
    s.step(a, 1);
    s.turn(&[1]);
    s.turn(&[1]);
    let plan = plan_prune(s.state(), &s.state().policy.clone());
    let ids: Vec<_> = plan.parts.iter().map(|p| p.part).collect();
    assert_eq!(ids, [read]);
    assert!(!ids.contains(&skill));
    assert_eq!(plan.scanned_tokens, 70_000); // the last two turns are not walked
                                             // prune off: the plan is computed but not applied
    let off = Policy {
        prune: false,
        ..Policy::opencode_seed()
    };
    let plan = plan_prune(s.state(), &off);
    assert!(!plan.apply && plan.to_event(&off).is_none());
}

// ---------------------------------------------------------------- jobs

#[test]
fn pending_jobs_follow_the_lifecycle() {
    let mut s = S::new();
    s.turn(&[1]);
    let t = s.tick();
    let a =
        s.r.request_compaction(t, true, CompactionTrigger::Manual)
            .unwrap();
    let t = s.tick();
    let b =
        s.r.request_compaction(t, false, CompactionTrigger::Manual)
            .unwrap();
    let pending = |s: &S| {
        s.state()
            .pending_jobs()
            .map(|j| (j.marker, j.status.name()))
            .collect::<Vec<_>>()
    };
    assert_eq!(pending(&s), [(a, "requested"), (b, "requested")]);
    let m = MessageId(s.r.uuid(1));
    s.record(Event::CompactionStarted {
        job: a,
        summary_message: m,
        agent: None,
        model: None,
        prompt: None,
        tail_start: None,
        source_id: None,
    })
    .unwrap();
    assert_eq!(pending(&s), [(a, "running"), (b, "requested")]);
    s.text(m, "summary");
    let p = PartId(s.r.uuid(1));
    s.record(Event::SummaryCompleted {
        job: a,
        part: p,
        reason: FinishReason::Stop,
        tokens: TokenUsage::default(),
        redactions: 0,
    })
    .unwrap();
    assert_eq!(pending(&s), [(b, "requested")]);
    s.record(Event::CompactionFailed {
        job: b,
        error: "no".into(),
    })
    .unwrap();
    assert!(pending(&s).is_empty());
    assert_eq!(
        s.state().job(b).unwrap().status,
        JobStatus::Failed { error: "no".into() }
    );
}

// ---------------------------------------------------------------- bad input

#[test]
fn invariant_breaking_events_are_refused_by_name_and_change_nothing() {
    let mut s = S::new();
    let (u, a, parts) = s.turn(&[10]);
    let ghost = MessageId(s.r.uuid(1));
    let ghost_part = PartId(s.r.uuid(1));
    let text = PartBody::Text {
        text: "t".into(),
        synthetic: false,
        time: None,
    };
    let head = s.state().head;
    type Check = fn(&Violation) -> bool;
    let cases: Vec<(Seq, Event, Check)> = vec![
        (
            head + 1,
            Event::PartAppended {
                message: ghost,
                part: ghost_part,
                body: text.clone(),
                source_id: None,
            },
            |v| matches!(v, Violation::UnknownMessage(_)),
        ),
        (
            head + 2,
            Event::MessageAppended {
                message: ghost,
                role: Role::User,
                agent: None,
                model: None,
                synthetic: false,
                parent: None,
                source_id: None,
            },
            |v| {
                matches!(
                    v,
                    Violation::SequenceGap {
                        expected: _,
                        got: _
                    }
                )
            },
        ),
        (
            head,
            Event::MessageAppended {
                message: ghost,
                role: Role::User,
                agent: None,
                model: None,
                synthetic: false,
                parent: None,
                source_id: None,
            },
            |v| matches!(v, Violation::SequenceGap { .. }),
        ),
        (
            head + 1,
            Event::SummaryCompleted {
                job: ghost,
                part: ghost_part,
                reason: FinishReason::Stop,
                tokens: TokenUsage::default(),
                redactions: 0,
            },
            |v| matches!(v, Violation::UnknownJob(_)),
        ),
        (
            head + 1,
            Event::SummaryCompleted {
                job: u,
                part: ghost_part,
                reason: FinishReason::Stop,
                tokens: TokenUsage::default(),
                redactions: 0,
            },
            |v| matches!(v, Violation::UnknownJob(_)),
        ),
        (
            head + 1,
            Event::MessageAppended {
                message: a,
                role: Role::User,
                agent: None,
                model: None,
                synthetic: false,
                parent: None,
                source_id: None,
            },
            |v| matches!(v, Violation::DuplicateMessage(_)),
        ),
        (
            head + 1,
            Event::PartAppended {
                message: a,
                part: parts[0],
                body: text.clone(),
                source_id: None,
            },
            |v| matches!(v, Violation::DuplicatePart(_)),
        ),
        (
            head + 1,
            Event::PartAppended {
                message: u,
                part: ghost_part,
                body: PartBody::Compaction {
                    auto: true,
                    overflow: false,
                },
                source_id: None,
            },
            |v| matches!(v, Violation::DedicatedEventRequired { .. }),
        ),
        (
            head + 1,
            Event::PartAppended {
                message: u,
                part: ghost_part,
                body: PartBody::Tool {
                    call_id: "c".into(),
                    tool: "t".into(),
                    state: ToolState::Pending {
                        input: Json::Null,
                        raw: String::new(),
                    },
                },
                source_id: None,
            },
            |v| matches!(v, Violation::WrongRole { .. }),
        ),
        (
            head + 1,
            Event::PartUpdated {
                part: parts[0],
                body: text.clone(),
            },
            |v| matches!(v, Violation::KindChanged { .. }),
        ),
        (
            head + 1,
            Event::PartUpdated {
                part: ghost_part,
                body: text.clone(),
            },
            |v| matches!(v, Violation::UnknownPart(_)),
        ),
        (
            head + 1,
            Event::PartsPruned {
                parts: vec![PrunedPart {
                    part: parts[0],
                    tokens: 10,
                }],
                total_tokens: 11,
                policy: "p".into(),
            },
            |v| {
                matches!(
                    v,
                    Violation::TokenSumMismatch {
                        stated: 11,
                        sum: 10
                    }
                )
            },
        ),
        (
            head + 1,
            Event::PartsPruned {
                parts: vec![],
                total_tokens: 0,
                policy: "p".into(),
            },
            |v| matches!(v, Violation::NoParts),
        ),
        (
            head + 1,
            Event::PartsPruned {
                parts: vec![
                    PrunedPart {
                        part: parts[0],
                        tokens: 1,
                    },
                    PrunedPart {
                        part: parts[0],
                        tokens: 1,
                    },
                ],
                total_tokens: 2,
                policy: "p".into(),
            },
            |v| matches!(v, Violation::RepeatedPart(_)),
        ),
        (
            head + 1,
            Event::PartsRestored {
                parts: vec![parts[0]],
                reason: "r".into(),
            },
            |v| matches!(v, Violation::NotPruned(_)),
        ),
        (
            head + 1,
            Event::MessagesWithdrawn {
                messages: vec![],
                reason: "r".into(),
            },
            |v| matches!(v, Violation::NoMessages),
        ),
        (
            head + 1,
            Event::MessagesWithdrawn {
                messages: vec![u, u],
                reason: "r".into(),
            },
            |v| matches!(v, Violation::RepeatedMessage(_)),
        ),
        (
            head + 1,
            Event::MessagesWithdrawn {
                messages: vec![a, ghost],
                reason: "r".into(),
            },
            |v| matches!(v, Violation::UnknownMessage(_)),
        ),
        (
            head + 1,
            Event::SessionStarted {
                policy: Policy::default(),
                limits: limits(),
                title: None,
                source_id: None,
            },
            |v| matches!(v, Violation::AlreadyStarted),
        ),
        (
            head + 1,
            Event::PolicyChanged {
                policy: Policy {
                    estimator: policy::Estimator::CharsPerToken { chars_per_token: 0 },
                    ..Policy::default()
                },
            },
            |v| matches!(v, Violation::InvalidPolicy(_)),
        ),
    ];
    let before = s.state().clone();
    let digest = before.digest();
    for (i, (seq, event, check)) in cases.into_iter().enumerate() {
        let kind = event.kind();
        let env = s.envelope(seq, event);
        let mut state = s.state().clone();
        let err = state.evolve(&env).unwrap_err();
        assert!(check(&err.violation), "case {i} ({kind}): unexpected {err}");
        assert_eq!(err.seq, seq);
        assert_eq!(err.id, env.id);
        assert_eq!(err.kind, kind);
        assert!(
            err.to_string().contains(kind),
            "the message names the event: {err}"
        );
        assert_eq!(state, before, "case {i}: state changed");
        assert_eq!(state.digest(), digest);
    }
}

#[test]
fn events_of_another_session_or_before_start_are_refused() {
    let mut s = S::new();
    let mut env = s.envelope(2, Event::LimitsChanged { limits: limits() });
    env.session = SessionId(uuid_from(9));
    let mut state = s.state().clone();
    assert!(matches!(
        state.evolve(&env).unwrap_err().violation,
        Violation::WrongSession { .. }
    ));
    let env = s.envelope(1, Event::LimitsChanged { limits: limits() });
    assert_eq!(
        SessionState::new().evolve(&env).unwrap_err().violation,
        Violation::NotStarted
    );
}

#[test]
fn summary_must_have_text_and_no_error_finish_and_a_running_job() {
    let mut s = S::new();
    s.turn(&[1]);
    let t = s.tick();
    let job =
        s.r.request_compaction(t, true, CompactionTrigger::Manual)
            .unwrap();
    let p = PartId(s.r.uuid(1));
    let complete = |reason| Event::SummaryCompleted {
        job,
        part: p,
        reason,
        tokens: TokenUsage::default(),
        redactions: 0,
    };
    // not started yet: no running job
    assert!(matches!(
        s.record(complete(FinishReason::Stop))
            .unwrap_err()
            .violation,
        Violation::JobState {
            status: "requested",
            ..
        }
    ));
    let m = MessageId(s.r.uuid(1));
    s.record(Event::CompactionStarted {
        job,
        summary_message: m,
        agent: None,
        model: None,
        prompt: None,
        tail_start: None,
        source_id: None,
    })
    .unwrap();
    assert_eq!(
        s.record(complete(FinishReason::Stop))
            .unwrap_err()
            .violation,
        Violation::EmptySummary(job)
    );
    s.text(m, "summary");
    assert_eq!(
        s.record(complete(FinishReason::Error))
            .unwrap_err()
            .violation,
        Violation::SummaryFinishedWithError(job)
    );
    s.record(complete(FinishReason::Stop)).unwrap();
    // a second completion: the job is no longer running
    let p2 = PartId(s.r.uuid(1));
    let again = Event::SummaryCompleted {
        job,
        part: p2,
        reason: FinishReason::Stop,
        tokens: TokenUsage::default(),
        redactions: 0,
    };
    assert!(matches!(
        s.record(again).unwrap_err().violation,
        Violation::JobState {
            status: "completed",
            ..
        }
    ));
}

fn uuid_from(n: u8) -> uuid::Uuid {
    uuid::Uuid::from_bytes([n; 16])
}

#[test]
fn tail_turn_that_exactly_fits_the_budget_is_kept() {
    let mut s = S::with(Policy::opencode_1_17(), limits());
    s.turn(&[1_000]);
    let (u2, _, _) = s.turn(&[2_000]);
    let t = s.tick();
    let job =
        s.r.request_compaction(t, true, CompactionTrigger::Manual)
            .unwrap();
    let u2_index = s.state().message_index(u2).unwrap();
    let turn: Vec<_> = s.state().messages[u2_index..s.state().message_index(job).unwrap()]
        .iter()
        .filter_map(|m| ctxlog_core::window::render_message(s.state(), m))
        .collect();
    let size = ctxlog_core::window::estimate_json(&turn, &s.state().policy.estimator);
    let with_budget = |tokens| {
        let mut p = Policy::opencode_1_17();
        p.tail.as_mut().unwrap().preserve_recent_tokens = Some(tokens);
        p
    };
    assert_eq!(
        select_tail(s.state(), &with_budget(size), job),
        Some(u2),
        "turn == budget fits"
    );
    // one token less: the turn does not fit; its suffix (the assistant message) does
    let a2 = s.state().messages[u2_index + 1].id;
    assert_eq!(
        select_tail(s.state(), &with_budget(size - 1), job),
        Some(a2)
    );
}

#[test]
fn an_errored_or_reopened_summary_never_becomes_a_pivot() {
    let mut s = S::new();
    s.turn(&[10]);
    let t = s.tick();
    let job =
        s.r.request_compaction(t, true, CompactionTrigger::Manual)
            .unwrap();
    let first = MessageId(s.r.uuid(t));
    let start = |summary_message| Event::CompactionStarted {
        job,
        summary_message,
        agent: None,
        model: None,
        prompt: None,
        tail_start: None,
        source_id: None,
    };
    s.record(start(first)).unwrap();
    s.text(first, "first attempt");
    // an error goes through the job, never directly on the summary
    let err = s
        .record(Event::MessageErrored {
            message: first,
            error: MessageError {
                name: "APIError".into(),
                message: "x".into(),
            },
        })
        .unwrap_err();
    assert_eq!(err.violation, Violation::SummaryErrorNeedsJobEvent(first));
    // a summary takes no tool parts
    let t = s.tick();
    let tool = PartBody::Tool {
        call_id: "c".into(),
        tool: "bash".into(),
        state: ToolState::Pending {
            input: Json::Null,
            raw: String::new(),
        },
    };
    let err = s.r.part(t, first, tool).unwrap_err();
    assert!(
        matches!(err.violation, Violation::ClosedMessage { .. }),
        "{err}"
    );
    // a second attempt of the running job supersedes the first
    let second = MessageId(s.r.uuid(t));
    s.record(start(second)).unwrap();
    assert_eq!(
        s.state()
            .message(first)
            .unwrap()
            .error
            .as_ref()
            .unwrap()
            .name,
        "CompactionRestarted"
    );
    let t = s.tick();
    assert!(matches!(
        s.r.part(
            t,
            first,
            PartBody::Text {
                text: "late".into(),
                synthetic: false,
                time: None
            }
        )
        .unwrap_err()
        .violation,
        Violation::ClosedMessage { .. }
    ));
    s.text(second, "second attempt");
    let p = PartId(s.r.uuid(1));
    s.record(Event::SummaryCompleted {
        job,
        part: p,
        reason: FinishReason::Stop,
        tokens: TokenUsage::default(),
        redactions: 0,
    })
    .unwrap();
    assert_eq!(
        window_texts(s.state()),
        [COMPACTION_QUESTION, "second attempt"]
    );
    assert_eq!(s.state().job(job).unwrap().attempts, 2);
    // the completed pivot is closed: no new parts, no updates, no errors
    let t = s.tick();
    let err =
        s.r.part(
            t,
            second,
            PartBody::Text {
                text: "rewrite".into(),
                synthetic: false,
                time: None,
            },
        )
        .unwrap_err();
    assert!(matches!(err.violation, Violation::ClosedMessage { .. }));
    let text_part = s.state().message(second).unwrap().parts[0].id;
    let err = s
        .record(Event::PartUpdated {
            part: text_part,
            body: PartBody::Text {
                text: "rewrite".into(),
                synthetic: false,
                time: None,
            },
        })
        .unwrap_err();
    assert!(matches!(err.violation, Violation::ClosedMessage { .. }));
    // and markers hold nothing but their compaction part
    let t = s.tick();
    assert!(matches!(
        s.r.part(
            t,
            job,
            PartBody::Text {
                text: "x".into(),
                synthetic: false,
                time: None
            }
        )
        .unwrap_err()
        .violation,
        Violation::ClosedMessage { .. }
    ));
}

#[test]
fn huge_token_counts_saturate_instead_of_panicking() {
    let mut s = S::new();
    let u = s.user("x");
    let a = s.assistant(u);
    let t = s.tick();
    let tokens = TokenUsage {
        total: None,
        input: u64::MAX,
        output: u64::MAX,
        reasoning: u64::MAX,
        cache_read: u64::MAX,
        cache_write: u64::MAX,
    };
    s.r.finish_step(t, a, FinishReason::Stop, tokens).unwrap();
    let c = s.state().overflow().unwrap();
    assert_eq!(c.count, u64::MAX);
    assert!(c.overflow);
    let o17 = Policy::opencode_1_17();
    assert_eq!(
        o17.check_overflow(
            &ModelLimits {
                context: u64::MAX,
                input: None,
                output: None
            },
            &tokens
        )
        .count,
        u64::MAX
    );
    let huge = ModelLimits {
        context: u64::MAX,
        input: Some(u64::MAX),
        output: Some(u64::MAX),
    };
    s.record(Event::LimitsChanged { limits: huge }).unwrap();
    assert_eq!(ctxlog_core::tail::tail_budget(&o17, s.state()), Some(8_000));
}

#[test]
fn a_late_step_of_an_older_message_does_not_move_last_finished_back() {
    let mut s = S::new();
    let u = s.user("x");
    let older = s.assistant(u);
    let newer = s.assistant(u);
    s.step(newer, 500);
    s.step(older, 200_000);
    let last = s.state().last_finished.as_ref().unwrap();
    assert_eq!(last.message, newer);
    assert!(!s.state().overflow().unwrap().overflow);
}

#[test]
fn the_loop_guard_pause_lasts_until_the_next_real_user_message() {
    let mut s = S::new();
    s.turn(&[1]);
    let pause = Event::AutoCompactionPaused {
        reason: "no progress".into(),
        window_before: 10,
        window_after: 10,
    };
    s.record(pause).unwrap();
    assert_eq!(s.state().auto_paused.as_deref(), Some("no progress"));
    let t = s.tick();
    s.r.user_text(t, ctxlog_core::window::CONTINUE_TEXT, true)
        .unwrap();
    assert!(
        s.state().auto_paused.is_some(),
        "a synthetic message does not lift the pause"
    );
    s.user("a real prompt");
    assert_eq!(s.state().auto_paused, None);
    // attempts are recorded only for pending jobs
    let t = s.tick();
    let job =
        s.r.request_compaction(t, false, CompactionTrigger::Manual)
            .unwrap();
    let attempt = |fits| Event::CompactionAttempted {
        job,
        strategy: "full".into(),
        request_tokens: 5,
        limit: None,
        fits,
    };
    s.record(attempt(true)).unwrap();
    s.record(Event::CompactionFailed {
        job,
        error: "x".into(),
    })
    .unwrap();
    assert!(matches!(
        s.record(attempt(true)).unwrap_err().violation,
        Violation::JobState { .. }
    ));
}

#[test]
fn a_withdrawn_message_leaves_the_window_and_the_prune_walk_for_good() {
    let mut s = S::new();
    let (u, a, _) = s.turn(&[100_000]);
    s.turn(&[10]);
    s.turn(&[10]);
    let before = window(s.state());
    assert!(before.messages.iter().any(|m| m.id == u));
    let seq = s.state().head + 1;
    s.record(Event::MessagesWithdrawn {
        messages: vec![u, a],
        reason: "clear_session".into(),
    })
    .unwrap();
    assert_eq!(s.state().head, seq);
    let after = window(s.state());
    assert!(after.messages.iter().all(|m| m.id != u && m.id != a));
    assert_eq!(after.messages.len(), before.messages.len() - 2);
    assert_eq!(
        estimate_window(s.state()),
        after.estimate(&s.state().policy.estimator)
    );
    // The withdrawn turn's large output is no longer the prune's to clear.
    let plan = plan_prune(s.state(), &s.state().policy.clone());
    assert!(plan.parts.is_empty(), "{plan:?}");
    // Withdrawing again is refused by name.
    let next = s.state().head + 1;
    let again = s.envelope(
        next,
        Event::MessagesWithdrawn {
            messages: vec![u],
            reason: "again".into(),
        },
    );
    let refused = s.state().clone().evolve(&again).unwrap_err();
    assert!(matches!(refused.violation, Violation::AlreadyWithdrawn(m) if m == u));
}

// ------------------------------------------- agents that send a user summary

fn pi_session() -> S {
    S::with(
        Policy::pi_0_73(),
        ModelLimits {
            context: 200_000,
            input: None,
            output: Some(64_000),
        },
    )
}

fn total(n: u64) -> TokenUsage {
    TokenUsage {
        total: Some(n),
        input: n,
        ..TokenUsage::default()
    }
}

/// A step answering `user` that stopped for `finish` with `tokens` in all,
/// decided (so the policy's overflow check runs after it); the markers it
/// queued.
fn decided_step(s: &mut S, user: MessageId, finish: FinishReason, tokens: u64) -> Vec<MessageId> {
    let t = s.tick();
    let step = Step::new(user)
        .text("answer")
        .tokens(total(tokens))
        .finish(finish);
    s.r.run(t, Command::Step(step), LoopGuard::default())
        .unwrap()
        .iter()
        .flat_map(|d| &d.events)
        .filter_map(|d| match &d.event {
            Event::CompactionRequested { message, .. } => Some(*message),
            _ => None,
        })
        .collect()
}

/// A compaction of `s` with `summary`, keeping the tail from `tail`.
fn compact_keeping(s: &mut S, summary: &str, tail: Option<MessageId>) -> (MessageId, MessageId) {
    let t = s.tick();
    let job =
        s.r.request_compaction(t, true, CompactionTrigger::Manual)
            .unwrap();
    let t = s.tick();
    let summary =
        s.r.summarize(t, job, summary, tail, TokenUsage::default())
            .unwrap();
    (job, summary)
}

fn wrapped(summary: &str) -> String {
    format!(
        "{}{summary}{}",
        policy::PI_SUMMARY_PREFIX,
        policy::PI_SUMMARY_SUFFIX
    )
}

#[test]
fn a_user_summary_is_sent_alone_wrapped_and_replaces_older_ones() {
    let mut s = pi_session();
    let (job, summary) = s.compact("ZERO");
    let after = s.user("next");
    let w = window(s.state());
    assert_eq!(w.pivot, Some(job));
    // No marker question: the summary, as one user message, then the rest.
    let ids: Vec<_> = w.messages.iter().map(|m| m.id).collect();
    assert_eq!(ids, [summary, after]);
    assert_eq!(w.messages[0].role, Role::User);
    assert_eq!(
        window_texts(s.state()),
        [wrapped("ZERO"), "next".to_owned()]
    );
    assert_eq!(
        estimate_window(s.state()),
        w.estimate(&s.state().policy.estimator),
        "the estimate measures the wrapped summary as sent"
    );
    // Two more compactions, the second keeping a tail that reaches back
    // before the first one's summary: that summary is not sent again.
    let (a, _, _) = s.turn(&[10]);
    let (b, _, _) = s.turn(&[10]);
    compact_keeping(&mut s, "ONE", Some(a));
    s.user("later");
    let (_, two) = compact_keeping(&mut s, "TWO", Some(b));
    let w = window(s.state());
    assert_eq!(w.messages[0].id, two);
    let texts = window_texts(s.state());
    assert_eq!(texts[0], wrapped("TWO"));
    assert!(
        !texts
            .iter()
            .any(|t| t.contains("ONE") || t.contains("ZERO")),
        "older summaries are left out: {texts:?}"
    );
    assert_eq!(
        texts[1..],
        ["do it", "read:xxxxxxxxxx…(40 chars)", "done", "later"]
    );
    assert_eq!(
        estimate_window(s.state()),
        w.estimate(&s.state().policy.estimator)
    );
}

#[test]
fn run_end_checks_only_after_a_step_that_ends_the_run() {
    let mut s = pi_session(); // threshold 200,000 − 16,384 = 183,616, strict
    let u = s.user("go");
    // A tool step over the threshold: the run goes on, nothing is checked.
    assert!(decided_step(&mut s, u, FinishReason::ToolCalls, 190_100).is_empty());
    // The run's final answer at exactly the threshold: not over.
    assert!(decided_step(&mut s, u, FinishReason::Stop, 183_616).is_empty());
    // One more: over, and compacted.
    let markers = decided_step(&mut s, u, FinishReason::Stop, 183_617);
    assert_eq!(markers.len(), 1);
    // The same tool step under OpenCode's rule (every step) compacts.
    let mut every = S::with(
        Policy {
            check_at: OverflowCheckAt::EveryStep,
            ..Policy::pi_0_73()
        },
        pi_session().state().limits.clone(),
    );
    let u = every.user("go");
    assert_eq!(
        decided_step(&mut every, u, FinishReason::ToolCalls, 190_100).len(),
        1
    );
}

#[test]
fn no_continue_message_after_an_automatic_compaction_when_the_policy_sends_none() {
    for (policy, continued) in [
        (Policy::pi_0_73(), false),
        (
            Policy {
                continue_message: ContinueMessage::Seed,
                ..Policy::pi_0_73()
            },
            true,
        ),
    ] {
        let mut s = S::with(policy, limits());
        let u = s.user("go");
        let job = decided_step(&mut s, u, FinishReason::Stop, 190_000)[0];
        let t = s.tick();
        s.r.run(
            t,
            Command::StartJob {
                job,
                model: None,
                prompt: None,
                tail: TailChoice::Policy,
            },
            LoopGuard::default(),
        )
        .unwrap();
        let t = s.tick();
        let done =
            s.r.run(
                t,
                Command::CompleteJob {
                    job,
                    summary: SummaryText {
                        text: "S".into(),
                        finish: FinishReason::Stop,
                        tokens: TokenUsage::default(),
                        redactions: 0,
                    },
                },
                LoopGuard::default(),
            )
            .unwrap();
        let appended = done
            .iter()
            .flat_map(|d| &d.events)
            .filter(|d| {
                matches!(
                    d.event,
                    Event::MessageAppended {
                        role: Role::User,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(
            appended,
            usize::from(continued),
            "{}",
            s.state().policy.name
        );
    }
}

/// Whether `decide` queues a compaction before the next request; the
/// query `overflow_check` finds the overflow that queues it.
fn compacts_before_request(s: &mut S) -> bool {
    let check = ctxlog_core::decide::overflow_check(s.state(), &Command::BeforeRequest);
    let free = s.state().auto_paused.is_none() && s.state().pending_jobs().next().is_none();
    let t = s.tick();
    let queued =
        s.r.run(t, Command::BeforeRequest, LoopGuard::default())
            .unwrap()
            .iter()
            .flat_map(|d| &d.events)
            .any(|d| matches!(d.event, Event::CompactionRequested { .. }));
    assert_eq!(queued, free && check.is_some_and(|c| c.overflow));
    queued
}

#[test]
fn before_request_counts_what_came_after_the_last_answer() {
    // Threshold 100: a policy that checks before requests, never after steps.
    let limits = ModelLimits {
        context: 100,
        input: None,
        output: None,
    };
    let policy = |prompts| Policy {
        check_at: OverflowCheckAt::BeforeRequest { prompts },
        ..Policy::codex_0_169()
    };
    // 90 + a 40-character prompt (10 tokens): 100 with prompts, 90 without.
    for (prompts, want) in [(true, true), (false, false)] {
        let mut s = S::with(
            Policy {
                threshold_percent: 100,
                ..policy(prompts)
            },
            limits.clone(),
        );
        let u = s.user("go");
        assert!(decided_step(&mut s, u, FinishReason::Stop, 90).is_empty());
        s.user(&"p".repeat(40));
        assert_eq!(compacts_before_request(&mut s), want, "prompts: {prompts}");
    }
    // A tool step at 90 whose result estimates to 10 tokens: its result
    // counts with or without prompts.
    let mut s = S::with(
        Policy {
            threshold_percent: 100,
            ..policy(false)
        },
        limits.clone(),
    );
    let u = s.user("go");
    let a = s.assistant(u);
    s.tool_tokens(a, "read", 10);
    let t = s.tick();
    s.r.finish_step(t, a, FinishReason::ToolCalls, total(90))
        .unwrap();
    assert!(compacts_before_request(&mut s));
    // Under a policy that checks after steps, the command does nothing.
    let mut every = S::with(Policy::pi_0_73(), limits);
    let u = every.user("go");
    decided_step(&mut every, u, FinishReason::Stop, 10);
    assert!(!compacts_before_request(&mut every));
}
