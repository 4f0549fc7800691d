//! Differential testing against the real OpenCode.
//!
//! - [`model_server`]: a scripted OpenAI-compatible chat-completions server
//!   on loopback. It streams the answers, tool calls, usage and errors a
//!   test scripts, and keeps every request body it receives.
//! - [`opencode`]: installs a pinned `opencode-ai` from the npm registry into
//!   a cache outside git and drives it offline (`serve`, the HTTP API,
//!   `export`, `import`) in a sandboxed home.

pub mod model_server;
pub mod opencode;
