//! What the sled module's unit tests share: a fresh store directory with
//! its trees, and a generated session's first events.

use crate::trees::Trees;
use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::SessionId;
use ctxlog_store::NewEvent;
use std::path::PathBuf;
use std::time::Duration;

/// A fresh directory named after `tag` (and this process and thread) with
/// the store's trees opened in it.
pub(crate) fn fresh_trees(tag: &str) -> (PathBuf, Trees) {
    let dir = std::env::temp_dir().join(format!(
        "ctxlog-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let trees = Trees::open(&dir, Duration::from_secs(1), 1 << 20).unwrap();
    (dir, trees)
}

/// The first `n` events of a session generated from `seed`.
pub(crate) fn events(seed: u64, n: usize) -> (SessionId, Vec<NewEvent>) {
    let config = GenerateConfig {
        seed,
        turns: 2,
        ..GenerateConfig::default()
    };
    let generated = generate(&config).unwrap();
    let session = generated[0].session;
    let events = generated.into_iter().take(n).map(NewEvent::from).collect();
    (session, events)
}
