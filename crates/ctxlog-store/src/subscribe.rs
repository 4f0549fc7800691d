//! Subscriptions: subscribers are woken over a crossbeam channel after events
//! are durable, then read the events from the log themselves.
//!
//! Each subscriber has a doorbell (a bounded channel of capacity 1) and a
//! pending map of the highest durable seq per session. The writer never
//! blocks on a slow subscriber: it raises the seq in the map and rings the
//! bell if it is not already ringing. Memory is bounded by the number of
//! sessions, never by the number of events.

use crate::error::StoreError;
use crate::store::{EventLog, SledStore};
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender, TrySendError};
use ctxlog_core::{Envelope, Seq, SessionId};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A session reached a durable seq.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Notification {
    /// The session.
    pub session: SessionId,
    /// Its durable head.
    pub seq: Seq,
}

struct Slot {
    pending: Arc<Mutex<BTreeMap<SessionId, Seq>>>,
    bell: Sender<()>,
}

/// The writer's side: the list of subscribers.
#[derive(Default)]
pub(crate) struct Hub {
    slots: Mutex<Vec<Slot>>,
}

impl Hub {
    pub(crate) fn subscribe(&self) -> Subscription {
        let (bell, rx) = bounded(1);
        let pending = Arc::new(Mutex::new(BTreeMap::new()));
        self.slots.lock().expect("hub lock").push(Slot {
            pending: pending.clone(),
            bell,
        });
        Subscription { pending, bell: rx }
    }

    /// Records that `committed` is durable and wakes every subscriber.
    pub(crate) fn notify(&self, committed: &BTreeMap<SessionId, Seq>) {
        if committed.is_empty() {
            return;
        }
        let mut slots = self.slots.lock().expect("hub lock");
        slots.retain(|slot| {
            {
                let mut p = slot.pending.lock().expect("pending lock");
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
        std::mem::take(&mut *self.pending.lock().expect("pending lock"))
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

/// Follows every session of a store from a checkpoint per session: first the
/// durable events already stored, then new ones as they become durable. A
/// follower restarted from its saved checkpoints sees no gap and no duplicate.
pub struct Follower {
    store: SledStore,
    sub: Subscription,
    checkpoints: BTreeMap<SessionId, Seq>,
    caught_up: bool,
}

impl Follower {
    /// Starts following; `checkpoints` are the last seqs already processed.
    pub fn new(store: &SledStore, checkpoints: BTreeMap<SessionId, Seq>) -> Self {
        // Subscribe before catching up, so nothing committed in between is missed.
        let sub = store.subscribe();
        Follower {
            store: store.clone(),
            sub,
            checkpoints,
            caught_up: false,
        }
    }

    /// The last seq delivered per session (save it to resume later).
    pub fn checkpoints(&self) -> &BTreeMap<SessionId, Seq> {
        &self.checkpoints
    }

    /// The next durable events, waiting up to `timeout` for new ones. Events
    /// of one session come in seq order, each exactly once.
    pub fn poll(&mut self, timeout: Duration) -> Result<Vec<Envelope>, StoreError> {
        let catching_up = !self.caught_up;
        let targets: Vec<(SessionId, Seq)> = if catching_up {
            self.store.durable_heads().into_iter().collect()
        } else {
            match self.sub.recv_timeout(timeout) {
                None => return Err(StoreError::Closed),
                Some(n) => n.into_iter().map(|n| (n.session, n.seq)).collect(),
            }
        };
        // Checkpoints advance only with events actually returned: a failed
        // read returns nothing and changes nothing, so the next poll retries.
        let mut checkpoints = self.checkpoints.clone();
        let mut out = Vec::new();
        for (session, upto) in targets {
            let from = checkpoints.get(&session).copied().unwrap_or(0) + 1;
            if upto < from {
                continue;
            }
            for e in self.store.read(session, from)? {
                let e = e?;
                if e.seq > upto {
                    break;
                }
                checkpoints.insert(session, e.seq);
                out.push(e);
            }
        }
        self.checkpoints = checkpoints;
        self.caught_up = true;
        Ok(out)
    }
}
