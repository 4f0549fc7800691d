//! A scripted model server on loopback, speaking one of two APIs ([`Api`]).
//!
//! It answers `POST …/chat/completions` (OpenAI-compatible chat
//! completions) or `POST /v1/messages` (the Anthropic Messages API) with a
//! server-sent-event stream (`stream: true`) the way the provider does, one
//! connection per request (`Connection: close`). What it answers is scripted: the agent loop's
//! requests (those with `tools`) take the next [`Reply`] of
//! [`Script::agent`], the summarizer's (no tools, not a title request) the
//! next of [`Script::summary`], title requests get a fixed title. Every
//! request body is kept, in arrival order, with the kind it was told apart as.
//!
//! Files: `wire.rs` (the replies as each API streams them).

mod wire;

use wire::{respond, respond_anthropic, respond_responses};

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

/// What one model call answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Streams `text`, then finish `stop`, then the usage.
    Text {
        /// The answer.
        text: String,
        /// Reported usage.
        usage: Usage,
    },
    /// Streams tool calls, then finish `tool_calls`, then the usage.
    ToolCalls {
        /// `(call id, tool name, arguments)`, in order.
        calls: Vec<(String, String, Value)>,
        /// Reported usage.
        usage: Usage,
    },
    /// Answers an HTTP error with a JSON body (no stream).
    Error {
        /// HTTP status.
        status: u16,
        /// The body, e.g. `{"error": {"code": "context_length_exceeded", …}}`.
        body: Value,
    },
}

/// Reported usage of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// `prompt_tokens` (chat completions: cached ones included);
    /// `input_tokens` (Anthropic: the uncached input only).
    pub prompt: u64,
    /// `completion_tokens`; `output_tokens`.
    pub completion: u64,
    /// `prompt_tokens_details.cached_tokens`; `cache_read_input_tokens`.
    pub cached: u64,
    /// `cache_creation_input_tokens` (Anthropic only).
    pub cache_write: u64,
    /// `output_tokens_details.reasoning_tokens` (Responses API only).
    pub reasoning: u64,
    /// `total_tokens` when it is not input plus output (Responses API
    /// only; a provider may report any total).
    pub total: Option<u64>,
}

impl Usage {
    /// Usage with no cached tokens.
    pub fn new(prompt: u64, completion: u64) -> Self {
        Usage {
            prompt,
            completion,
            cached: 0,
            cache_write: 0,
            reasoning: 0,
            total: None,
        }
    }
}

/// The API the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// OpenAI-compatible chat completions (OpenCode).
    OpenAiChat,
    /// The Anthropic Messages API (pi, Claude Code).
    AnthropicMessages,
    /// The OpenAI Responses API, streamed (Codex).
    OpenAiResponses,
}

impl Reply {
    /// A text answer.
    pub fn text(text: &str, prompt: u64, completion: u64) -> Self {
        Reply::Text {
            text: text.into(),
            usage: Usage::new(prompt, completion),
        }
    }

    /// One `bash` tool call running `command`.
    pub fn bash(call_id: &str, command: &str, prompt: u64, completion: u64) -> Self {
        Reply::ToolCalls {
            calls: vec![(
                call_id.into(),
                "bash".into(),
                json!({"command": command, "description": "Runs a scripted command"}),
            )],
            usage: Usage::new(prompt, completion),
        }
    }

    /// The provider's "prompt is too long" (HTTP 400), as Anthropic words it.
    pub fn prompt_too_long() -> Self {
        Reply::Error {
            status: 400,
            body: json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 200001 tokens > 200000 maximum"
            }}),
        }
    }

    /// The Responses API's context-length error (HTTP 400).
    pub fn context_window_exceeded() -> Self {
        Reply::Error {
            status: 400,
            body: json!({"error": {
                "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded"
            }}),
        }
    }

    /// The provider's context-length error (HTTP 400), as OpenAI words it.
    pub fn context_length_exceeded() -> Self {
        Reply::Error {
            status: 400,
            body: json!({"error": {
                "message": "This model's maximum context length is 100000 tokens. However, your messages resulted in 120000 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded"
            }}),
        }
    }
}

/// What the server answers, in order, per kind of request.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// Answers to the agent loop's requests (those with `tools`).
    pub agent: VecDeque<Reply>,
    /// Answers to the summarizer's requests.
    pub summary: VecDeque<Reply>,
}

/// How a request was told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The agent loop: the body has `tools`.
    Agent,
    /// The title generator: no tools, system prompt "You are a title generator…".
    Title,
    /// Any other request without tools: the compaction summarizer.
    Summary,
}

/// What Claude Code's summarizer asks, in the last user message of a
/// request that otherwise looks like the agent loop's (same tools).
const CLAUDE_CODE_SUMMARY_TASK: &str =
    "Your task is to create a detailed summary of the conversation so far";

/// The texts of the last message of a Messages or chat-completions body.
fn last_message_texts(body: &Value) -> Vec<&str> {
    let Some(last) = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last())
    else {
        return Vec::new();
    };
    match last.get("content") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => Vec::new(),
    }
}

impl Kind {
    /// Tells a request body's kind: Claude Code's summarizer by its task
    /// (it offers the loop's tools), else a request that offers tools is
    /// the agent loop's.
    pub fn of(body: &Value) -> Kind {
        // Codex names its compaction requests in its turn metadata.
        let codex_kind = body
            .pointer("/client_metadata/x-codex-turn-metadata")
            .and_then(Value::as_str)
            .and_then(|m| serde_json::from_str::<Value>(m).ok())
            .and_then(|m| {
                m.get("request_kind")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
        if codex_kind.as_deref() == Some("compaction") {
            return Kind::Summary;
        }
        if last_message_texts(body)
            .iter()
            .any(|t| t.contains(CLAUDE_CODE_SUMMARY_TASK))
        {
            return Kind::Summary;
        }
        let tools = body.get("tools");
        let offers_tools = match tools {
            Some(Value::Array(t)) => !t.is_empty(),
            Some(Value::Null) | None => false,
            Some(_) => true,
        };
        if offers_tools {
            return Kind::Agent;
        }
        let system = body
            .pointer("/messages/0/content")
            .and_then(Value::as_str)
            .unwrap_or("");
        if system.starts_with("You are a title generator") {
            Kind::Title
        } else {
            Kind::Summary
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Request {
    /// 1-based arrival number (`n`), counting every request.
    pub n: usize,
    /// Its kind.
    pub kind: Kind,
    /// The JSON body.
    pub body: Value,
    /// What was answered (`None` when the script had nothing left).
    pub reply: Option<Reply>,
}

struct Shared {
    api: Api,
    script: Script,
    requests: Vec<Request>,
}

/// A running server; it stops when dropped (the listener thread ends with
/// the process; no new request is answered from the script after drop).
pub struct ModelServer {
    port: u16,
    shared: Arc<Mutex<Shared>>,
}

impl ModelServer {
    /// Starts a chat-completions server on `127.0.0.1` at a free port.
    pub fn start(script: Script) -> std::io::Result<ModelServer> {
        Self::start_api(Api::OpenAiChat, script)
    }

    /// Starts a server speaking `api` on `127.0.0.1` at a free port.
    pub fn start_api(api: Api, script: Script) -> std::io::Result<ModelServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Mutex::new(Shared {
            api,
            script,
            requests: Vec::new(),
        }));
        let s = Arc::clone(&shared);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let s = Arc::clone(&s);
                thread::spawn(move || {
                    // A broken connection only loses that request.
                    let _ = serve(stream, &s);
                });
            }
        });
        Ok(ModelServer { port, shared })
    }

    /// The base URL to configure (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The server's origin (`http://127.0.0.1:PORT`), for clients that add
    /// `/v1/…` themselves (the Anthropic SDK).
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }

    /// How many scripted answers are still unused (agent, summary).
    pub fn unused(&self) -> (usize, usize) {
        self.shared
            .lock()
            .map(|s| (s.script.agent.len(), s.script.summary.len()))
            .unwrap_or((0, 0))
    }
}

/// Reads one HTTP/1.1 request: the path and the body.
fn read_request(stream: &TcpStream) -> std::io::Result<(String, String, Vec<u8>)> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or("").to_owned();
    let path = words.next().unwrap_or("").to_owned();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        let lower = h.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            r.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                let mut end = String::new();
                r.read_line(&mut end)?;
                break;
            }
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        body.resize(length, 0);
        r.read_exact(&mut body)?;
    }
    Ok((method, path, body))
}

fn serve(mut stream: TcpStream, shared: &Mutex<Shared>) -> std::io::Result<()> {
    let (method, path, body) = read_request(&stream)?;
    let api = shared
        .lock()
        .map_err(|_| std::io::Error::other("poisoned"))?
        .api;
    let route = match api {
        Api::OpenAiChat => path.ends_with("/chat/completions"),
        Api::AnthropicMessages => path.split('?').next() == Some("/v1/messages"),
        Api::OpenAiResponses => path.split('?').next() == Some("/v1/responses"),
    };
    if method != "POST" || !route {
        let msg = format!("no route {method} {path}");
        return write!(
            stream,
            "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{msg}",
            msg.len()
        );
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let kind = Kind::of(&body);
    // The provider answers as the model asked for.
    let model = body["model"].as_str().unwrap_or("scripted").to_owned();
    let (n, reply) = {
        let mut s = shared
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        let reply = match kind {
            Kind::Agent => s.script.agent.pop_front(),
            Kind::Summary => s.script.summary.pop_front(),
            Kind::Title => Some(Reply::text("Scripted session", 50, 3)),
        };
        let n = s.requests.len() + 1;
        s.requests.push(Request {
            n,
            kind,
            body,
            reply: reply.clone(),
        });
        (n, reply)
    };
    // An unscripted call ends the turn politely rather than hanging it.
    let reply = reply.unwrap_or_else(|| Reply::text("(unscripted)", 10, 2));
    match api {
        Api::OpenAiChat => respond(&mut stream, &reply),
        Api::AnthropicMessages => respond_anthropic(&mut stream, n, &model, &reply),
        Api::OpenAiResponses => respond_responses(&mut stream, n, &reply),
    }
}
