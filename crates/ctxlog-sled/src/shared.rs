//! What a store's handles, its committer and its flusher share: the
//! counters, the poison, the durable heads, the sessions that lost
//! acknowledged events, and the subscribers.

use ctxlog_core::{Seq, SessionId};
use ctxlog_store::backend::Hub;
use ctxlog_store::ReadError;
use ctxlog_store::StoreError;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError, RwLock};

/// Counters of the writer's work since the store was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreStats {
    /// Appends committed (idempotent retries excluded).
    pub appends: u64,
    /// Events committed.
    pub events: u64,
    /// Flushes (fsyncs) performed: fewer than `appends` means group commit.
    pub flushes: u64,
    /// Nanoseconds callers spent leading groups (writing, flushing,
    /// answering): the committer's serial section, which bounds how many
    /// appends a second any number of writers can have.
    pub leading_nanos: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) appends: AtomicU64,
    pub(crate) events: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) leading_nanos: AtomicU64,
}

/// State shared between the store's handles and its writer.
#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) counters: Counters,
    /// Why the store is poisoned, once it is.
    poison: Mutex<Option<String>>,
    /// Heads known to be flushed (initialised from disk at open).
    pub(crate) durable: RwLock<BTreeMap<SessionId, Seq>>,
    /// Sessions whose acknowledged events the witness found missing or
    /// changed at open: reads stop with an error where the loss starts, and
    /// appends are refused.
    lost: BTreeMap<SessionId, LostHead>,
    /// The subscribers, woken after each flush.
    pub(crate) hub: Hub,
}

impl Shared {
    /// Shared state for a store whose flushed heads are `durable` and whose
    /// `lost` sessions cannot be used.
    pub(crate) fn new(
        durable: BTreeMap<SessionId, Seq>,
        lost: BTreeMap<SessionId, LostHead>,
    ) -> Shared {
        Shared {
            durable: RwLock::new(durable),
            lost,
            ..Shared::default()
        }
    }

    /// Fails for a session whose acknowledged events are lost.
    pub(crate) fn check_session(&self, session: SessionId) -> Result<(), StoreError> {
        match self.lost.get(&session) {
            Some(l) => Err(l.error(session)),
            None => Ok(()),
        }
    }

    /// The sessions whose acknowledged events are lost.
    pub(crate) fn lost_sessions(&self) -> impl Iterator<Item = SessionId> + '_ {
        self.lost.keys().copied()
    }

    /// The witnessed head of a session whose events are lost.
    pub(crate) fn lost_head(&self, session: SessionId) -> Option<LostHead> {
        self.lost.get(&session).cloned()
    }

    /// Fails once the store is poisoned.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        // An `Option<String>` is valid whatever a panicking holder did.
        match &*self.poison.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(why) => Err(StoreError::Read(ReadError::Poisoned(why.clone()))),
            None => Ok(()),
        }
    }

    /// Poisons the store (the first reason is kept).
    pub(crate) fn poison(&self, why: String) {
        tracing::error!(%why, "store poisoned");
        let mut p = self.poison.lock().unwrap_or_else(PoisonError::into_inner);
        if p.is_none() {
            *p = Some(why);
        }
    }

    /// Every session with its durable head.
    pub(crate) fn durable_heads(&self) -> BTreeMap<SessionId, Seq> {
        self.durable
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The durable head of `session`.
    pub(crate) fn durable_head(&self, session: SessionId) -> Seq {
        self.durable
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&session)
            .copied()
            .unwrap_or(0)
    }

    /// The counters so far.
    pub(crate) fn stats(&self) -> StoreStats {
        let c = &self.counters;
        StoreStats {
            appends: c.appends.load(Relaxed),
            events: c.events.load(Relaxed),
            flushes: c.flushes.load(Relaxed),
            leading_nanos: c.leading_nanos.load(Relaxed),
        }
    }
}

/// The witnessed head of a session that lost acknowledged events.
#[derive(Debug, Clone)]
pub(crate) struct LostHead {
    /// The last acknowledged seq.
    pub(crate) seq: Seq,
    /// The chain of that record.
    pub(crate) chain: ctxlog_store::record::Chain,
    /// What is lost, and what to do.
    pub(crate) detail: String,
}

impl LostHead {
    /// The error of reading or appending past the loss.
    pub(crate) fn error(&self, session: SessionId) -> StoreError {
        StoreError::Read(ReadError::Lost {
            session,
            detail: self.detail.clone(),
        })
    }
}

impl Shared {
    /// Counts a committed append of `events` events.
    pub(crate) fn count_append(&self, events: u64) {
        self.counters.appends.fetch_add(1, Relaxed);
        self.counters.events.fetch_add(events, Relaxed);
    }

    /// Counts a flush.
    pub(crate) fn count_flush(&self) {
        self.counters.flushes.fetch_add(1, Relaxed);
    }

    /// Records that `flushed` heads are on disk (a head never goes back).
    pub(crate) fn made_durable(&self, flushed: &BTreeMap<SessionId, Seq>) {
        let mut durable = self.durable.write().unwrap_or_else(PoisonError::into_inner);
        for (s, q) in flushed {
            let head = durable.entry(*s).or_insert(0);
            *head = (*head).max(*q);
        }
    }
}
