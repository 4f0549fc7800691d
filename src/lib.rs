//! ctxlog: an event-sourced, durable context log for LLM agent sessions,
//! with OpenCode-style compaction (pruning and summary pivots) derived by
//! pure reducers. This root crate re-exports the layers so that the
//! top-level `tests/` exercise them end to end.

pub use ctxlog_core as core;
pub use ctxlog_engine as engine;
pub use ctxlog_import as import;
pub use ctxlog_store as store;
