//! The Codex importer on a rollout shaped as Codex 0.169 writes it (the
//! line order the differential test sees from the real Codex, here without
//! the network): usage records after the items they report on, the
//! compaction's own answer, the replacement history, the recorded window.

use ctxlog_core::window::window;
use ctxlog_core::*;
use ctxlog_import::{import, Format, ImportOptions};
use serde_json::{json, Value};

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "cached_input_tokens": 0, "cache_write_input_tokens": 0,
           "output_tokens": output, "reasoning_output_tokens": 0, "total_tokens": input + output})
}

fn line(n: u64, kind: &str, payload: Value) -> String {
    let at = format!("2026-11-26T04:45:{:02}.000Z", n.min(59));
    json!({"timestamp": at, "type": kind, "payload": payload}).to_string()
}

fn message(role: &str, text: &str) -> Value {
    let kind = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    json!({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})
}

fn token_count(total: Value, last: Value) -> Value {
    json!({"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last,
           "model_context_window": 95_000}})
}

const SUMMARY: &str = "Another language model started to solve this problem:\nSUMMARY ONE";

/// A 0.169 rollout: a tool step, an answer, then a pre-turn compaction and
/// a turn after it.
fn rollout() -> String {
    let lines = [
        line(
            1,
            "session_meta",
            json!({"id": "01a2162c-0000-7000-8000-000000000001", "cli_version": "0.169.0", "cwd": "/p"}),
        ),
        line(
            2,
            "event_msg",
            json!({"type": "task_started", "turn_attribution": {"turn_trigger": "exec"},
                   "model_context_window": 95_000}),
        ),
        line(
            3,
            "response_item",
            message("developer", "<permissions instructions>"),
        ),
        line(
            4,
            "response_item",
            message("user", "<environment_context>x</environment_context>"),
        ),
        line(5, "turn_context", json!({"model": "scripted"})),
        line(6, "response_item", message("user", "turn one: run it")),
        line(
            7,
            "response_item",
            json!({"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"echo hi\"}",
                   "call_id": "call_1"}),
        ),
        line(8, "token_usage_record", json!({"usage": usage(1_000, 10)})),
        line(
            9,
            "response_item",
            json!({"type": "function_call_output", "call_id": "call_1", "output": "hi\n"}),
        ),
        line(
            10,
            "event_msg",
            token_count(usage(1_000, 10), usage(1_000, 10)),
        ),
        line(11, "response_item", message("assistant", "Done (reply-1).")),
        line(
            12,
            "token_usage_record",
            json!({"usage": usage(79_000, 1_000)}),
        ),
        line(
            13,
            "event_msg",
            token_count(usage(80_000, 1_010), usage(79_000, 1_000)),
        ),
        line(
            14,
            "event_msg",
            json!({"type": "task_complete", "last_agent_message": "Done (reply-1)."}),
        ),
        line(
            15,
            "event_msg",
            json!({"type": "task_started", "turn_attribution": {"turn_trigger": "exec"},
                   "model_context_window": 95_000}),
        ),
        line(
            16,
            "event_msg",
            token_count(usage(80_000, 1_010), usage(79_000, 1_000)),
        ),
        line(17, "response_item", message("assistant", "SUMMARY ONE")),
        line(
            18,
            "token_usage_record",
            json!({"response_id": "resp_3", "usage": usage(500, 50)}),
        ),
        line(
            19,
            "event_msg",
            token_count(usage(80_500, 1_060), usage(500, 50)),
        ),
        line(
            20,
            "compacted",
            json!({"message": SUMMARY,
                   "compaction_response_id": "resp_3",
                   "latest_token_usage_record": {"response_id": "resp_3", "usage": usage(500, 50)},
                   "replacement_history": [
                message("user", "turn one: run it"),
                message("developer", "<permissions instructions>"),
                message("user", "<environment_context>x</environment_context>"),
                message("user", SUMMARY),
            ]}),
        ),
        line(21, "turn_context", json!({"model": "scripted"})),
        line(22, "response_item", message("user", "turn two")),
        line(23, "response_item", message("assistant", "Done (reply-2).")),
        line(24, "token_usage_record", json!({"usage": usage(3_000, 5)})),
        line(
            25,
            "event_msg",
            token_count(usage(83_500, 1_065), usage(3_000, 5)),
        ),
        // The turn's end: its answer is no compaction's.
        line(
            26,
            "event_msg",
            json!({"type": "task_complete", "last_agent_message": "Done (reply-2)."}),
        ),
    ];
    lines.join("\n") + "\n"
}

fn texts(w: &window::Window) -> Vec<(Role, String)> {
    w.messages
        .iter()
        .map(|m| {
            let t: Vec<String> = m
                .parts
                .iter()
                .map(|p| match p {
                    WindowPart::Text(t) => t.clone(),
                    WindowPart::Tool { call_id, .. } => format!("call {call_id}"),
                    other => format!("{other:?}"),
                })
                .collect();
            (m.role, t.join("|"))
        })
        .collect()
}

#[test]
fn a_0_169_rollout_has_its_usage_on_its_steps_and_its_replacement_history_as_the_window() {
    let text = rollout();
    let a = import(
        text.as_bytes(),
        "r.jsonl",
        Format::Codex,
        &ImportOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let events = a.events.to_vec().unwrap();
    let s = SessionState::replay(&events).unwrap();
    // Three steps (the compaction's answer is none), each with its usage.
    let steps: Vec<(String, u64)> = s
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant && !m.summary)
        .map(|m| {
            let t = m.tokens.as_deref().copied().unwrap_or_default();
            (
                m.source_id.as_deref().unwrap_or("").to_owned(),
                t.total.unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("line:7".to_owned(), 1_010),
            ("line:11".to_owned(), 80_000),
            ("line:23".to_owned(), 3_005)
        ]
    );
    assert_eq!(
        s.limits.context, 100_000,
        "the configured window, recovered"
    );
    assert_eq!(s.policy.name, "codex-0.169");
    // The compaction's own call: its usage on the summary.
    let summary = s.messages.iter().find(|m| m.summary).expect("a summary");
    assert_eq!(
        summary.tokens.as_deref().and_then(|t| t.total),
        Some(550),
        "the compaction call's usage"
    );
    // The window: the replacement history, then the summary as a user
    // message, then what followed.
    let w = window(&s);
    assert_eq!(
        texts(&w),
        [
            (Role::User, "turn one: run it".to_owned()),
            (Role::Developer, "<permissions instructions>".to_owned()),
            (
                Role::User,
                "<environment_context>x</environment_context>".to_owned()
            ),
            (Role::User, SUMMARY.to_owned()),
            (Role::User, "turn two".to_owned()),
            (Role::Assistant, "Done (reply-2).".to_owned()),
        ]
    );
    // Imported while Codex wrote it, at every line end: a prefix of the whole.
    let whole: Vec<Envelope> = events
        .into_iter()
        .filter(|e| !e.event.is_description())
        .collect();
    let live = ImportOptions::default();
    for (cut, _) in text.char_indices().filter(|(_, c)| *c == '\n') {
        let part: Vec<Envelope> = match import(&text.as_bytes()[..=cut], "r", Format::Codex, &live)
        {
            Err(e) if e.holds_no_session() => continue,
            Err(e) => panic!("cut at {cut}: {e}"),
            Ok(a) => a
                .events
                .to_vec()
                .unwrap()
                .into_iter()
                .filter(|e| !e.event.is_description())
                .collect(),
        };
        assert_eq!(part[..], whole[..part.len()], "cut at byte {cut}");
    }
}

/// Imported while Codex is idle after a turn (the file ends with its
/// `task_complete`), the turn's answer is stored: only a compaction's
/// answer waits, and its `compacted` comes before its task completes.
#[test]
fn a_live_import_after_a_turn_stores_its_answer() {
    let text: String = rollout()
        .lines()
        .take(14)
        .map(|l| format!("{l}\n"))
        .collect();
    let live = ImportOptions::default();
    let a = import(text.as_bytes(), "r", Format::Codex, &live).unwrap();
    let s = SessionState::replay(&a.events.to_vec().unwrap()).unwrap();
    assert!(
        s.messages
            .iter()
            .any(|m| m.source_id.as_deref() == Some("line:11") && m.finish.is_some()),
        "the answer of line 11 is a finished step"
    );
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
}

/// A compaction in a task of its own (no `turn_attribution`: the
/// app-server's `thread/compact/start`) is manual.
#[test]
fn a_compaction_in_a_task_of_its_own_is_manual() {
    // The second task_started loses its attribution.
    let mut lines: Vec<String> = rollout().lines().map(str::to_owned).collect();
    let mut v: Value = serde_json::from_str(&lines[14]).unwrap();
    v["payload"]
        .as_object_mut()
        .unwrap()
        .remove("turn_attribution");
    lines[14] = v.to_string();
    let manual = lines.join("\n") + "\n";
    let kinds = |t: &str| -> Vec<bool> {
        let a = import(t.as_bytes(), "r", Format::Codex, &ImportOptions::default()).unwrap();
        a.events
            .to_vec()
            .unwrap()
            .iter()
            .filter_map(|e| match &e.event {
                Event::CompactionRequested { auto, .. } => Some(*auto),
                _ => None,
            })
            .collect()
    };
    assert_eq!(kinds(&rollout()), [true]);
    assert_eq!(kinds(&manual), [false]);
}
