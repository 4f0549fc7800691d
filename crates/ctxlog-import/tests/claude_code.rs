//! The Claude Code importer on the real recordings in ../shared/sessions
//! (skipped with a message when the folder is absent) and on bad input.

use ctxlog_core::*;
use ctxlog_import::{claude_code, Format, ImportOptions};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::BufReader;
use std::path::PathBuf;

fn shared(dir: &str) -> Option<Vec<PathBuf>> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/sessions")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    Some(files)
}

/// Counts done without the importer: distinct assistant message ids (steps)
/// and distinct tool_use ids.
fn independent_counts(text: &str) -> (u64, u64) {
    let (mut steps, mut tools) = (BTreeSet::new(), BTreeSet::new());
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] == "assistant" {
            steps.insert(v["message"]["id"].as_str().unwrap().to_owned());
            for b in v["message"]["content"].as_array().unwrap() {
                if b["type"] == "tool_use" {
                    tools.insert(b["id"].as_str().unwrap().to_owned());
                }
            }
        }
    }
    (steps.len() as u64, tools.len() as u64)
}

#[test]
fn every_real_claude_code_session_imports_and_replays_deterministically() {
    let Some(files) = shared("claude-code") else {
        eprintln!("skipping: ../shared/sessions/claude-code is absent");
        return;
    };
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let first = text.lines().next().unwrap();
        assert_eq!(
            Format::sniff(first.as_bytes()),
            Some(Format::ClaudeCode),
            "{}",
            f.display()
        );
        let name = f.display().to_string();
        let a = claude_code::import(
            BufReader::new(text.as_bytes()),
            &name,
            &ImportOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (steps, tools) = independent_counts(&text);
        let s1 = SessionState::replay(&a.events.to_vec().unwrap()).unwrap();
        // The last step's end waits for a later line (none says which of an
        // answer's lines is its last): it is stored, open, with its usage.
        let open = s1
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant && !m.summary && m.finish.is_none())
            .inspect(|m| assert!(m.tokens.is_some(), "{name}: an open step has its usage"))
            .count();
        assert_eq!(open, 1, "{name}");
        assert_eq!(
            (a.steps, a.tool_calls),
            (steps, tools),
            "{name}: {:?}",
            a.warnings
        );
        let s2 = SessionState::replay(&a.events.to_vec().unwrap()).unwrap();
        assert_eq!(s1.digest(), s2.digest());
        assert_eq!(s1.messages.len() as u64, a.messages);
        assert!(a.source_session.is_some());
        // importing the same file again gives the same events (ids derive
        // from the source session), so the store deduplicates the retry
        let b = claude_code::import(
            BufReader::new(text.as_bytes()),
            &name,
            &ImportOptions::default(),
        )
        .unwrap();
        assert_eq!(a.events.to_vec().unwrap(), b.events.to_vec().unwrap());
        // unanswered calls stay unanswered: pending parts render as interrupted
        let pending = s1
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .filter(|p| p.tool_status() == Some("pending"))
            .count() as u64;
        let answered: u64 = text
            .lines()
            .filter(|l| l.contains("\"tool_result\""))
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["message"]["content"].as_array().map_or(0, |c| {
                    c.iter().filter(|b| b["type"] == "tool_result").count() as u64
                })
            })
            .sum();
        assert_eq!(pending, tools - answered, "{name}");
        // every step carries its usage, the open one too
        assert!(s1
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .all(|m| m.tokens.is_some()));
        let w = window(&s1);
        assert!(!w.messages.is_empty());
    }
}

#[test]
fn bad_input_names_the_file_line_and_field() {
    let good_user = r#"{"type":"user","sessionId":"s1","uuid":"u1","timestamp":"2025-10-21T03:21:27.040Z","message":{"role":"user","content":"Hey"}}"#;
    let cases: Vec<(String, u64, &str)> = vec![
        // A broken line that is not the last being written (it ends).
        (format!("{good_user}\n{{\"type\":\"user\", truncated\n"), 2, "not JSON"),
        (format!("{good_user}\n{{\"type\":\"assistant\",\"timestamp\":\"2025-10-21T03:21:28Z\",\"message\":{{\"id\":\"m1\",\"content\":5}}}}"), 2, "`message.content` is not an array"),
        (format!("{good_user}\n{{\"type\":\"user\",\"timestamp\":\"2025-10-21T03:21:28Z\",\"message\":{{\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_x\",\"content\":\"r\"}}]}}}}"), 2, "tool result for unknown call \"toolu_x\""),
        (format!("{good_user}\n{{\"type\":\"user\",\"timestamp\":\"yesterday\",\"message\":{{\"content\":\"x\"}}}}"), 2, "not an RFC 3339 time"),
        ("{\"type\":\"user\",\"timestamp\":\"2025-10-21T03:21:27Z\",\"message\":{\"content\":\"x\"}}".to_string(), 1, "`sessionId` missing"),
    ];
    for (input, line, want) in cases {
        let err = claude_code::import(
            BufReader::new(input.as_bytes()),
            "t.jsonl",
            &ImportOptions::default(),
        )
        .unwrap_err();
        assert_eq!((err.file.as_str(), err.line), ("t.jsonl", line), "{err}");
        assert!(err.message.contains(want), "{err}");
    }
    // invalid UTF-8
    let mut bytes = good_user.as_bytes().to_vec();
    bytes.extend_from_slice(b"\n{\"type\":\"user\",\"x\":\"\xff\xfe\"}\n");
    let err = claude_code::import(
        BufReader::new(&bytes[..]),
        "u.jsonl",
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.line, 2, "{err}");
}

#[test]
fn a_compact_boundary_and_its_summary_become_a_completed_compaction() {
    let lines = [
        r#"{"type":"user","sessionId":"s2","uuid":"u1","timestamp":"2025-10-21T03:00:00Z","message":{"role":"user","content":"Fix the parser"}}"#,
        r#"{"type":"assistant","sessionId":"s2","uuid":"a1","timestamp":"2025-10-21T03:00:01Z","message":{"id":"msg_1","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"src/parse.rs"}}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":50,"output_tokens":2}}}"#,
        r#"{"type":"assistant","sessionId":"s2","uuid":"a2","timestamp":"2025-10-21T03:00:02Z","message":{"id":"msg_1","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"text","text":"Reading."}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":50,"output_tokens":40}}}"#,
        r#"{"type":"user","sessionId":"s2","uuid":"u2","timestamp":"2025-10-21T03:00:03Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"fn parse() {}"}]}}"#,
        r#"{"type":"system","subtype":"compact_boundary","sessionId":"s2","uuid":"c1","timestamp":"2025-10-21T03:00:04Z","compactMetadata":{"trigger":"auto","preTokens":150000}}"#,
        r#"{"type":"user","isCompactSummary":true,"sessionId":"s2","uuid":"u3","timestamp":"2025-10-21T03:00:05Z","message":{"role":"user","content":"Summary: we read src/parse.rs."}}"#,
        r#"{"type":"user","isMeta":true,"sessionId":"s2","uuid":"u4","timestamp":"2025-10-21T03:00:06Z","message":{"role":"user","content":"<local-command-caveat>"}}"#,
    ];
    let text = lines.join("\n");
    let a = claude_code::import(
        BufReader::new(text.as_bytes()),
        "c.jsonl",
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!((a.steps, a.tool_calls), (1, 1));
    let s = SessionState::replay(&a.events.to_vec().unwrap()).unwrap();
    let step = s
        .messages
        .iter()
        .find(|m| m.source_id.as_deref() == Some("msg_1"))
        .unwrap();
    assert_eq!(
        step.tokens.as_deref().copied().unwrap(),
        TokenUsage {
            input: 3,
            cache_read: 100,
            cache_write: 50,
            output: 40,
            ..Default::default()
        },
        "usage counted once, output the max"
    );
    assert_eq!(step.finish, Some(FinishReason::ToolCalls));
    assert_eq!(
        s.limits.output,
        Some(32_000),
        "the output limit Claude Code 2.1 uses for the model"
    );
    let job = &s.jobs[0];
    assert!(job.auto && matches!(job.status, JobStatus::Completed { .. }));
    let w = window(&s);
    let texts: Vec<_> = w
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(|p| match p {
            WindowPart::Text(t) => t.clone(),
            other => format!("{other:?}"),
        })
        .collect();
    // Claude Code sends the summary as a user message, and the isMeta
    // caveat after it.
    assert_eq!(
        texts,
        ["Summary: we read src/parse.rs.", "<local-command-caveat>"]
    );
    assert_eq!(w.messages[0].role, Role::User);
    assert!(s.messages.last().unwrap().synthetic, "isMeta is synthetic");
}

/// Claude Code 2.1's boundary names the messages it keeps verbatim after the
/// summary (`preservedMessages`): they are the compaction's tail.
#[test]
fn preserved_messages_are_kept_after_the_summary() {
    let lines = [
        r#"{"type":"user","sessionId":"s3","uuid":"u1","timestamp":"2025-10-21T03:00:00Z","message":{"role":"user","content":"first"}}"#,
        r#"{"type":"assistant","sessionId":"s3","uuid":"a1","timestamp":"2025-10-21T03:00:01Z","message":{"id":"msg_1","model":"claude-sonnet-4-6","role":"assistant","content":[{"type":"text","text":"reply-1"}],"usage":{"input_tokens":3,"output_tokens":2}}}"#,
        r#"{"type":"user","sessionId":"s3","uuid":"u2","timestamp":"2025-10-21T03:00:02Z","message":{"role":"user","content":"second"}}"#,
        r#"{"type":"assistant","sessionId":"s3","uuid":"a2","timestamp":"2025-10-21T03:00:03Z","message":{"id":"msg_2","model":"claude-sonnet-4-6","role":"assistant","content":[{"type":"text","text":"reply-2"}],"usage":{"input_tokens":3,"output_tokens":2}}}"#,
        r#"{"type":"user","sessionId":"s3","uuid":"u3","timestamp":"2025-10-21T03:00:04Z","message":{"role":"user","content":"third"}}"#,
        r#"{"type":"attachment","sessionId":"s3","uuid":"r3","timestamp":"2025-10-21T03:00:04Z","attachment":{"type":"date","date":"2025-10-21"}}"#,
        r#"{"type":"system","subtype":"compact_boundary","sessionId":"s3","uuid":"c1","timestamp":"2025-10-21T03:00:05Z","compactMetadata":{"trigger":"auto","preTokens":167000,"preservedMessages":{"uuids":["a2","u3","r3"]}}}"#,
        r#"{"type":"user","isCompactSummary":true,"sessionId":"s3","uuid":"s1","timestamp":"2025-10-21T03:00:06Z","message":{"role":"user","content":"This session is being continued. Summary: S."}}"#,
        r#"{"type":"assistant","sessionId":"s3","uuid":"a3","timestamp":"2025-10-21T03:00:07Z","message":{"id":"msg_3","model":"claude-sonnet-4-6","role":"assistant","content":[{"type":"text","text":"reply-3"}],"usage":{"input_tokens":3,"output_tokens":2}}}"#,
    ];
    let text = lines.join("\n");
    let a = claude_code::import(
        BufReader::new(text.as_bytes()),
        "p.jsonl",
        &ImportOptions::default(),
    )
    .unwrap();
    let s = SessionState::replay(&a.events.to_vec().unwrap()).unwrap();
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
            "This session is being continued. Summary: S.",
            "reply-2",
            "third",
            "reply-3"
        ]
    );
}

/// An automatic boundary of a model without a threshold in Claude Code 2.1
/// (its auto-compact window is "auto") followed a refused prompt: from 2.1
/// on it is an overflow compaction; before 2.1 the same boundary was a
/// threshold one and stays so.
#[test]
fn a_reactive_boundary_is_an_overflow_from_claude_code_2_1_on() {
    let transcript = |version: &str| {
        [
            format!(r#"{{"type":"user","sessionId":"s4","uuid":"u1","version":"{version}","timestamp":"2025-10-21T03:00:00Z","message":{{"role":"user","content":"first"}}}}"#),
            format!(r#"{{"type":"assistant","sessionId":"s4","uuid":"a1","version":"{version}","timestamp":"2025-10-21T03:00:01Z","message":{{"id":"msg_1","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{{"type":"text","text":"reply-1"}}],"usage":{{"input_tokens":190000,"output_tokens":2}}}}}}"#),
            format!(r#"{{"type":"user","sessionId":"s4","uuid":"u2","version":"{version}","timestamp":"2025-10-21T03:00:02Z","message":{{"role":"user","content":"second"}}}}"#),
            format!(r#"{{"type":"system","subtype":"compact_boundary","sessionId":"s4","uuid":"c1","version":"{version}","timestamp":"2025-10-21T03:00:03Z","compactMetadata":{{"trigger":"auto","preTokens":190010}}}}"#),
            format!(r#"{{"type":"user","isCompactSummary":true,"sessionId":"s4","uuid":"s1","version":"{version}","timestamp":"2025-10-21T03:00:04Z","message":{{"role":"user","content":"Summary."}}}}"#),
        ]
        .join("\n")
    };
    let overflow = |version: &str| {
        let text = transcript(version);
        let a = claude_code::import(
            BufReader::new(text.as_bytes()),
            "r.jsonl",
            &ImportOptions::default(),
        )
        .unwrap();
        a.events
            .to_vec()
            .unwrap()
            .iter()
            .find_map(|e| match &e.event {
                Event::CompactionRequested { overflow, .. } => Some(*overflow),
                _ => None,
            })
            .unwrap()
    };
    assert!(overflow("2.1.328"));
    assert!(!overflow("2.0.29"));
}

/// A session's project is the directory it started in: a later `cd` made
/// it the subdirectory, and one project two rows of `usage --by project`.
#[test]
fn the_project_is_where_the_session_started() {
    let lines = [
        r#"{"type":"user","sessionId":"s3","uuid":"u1","cwd":"/home/dev/proj","timestamp":"2025-10-21T03:00:00Z","message":{"role":"user","content":"Build it"}}"#,
        r#"{"type":"assistant","sessionId":"s3","uuid":"a1","cwd":"/home/dev/proj/web","timestamp":"2025-10-21T03:00:01Z","message":{"id":"msg_1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}}"#,
    ];
    let a = claude_code::import(
        BufReader::new(lines.join("\n").as_bytes()),
        "p.jsonl",
        &ImportOptions::default(),
    )
    .unwrap();
    let s = SessionState::replay(&a.events.to_vec().unwrap()).unwrap();
    let about = s.about.unwrap();
    assert_eq!(about.directory.as_deref(), Some("/home/dev/proj"));
}
