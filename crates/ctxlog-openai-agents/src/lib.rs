//! ctxlog-openai-agents: the OpenAI Agents SDK adapter. ctxlog as the
//! session memory of the OpenAI Agents SDK (`openai-agents`
//! in Python; the binding is `python/`).
//!
//! The SDK's session protocol is four operations on a list of items:
//! `get_items`, `add_items`, `pop_item`, `clear_session`. Here each is
//! events in a ctxlog session, so nothing is ever deleted and everything
//! ctxlog derives (the window, prunes, summaries, the audit, the report)
//! works on what an SDK agent wrote:
//!
//! - every item is a message of its own (an input message a user message,
//!   a call a tool part waiting for its output), and its JSON text is kept
//!   in [`ctxlog_core::Event::SourceFields`] of format [`FORMAT`], so it is
//!   given back exactly (an output's text without its `output` when the
//!   tool part it completes holds it, so a large output is stored once);
//! - an output completes its call's tool part, so ctxlog's prune may clear
//!   it (`get_items` then gives the placeholder);
//! - `get_items` is the window: after a compaction, its question and
//!   summary, the tail the policy keeps and what came after;
//! - `pop_item` and `clear_session` withdraw messages
//!   ([`ctxlog_core::Event::MessagesWithdrawn`]) or take an output back;
//! - [`AgentStore::compact`] (the SDK's `run_compaction`) finishes the
//!   turn's step with the usage the run reported, runs the overflow check
//!   and the compaction it queues, and prunes.
//!
//! A session is named by the SDK's `session_id`: its ctxlog id is derived
//! from the name ([`session_id_for`]) and the name is its source id, so
//! `ctxlog sessions`, `report` and every other command find it by name.
//!
//! Files:
//! - `item.rs`: One SDK item: `NewItem`, classified into an `AgentItem` (its
//!   JSON text kept as `SourceFields` of format `openai-agents`; an output's
//!   text kept without the `output` its tool part holds, so it is stored
//!   once); `session_id_for`.
//! - `items.rs`: `Items`: the items' JSON texts folded from the log.
//! - `store.rs`: `AgentStore`: `open` (the id derived from the name, which is
//!   also the source id and title; `describe`, `settle`), `add_items`
//!   (`Session::add_items`), `get_items` (the window, the pivot's question and
//!   summary first), `pop_item` (`withdraw` or `reopen_call`) and `clear`
//!   (`withdraw_all`), `compact` (the end of a turn: `finish_open_step`,
//!   jobs, `end_turn`).

mod item;
mod items;
mod store;

pub use item::{
    parse_kind, session_id_for, ItemKind, ItemView, NewItem, FORMAT, ITEM_KEY, OUTPUT_IN_PART_KEY,
};
pub use items::Items;
pub use store::{AgentError, AgentStore, Compaction, Settings};
