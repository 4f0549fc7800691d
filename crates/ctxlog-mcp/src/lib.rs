//! ctxlog-mcp: ctxlog as a Model Context Protocol server over stdio, so an
//! agent searches and recalls its own history while it works: what pruning
//! cleared and compaction replaced, with each item's status now.
//!
//! [`serve_stdio`] answers the handshake at once and works only when a
//! tool is called ([`server`]): it first imports what the agents recorded
//! in the project directory (so what was compacted away a turn ago is
//! found), brings the search index up to the log, and answers in plain
//! text within a byte budget, secrets redacted unless told not to
//! ([`render`]). It writes to the store only those imports, and never opens
//! another user's store itself. `ctxlog-setup` writes an agent's own MCP
//! configuration to start it.
//!
//! The async runtime lives here only: one thread, and the work itself on
//! blocking threads over the synchronous store and index.
//!
//! Files:
//! - `call.rs`: What a tool call asks for, and how it fails.
//! - `settings.rs`: What the server is told when it starts.
//! - `work.rs`: What each tool does, synchronously (the server runs it off
//!   its async thread).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod call;
mod render;
pub mod server;
mod settings;
mod work;

pub use call::{Scope, WorkError};
pub use settings::{Settings, MAX_BYTES, MAX_ITEMS};
pub use work::Work;

/// Why the server stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The runtime could not start.
    #[error("the MCP server cannot start: {0}")]
    Runtime(#[from] std::io::Error),
    /// The connection failed.
    #[error("the MCP connection failed: {0}")]
    Connection(String),
}

/// Serves `settings` over stdin and stdout until the client goes away.
pub fn serve_stdio(settings: Settings) -> Result<(), ServeError> {
    use rmcp::ServiceExt;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server = server::HistoryServer::new(Work::new(settings));
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError::Connection(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| ServeError::Connection(e.to_string()))?;
        Ok(())
    })
}
