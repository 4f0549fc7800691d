//! End-to-end: a scenario that records every event kind, checked against
//! the checked-in fixtures (`fixtures/lifecycle.jsonl` and its digest), so a
//! change in the event encoding or in the reducers' output fails here.
//!
//! To regenerate after an intended change: `CTXLOG_BLESS=1 cargo test --test lifecycle`
//! (and say in the commit why old logs still replay).

use ctxlog::core::window::{COMPACTION_QUESTION, CONTINUE_TEXT, PRUNED_PLACEHOLDER};
use ctxlog::core::*;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// A short session that goes through every event kind.
fn scenario() -> Vec<Envelope> {
    let mut ids = SeededIds::new(2026);
    let t0 = 1_783_842_000_000;
    let session = SessionId(ids.next_uuid(t0));
    let limits = ModelLimits {
        context: 200_000,
        input: None,
        output: Some(64_000),
    };
    let mut r = Recorder::start(session, ids, t0, Policy::opencode_seed(), limits).unwrap();
    let mut t = t0;
    let mut tick = || {
        t += 1_000;
        t
    };
    // turn 1: a read whose output will be pruned, a bash that errors
    let u1 = r
        .user_text(tick(), "Make the parser test in src/parse.rs pass.", false)
        .unwrap();
    let a1 = r.message(tick(), Role::Assistant, Some(u1), false).unwrap();
    r.part(
        tick(),
        a1,
        PartBody::StepStart {
            snapshot: Some("c29d".into()),
        },
    )
    .unwrap();
    let big = "fn parse_block() {}\n".repeat(400); // 8,000 chars = 2,000 tokens
    let read = r
        .tool(
            tick(),
            a1,
            "read",
            Json::Object(vec![("filePath".into(), "src/parse.rs".into())]),
            &big,
        )
        .unwrap();
    let input = Json::Object(vec![("command".into(), "cargo test".into())]);
    let call = r
        .part(
            tick(),
            a1,
            PartBody::Tool {
                call_id: "call_bash_1".into(),
                tool: "bash".into(),
                state: ToolState::Pending {
                    input: input.clone(),
                    raw: "{\"command\":\"cargo test\"}".into(),
                },
            },
        )
        .unwrap();
    let at = tick();
    r.record(
        at,
        Event::PartUpdated {
            part: call,
            body: PartBody::Tool {
                call_id: "call_bash_1".into(),
                tool: "bash".into(),
                state: ToolState::Error {
                    input,
                    error: "test parse_block ... FAILED".into(),
                    start: at - 500,
                    end: at,
                },
            },
        },
    )
    .unwrap();
    r.finish_step(
        tick(),
        a1,
        FinishReason::ToolCalls,
        TokenUsage {
            input: 30_000,
            output: 200,
            ..Default::default()
        },
    )
    .unwrap();
    // an aborted second step
    let a2 = r.message(tick(), Role::Assistant, Some(u1), false).unwrap();
    r.part(
        tick(),
        a2,
        PartBody::Text {
            text: "The off-by-one is in".into(),
            synthetic: false,
            time: None,
        },
    )
    .unwrap();
    r.record(
        tick(),
        Event::MessageErrored {
            message: a2,
            error: MessageError {
                name: "MessageAbortedError".into(),
                message: "aborted".into(),
            },
        },
    )
    .unwrap();
    // turns 2 and 3 make the read prunable
    for text in ["Go on.", "And now?"] {
        let u = r.user_text(tick(), text, false).unwrap();
        let a = r.message(tick(), Role::Assistant, Some(u), false).unwrap();
        r.part(
            tick(),
            a,
            PartBody::Text {
                text: "Working on it.".into(),
                synthetic: false,
                time: None,
            },
        )
        .unwrap();
        r.finish_step(
            tick(),
            a,
            FinishReason::Stop,
            TokenUsage {
                input: 40_000,
                output: 100,
                ..Default::default()
            },
        )
        .unwrap();
    }
    let mut tight = Policy::opencode_seed();
    tight.name = "tight".into();
    tight.prune_protect = 100;
    tight.prune_minimum = 1_000;
    r.record(
        tick(),
        Event::PolicyChanged {
            policy: tight.clone(),
        },
    )
    .unwrap();
    // protect 100: the 2k-token read crosses it and is selected; 2,000 > 1,000 minimum
    let plan = plan_prune(r.state(), &tight);
    assert_eq!(
        plan.parts.iter().map(|p| p.part).collect::<Vec<_>>(),
        [read]
    );
    r.record(tick(), plan.to_event(&tight).unwrap()).unwrap();
    r.record(
        tick(),
        Event::PartsRestored {
            parts: vec![read],
            reason: "user asked to see it".into(),
        },
    )
    .unwrap();
    r.record(
        tick(),
        plan_prune(r.state(), &tight).to_event(&tight).unwrap(),
    )
    .unwrap();
    // a model switch to a smaller window, a step that overflows it
    r.record(
        tick(),
        Event::LimitsChanged {
            limits: ModelLimits {
                context: 64_000,
                input: None,
                output: Some(8_000),
            },
        },
    )
    .unwrap();
    let u4 = r.user_text(tick(), "Run the tests again.", false).unwrap();
    let a4 = r.message(tick(), Role::Assistant, Some(u4), false).unwrap();
    r.part(
        tick(),
        a4,
        PartBody::Text {
            text: "Running.".into(),
            synthetic: false,
            time: None,
        },
    )
    .unwrap();
    r.finish_step(
        tick(),
        a4,
        FinishReason::ToolCalls,
        TokenUsage {
            input: 50_000,
            cache_read: 7_000,
            output: 100,
            ..Default::default()
        },
    )
    .unwrap();
    let check = r.state().overflow().unwrap();
    assert!(check.overflow && check.usable == Some(56_000) && check.count == 57_100);
    // a first attempt fails, a second completes
    let job = r
        .request_compaction(
            tick(),
            true,
            CompactionTrigger::Overflow { step: a4, check },
        )
        .unwrap();
    r.record(
        tick(),
        Event::CompactionFailed {
            job,
            error: "summarizer timed out".into(),
        },
    )
    .unwrap();
    let job = r
        .request_compaction(
            tick(),
            true,
            CompactionTrigger::Overflow { step: a4, check },
        )
        .unwrap();
    r.record(
        tick(),
        Event::CompactionAttempted {
            job,
            strategy: "full".into(),
            request_tokens: 9_000,
            limit: Some(56_000),
            fits: true,
        },
    )
    .unwrap();
    r.summarize(
        tick(),
        job,
        "## Objective\n- Make the parser test pass.",
        None,
        TokenUsage {
            input: 9_000,
            output: 300,
            ..Default::default()
        },
    )
    .unwrap();
    // The continue message: `summarize` appends it through `decide`, at
    // the summary's time; the scenario's clock still ticks once for it.
    tick();
    r.record(
        tick(),
        Event::AutoCompactionPaused {
            reason: "the compaction did not shrink the window enough".into(),
            window_before: 57_100,
            window_after: 56_000,
        },
    )
    .unwrap();
    // What an OpenCode import keeps of a message that ctxlog does not model.
    r.record(
        tick(),
        Event::SourceFields {
            format: "opencode".into(),
            target: SourceTarget::Message(a1),
            fields: Json::Object(vec![(
                "path".into(),
                Json::Object(vec![
                    ("cwd".into(), Json::String("/work/app".into())),
                    ("root".into(), Json::String("/work/app".into())),
                ]),
            )]),
        },
    )
    .unwrap();
    // What the recording says about the session, as an import keeps it.
    r.record(
        tick(),
        Event::SessionDescribed {
            about: SessionAbout {
                title: Some("Fix the parser".into()),
                directory: Some("/work/app".into()),
                agent: Some("opencode-1.18.33".into()),
                model: Some("anthropic/claude-sonnet-4".into()),
                cost_usd: Some(0.25),
            },
        },
    )
    .unwrap();
    // An import in more than one append says where it ends (kept in the
    // description stream since schema 9; a description, as here, to any
    // fold).
    r.record(
        tick(),
        Event::ImportStarted {
            head: 60,
            descriptions: 2,
        },
    )
    .unwrap();
    // A recording shows a step's usage before its end (Claude Code's lines).
    r.record(
        tick(),
        Event::UsageReported {
            message: a1,
            tokens: TokenUsage {
                total: None,
                input: 2_400,
                output: 12,
                reasoning: 0,
                cache_read: 0,
                cache_write: 0,
            },
        },
    )
    .unwrap();
    // An agent takes back a prompt it just added (the Agents SDK's
    // `pop_item`).
    let taken_back = r.user_text(tick(), "Never mind.", false).unwrap();
    r.record(
        tick(),
        Event::MessagesWithdrawn {
            messages: vec![taken_back],
            reason: "pop_item".into(),
        },
    )
    .unwrap();
    // The recording was edited and imported again with --replace.
    r.record(
        tick(),
        Event::SessionReplaced {
            by: SessionId(uuid::Uuid::from_u128(
                0x0190_0000_0000_7000_8000_0000_0000_0042,
            )),
        },
    )
    .unwrap();
    // An agent's hook brought the session in before a compaction (kept in
    // the description stream since schema 11; a description to any fold).
    r.record(
        tick(),
        Event::Captured {
            capture: ctxlog::core::Capture {
                agent: "claude-code".into(),
                hook: "PreCompact".into(),
                moment: ctxlog::core::Moment::BeforeCompaction,
                trigger: Some("auto".into()),
                head: 44,
                process: Some(ctxlog::core::AgentProcess {
                    pid: 4242,
                    started: 1_234_567,
                }),
            },
        },
    )
    .unwrap();
    r.into_events()
}

fn bless() -> bool {
    std::env::var_os("CTXLOG_BLESS").is_some()
}

#[test]
fn scenario_records_every_event_kind_and_matches_the_fixture() {
    let events = scenario();
    let mut kinds: Vec<&str> = events.iter().map(|e| e.event.kind()).collect();
    kinds.sort();
    kinds.dedup();
    let mut all = EVENT_KINDS.to_vec();
    all.sort();
    assert_eq!(kinds, all, "the scenario must cover every event kind");

    let jsonl: String = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    let digest = SessionState::replay(&events).unwrap().digest().to_string();
    if bless() {
        std::fs::write(fixture("lifecycle.jsonl"), &jsonl).unwrap();
        std::fs::write(fixture("lifecycle.digest"), format!("{digest}\n")).unwrap();
    }
    let want =
        std::fs::read_to_string(fixture("lifecycle.jsonl")).expect("fixtures/lifecycle.jsonl");
    assert!(
        want == jsonl,
        "the scenario's events no longer encode as fixtures/lifecycle.jsonl"
    );
    let want_digest = std::fs::read_to_string(fixture("lifecycle.digest")).unwrap();
    assert_eq!(want_digest.trim(), digest);
}

#[test]
fn fixture_replays_to_its_digest_and_window() {
    let text = std::fs::read_to_string(fixture("lifecycle.jsonl")).unwrap();
    let events: Vec<Envelope> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let state = SessionState::replay(&events).unwrap();
    let want = std::fs::read_to_string(fixture("lifecycle.digest")).unwrap();
    assert_eq!(state.digest().to_string(), want.trim());
    // snapshot round trip keeps the digest
    assert_eq!(
        SessionState::from_snapshot(&state.to_snapshot())
            .unwrap()
            .digest(),
        state.digest()
    );

    // The window starts at the completed pivot: marker question, summary, continue.
    let w = window(&state);
    let texts: Vec<_> = w
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(|p| match p {
            WindowPart::Text(t) => t.as_str(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        texts,
        [
            COMPACTION_QUESTION,
            "## Objective\n- Make the parser test pass.",
            CONTINUE_TEXT
        ]
    );
    assert_eq!(
        state.overflow(),
        None,
        "the last finished call is the summary"
    );
    assert_eq!(state.pending_jobs().count(), 0);

    // The audit: the read was pruned, restored, pruned again; its output is intact.
    let prunes: Vec<_> = events
        .iter()
        .filter(|e| e.event.kind() == "parts_pruned")
        .map(|e| e.seq)
        .collect();
    assert_eq!(prunes.len(), 2);
    let (_, read) = state.pruned_parts().next().expect("the read is pruned");
    assert_eq!(read.pruned.as_ref().unwrap().seq, prunes[1]);
    assert_eq!(read.pruned.as_ref().unwrap().policy, "tight");
    // The pivot sealed it: the state keeps its sketch, the log its output.
    assert!(read.is_sealed());
    assert_eq!(read.completed_output_units(), Some(8_000));
    match &*read.body_in(&events).unwrap() {
        PartBody::Tool {
            state: ToolState::Completed { output, .. },
            ..
        } => assert_eq!(output.len(), 8_000),
        other => panic!("{other:?}"),
    }

    // Before the pivot, the window showed the placeholder for the read.
    let cut = events
        .iter()
        .position(|e| e.event.kind() == "limits_changed")
        .unwrap();
    let before = SessionState::replay(&events[..cut]).unwrap();
    let w = window(&before);
    let tool_results: Vec<_> = w
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            WindowPart::Tool { tool, result, .. } => Some((tool.as_str(), result.clone())),
            _ => None,
        })
        .collect();
    use ctxlog::core::window::ToolResult;
    assert_eq!(
        tool_results,
        [
            (
                "read",
                ToolResult::Output {
                    text: PRUNED_PLACEHOLDER.into(),
                    attachments: vec![]
                }
            ),
            (
                "bash",
                ToolResult::Error("test parse_block ... FAILED".into())
            ),
        ]
    );
}

#[test]
fn the_audit_trail_of_the_fixture() {
    let text = std::fs::read_to_string(fixture("lifecycle.jsonl")).unwrap();
    let events: Vec<Envelope> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let trail = audit(&events);
    let kinds: Vec<&str> = trail.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "policy_changed",
            "parts_pruned",
            "parts_restored",
            "parts_pruned",
            "compaction_requested",
            "compaction_failed",
            "compaction_requested",
            "compaction_attempted",
            "compaction_started",
            "summary_completed",
            "continue",
            "auto_compaction_paused",
            "messages_withdrawn",
        ]
    );
    assert_eq!(trail[12].what, "withdrew 1 message: pop_item");
    // the policy in force is named on every line, and the prunes name their parts
    assert!(trail[1..].iter().all(|e| e.policy == "tight"), "{trail:?}");
    assert_eq!(trail[1].ids.len(), 1);
    assert_eq!(trail[1].tokens, Some(2_000));
    assert_eq!(trail[4].tokens, Some(57_100), "the overflow count");
    // strictly increasing seqs, each pointing at a real event
    for w in trail.windows(2) {
        assert!(w[0].seq < w[1].seq);
    }
}

#[test]
fn kind_index_is_the_binary_variant_tag_and_the_kind_list_is_checked_in() {
    for e in scenario() {
        let bytes = codec::encode(&e.event).unwrap();
        assert_eq!(bytes[0], e.event.kind_index(), "{}", e.event.kind());
    }
    if bless() {
        std::fs::write(fixture("event-kinds.txt"), EVENT_KINDS.join("\n") + "\n").unwrap();
    }
    let listed = std::fs::read_to_string(fixture("event-kinds.txt")).unwrap();
    let listed: Vec<&str> = listed.lines().collect();
    assert!(
        listed.len() <= EVENT_KINDS.len(),
        "an event kind was removed"
    );
    assert_eq!(
        &EVENT_KINDS[..listed.len()],
        &listed[..],
        "event kinds are append-only: never reorder or rename"
    );
    assert_eq!(
        listed.len(),
        EVENT_KINDS.len(),
        "a new event kind: add it to fixtures/event-kinds.txt"
    );
}

#[test]
fn replay_refuses_a_tampered_log_by_name() {
    let mut events = scenario();
    // point a part at a message that does not exist
    let i = events
        .iter()
        .position(|e| e.event.kind() == "part_appended")
        .unwrap();
    if let Event::PartAppended { message, .. } = &mut events[i].event {
        *message = MessageId(uuid::Uuid::nil());
    }
    let err = SessionState::replay(&events).unwrap_err();
    assert_eq!(err.seq, events[i].seq);
    assert_eq!(err.kind, "part_appended");
    assert!(err.to_string().contains("unknown message"), "{err}");
}
