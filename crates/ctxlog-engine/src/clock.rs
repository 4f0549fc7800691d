//! Where time and ids come from. Injected so that tests and simulations are
//! deterministic; the defaults read the system clock.

use ctxlog_core::{SeededIds, TimestampMs};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where time comes from.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> TimestampMs;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> TimestampMs {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when asked (1 ms per reading), for tests and
/// deterministic simulations.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock starting at `ms`.
    pub fn new(ms: TimestampMs) -> Self {
        ManualClock(AtomicU64::new(ms))
    }
    /// Moves the clock forward.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
    /// Moves the clock forward to `ms` if it is behind (never backwards).
    pub fn advance_to(&self, ms: TimestampMs) {
        self.0.fetch_max(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> TimestampMs {
        self.0.fetch_add(1, Ordering::SeqCst)
    }
}

/// The default id source: UUID v7 values whose random part is seeded from the
/// system clock and the process id, so two engines (or two runs) on one store
/// never draw the same ids. Use [`SeededIds`] for reproducible logs.
pub fn system_ids() -> SeededIds {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    SeededIds::new(nanos ^ (u64::from(std::process::id()) << 32))
}
