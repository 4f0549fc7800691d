//! A session written back as an OpenCode export (`opencode export` JSON),
//! markers, summaries and pruned marks included, so OpenCode's own tools
//! (and [`crate::opencode`]) can read it.
//!
//! Ids: OpenCode orders messages and parts by id, so every id is
//! OpenCode-shaped: the prefix, 12 hex digits of `ms × 4096 + counter`
//! (ascending; `ses_` ids descend) and 14 base62 characters. A session that
//! came from OpenCode keeps its own ids; any other id (a part ctxlog created,
//! a session from another agent) is generated from the times, ascending after
//! every kept id, with a suffix derived from the session id, so exporting the
//! same state twice gives the same bytes. Written message by message.
//!
//! What an import from OpenCode kept of the fields ctxlog does not model
//! (`Event::SourceFields`: paths, snapshots, the ids of the parts ctxlog
//! writes itself, the session's slug and project, ...) is merged over the
//! objects written here, so an OpenCode session exports as it came.
//!
//! Files: `write` writes the document (the session's `info` and totals,
//! then message by message), `fold` replays the events into the state and
//! the facts it does not keep, `ids` gives every object its OpenCode id,
//! `doc` writes a message and its parts, `values` writes ctxlog's values
//! the way OpenCode does, and `error` says why an export failed.

mod doc;
mod error;
mod fold;
mod ids;
mod values;
mod write;

pub use error::ExportError;
pub use write::{opencode, opencode_streamed};
