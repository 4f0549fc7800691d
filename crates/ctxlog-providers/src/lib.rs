//! ctxlog-providers: what model providers receive. A [`Window`] (the exact
//! model input core derives) written in the wire format of each API an
//! agent speaks ([`Format`]), so `ctxlog window --format` shows what the
//! agent sends and the differential tests compare it byte for byte with
//! the requests the real agents made; and the `openai` summarizer, the
//! one HTTP client (ureq) of the workspace, over any OpenAI-compatible
//! chat-completions endpoint.
//!
//! Every format but Claude Code's is one `Wire`: how an input message and
//! an assistant message (with the tool results after it) are written. The
//! loop over the window is [`Format::encode`]'s alone; Claude Code's format
//! groups the Anthropic messages between two answers as Claude Code does.
//!
//! Files: `chat.rs` (chat completions, as OpenCode sends them),
//! `anthropic.rs` (the Messages API, as pi sends it), `claude_code.rs`
//! (Claude Code 2.1's runs of Anthropic messages), `responses.rs` (the
//! Responses API, as Codex sends it), `openai.rs` (the summarizer over
//! HTTP).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod anthropic;
mod chat;
mod claude_code;
pub mod openai;
mod responses;

use ctxlog_core::window::{Window, WindowMessage};
use ctxlog_core::Role;
use serde_json::Value;

/// A provider API's wire format for the messages of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI-compatible chat completions `messages`, as OpenCode sends
    /// them through `@ai-sdk/openai-compatible`.
    Chat,
    /// The Anthropic Messages API `messages`, as pi sends them.
    Anthropic,
    /// The Anthropic `messages` as Claude Code 2.1 sends them.
    ClaudeCode,
    /// The OpenAI Responses API `input`, as Codex sends it.
    Responses,
}

impl Format {
    /// Its name (`window --format`, the `format` of its JSON).
    pub fn name(self) -> &'static str {
        match self {
            Format::Chat => "openai",
            Format::Anthropic => "anthropic",
            Format::ClaudeCode => "claude-code",
            Format::Responses => "responses",
        }
    }

    /// The request's key its items go under (`messages` or `input`).
    pub fn key(self) -> &'static str {
        match self {
            Format::Responses => "input",
            _ => "messages",
        }
    }

    /// `window`'s messages as this API's items, in order (no system prompt
    /// and no tools: ctxlog records neither).
    pub fn encode(self, window: &Window) -> Vec<Value> {
        match self {
            Format::Chat => each_message(window, &chat::Chat),
            Format::Anthropic => each_message(window, &anthropic::Anthropic),
            Format::Responses => each_message(window, &responses::Responses),
            Format::ClaudeCode => claude_code::messages(window),
        }
    }
}

/// How one API writes a message of the window.
trait Wire {
    /// An input message (user, developer, system), `None` when nothing of
    /// it is sent.
    fn input(&self, m: &WindowMessage) -> Option<Value>;
    /// An assistant message, then whatever follows it (its tool results).
    fn assistant(&self, m: &WindowMessage, out: &mut Vec<Value>);
}

/// The one loop over a window's messages.
fn each_message(window: &Window, wire: &dyn Wire) -> Vec<Value> {
    let mut out = Vec::with_capacity(window.messages.len());
    for m in &window.messages {
        match m.role {
            Role::Assistant => wire.assistant(m, &mut out),
            Role::User | Role::Developer | Role::System => out.extend(wire.input(m)),
        }
    }
    out
}
