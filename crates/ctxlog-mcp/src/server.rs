//! The MCP server: three tools over stdio. The handshake is answered at
//! once (agents hold their first request until their servers connect);
//! work is done only when a tool is called, on a blocking thread.

use crate::call::{Scope, WorkError};
use crate::work::Work;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, ErrorData, ServerHandler};
use serde::Deserialize;
use std::sync::Arc;

/// `search_history`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    /// Words to look for (all of them), "a phrase", prefix*, -excluded,
    /// OR between alternatives.
    pub query: String,
    /// Where to look: "session" (this session), "project" (every session
    /// recorded in this project; the default) or "all".
    #[serde(default)]
    pub scope: Option<String>,
    /// Only what the model no longer sees: pruned tool outputs and what
    /// compaction replaced.
    #[serde(default)]
    pub dropped_only: Option<bool>,
    /// Hits to return (at most 20).
    #[serde(default)]
    pub limit: Option<u32>,
    /// The cursor an earlier answer ended with, for more.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `recall`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RecallArgs {
    /// The id a search hit gives, or a tool call id whose output was
    /// cleared ("[Old tool result content cleared]"), or a message id.
    pub id: String,
    /// The cursor an earlier answer ended with, for the rest.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `compactions`' arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CompactionArgs {
    /// Which compaction of this session, counted from the last (1, the
    /// default, is the last).
    #[serde(default)]
    pub back: Option<u32>,
    /// The cursor an earlier answer ended with, for the rest.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The server.
#[derive(Clone)]
pub struct HistoryServer {
    work: Arc<Work>,
    tool_router: ToolRouter<Self>,
}

impl HistoryServer {
    /// A server doing `work`.
    pub fn new(work: Work) -> HistoryServer {
        HistoryServer {
            work: Arc::new(work),
            tool_router: Self::tool_router(),
        }
    }

    /// Runs `job` on a blocking thread and answers with its text.
    async fn answer(
        &self,
        job: impl FnOnce(&Work) -> Result<String, WorkError> + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        let work = Arc::clone(&self.work);
        let done = tokio::task::spawn_blocking(move || job(&work)).await;
        Ok(match done {
            Ok(Ok(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Ok(Err(e)) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                "ctxlog failed while answering: {e}"
            ))]),
        })
    }
}

#[tool_router]
impl HistoryServer {
    /// Search this session's history (or the project's, or all), pruned
    /// tool outputs and what compaction replaced included.
    #[tool(
        description = "Search the full history of your sessions, including tool outputs that were pruned (\"[Old tool result content cleared]\") and everything compaction summarized away. Each hit says whether it is still in your context, pruned, or compacted away, and gives a recall id."
    )]
    async fn search_history(
        &self,
        Parameters(a): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = match a.scope.as_deref().map(str::trim) {
            None | Some("") | Some("project") => Ok(Scope::Project),
            Some("session") => Ok(Scope::Session),
            Some("all") => Ok(Scope::All),
            Some(other) => Err(other.to_owned()),
        };
        self.answer(move |w| {
            let scope = scope.map_err(|other| {
                WorkError::Arguments(format!(
                    "scope {other:?}: give \"session\", \"project\" or \"all\""
                ))
            })?;
            w.search(
                &a.query,
                scope,
                a.dropped_only.unwrap_or(false),
                a.limit.map(|l| l as usize),
                a.cursor.as_deref(),
            )
        })
        .await
    }

    /// Give one item back whole.
    #[tool(
        description = "Give back one item of your history whole, exactly as recorded: a tool output that was pruned or compacted away (by its tool call id), a message, or a search hit (by its recall id)."
    )]
    async fn recall(
        &self,
        Parameters(a): Parameters<RecallArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.answer(move |w| w.recall(&a.id, a.cursor.as_deref()))
            .await
    }

    /// What the last compactions of this session replaced.
    #[tool(
        description = "Show what a compaction of this session replaced: every message it summarized away, whole, and the summary that replaced them. back=1 (the default) is the last compaction."
    )]
    async fn compactions(
        &self,
        Parameters(a): Parameters<CompactionArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let back = a.back.unwrap_or(1).max(1) as usize;
        self.answer(move |w| w.compaction(back, a.cursor.as_deref()))
            .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for HistoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ctxlog", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "ctxlog keeps your whole session history: what pruning cleared and compaction replaced. Use search_history to find it, recall to get an item back whole, compactions to see what a compaction summarized away.",
            )
    }
}
