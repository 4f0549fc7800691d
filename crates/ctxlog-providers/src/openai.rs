//! The `openai` summarizer: any OpenAI-compatible chat-completions endpoint
//! (OpenAI, Ollama, vLLM, llama.cpp's server). Base URL, model and key come
//! from the config or the environment; requests have a timeout and bounded
//! retries (on transport errors, 408, 429 and 5xx). The request body never
//! carries tools: the conversation's tool calls are rendered as text.

use ctxlog_core::window::{attachment_note, ToolResult, WindowMessage, WindowPart};
use ctxlog_core::{FinishReason, TokenUsage};
use ctxlog_engine::summarize::{SummarizeError, Summarizer, SummaryOutput, SummaryRequest};
use serde_json::{json, Value};
use std::time::Duration;

/// Where and how to call the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// The model (overridden by a compaction-specific model on the request).
    pub model: String,
    /// The API key, if the endpoint needs one.
    pub api_key: Option<String>,
    /// Timeout of one HTTP call.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub retries: u32,
    /// Wait before the first retry; doubles each time.
    pub backoff: Duration,
}

impl OpenAiConfig {
    /// From the environment: `OPENAI_BASE_URL` (default
    /// `https://api.openai.com/v1`), `OPENAI_API_KEY`, and
    /// `CTXLOG_COMPACTION_MODEL` (default `gpt-4o-mini`).
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        OpenAiConfig {
            base_url: var("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into()),
            model: var("CTXLOG_COMPACTION_MODEL").unwrap_or_else(|| "gpt-4o-mini".into()),
            api_key: var("OPENAI_API_KEY"),
            timeout: Duration::from_secs(120),
            retries: 2,
            backoff: Duration::from_millis(500),
        }
    }
}

/// The summarizer.
pub struct OpenAiSummarizer {
    config: OpenAiConfig,
    agent: ureq::Agent,
}

impl OpenAiSummarizer {
    /// A summarizer calling `config.base_url`.
    pub fn new(config: OpenAiConfig) -> Self {
        let agent = ureq::AgentBuilder::new().timeout(config.timeout).build();
        OpenAiSummarizer { config, agent }
    }

    /// The JSON body for `request` (public so that its shape can be checked).
    pub fn body(&self, request: &SummaryRequest) -> Value {
        let model = request
            .model
            .as_ref()
            .map(|m| m.model.clone())
            .unwrap_or_else(|| self.config.model.clone());
        json!({
            "model": model,
            "messages": summary_messages(request),
            "max_tokens": request.max_output_tokens,
            "stream": false,
        })
    }

    fn call(&self, body: &Value) -> Result<Value, Attempt> {
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let mut req = self
            .agent
            .post(&url)
            .set("Content-Type", "application/json");
        if let Some(key) = &self.config.api_key {
            req = req.set("Authorization", &format!("Bearer {key}"));
        }
        match req.send_string(&body.to_string()) {
            Ok(resp) => {
                let text = resp
                    .into_string()
                    .map_err(|e| Attempt::Retry(format!("reading the response: {e}")))?;
                serde_json::from_str(&text).map_err(|e| {
                    Attempt::Fatal(SummarizeError::Failed(format!(
                        "malformed JSON from the endpoint: {e}"
                    )))
                })
            }
            Err(ureq::Error::Status(code, resp)) => {
                let text = resp.into_string().unwrap_or_default();
                let short: String = text.chars().take(300).collect();
                if is_context_overflow(&text) {
                    Err(Attempt::Fatal(SummarizeError::TooLarge(format!(
                        "HTTP {code}: {short}"
                    ))))
                } else if code == 408 || code == 429 || code >= 500 {
                    Err(Attempt::Retry(format!("HTTP {code}: {short}")))
                } else {
                    Err(Attempt::Fatal(SummarizeError::Failed(format!(
                        "HTTP {code}: {short}"
                    ))))
                }
            }
            Err(ureq::Error::Transport(t)) => Err(Attempt::Retry(format!("transport: {t}"))),
        }
    }
}

enum Attempt {
    Retry(String),
    Fatal(SummarizeError),
}

/// Provider messages that mean "the request is too large".
fn is_context_overflow(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "prompt is too long",
        "exceeds the context window",
        "request entity too large",
    ]
    .iter()
    .any(|p| t.contains(p))
}

fn parse(v: &Value) -> Result<SummaryOutput, SummarizeError> {
    let bad = |what: &str| SummarizeError::Failed(format!("malformed response: {what}"));
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| bad("no choices[0]"))?;
    let text = choice
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no choices[0].message.content string"))?;
    let finish = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("stop") | None => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some("tool_calls") => FinishReason::ToolCalls,
        Some(other) => FinishReason::Other(other.into()),
    };
    let n = |u: Option<&Value>, k: &str| {
        u.and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let usage = v.get("usage");
    let prompt = n(usage, "prompt_tokens");
    let cached = usage
        .and_then(|u| u.get("prompt_tokens_details"))
        .and_then(|d| d.get("cached_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Ok(SummaryOutput {
        text: text.to_owned(),
        tokens: TokenUsage {
            total: usage
                .and_then(|u| u.get("total_tokens"))
                .and_then(Value::as_u64),
            // OpenAI counts cached tokens inside prompt_tokens.
            input: prompt.saturating_sub(cached),
            output: n(usage, "completion_tokens"),
            reasoning: 0,
            cache_read: cached,
            cache_write: 0,
        },
        finish,
        redacted: 0,
    })
}

impl Summarizer for OpenAiSummarizer {
    fn name(&self) -> &str {
        "openai"
    }

    fn summarize(&self, request: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        let body = self.body(request);
        debug_assert!(
            body.get("tools").is_none(),
            "a compaction request never offers tools"
        );
        let mut wait = self.config.backoff;
        let mut last = String::new();
        for attempt in 0..=self.config.retries {
            if attempt > 0 {
                std::thread::sleep(wait);
                wait *= 2;
            }
            match self.call(&body) {
                Ok(v) => return parse(&v),
                Err(Attempt::Fatal(e)) => return Err(e),
                Err(Attempt::Retry(why)) => {
                    tracing::warn!(attempt, %why, "summarizer call failed; retrying");
                    last = why;
                }
            }
        }
        Err(SummarizeError::Failed(format!(
            "gave up after {} attempts: {last}",
            self.config.retries + 1
        )))
    }
}

/// A summary request as the chat-completions messages an endpoint is
/// sent: the system prompt, then the transcript, or the conversation and
/// the instruction.
pub fn summary_messages(request: &SummaryRequest) -> Vec<Value> {
    let system = serde_json::json!({"role": "system", "content": request.system});
    let user = |text: &str| serde_json::json!({"role": "user", "content": text});
    match &request.transcript {
        Some(t) => vec![system, user(t)],
        None => std::iter::once(system)
            .chain(request.messages.iter().filter_map(chat_message))
            .chain(std::iter::once(user(&request.instruction)))
            .collect(),
    }
}

/// One window message as a chat message; tool calls become text, since the
/// request offers no tools.
fn chat_message(m: &WindowMessage) -> Option<serde_json::Value> {
    let mut lines = Vec::new();
    for p in &m.parts {
        match p {
            WindowPart::Text(t) => lines.push(t.clone()),
            WindowPart::Reasoning(_) => {}
            WindowPart::File(a) => lines.push(attachment_note(a)),
            WindowPart::Tool {
                tool,
                input,
                result,
                ..
            } => {
                let result = match result {
                    ToolResult::Output { text, .. } => text.clone(),
                    ToolResult::Error(e) => format!("error: {e}"),
                };
                lines.push(format!(
                    "[tool call {tool} {}]\n{result}",
                    input.to_json_string()
                ));
            }
        }
    }
    if lines.is_empty() {
        return None;
    }
    Some(serde_json::json!({"role": m.role.as_str(), "content": lines.join("\n\n")}))
}
