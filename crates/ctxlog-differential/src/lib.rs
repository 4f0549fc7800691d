//! Differential testing against the real agents: OpenCode, pi, Claude
//! Code and Codex.
//!
//! - [`model_server`]: a scripted model server on loopback (OpenAI-compatible
//!   chat completions, the Anthropic Messages API or the OpenAI Responses
//!   API). It streams the
//!   answers, tool calls, usage and errors a test scripts, and keeps every
//!   request body it receives.
//! - [`opencode`]: installs a pinned `opencode-ai` from the npm registry into
//!   a cache outside git and drives it offline (`serve`, the HTTP API,
//!   `export`, `import`) in a sandboxed home.
//! - [`pi`]: the same for a pinned `@mariozechner/pi-coding-agent`, driven
//!   in RPC mode against the server's Anthropic Messages API.
//! - [`claude_code`]: the same for a pinned `@anthropic-ai/claude-code`,
//!   driven in print mode (`claude -p`, `--resume`).
//! - [`codex`]: the same for a pinned `@openai/codex`, driven with `codex
//!   exec` against the server's Responses API.
//! - [`npm`]: the cache the pinned agents are installed into.
//!
//! Files:
//! - `drive.rs`: What can go wrong while installing or driving a pinned
//!   agent.

pub mod claude_code;
pub mod codex;
pub mod drive;
pub mod model_server;
pub mod npm;
pub mod opencode;
pub mod pi;
