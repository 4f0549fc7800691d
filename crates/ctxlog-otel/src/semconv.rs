//! The names the spans carry: the OpenTelemetry GenAI semantic conventions
//! (open-telemetry/semantic-conventions-genai, development status, read
//! 2026-11) where they say something, `ctxlog.*` where they do not
//! (compactions and prunes have no span or event of their own there; the
//! conventions' only word on them is `gen_ai.conversation.compacted`).

use crate::model::{Attribute, Value};
use ctxlog_core::{FinishReason, StepTokens, TokenUsage};

/// `gen_ai.operation.name`.
pub const OPERATION: &str = "gen_ai.operation.name";
/// `gen_ai.provider.name`.
pub const PROVIDER: &str = "gen_ai.provider.name";
/// `gen_ai.agent.name`.
pub const AGENT_NAME: &str = "gen_ai.agent.name";
/// `gen_ai.agent.version`.
pub const AGENT_VERSION: &str = "gen_ai.agent.version";
/// `gen_ai.conversation.id`.
pub const CONVERSATION: &str = "gen_ai.conversation.id";
/// `gen_ai.conversation.compacted`: set (true) on a call whose context is a
/// compacted view of the conversation, never false.
pub const COMPACTED: &str = "gen_ai.conversation.compacted";
/// `gen_ai.request.model`.
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
/// `gen_ai.response.finish_reasons`.
pub const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// `gen_ai.usage.input_tokens`: every input token, cached ones included.
pub const INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// `gen_ai.usage.output_tokens`: reasoning included.
pub const OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// `gen_ai.usage.cache_read.input_tokens`.
pub const CACHE_READ: &str = "gen_ai.usage.cache_read.input_tokens";
/// `gen_ai.usage.cache_write.input_tokens`.
pub const CACHE_WRITE: &str = "gen_ai.usage.cache_write.input_tokens";
/// `gen_ai.usage.reasoning.output_tokens`.
pub const REASONING: &str = "gen_ai.usage.reasoning.output_tokens";
/// `gen_ai.tool.name`.
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.tool.call.id`.
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `gen_ai.tool.type`.
pub const TOOL_TYPE: &str = "gen_ai.tool.type";
/// `gen_ai.tool.call.arguments` (opt-in content).
pub const TOOL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
/// `gen_ai.tool.call.result` (opt-in content).
pub const TOOL_RESULT: &str = "gen_ai.tool.call.result";
/// `gen_ai.input.messages` (opt-in content, a JSON string).
pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
/// `gen_ai.output.messages` (opt-in content, a JSON string).
pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
/// `error.type`.
pub const ERROR_TYPE: &str = "error.type";

/// `ctxlog.session.id`: the ctxlog session (also the trace id).
pub const SESSION: &str = "ctxlog.session.id";
/// `ctxlog.seq`: the event a span or span event ends at.
pub const SEQ: &str = "ctxlog.seq";
/// `ctxlog.compaction.job`: the compaction (its marker message).
pub const JOB: &str = "ctxlog.compaction.job";
/// `ctxlog.step.open`: a call whose end is not recorded (yet).
pub const OPEN: &str = "ctxlog.step.open";
/// `ctxlog.tool.state`: a tool call whose end is not recorded (yet):
/// `pending` or `running`.
pub const TOOL_STATE: &str = "ctxlog.tool.state";

/// The well-known `gen_ai.provider.name` of a recorded provider id, else
/// the id as recorded.
pub fn provider_name(provider: &str) -> String {
    let p = provider.to_ascii_lowercase();
    let known = match p.as_str() {
        "anthropic" | "claude" => "anthropic",
        "openai" | "codex" | "opencode" => "openai",
        "google" | "gemini" => "gcp.gemini",
        "vertex" | "google-vertex" => "gcp.vertex_ai",
        "amazon-bedrock" | "bedrock" => "aws.bedrock",
        "azure" => "azure.ai.openai",
        "mistral" => "mistral_ai",
        "xai" => "x_ai",
        "deepseek" | "groq" | "cohere" | "perplexity" => p.as_str(),
        _ => return p,
    };
    known.to_owned()
}

/// A finish reason as `gen_ai.response.finish_reasons` spells it.
pub fn finish_reason(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Stop => "stop".into(),
        FinishReason::ToolCalls => "tool_calls".into(),
        FinishReason::Length => "length".into(),
        FinishReason::ContentFilter => "content_filter".into(),
        FinishReason::Error => "error".into(),
        FinishReason::Other(s) => s.clone(),
    }
}

/// A call's usage as the conventions count it: input with cache reads and
/// writes, output with reasoning, and each part apart.
pub fn usage(tokens: &TokenUsage) -> Vec<Attribute> {
    let t = StepTokens::of(tokens);
    let input = t
        .input
        .saturating_add(t.cache_read)
        .saturating_add(t.cache_write);
    vec![
        (INPUT_TOKENS, Value::count(input)),
        (
            OUTPUT_TOKENS,
            Value::count(t.output.saturating_add(t.reasoning)),
        ),
        (CACHE_READ, Value::count(t.cache_read)),
        (CACHE_WRITE, Value::count(t.cache_write)),
        (REASONING, Value::count(t.reasoning)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_counts_the_cache_and_output_counts_reasoning() {
        let tokens = TokenUsage {
            total: None,
            input: 10,
            output: 20,
            reasoning: 5,
            cache_read: 100,
            cache_write: 7,
        };
        let got = usage(&tokens);
        assert_eq!(got[0], (INPUT_TOKENS, Value::Int(117)));
        assert_eq!(got[1], (OUTPUT_TOKENS, Value::Int(25)));
        assert_eq!(provider_name("Anthropic"), "anthropic");
        assert_eq!(provider_name("openrouter"), "openrouter");
    }
}
