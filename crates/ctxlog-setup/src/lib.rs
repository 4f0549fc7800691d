//! ctxlog-setup: the agents' own configuration, written for ctxlog as each
//! agent itself would write it: the MCP server it starts ([`mcp`]) and the
//! hooks, plugin or extension that bring its sessions in as it works
//! ([`hooks`]). Everything else in a file is kept; a file written anew
//! replaces the old one at once ([`files`]); what an install added is
//! undone exactly.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod files;
pub mod hooks;
pub mod mcp;

pub use files::{Homes, InstallError, Written};
