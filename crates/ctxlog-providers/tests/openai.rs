//! The `openai` summarizer against a real HTTP server on 127.0.0.1 that
//! checks each request body and answers with errors, timeouts and malformed
//! JSON.

use ctxlog_core::window::{WindowMessage, WindowPart, COMPACTION_QUESTION};
use ctxlog_core::*;
use ctxlog_engine::summarize::*;
use ctxlog_providers::openai::{OpenAiConfig, OpenAiSummarizer};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server does with one request.
#[derive(Clone)]
enum Reply {
    Status(u16, &'static str),
    Sleep(Duration),
    Raw(&'static str),
}

/// A one-thread HTTP/1.1 server answering requests with `replies` in order;
/// it records every request body.
fn server(replies: Vec<Reply>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = bodies.clone();
    std::thread::spawn(move || {
        for reply in replies {
            let Ok((mut stream, _)) = listener.accept() else {
                return;
            };
            let seen = seen.clone();
            // one thread per connection: a slow answer does not hold up the next
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut len = 0usize;
                let mut auth = None;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if line == "\r\n" || line.is_empty() {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                    if lower.starts_with("authorization:") {
                        auth = Some(line.trim().to_owned());
                    }
                }
                let mut body = vec![0; len];
                reader.read_exact(&mut body).unwrap();
                let mut v: Value = serde_json::from_slice(&body).unwrap();
                v["_authorization"] = auth.map(Value::String).unwrap_or(Value::Null);
                seen.lock().unwrap().push(v);
                let (status, text) = match reply {
                    Reply::Status(code, text) => (code, text),
                    Reply::Raw(text) => (200, text),
                    Reply::Sleep(d) => {
                        std::thread::sleep(d);
                        (200, OK)
                    }
                };
                let _ = write!(stream, "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}", text.len());
            });
        }
    });
    (format!("http://{addr}/v1"), bodies)
}

const OK: &str = r#"{"choices":[{"message":{"role":"assistant","content":"We fixed the parser."},"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":40,"total_tokens":1240,"prompt_tokens_details":{"cached_tokens":1000}}}"#;

fn summarizer(base_url: String) -> OpenAiSummarizer {
    OpenAiSummarizer::new(OpenAiConfig {
        base_url,
        model: "test-model".into(),
        api_key: Some("sk-test".into()),
        timeout: Duration::from_millis(500),
        retries: 2,
        backoff: Duration::from_millis(10),
    })
}

fn request() -> SummaryRequest {
    let m = |role, parts| WindowMessage {
        id: MessageId(uuid::Uuid::nil()),
        role,
        parts,
    };
    SummaryRequest {
        session: SessionId(uuid::Uuid::nil()),
        job: MessageId(uuid::Uuid::nil()),
        system: COMPACTION_SYSTEM_PROMPT.into(),
        messages: vec![
            m(Role::User, vec![WindowPart::Text("Fix the parser.".into())]),
            m(
                Role::Assistant,
                vec![WindowPart::Tool {
                    call_id: "c1".into(),
                    tool: "bash".into(),
                    input: Json::Object(vec![("command".into(), "cargo test".into())]),
                    result: ctxlog_core::window::ToolResult::Error("1 failed".into()),
                }],
            ),
            m(
                Role::User,
                vec![WindowPart::Text(COMPACTION_QUESTION.into())],
            ),
        ],
        instruction: COMPACTION_INSTRUCTION.into(),
        transcript: None,
        model: None,
        max_output_tokens: 4_096,
    }
}

#[test]
fn the_request_body_has_the_prompts_and_no_tools_and_errors_are_retried() {
    let (url, bodies) = server(vec![
        Reply::Status(500, "{}"),
        Reply::Status(429, "{}"),
        Reply::Raw(OK),
    ]);
    let out = summarizer(url).summarize(&request()).unwrap();
    assert_eq!(out.text, "We fixed the parser.");
    assert_eq!(out.finish, FinishReason::Stop);
    assert_eq!(
        (out.tokens.input, out.tokens.cache_read, out.tokens.output),
        (200, 1000, 40)
    );
    let bodies = bodies.lock().unwrap();
    assert_eq!(bodies.len(), 3, "two retries then success");
    let b = &bodies[2];
    assert_eq!(b["model"], "test-model");
    assert!(
        b.get("tools").is_none() && b.get("tool_choice").is_none(),
        "no tools: {b}"
    );
    let msgs = b["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[0]["content"], COMPACTION_SYSTEM_PROMPT);
    assert_eq!(msgs[msgs.len() - 2]["content"], COMPACTION_QUESTION);
    assert_eq!(msgs[msgs.len() - 1]["role"], "user");
    assert_eq!(msgs[msgs.len() - 1]["content"], COMPACTION_INSTRUCTION);
    assert!(msgs[2]["content"]
        .as_str()
        .unwrap()
        .contains("[tool call bash {\"command\":\"cargo test\"}]"));
    assert!(msgs.iter().all(|m| m.get("tool_calls").is_none()));
    assert_eq!(b["_authorization"], "Authorization: Bearer sk-test");
}

#[test]
fn timeouts_are_retried_then_reported() {
    let slow = Reply::Sleep(Duration::from_millis(1_500));
    let (url, bodies) = server(vec![slow.clone(), slow.clone(), slow]);
    let err = summarizer(url).summarize(&request()).unwrap_err();
    assert!(
        matches!(&err, SummarizeError::Failed(m) if m.contains("gave up after 3 attempts")),
        "{err}"
    );
    assert_eq!(bodies.lock().unwrap().len(), 3);
}

#[test]
fn malformed_json_and_client_errors_fail_without_retry() {
    for reply in [
        Reply::Raw("{not json"),
        Reply::Raw(r#"{"choices":[]}"#),
        Reply::Status(401, r#"{"error":"bad key"}"#),
    ] {
        let (url, bodies) = server(vec![reply, Reply::Raw(OK)]);
        let err = summarizer(url).summarize(&request()).unwrap_err();
        assert!(matches!(err, SummarizeError::Failed(_)), "{err}");
        assert_eq!(bodies.lock().unwrap().len(), 1, "not retried");
    }
}

#[test]
fn a_context_overflow_answer_is_too_large() {
    let (url, _) = server(vec![Reply::Status(
        400,
        r#"{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192 tokens"}}"#,
    )]);
    let err = summarizer(url).summarize(&request()).unwrap_err();
    assert!(matches!(err, SummarizeError::TooLarge(_)), "{err}");
}

#[test]
fn a_compaction_model_on_the_request_wins() {
    let (url, bodies) = server(vec![Reply::Raw(OK)]);
    let mut r = request();
    r.model = Some(ModelRef {
        provider: "openai".into(),
        model: "small-summarizer".into(),
    });
    summarizer(url).summarize(&r).unwrap();
    assert_eq!(bodies.lock().unwrap()[0]["model"], "small-summarizer");
}
