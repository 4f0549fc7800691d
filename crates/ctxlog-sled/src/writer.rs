//! The committer of a [`SledStore`](crate::SledStore): leader-based group
//! commit on the callers' own threads, flushes, acknowledgements and
//! notifications, poisoning; and the flusher thread that keeps buffered
//! mode's deadline and the witness's sync.
//!
//! A caller queues its request. When no other caller is committing, it
//! leads at once: it takes the queue (its own request first), writes the
//! group (`append.rs`), flushes once, writes the witness, answers every
//! request of the group, then hands the lead to the first request that
//! queued meanwhile, or lets it go. A lone writer therefore commits on its
//! own thread with no hand-off; writers that arrive while a flush runs
//! share the next one. Verification ends here too, between groups, so it
//! sees no half-written append.

use crate::config::{Durability, StoreConfig};
use crate::errors::damaged;
use crate::group::{Core, Queued, Request};
use crate::guard::guarded;
use crate::shared::Shared;
use crate::ticket::{Answer, Ticket, Woken};
use crate::trees::Trees;
use crate::witness::Witness;
use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use ctxlog_store::ReadError;
use ctxlog_store::StoreError;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Locks `m`, recovering it if a holder panicked (what these mutexes hold
/// stays valid: a panic while committing poisons the store instead).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The requests waiting, and whether a caller is committing.
#[derive(Default)]
struct Queue {
    waiting: VecDeque<Queued>,
    /// A caller leads: it (or the caller it hands over to) will serve
    /// every request queued meanwhile.
    leading: bool,
    /// The leader waits for the writers of the last group (`gather`).
    gathering: bool,
    closed: bool,
}

/// What the flusher thread is told.
enum Tick {
    /// A due time was set or moved earlier: look again.
    Due,
    /// The store closes: flush and stop.
    Stop,
}

/// The committer; see the module doc.
pub(crate) struct Committer {
    queue: Mutex<Queue>,
    /// Signalled when the queue has room again.
    room: Condvar,
    /// Signalled when a request arrives while the leader gathers.
    arrived: Condvar,
    core: Mutex<Core>,
    shared: Arc<Shared>,
    path: PathBuf,
    max_group: usize,
    capacity: usize,
    ticks: Sender<Tick>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    /// The size of the last group taken.
    last_group: AtomicUsize,
    /// Appends are acknowledged before their flush.
    buffered: bool,
}

/// The longest a leader waits for the writers of the last group.
const GATHER: Duration = Duration::from_micros(50);

impl Committer {
    /// A committer over `trees`, and its flusher thread.
    pub(crate) fn start(
        trees: Trees,
        witness: Witness,
        shared: Arc<Shared>,
        config: StoreConfig,
    ) -> Result<Arc<Committer>, StoreError> {
        let (ticks, rx) = unbounded();
        let buffered = config.durability == Durability::Buffered;
        let committer = Arc::new(Committer {
            queue: Mutex::new(Queue::default()),
            room: Condvar::new(),
            arrived: Condvar::new(),
            shared,
            path: config.path.clone(),
            max_group: config.max_group,
            capacity: config.queue,
            core: Mutex::new(Core::new(trees, witness, config)),
            ticks,
            flusher: Mutex::new(None),
            last_group: AtomicUsize::new(0),
            buffered,
        });
        // The thread holds the committer until `close` stops it.
        let held = committer.clone();
        let handle = std::thread::Builder::new()
            .name("ctxlog-flusher".into())
            .spawn(move || held.run_flusher(rx))
            .map_err(|e| damaged(format!("cannot start the flusher thread: {e}")))?;
        *lock(&committer.flusher) = Some(handle);
        Ok(committer)
    }

    /// Queues `request` and waits for its answer, leading the commit when
    /// no other caller does.
    pub(crate) fn submit(&self, request: Request) -> Result<Answer, StoreError> {
        let ticket = Arc::new(Ticket::default());
        let leads = {
            let mut q = lock(&self.queue);
            loop {
                if q.closed {
                    return Err(StoreError::Read(ReadError::Closed));
                }
                if q.waiting.len() < self.capacity {
                    break;
                }
                q = self.room.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
            q.waiting.push_back(Queued {
                request,
                ticket: ticket.clone(),
            });
            if q.gathering {
                self.arrived.notify_one();
            }
            !std::mem::replace(&mut q.leading, true)
        };
        if !leads {
            match ticket.wait() {
                Woken::Answered(a) => return a,
                Woken::Lead => {}
            }
        }
        // A leader's request is first in the queue, so the group it takes
        // answers it.
        self.lead();
        match ticket.wait() {
            Woken::Answered(a) => a,
            Woken::Lead => Err(damaged("the committer asked a caller to lead twice")),
        }
    }

    /// Serves one group from the front of the queue, then hands the lead
    /// over.
    fn lead(&self) {
        self.gather();
        let group: Vec<Queued> = {
            let mut q = lock(&self.queue);
            let n = q.waiting.len().min(self.max_group);
            let group = q.waiting.drain(..n).collect();
            self.room.notify_all();
            group
        };
        self.last_group.store(group.len(), Relaxed);
        let tickets: Vec<Arc<Ticket>> = group.iter().map(|q| q.ticket.clone()).collect();
        let started = Instant::now();
        let served = {
            let mut core = lock(&self.core);
            guarded(
                &self.path,
                "writing",
                || Ok(core.serve(&self.shared, group)),
            )
        };
        let led = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.shared.counters.leading_nanos.fetch_add(led, Relaxed);
        match served {
            Ok(true) => {
                // The flusher outlives every caller (`close`).
                let _ = self.ticks.send(Tick::Due);
            }
            Ok(false) => {}
            Err(e) => {
                let why = e.to_string();
                self.shared.poison(why.clone());
                for t in tickets.iter().filter(|t| !t.is_answered()) {
                    t.answer(Err(StoreError::Read(ReadError::Poisoned(why.clone()))));
                }
            }
        }
        let mut q = lock(&self.queue);
        match q.waiting.front() {
            Some(next) => next.ticket.lead(),
            None => q.leading = false,
        }
    }

    /// Gives the writers of the last group a moment to queue again before
    /// a durable group is taken: answered together, they come back
    /// together, and the first of them would otherwise flush alone while
    /// the others wait for the next flush. A lone writer (a last group of
    /// one) never waits; the others wait at most [`GATHER`], asleep until
    /// each arrives.
    fn gather(&self) {
        let last = self.last_group.load(Relaxed);
        if last < 2 || self.buffered {
            return;
        }
        let until = Instant::now() + GATHER;
        let mut q = lock(&self.queue);
        q.gathering = true;
        while q.waiting.len() < last {
            let now = Instant::now();
            if now >= until {
                break;
            }
            q = self
                .arrived
                .wait_timeout(q, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        q.gathering = false;
    }

    /// The flusher thread: flushes at buffered mode's deadline and syncs
    /// the witness when due; at `Stop`, flushes what is left and returns.
    fn run_flusher(&self, ticks: Receiver<Tick>) {
        loop {
            let due = lock(&self.core).due();
            let tick = match due {
                None => ticks.recv().unwrap_or(Tick::Stop),
                Some(d) => match ticks.recv_deadline(d) {
                    Ok(t) => t,
                    Err(RecvTimeoutError::Timeout) => Tick::Due,
                    Err(RecvTimeoutError::Disconnected) => Tick::Stop,
                },
            };
            let stop = matches!(tick, Tick::Stop);
            let mut core = lock(&self.core);
            let done = guarded(&self.path, "flushing", || {
                if stop {
                    core.close(&self.shared);
                } else {
                    core.tick(&self.shared, Instant::now());
                }
                Ok(())
            });
            if let Err(e) = done {
                self.shared.poison(e.to_string());
            }
            if stop {
                return;
            }
        }
    }

    /// Refuses new requests, then stops the flusher after its last flush.
    /// Called when the last handle drops, so no caller is waiting.
    pub(crate) fn close(&self) {
        lock(&self.queue).closed = true;
        self.room.notify_all();
        let _ = self.ticks.send(Tick::Stop);
        if let Some(h) = lock(&self.flusher).take() {
            let _ = h.join();
        }
    }
}
