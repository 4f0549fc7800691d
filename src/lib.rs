pub use ctxlog_core;
