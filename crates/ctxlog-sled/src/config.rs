//! How a [`SledStore`](crate::SledStore) is opened: [`StoreConfig`] and
//! [`Durability`].

use ctxlog_store::OpenError;
use ctxlog_store::StoreError;
use std::path::PathBuf;
use std::time::Duration;

/// When an append is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// After the events are flushed to disk (default).
    Durable,
    /// Right after the write; flushed within `buffered_flush_ms`.
    Buffered,
}

/// How to open a store.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// The directory of the sled database.
    pub path: PathBuf,
    /// When appends are acknowledged.
    pub durability: Durability,
    /// Most appends grouped into one flush (at least 1).
    pub max_group: usize,
    /// Capacity of the bounded append queue (at least 1).
    pub queue: usize,
    /// In buffered mode, the longest time an acknowledged event stays unflushed.
    pub buffered_flush_ms: u64,
    /// Serve reads to other processes over the store's socket (`owner.sock`
    /// in the store directory) while the store is open.
    pub serve_readers: bool,
    /// How long opening waits for a store another process holds before
    /// [`OpenError::InUse`](ctxlog_store::OpenError::InUse) names that process.
    pub in_use_wait: Duration,
    /// The most memory sled's page cache keeps ([`DEFAULT_CACHE_BYTES`];
    /// sled's own default, 1 GiB, made every large command's memory grow
    /// with the store).
    pub cache_bytes: u64,
}

/// [`StoreConfig::cache_bytes`] unless set: 64 MiB.
pub const DEFAULT_CACHE_BYTES: u64 = 64 << 20;

impl StoreConfig {
    /// Durable defaults for a database at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        StoreConfig {
            path: path.into(),
            durability: Durability::Durable,
            max_group: 256,
            queue: 1024,
            buffered_flush_ms: 100,
            serve_readers: true,
            in_use_wait: Duration::from_secs(1),
            cache_bytes: DEFAULT_CACHE_BYTES,
        }
    }

    /// Refuses a configuration the writer cannot work with.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        if self.max_group == 0 {
            return Err(StoreError::Open(OpenError::InvalidConfig(
                "max_group must be at least 1".into(),
            )));
        }
        if self.queue == 0 {
            return Err(StoreError::Open(OpenError::InvalidConfig(
                "queue must be at least 1".into(),
            )));
        }
        Ok(())
    }
}
