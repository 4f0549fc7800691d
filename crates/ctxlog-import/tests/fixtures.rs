//! The hand-written fixtures under fixtures/sessions: every edge case each
//! importer handles, bad input named by file and line or JSON path, and the
//! OpenCode export round trip.

use ctxlog_core::policy::{PI_SUMMARY_PREFIX, PI_SUMMARY_SUFFIX};
use ctxlog_core::window::{COMPACTION_QUESTION, CONTINUE_TEXT};
use ctxlog_core::*;
use ctxlog_import::{export, import, Format, ImportError, ImportOptions, Imported};
use std::path::PathBuf;

fn fixture(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sessions")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn load(rel: &str, format: Format) -> (Imported, SessionState) {
    let text = fixture(rel);
    assert_eq!(Format::sniff(text.as_bytes()), Some(format), "{rel}");
    let a = import(text.as_bytes(), rel, format, &ImportOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    // Keeping the history: these tests read every message, closed or not.
    let s = SessionState::replay_keeping_history(&a.events.to_vec().unwrap()).unwrap();
    (a, s)
}

fn by_source<'a>(s: &'a SessionState, id: &str) -> &'a Message {
    s.messages
        .iter()
        .find(|m| m.source_id.as_deref() == Some(id))
        .unwrap_or_else(|| panic!("no message {id}"))
}

fn tool<'a>(s: &'a SessionState, call: &str) -> &'a Part {
    s.messages
        .iter()
        .flat_map(|m| &m.parts)
        .find(|p| p.tool_call().is_some_and(|(id, _)| id == call))
        .unwrap_or_else(|| panic!("no call {call}"))
}

fn status(p: &Part) -> &str {
    p.tool_status().unwrap_or("not a tool")
}

fn texts(w: &Window) -> Vec<String> {
    w.messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(|p| match p {
            WindowPart::Text(t) => t.clone(),
            WindowPart::Tool { call_id, .. } => format!("tool {call_id}"),
            WindowPart::Reasoning(_) => "reasoning".into(),
            WindowPart::File(_) => "file".into(),
        })
        .collect()
}

#[test]
fn opencode_export_replays_to_the_window_opencode_built() {
    let (a, s) = load("opencode/compacted-and-pruned.json", Format::OpenCode);
    assert_eq!(
        (a.messages, a.tool_calls, a.steps),
        (15, 7, 6),
        "summary steps are not agent steps"
    );
    assert_eq!(s.title.as_deref(), Some("Fix failing parser test"));
    // the pruned mark became a PartsPruned placed before the next message
    let read = tool(&s, "toolu_01Nc8cHPow5epgXnpMZT5HN1");
    let mark = read.pruned.as_ref().expect("pruned");
    assert_eq!(
        (mark.at, mark.policy.as_str()),
        (1_783_841_899_000, "imported")
    );
    // statuses kept: error, running, pending
    assert_eq!(status(tool(&s, "toolu_01Gr3pErr0rCa11Xx9Yy8Zz7")), "error");
    assert_eq!(status(tool(&s, "toolu_03RunN1ngRunN1ngRunN1ng")), "running");
    assert_eq!(
        status(tool(&s, "toolu_03PendPendPendPendPendPe")),
        "pending"
    );
    // the interrupted message: no finish, an error
    let aborted = by_source(&s, "msg_f553fb000001Oo9Pp8Qq7Rr6Ss");
    assert_eq!(aborted.finish, None);
    assert_eq!(aborted.error.as_ref().unwrap().name, "MessageAbortedError");
    // the patch part is kept verbatim, the file part as an attachment
    let kinds: Vec<&str> = s
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(|p| p.kind())
        .collect();
    assert!(
        kinds.contains(&"other") && kinds.contains(&"file"),
        "{kinds:?}"
    );
    // the compaction: completed, automatic, its tail starting at the user turn
    let job = &s.jobs[0];
    assert!(job.auto && !job.overflow);
    assert!(matches!(job.status, JobStatus::Completed { .. }));
    let tail = by_source(&s, "msg_f553e1c3a001Pq9Rs8Tu7Vw6Xy").id;
    assert_eq!(job.tail_start, Some(tail));
    assert!(by_source(&s, "msg_f553fa2f0001Ct1Nu2Ee3Xx4Yy").synthetic);
    // The model view, per opencode-behavior.md §2.3: the marker question,
    // the summary, the tail (user turn and its step), the continue message,
    // then what followed. Nothing older than the tail.
    let w = window(&s);
    assert_eq!(w.pivot, Some(job.marker));
    let t = texts(&w);
    assert_eq!(t[0], COMPACTION_QUESTION);
    assert!(t[1].starts_with("## Objective"), "{t:?}");
    assert_eq!(t[2], "Now fix it and run cargo test.");
    assert_eq!(
        t[3..5],
        [
            "tool toolu_02Ed1tEd1tEd1tEd1tEd1tEd",
            "tool toolu_02Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
        ]
    );
    assert!(t[5].starts_with(CONTINUE_TEXT), "{t:?}");
    assert_eq!(
        t.last().unwrap(),
        "Tests pass. The diff:\n```diff\n-i < n - 1\n+i < n\n```"
    );
    assert!(
        !t.iter().any(|x| x.contains("Also look at the lexer")),
        "{t:?}"
    );
}

#[test]
fn opencode_round_trip_export_import_export_import_keeps_the_digest() {
    let (a, s) = load("opencode/compacted-and-pruned.json", Format::OpenCode);
    let mut e1 = Vec::new();
    export::opencode(&a.events.to_vec().unwrap(), &mut e1).unwrap();
    let b = import(&e1[..], "e1", Format::OpenCode, &ImportOptions::default()).unwrap();
    let mut e2 = Vec::new();
    export::opencode(&b.events.to_vec().unwrap(), &mut e2).unwrap();
    assert_eq!(e1, e2, "the export is a fixed point");
    let c = import(&e2[..], "e2", Format::OpenCode, &ImportOptions::default()).unwrap();
    let (sb, sc) = (
        SessionState::replay(&b.events.to_vec().unwrap()).unwrap(),
        SessionState::replay(&c.events.to_vec().unwrap()).unwrap(),
    );
    assert_eq!(sb.digest(), sc.digest());
    assert_eq!(sb.about, s.about, "even the first import survives it");
    assert_eq!(sb.digest(), s.digest(), "even the first import survives it");
    // the export is valid OpenCode JSON: markers, summaries, pruned marks
    let v: serde_json::Value = serde_json::from_slice(&e1).unwrap();
    let parts: Vec<&serde_json::Value> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .collect();
    assert!(parts
        .iter()
        .any(|p| p["type"] == "compaction" && p["auto"] == true));
    assert!(parts
        .iter()
        .any(|p| !p["state"]["time"]["compacted"].is_null()));
    assert!(v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["info"]["summary"] == true && m["info"]["finish"] == "stop"));
}

/// An OpenCode session exports as it came: every field, id and part of the
/// fixture, the ones ctxlog does not model included (kept by the import as
/// `source_fields`). The additions: an assistant message that recorded no
/// `tokens` gets zero tokens, which OpenCode's import requires, and the
/// session, which recorded no totals, gets OpenCode's (the sums of its
/// messages' `cost` and `tokens`).
#[test]
fn opencode_export_gives_back_the_export_it_came_from() {
    let (a, _) = load("opencode/compacted-and-pruned.json", Format::OpenCode);
    assert!(a
        .events
        .to_vec()
        .unwrap()
        .iter()
        .any(|e| matches!(e.event, Event::SourceFields { .. })));
    let mut out = Vec::new();
    export::opencode(&a.events.to_vec().unwrap(), &mut out).unwrap();
    let ours: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let mut theirs: serde_json::Value =
        serde_json::from_str(&fixture("opencode/compacted-and-pruned.json")).unwrap();
    let mut added = 0;
    for (m, o) in theirs["messages"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .zip(ours["messages"].as_array().unwrap())
    {
        if m["info"]["role"] == "assistant" && m["info"].get("tokens").is_none() {
            m["info"]["tokens"] = o["info"]["tokens"].clone();
            added += 1;
        }
    }
    assert_eq!(
        added, 1,
        "the fixture has one assistant message without tokens"
    );
    let messages = theirs["messages"].as_array().unwrap();
    let cost: f64 = messages
        .iter()
        .filter_map(|m| m["info"]["cost"].as_f64())
        .sum();
    let input: u64 = messages
        .iter()
        .filter_map(|m| m["info"]["tokens"]["input"].as_u64())
        .sum();
    assert!((ours["info"]["cost"].as_f64().unwrap() - cost).abs() < 1e-9);
    assert_eq!(ours["info"]["tokens"]["input"], input);
    assert!(theirs["info"].get("cost").is_none() && theirs["info"].get("tokens").is_none());
    theirs["info"]["cost"] = ours["info"]["cost"].clone();
    theirs["info"]["tokens"] = ours["info"]["tokens"].clone();
    if ours != theirs {
        let (a, b) = (ours.to_string(), theirs.to_string());
        let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let around = |s: &str| {
            s.get(at.saturating_sub(60)..(at + 60).min(s.len()))
                .unwrap_or("")
                .to_owned()
        };
        panic!(
            "the export differs from the fixture at byte {at}: …{}… | …{}…",
            around(&a),
            around(&b)
        );
    }
}

#[test]
fn every_format_round_trips_through_an_opencode_export() {
    for (rel, format) in [
        ("claude-code/edge-cases.jsonl", Format::ClaudeCode),
        ("codex/edge-cases.jsonl", Format::Codex),
        ("pi/edge-cases.jsonl", Format::Pi),
    ] {
        let (a, _) = load(rel, format);
        // Up to the last finished step: a step still open is exported as
        // not completed, and an OpenCode export's last message that is not
        // completed (or a user message with nothing after it) waits.
        let mut events = a.events.to_vec().unwrap();
        let last_finish = events
            .iter()
            .rposition(|e| matches!(e.event, Event::StepFinished { .. }))
            .unwrap();
        if let Some(cut) = events[last_finish..]
            .iter()
            .position(|e| matches!(e.event, Event::MessageAppended { .. }))
        {
            events.truncate(last_finish + cut);
        }
        let s = SessionState::replay(&events).unwrap();
        let mut e1 = Vec::new();
        export::opencode(&events, &mut e1).unwrap();
        let b = import(&e1[..], rel, Format::OpenCode, &ImportOptions::default())
            .unwrap_or_else(|e| panic!("{rel}: {e}"));
        let sb = SessionState::replay(&b.events.to_vec().unwrap()).unwrap();
        assert_eq!(sb.messages.len(), s.messages.len(), "{rel}");
        // The same model view, its pivot sent as OpenCode sends one (the
        // export carries the history; how a summary is sent is the policy's).
        let mut as_opencode = s.clone();
        as_opencode.policy.pivot = PivotForm::Question;
        assert_eq!(
            texts(&window(&sb)),
            texts(&window(&as_opencode)),
            "{rel}: the same model view"
        );
        let mut e2 = Vec::new();
        export::opencode(&b.events.to_vec().unwrap(), &mut e2).unwrap();
        let c = import(&e2[..], rel, Format::OpenCode, &ImportOptions::default()).unwrap();
        assert_eq!(
            sb.digest(),
            SessionState::replay(&c.events.to_vec().unwrap())
                .unwrap()
                .digest(),
            "{rel}"
        );
    }
}

#[test]
fn claude_code_edge_cases() {
    let (a, s) = load("claude-code/edge-cases.jsonl", Format::ClaudeCode);
    // The last step's call has no result: the step is stored, open, and
    // its end waits for the file to grow (an earlier unanswered call does
    // not hold anything back).
    assert_eq!((a.steps, a.tool_calls), (4, 4));
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("msg_04DDD waits for the result of call \"toolu_04Bash\"")),
        "{:?}",
        a.warnings
    );
    // four content-block lines, one step, usage once, output the max
    let step = by_source(&s, "msg_01AAA");
    let t = *step.tokens.clone().unwrap();
    assert_eq!(
        (t.input, t.cache_write, t.cache_read, t.output),
        (3, 690, 17055, 212)
    );
    assert_eq!(step.parts.iter().filter(|p| p.kind() == "tool").count(), 2);
    assert_eq!(status(tool(&s, "toolu_01Glob")), "error");
    assert_eq!(status(tool(&s, "toolu_02Read")), "pending", "unanswered");
    assert_eq!(status(tool(&s, "toolu_04Bash")), "pending", "unanswered");
    // isMeta kept (Claude Code sends it) as synthetic, as are the /clear
    // echo and the interrupt notice
    assert!(by_source(&s, "u-0001").synthetic);
    assert!(by_source(&s, "u-0002").synthetic);
    assert!(by_source(&s, "u-0006").synthetic);
    assert!(!by_source(&s, "u-0003").synthetic);
    // compact_boundary (manual) + isCompactSummary: a completed compaction
    let job = &s.jobs[0];
    assert!(!job.auto && matches!(job.status, JobStatus::Completed { .. }));
    // sent as Claude Code sends it: the summary alone, a user message
    let w = window(&s);
    assert_eq!(w.messages[0].role, Role::User);
    assert!(texts(&w)[0].contains("200 handlers"), "{w:?}");
}

#[test]
fn codex_edge_cases() {
    let (a, s) = load("codex/edge-cases.jsonl", Format::Codex);
    // The last step (a call and its output) is stored as far as it is
    // known, with its usage: its end waits for a later line.
    assert_eq!((a.steps, a.tool_calls), (5, 5));
    let last = s
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .unwrap();
    assert!(last.finish.is_none() && last.tokens.is_some());
    // injected context is synthetic; a real prompt is not
    assert!(by_source(&s, "line:2").synthetic);
    assert!(!by_source(&s, "line:3").synthetic);
    // a step's source id is the first line the model produced in it
    let step = by_source(&s, "line:13");
    assert_eq!(step.parts.iter().filter(|p| p.kind() == "tool").count(), 2);
    let t = *step.tokens.clone().unwrap();
    assert_eq!(
        (t.input, t.cache_read, t.output, t.reasoning),
        (2272, 3712, 104, 64)
    );
    // outputs unwrapped from their JSON; plain text outputs kept as they are
    match &*tool(&s, "call_rg")
        .body_in(&a.events.to_vec().unwrap())
        .unwrap()
    {
        PartBody::Tool {
            state: ToolState::Completed { output, .. },
            ..
        } => assert_eq!(output, "apps/web/src/page_7.tsx"),
        other => panic!("{other:?}"),
    }
    match &*tool(&s, "call_test2")
        .body_in(&a.events.to_vec().unwrap())
        .unwrap()
    {
        PartBody::Tool {
            state: ToolState::Completed { output, input, .. },
            ..
        } => {
            assert_eq!(output, "plain text output, not the JSON wrapper");
            assert_eq!(input, &Json::String("not json at all".into()));
        }
        other => panic!("{other:?}"),
    }
    // the aborted turn: its call unanswered, its step errored
    assert_eq!(status(tool(&s, "call_test")), "pending");
    let cut = s
        .messages
        .iter()
        .find(|m| {
            m.parts
                .iter()
                .any(|p| p.source_id.as_deref() == Some("call_test"))
        })
        .unwrap();
    assert_eq!(cut.error.as_ref().unwrap().name, "MessageAbortedError");
    // compacted → a completed compaction; the file's window is the context
    assert!(matches!(s.jobs[0].status, JobStatus::Completed { .. }));
    assert_eq!(s.limits.context, 272_000);
    assert_eq!(s.limits.input, Some(272_000));
}

#[test]
fn pi_edge_cases() {
    let (a, s) = load("pi/edge-cases.jsonl", Format::Pi);
    assert_eq!((a.steps, a.tool_calls), (4, 3));
    assert_eq!(status(tool(&s, "toolu_pi_read")), "completed");
    assert_eq!(status(tool(&s, "toolu_pi_bash")), "error");
    assert_eq!(status(tool(&s, "toolu_pi_find")), "pending");
    let aborted = by_source(&s, "line:8");
    assert_eq!(aborted.error.as_ref().unwrap().name, "MessageAbortedError");
    assert_eq!(aborted.model.as_ref().unwrap().model, "gpt-5.1-codex");
    assert!(
        by_source(&s, "line:9").synthetic,
        "a bash execution is not a prompt"
    );
    // the compaction keeps the tail from firstKeptEntryIndex 9 (line 10);
    // pi sends the summary as one user message, and no question
    let job = &s.jobs[0];
    assert_eq!(job.tail_start, Some(by_source(&s, "line:10").id));
    let t = texts(&window(&s));
    assert_eq!(
        t[0],
        format!("{PI_SUMMARY_PREFIX}# Context Checkpoint\n\nPorted the selector; the theme docs say every theme defines all tokens.{PI_SUMMARY_SUFFIX}")
    );
    assert_eq!(window(&s).messages[0].role, Role::User);
    assert_eq!(t[1], "Go on, port it.");
    assert_eq!(t.last().unwrap(), "Added `selector.test.ts`.");
    // gpt-5.1-codex is in the table: no warning, its input limit
    assert!(a.warnings.is_empty());
    assert_eq!(s.limits.input, Some(272_000));
}

#[test]
fn pi_first_kept_entry_index_past_every_line_keeps_no_tail() {
    // u64::MAX + 1 overflowed (a panic in debug builds) before.
    let text: String = fixture("pi/edge-cases.jsonl")
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["type"] == "compaction" {
                v["firstKeptEntryIndex"] = u64::MAX.into();
            }
            format!("{v}\n")
        })
        .collect();
    let a = import(text.as_bytes(), "pi", Format::Pi, &ImportOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let s = SessionState::replay(&a.events.to_vec().unwrap()).unwrap();
    assert_eq!(s.jobs.len(), 1);
    assert_eq!(s.jobs[0].tail_start, None);
}

fn err_of(text: &[u8], format: Format) -> ImportError {
    match import(text, "bad", format, &ImportOptions::default()) {
        Ok(a) => panic!("imported {} events from bad input", a.events.len()),
        Err(e) => e,
    }
}

#[test]
fn bad_input_in_every_format_is_named_by_line_or_json_path() {
    // JSONL formats: truncated JSON, invalid UTF-8, a result for an unknown
    // call, a wrong type — each on the line it is on.
    for (rel, format, result_line) in [
        (
            "codex/edge-cases.jsonl",
            Format::Codex,
            r#"{"timestamp":"2025-09-25T01:30:00.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_nobody","output":"x"}}"#,
        ),
        (
            "pi/edge-cases.jsonl",
            Format::Pi,
            r#"{"type":"message","timestamp":"2025-11-21T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"toolu_nobody","toolName":"read","content":[],"isError":false}}"#,
        ),
        (
            "claude-code/edge-cases.jsonl",
            Format::ClaudeCode,
            r#"{"type":"user","sessionId":"7f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f","uuid":"u-x","timestamp":"2025-10-26T11:00:00.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_nobody","content":"x"}]}}"#,
        ),
    ] {
        let text = fixture(rel);
        let lines: Vec<&str> = text.lines().collect();
        let n = lines.len() as u64;
        // a last line cut short is still being written: left out, with a
        // warning; the same line cut short and ended is bad JSON
        let mut t = lines.join("\n");
        t.truncate(t.len() - 10);
        let a = import(t.as_bytes(), "bad", format, &ImportOptions::default())
            .unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert!(
            a.warnings
                .iter()
                .any(|w| w.contains(&format!("line {n} is unfinished"))),
            "{rel}: {:?}",
            a.warnings
        );
        t.push('\n');
        let e = err_of(t.as_bytes(), format);
        assert_eq!(e.line, n, "{rel}: {e}");
        assert!(e.message.contains("not JSON"), "{rel}: {e}");
        // invalid UTF-8 on line 3
        let mut bytes = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            bytes.extend_from_slice(l.as_bytes());
            if i == 2 {
                bytes.extend_from_slice(b"\xff");
            }
            bytes.push(b'\n');
        }
        let e = err_of(&bytes, format);
        assert_eq!(e.line, 3, "{rel}: {e}");
        assert!(e.message.contains("UTF-8"), "{rel}: {e}");
        // a result for a call nobody made
        let t = format!("{text}{result_line}\n");
        let e = err_of(t.as_bytes(), format);
        assert_eq!(e.line, n + 1, "{rel}: {e}");
        assert!(e.message.contains("unknown call"), "{rel}: {e}");
        assert!(
            e.to_string().starts_with(&format!("bad:{}: ", n + 1)),
            "{e}"
        );
        // a wrong type: `type` is a number
        let t = format!("{text}{{\"type\":7}}\n");
        let e = err_of(t.as_bytes(), format);
        assert_eq!(e.line, n + 1, "{rel}: {e}");
    }
    // OpenCode: one JSON document; errors name the JSON path (and the line).
    let text = fixture("opencode/compacted-and-pruned.json");
    let e = err_of(&text.as_bytes()[..text.len() / 2], Format::OpenCode);
    assert!(
        e.line > 0 && e.message.contains("not a valid OpenCode export"),
        "{e}"
    );
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["messages"][1]["parts"][2]["state"]["output"] = 42.into();
    let e = err_of(v.to_string().as_bytes(), Format::OpenCode);
    assert_eq!(
        e.path.as_deref(),
        Some("messages[1].parts[2].state.output"),
        "{e}"
    );
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["messages"][4]["info"]["role"] = "robot".into();
    let e = err_of(v.to_string().as_bytes(), Format::OpenCode);
    assert_eq!(e.path.as_deref(), Some("messages[4].info.role"), "{e}");
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["messages"][9]["parts"][0]["tail_start_id"] = "msg_nowhere".into();
    let e = err_of(v.to_string().as_bytes(), Format::OpenCode);
    assert!(e.message.contains("names no earlier message"), "{e}");
    let mut bytes = text.as_bytes().to_vec();
    let at = text.find("Find out why").unwrap();
    bytes[at] = 0xff;
    let e = err_of(&bytes, Format::OpenCode);
    assert!(e.line > 0, "{e}");
    // detection from a first line cut short (longer than what is read)
    let codex = fixture("codex/edge-cases.jsonl");
    assert_eq!(Format::sniff(&codex.as_bytes()[..80]), Some(Format::Codex));
    let claude = fixture("claude-code/edge-cases.jsonl");
    let third = claude.lines().nth(3).unwrap();
    assert_eq!(
        Format::sniff(&third.as_bytes()[..third.len() - 5]),
        Some(Format::ClaudeCode)
    );
    // a byte-order mark is not an error
    let pi = format!("\u{feff}{}", fixture("pi/edge-cases.jsonl"));
    assert_eq!(Format::sniff(pi.as_bytes()), Some(Format::Pi));
    import(pi.as_bytes(), "bom", Format::Pi, &ImportOptions::default()).unwrap();
    // not a format at all
    assert_eq!(Format::sniff(b"hello world"), None);
    assert_eq!(Format::sniff(b"[1,2,3]"), None);
}

#[test]
fn a_native_session_with_restarted_failed_and_pruned_work_round_trips() {
    let mut r = Recorder::start(
        SessionId(uuid::Uuid::from_u128(7)),
        SeededIds::new(7),
        1_000,
        Policy::opencode_seed(),
        ModelLimits {
            context: 50_000,
            input: None,
            output: Some(4_000),
        },
    )
    .unwrap();
    let u = r.user_text(1_100, "look at the logs", false).unwrap();
    let a = r.message(1_200, Role::Assistant, Some(u), false).unwrap();
    let t = r
        .tool(1_250, a, "read", Json::Null, &"log line\n".repeat(400))
        .unwrap();
    r.finish_step(1_300, a, FinishReason::ToolCalls, TokenUsage::default())
        .unwrap();
    r.record(
        1_350,
        Event::PartsPruned {
            parts: vec![PrunedPart {
                part: t,
                tokens: 900,
            }],
            total_tokens: 900,
            policy: "manual".into(),
        },
    )
    .unwrap();
    // job 1: started, cut off (restarted), then completed
    let job1 = r
        .request_compaction(1_400, false, CompactionTrigger::Manual)
        .unwrap();
    let s1 = r.message_id(1_500);
    r.record(
        1_500,
        Event::CompactionStarted {
            job: job1,
            summary_message: s1,
            agent: None,
            model: None,
            prompt: None,
            tail_start: None,
            source_id: None,
        },
    )
    .unwrap();
    r.summarize(
        1_600,
        job1,
        "the logs show a timeout",
        None,
        TokenUsage::default(),
    )
    .unwrap();
    // job 2: started, then failed
    let job2 = r
        .request_compaction(1_700, true, CompactionTrigger::Manual)
        .unwrap();
    let s2 = r.message_id(1_800);
    r.record(
        1_800,
        Event::CompactionStarted {
            job: job2,
            summary_message: s2,
            agent: None,
            model: None,
            prompt: None,
            tail_start: None,
            source_id: None,
        },
    )
    .unwrap();
    r.record(
        1_900,
        Event::CompactionFailed {
            job: job2,
            error: "provider said no".into(),
        },
    )
    .unwrap();
    let events = r.into_events();
    let original = SessionState::replay(&events).unwrap();
    let mut e1 = Vec::new();
    export::opencode(&events, &mut e1).unwrap();
    let b = import(&e1[..], "e1", Format::OpenCode, &ImportOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let sb = SessionState::replay(&b.events.to_vec().unwrap()).unwrap();
    let mut e2 = Vec::new();
    export::opencode(&b.events.to_vec().unwrap(), &mut e2).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&e1),
        String::from_utf8_lossy(&e2),
        "a fixed point"
    );
    let c = import(&e2[..], "e2", Format::OpenCode, &ImportOptions::default()).unwrap();
    assert_eq!(
        sb.digest(),
        SessionState::replay(&c.events.to_vec().unwrap())
            .unwrap()
            .digest()
    );
    // what the export carried over
    let statuses: Vec<&str> = sb.jobs.iter().map(|j| j.status.name()).collect();
    assert_eq!(statuses, ["completed", "failed"]);
    assert_eq!(sb.jobs[0].attempts, 2, "the restart is kept");
    assert!(
        matches!(&sb.jobs[1].status, JobStatus::Failed { error } if error == "provider said no")
    );
    assert_eq!(sb.pruned_parts().count(), 1);
    assert_eq!(texts(&window(&sb)), texts(&window(&original)));
    // ids are OpenCode-shaped and ascend in order
    let v: serde_json::Value = serde_json::from_slice(&e1).unwrap();
    assert!(v["info"]["id"].as_str().unwrap().starts_with("ses_"));
    let mids: Vec<&str> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["info"]["id"].as_str().unwrap())
        .collect();
    assert!(mids.iter().all(|m| m.len() == 4 + 12 + 14), "{mids:?}");
    assert!(mids.windows(2).all(|w| w[0] < w[1]), "{mids:?}");
}

/// A compaction a recording holds is labelled with the agent that decided
/// it, with the tokens it recorded; every import ends with what the
/// recording says about the session.
#[test]
fn recorded_compactions_name_their_agent_and_sessions_are_described() {
    let cases = [
        (
            "claude-code/edge-cases.jsonl",
            Format::ClaudeCode,
            "claude-code",
            Some(26909),
        ),
        ("pi/edge-cases.jsonl", Format::Pi, "pi", Some(8900)),
        (
            "opencode/compacted-and-pruned.json",
            Format::OpenCode,
            "opencode-1.17.20",
            None,
        ),
    ];
    for (file, format, agent, tokens) in cases {
        let (imported, state) = load(file, format);
        let requests: Vec<_> = ctxlog_core::audit::audit(&imported.events.to_vec().unwrap())
            .into_iter()
            .filter(|a| a.kind == "compaction_requested")
            .collect();
        assert!(!requests.is_empty(), "{file}");
        for r in &requests {
            assert_eq!(r.policy, agent, "{file}: {}", r.what);
            assert_eq!(r.tokens, tokens, "{file}: {}", r.what);
            assert!(
                r.what.contains(&format!("decided by {agent}")),
                "{}",
                r.what
            );
        }
        let about = state
            .about
            .clone()
            .unwrap_or_else(|| panic!("{file}: no description"));
        assert!(
            about
                .agent
                .as_deref()
                .is_some_and(|a| a.starts_with(agent.split('-').next().unwrap())),
            "{file}: {about:?}"
        );
        assert!(
            about.directory.is_some() && about.model.is_some(),
            "{file}: {about:?}"
        );
        let events = imported.events.to_vec().unwrap();
        let last = events.last().unwrap();
        assert_eq!(last.event.kind(), "session_described", "{file}");
    }
}

/// A branched pi session's header is written when it branches, after the
/// entries it copies: they keep their own times, not the header's.
#[test]
fn pi_entries_before_their_header_keep_their_times() {
    let text = concat!(
        r#"{"type":"session","id":"branched","timestamp":"2025-11-20T23:33:50.805Z","cwd":"/p","provider":"anthropic","modelId":"claude-sonnet-4-5","branchedFrom":"/s/original.jsonl"}"#,
        "\n",
        r#"{"type":"message","timestamp":"2025-11-20T23:33:01.550Z","message":{"role":"user","content":[{"type":"text","text":"first"}],"timestamp":1763681581544}}"#,
        "\n",
        r#"{"type":"message","timestamp":"2025-11-20T23:33:02.351Z","message":{"role":"user","content":[{"type":"text","text":"second"}],"timestamp":1763681582351}}"#,
        "\n",
    );
    let imported = import(
        text.as_bytes(),
        "branched.jsonl",
        Format::Pi,
        &ImportOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let appended: Vec<u64> = imported
        .events
        .to_vec()
        .unwrap()
        .iter()
        .filter(|e| e.event.kind() == "message_appended")
        .map(|e| e.recorded_at)
        .collect();
    // 2025-11-20T23:33:01.550Z and 23:33:02.351Z, not the header's 23:33:50.805Z.
    assert_eq!(appended, [1_763_681_581_550, 1_763_681_582_351]);
    assert_eq!(
        imported.events.to_vec().unwrap()[0].recorded_at,
        1_763_681_581_550
    );
    // The header alone of a file still being written: nothing yet (its
    // first entry may name the model).
    let header = text.lines().next().unwrap().to_owned() + "\n";
    assert!(import(
        header.as_bytes(),
        "b",
        Format::Pi,
        &ImportOptions::default()
    )
    .unwrap_err()
    .holds_no_session());
}

/// An OpenCode message longer than `--max-line-bytes` is refused by name,
/// and a limit above every message lets the export through (the bound is
/// counted under the parser's buffer, within a sixteenth of the limit).
#[test]
fn an_opencode_message_longer_than_the_limit_is_refused() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/sessions/opencode/compacted-and-pruned.json"),
    )
    .unwrap();
    let export: serde_json::Value = serde_json::from_str(&text).unwrap();
    let compact = serde_json::to_string(&export).unwrap();
    let longest = export["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.to_string().len() as u64)
        .max()
        .unwrap();
    let with_limit = |max_line_bytes: u64| {
        let options = ImportOptions {
            max_line_bytes,
            ..ImportOptions::default()
        };
        import(
            compact.as_bytes(),
            "export.json",
            Format::OpenCode,
            &options,
        )
    };
    assert!(with_limit(longest * 2).is_ok());
    let refused = with_limit(longest / 2).unwrap_err().to_string();
    assert!(
        refused.contains(&format!("longer than {} bytes", longest / 2)),
        "{refused}"
    );
}

/// A model selected and never used (switched away from before any step)
/// raises no warning that it is not in the limits table; one a step ran
/// on does.
#[test]
fn only_a_model_a_step_ran_on_is_warned_of() {
    let text = fixture("pi/edge-cases.jsonl");
    let switch = "{\"type\": \"model_change\", \"timestamp\": \"2025-11-20T23:33:50.900Z\", \"provider\": \"x\", \"modelId\": \"no-such-model-a\"}";
    let back = "{\"type\": \"model_change\", \"timestamp\": \"2025-11-20T23:33:50.950Z\", \"provider\": \"anthropic\", \"modelId\": \"claude-sonnet-4-5\"}";
    let warnings = |text: &str| {
        import(
            text.as_bytes(),
            "p.jsonl",
            Format::Pi,
            &ImportOptions::default(),
        )
        .unwrap()
        .warnings
    };
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(1, back);
    lines.insert(1, switch);
    let passing = warnings(&lines.join("\n"));
    assert!(
        !passing.iter().any(|w| w.contains("no-such-model-a")),
        "{passing:?}"
    );
    // A step that ran on it.
    let used = text.replacen(
        "\"model\": \"claude-sonnet-4-5\"",
        "\"model\": \"no-such-model-b\"",
        1,
    );
    let used = warnings(&used);
    assert!(
        used.iter().any(|w| w.contains("no-such-model-b")),
        "{used:?}"
    );
}
