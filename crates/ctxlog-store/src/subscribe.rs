//! Subscriptions: subscribers are woken over a crossbeam channel after events
//! are durable, then read the events from the log themselves. This module
//! knows nothing of logs: a log owns a `Hub` and calls `Hub::notify`.
//!
//! Each subscriber has a doorbell (a bounded channel of capacity 1) and a
//! pending map of the highest durable seq per session. The log never
//! blocks on a slow subscriber: it raises the seq in the map and rings the
//! bell if it is not already ringing. Memory is bounded by the number of
//! sessions, never by the number of events.

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender, TrySendError};
use ctxlog_core::{Seq, SessionId};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// A session reached a durable seq.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Notification {
    /// The session.
    pub session: SessionId,
    /// Its durable head.
    pub seq: Seq,
}

/// Locks `m`, recovering it if a holder panicked: every value guarded here
/// (a list of slots, a map of maxima) is valid after any partial update.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Slot {
    pending: Arc<Mutex<BTreeMap<SessionId, Seq>>>,
    bell: Sender<()>,
}

/// The log's side: the list of subscribers.
#[derive(Default)]
pub struct Hub {
    slots: Mutex<Vec<Slot>>,
}

impl Hub {
    /// A new subscriber.
    pub fn subscribe(&self) -> Subscription {
        let (bell, rx) = bounded(1);
        let pending = Arc::new(Mutex::new(BTreeMap::new()));
        lock(&self.slots).push(Slot {
            pending: pending.clone(),
            bell,
        });
        Subscription { pending, bell: rx }
    }

    /// Records that `committed` is durable and wakes every subscriber.
    pub fn notify(&self, committed: &BTreeMap<SessionId, Seq>) {
        if committed.is_empty() {
            return;
        }
        let mut slots = lock(&self.slots);
        slots.retain(|slot| {
            {
                let mut p = lock(&slot.pending);
                for (s, q) in committed {
                    let e = p.entry(*s).or_insert(0);
                    *e = (*e).max(*q);
                }
            }
            !matches!(slot.bell.try_send(()), Err(TrySendError::Disconnected(_)))
        });
    }
}

/// A subscriber's handle. Dropping it unsubscribes.
pub struct Subscription {
    pending: Arc<Mutex<BTreeMap<SessionId, Seq>>>,
    bell: Receiver<()>,
}

impl Subscription {
    fn drain(&self) -> Vec<Notification> {
        std::mem::take(&mut *lock(&self.pending))
            .into_iter()
            .map(|(session, seq)| Notification { session, seq })
            .collect()
    }

    /// Waits for the next wake-up; returns the sessions that advanced, or
    /// `None` when the store is closed.
    pub fn recv(&self) -> Option<Vec<Notification>> {
        self.bell.recv().ok().map(|()| self.drain())
    }

    /// Like [`recv`](Self::recv) with a timeout; `Some(empty)` on timeout.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Vec<Notification>> {
        match self.bell.recv_timeout(timeout) {
            Ok(()) => Some(self.drain()),
            Err(RecvTimeoutError::Timeout) => Some(Vec::new()),
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }
}
