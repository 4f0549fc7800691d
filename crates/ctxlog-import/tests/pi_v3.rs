//! The pi importer on a session shaped as pi 0.73 writes it (version 3:
//! entry ids, `firstKeptEntryId`), without the network: the kept tail, the
//! summary as pi sends it, a refused request that is no step, and the
//! reason read for each compaction.

use ctxlog_core::window::window;
use ctxlog_core::*;
use ctxlog_import::{import, Format, ImportOptions, LimitOverrides};
use serde_json::{json, Value};

fn entry(id: &str, at: u64, body: Value) -> String {
    let mut v = body;
    v["id"] = json!(id);
    v["timestamp"] = json!(format!("2026-11-26T04:20:{:02}.000Z", at));
    v.to_string()
}

fn user(id: &str, at: u64, text: &str) -> String {
    entry(
        id,
        at,
        json!({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}),
    )
}

fn answer(id: &str, at: u64, text: &str, total: u64) -> String {
    entry(
        id,
        at,
        json!({"type": "message", "message": {"role": "assistant",
            "content": [{"type": "text", "text": text}], "model": "claude-sonnet-4-5-20250929",
            "usage": {"input": total, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total},
            "stopReason": "stop"}}),
    )
}

fn compaction(id: &str, at: u64, summary: &str, kept: &str) -> String {
    entry(
        id,
        at,
        json!({"type": "compaction", "summary": summary, "firstKeptEntryId": kept, "tokensBefore": 1}),
    )
}

fn session() -> String {
    let refused = entry(
        "e9",
        9,
        json!({"type": "message", "message": {"role": "assistant", "content": [],
            "model": "claude-sonnet-4-5-20250929",
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
            "stopReason": "error",
            "errorMessage": "400 {\"type\":\"error\",\"error\":{\"message\":\"prompt is too long: 200001 tokens > 200000 maximum\"}}"}}),
    );
    let lines = [
        json!({"type": "session", "version": 3, "id": "s-pi-3", "timestamp": "2026-11-26T04:20:00.000Z", "cwd": "/p"}).to_string(),
        entry("e1", 1, json!({"type": "model_change", "provider": "scripted", "modelId": "claude-sonnet-4-5-20250929"})),
        user("e2", 2, "turn one"),
        answer("e3", 3, "reply-1", 183_617),
        compaction("e4", 4, "S1", "e3"),
        user("e5", 5, "turn two"),
        answer("e6", 6, "reply-2", 1_000),
        compaction("e7", 7, "S2", "e5"),
        user("e8", 8, "turn three"),
        refused,
        compaction("e10", 10, "S3", "e8"),
        answer("e11", 11, "reply-3", 2_000),
    ];
    lines.join("\n") + "\n"
}

#[test]
fn a_version_3_session_keeps_its_tail_and_reads_each_compactions_reason() {
    let options = ImportOptions {
        limits: LimitOverrides {
            context: Some(200_000),
            ..LimitOverrides::default()
        },
        ..ImportOptions::default()
    };
    let a = import(session().as_bytes(), "s.jsonl", Format::Pi, &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let events = a.events.to_vec().unwrap();
    let s = SessionState::replay(&events).unwrap();
    // Over the threshold: automatic; under it: manual; after a refused
    // request: an overflow compaction.
    let kinds: Vec<(bool, bool)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::CompactionRequested { auto, overflow, .. } => Some((*auto, *overflow)),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [(true, false), (false, false), (true, true)]);
    // The refused request is no step, and its error is an overflow.
    assert_eq!(a.steps, 3);
    let refused = s
        .messages
        .iter()
        .find(|m| m.source_id.as_deref() == Some("line:10"))
        .unwrap();
    assert!(refused.finish.is_none());
    assert_eq!(
        refused.error.as_ref().unwrap().name,
        window::CONTEXT_OVERFLOW_ERROR
    );
    // pi's window: the latest summary as pi sends it, the tail from the
    // entry it names (older summaries not again), then what followed.
    let texts: Vec<String> = window(&s)
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            WindowPart::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        texts,
        [
            format!(
                "{}S3{}",
                policy::PI_SUMMARY_PREFIX,
                policy::PI_SUMMARY_SUFFIX
            ),
            "turn three".to_owned(),
            "reply-3".to_owned()
        ]
    );
}
