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

use crate::error::Expected;
use crate::log::{Appended, NewEvent};
use crate::sled::append::{Appender, NotWritten};
use crate::sled::config::{Durability, StoreConfig};
use crate::sled::failure::Failure;
use crate::sled::guard::guarded;
use crate::sled::repair;
use crate::sled::shared::Shared;
use crate::sled::ticket::{Answer, Ticket, Woken};
use crate::sled::trees::Trees;
use crate::sled::verify::{finish, Scan, VerifyReport};
use crate::sled::witness::{self, Witness};
use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use ctxlog_core::{Seq, SessionId};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
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

/// What a handle asks of the committer.
pub(crate) enum Request {
    /// Append `events` to `session` after checking `expected`.
    Append {
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    },
    /// Flush everything committed so far.
    Flush,
    /// End a verification whose records were scanned beside the committer.
    Verify { scan: Box<Scan> },
}

/// A request waiting in the queue.
struct Queued {
    request: Request,
    ticket: Arc<Ticket>,
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
    ) -> Result<Arc<Committer>, Failure> {
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
            core: Mutex::new(Core {
                appender: Appender::new(&trees),
                trees,
                witness,
                config,
                unflushed: BTreeMap::new(),
                deadline: None,
                marked: BTreeSet::new(),
            }),
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
            .map_err(|e| Failure::Damaged(format!("cannot start the flusher thread: {e}")))?;
        *lock(&committer.flusher) = Some(handle);
        Ok(committer)
    }

    /// Queues `request` and waits for its answer, leading the commit when
    /// no other caller does.
    pub(crate) fn submit(&self, request: Request) -> Result<Answer, Failure> {
        let ticket = Arc::new(Ticket::default());
        let leads = {
            let mut q = lock(&self.queue);
            loop {
                if q.closed {
                    return Err(Failure::Closed);
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
            Woken::Lead => Err(Failure::Damaged(
                "the committer asked a caller to lead twice".into(),
            )),
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
                    t.answer(Err(Failure::Poisoned(why.clone())));
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

/// One append of a group, with its ticket.
struct AppendRequest {
    session: SessionId,
    expected: Expected,
    events: Vec<NewEvent>,
    ticket: Arc<Ticket>,
}

/// What only the leader (or the flusher) touches: the trees' writes, the
/// witness, and what is committed but not flushed.
struct Core {
    trees: Trees,
    witness: Witness,
    config: StoreConfig,
    /// Committed but not yet flushed: session → last seq.
    unflushed: BTreeMap<SessionId, Seq>,
    /// Buffered mode: when the oldest unflushed commit must be flushed by.
    deadline: Option<Instant>,
    /// The sessions the marker of recent writes names (`repair.rs`).
    marked: BTreeSet<SessionId>,
    appender: Appender,
}

impl Core {
    /// Serves a group: commits its appends, flushes (durable mode, or when
    /// a flush was asked for), answers, runs its verifications. Whether a
    /// due time was set or moved earlier (the flusher must look).
    fn serve(&mut self, shared: &Shared, group: Vec<Queued>) -> bool {
        let due_before = self.due();
        let mut appends = Vec::new();
        let mut flushes = Vec::new();
        let mut verifies = Vec::new();
        for Queued { request, ticket } in group {
            match request {
                Request::Append {
                    session,
                    expected,
                    events,
                } => appends.push(AppendRequest {
                    session,
                    expected,
                    events,
                    ticket,
                }),
                Request::Flush => flushes.push(ticket),
                Request::Verify { scan } => verifies.push((scan, ticket)),
            }
        }
        let outcomes = self.commit(shared, &mut appends);
        if self.config.durability == Durability::Buffered && flushes.is_empty() {
            for (a, r) in appends.iter().zip(outcomes) {
                a.ticket.answer(r.map(Answer::Appended));
            }
            if !self.unflushed.is_empty() && self.deadline.is_none() {
                let interval = Duration::from_millis(self.config.buffered_flush_ms.max(1));
                self.deadline = Some(Instant::now() + interval);
            }
        } else {
            let (flushed, committed) = self.flush(shared, !flushes.is_empty());
            for (a, r) in appends.iter().zip(outcomes) {
                a.ticket.answer(after_flush(&flushed, r));
            }
            for t in flushes {
                t.answer(flushed.as_ref().map(|()| Answer::Flushed).map_err(failed));
            }
            if flushed.is_ok() {
                shared.hub.notify(&committed);
            }
        }
        for (scan, t) in verifies {
            let report = shared.check().and_then(|()| self.verify(*scan));
            t.answer(report.map(|r| Answer::Verified(Box::new(r))));
        }
        match (due_before, self.due()) {
            (None, Some(_)) => true,
            (Some(before), Some(now)) => now < before,
            (_, None) => false,
        }
    }

    /// Writes the appends (all refused if the store is poisoned) after
    /// naming their sessions in the marker (`repair.rs`), counts what was
    /// committed into `unflushed`; one outcome per append, in order. The
    /// appends' events are taken (encoded without a copy).
    fn commit(
        &mut self,
        shared: &Shared,
        appends: &mut [AppendRequest],
    ) -> Vec<Result<Appended, Failure>> {
        if let Err(e) = shared.check() {
            return appends.iter().map(|_| Err(e.clone_kind())).collect();
        }
        if appends.is_empty() {
            return Vec::new();
        }
        let before = self.marked.len();
        self.marked.extend(appends.iter().map(|a| a.session));
        if self.marked.len() > before {
            if let Err(e) = repair::mark(&self.trees, &self.marked) {
                return self.storage_failed(shared, &e, appends.len());
            }
        }
        let mut outcomes = Vec::with_capacity(appends.len());
        for a in appends.iter_mut() {
            let events = std::mem::take(&mut a.events);
            match self
                .appender
                .append(&self.trees, a.session, a.expected, events)
            {
                Ok(done) => {
                    if !done.duplicate {
                        shared.count_append(done.last - done.first + 1);
                        let last = self.unflushed.entry(done.session).or_insert(0);
                        *last = (*last).max(done.last);
                    }
                    outcomes.push(Ok(done));
                }
                Err(NotWritten::Refused(e)) => outcomes.push(Err(e)),
                Err(NotWritten::Storage(e)) => {
                    return self.storage_failed(shared, &e, appends.len());
                }
            }
        }
        outcomes
    }

    /// Poisons the store after sled failed while writing a group: none of
    /// its appends is acknowledged.
    fn storage_failed(
        &self,
        shared: &Shared,
        e: &sled::Error,
        appends: usize,
    ) -> Vec<Result<Appended, Failure>> {
        let why = format!("write failed: {e}");
        shared.poison(why.clone());
        (0..appends)
            .map(|_| Err(Failure::Poisoned(why.clone())))
            .collect()
    }

    /// The next time the flusher has work: buffered mode's deadline or the
    /// witness's sync.
    fn due(&self) -> Option<Instant> {
        match (self.deadline, self.witness.sync_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Does what is due at `now`.
    fn tick(&mut self, shared: &Shared, now: Instant) {
        if self.deadline.is_some_and(|d| now >= d) {
            let (flushed, committed) = self.flush(shared, false);
            if flushed.is_ok() {
                shared.hub.notify(&committed);
            }
        }
        if self.witness.sync_due().is_some_and(|d| now >= d) {
            if let Err(e) = self.witness.sync() {
                shared.poison(format!("witness sync failed: {e}"));
            }
        }
    }

    /// The last flush (what buffered mode acknowledged) and witness sync.
    fn close(&mut self, shared: &Shared) {
        // Never after a failure: sled 0.34 can block forever flushing after
        // an I/O error.
        if shared.check().is_ok() {
            let (flushed, committed) = self.flush(shared, true);
            if flushed.is_ok() {
                shared.hub.notify(&committed);
                // Everything is whole on disk: the next open has nothing to
                // look at (and a reading command writes nothing).
                if !self.marked.is_empty() {
                    let cleared = repair::unmark(&self.trees).and_then(|()| self.trees.db.flush());
                    if let Err(e) = cleared {
                        shared.poison(format!("clearing the marker failed: {e}"));
                    }
                    self.marked.clear();
                }
            }
        }
        if let Err(e) = self.witness.sync() {
            shared.poison(format!("witness sync failed: {e}"));
        }
    }

    /// Flushes (when anything was committed, or when `force`d), witnesses
    /// what became durable and records it; the outcome and the heads it
    /// made durable (for the subscribers, once the callers are answered).
    fn flush(
        &mut self,
        shared: &Shared,
        force: bool,
    ) -> (Result<(), Failure>, BTreeMap<SessionId, Seq>) {
        self.deadline = None;
        let committed = std::mem::take(&mut self.unflushed);
        let poisoned = |why: String| {
            shared.poison(why.clone());
            Failure::Poisoned(why)
        };
        let flushed = match shared.check() {
            Err(e) => Err(e),
            Ok(()) if committed.is_empty() && !force => Ok(()),
            Ok(()) => {
                shared.count_flush();
                self.trees
                    .db
                    .flush()
                    .map(|_| ())
                    .map_err(|e| poisoned(format!("flush failed: {e}")))
            }
        };
        // What was flushed is witnessed before it is acknowledged.
        let flushed = match flushed {
            Ok(()) if !committed.is_empty() => self.witness_heads(&committed).map_err(poisoned),
            other => other,
        };
        if flushed.is_ok() {
            shared.made_durable(&committed);
            if self.marked.len() > repair::MARKED_MAX {
                // Every append so far is whole on disk; the removal itself
                // comes before any later write.
                if let Err(e) = repair::unmark(&self.trees) {
                    return (Err(poisoned(format!("write failed: {e}"))), committed);
                }
                self.marked.clear();
            }
        }
        (flushed, committed)
    }

    /// Ends a verification: the heads, what was appended since the scan
    /// began, and the log against the witness.
    fn verify(&self, scan: Scan) -> Result<VerifyReport, Failure> {
        let mut report = finish(&self.trees, scan)?;
        match witness::check(&self.trees, &self.config.path) {
            Ok((_, losses)) => {
                for l in &losses {
                    report.push(l.as_error());
                }
            }
            Err(Failure::Sled(e)) => report.sled(&e, "heads", None),
            Err(e) => return Err(e),
        }
        report.errors.sort_by_key(|e| (e.session, e.seq));
        Ok(report)
    }

    /// Writes what `committed` made durable to the witness (and rewrites it
    /// when it has grown too large).
    fn witness_heads(&mut self, committed: &BTreeMap<SessionId, Seq>) -> Result<(), String> {
        let mut heads = Vec::with_capacity(committed.len());
        for s in committed.keys() {
            // The appender remembers the heads it just wrote (it forgets
            // them only past `HEADS_KEPT` sessions): no read then.
            let known = self.appender.written_head(*s).map(Some).map(Ok);
            match known.unwrap_or_else(|| self.trees.head(*s)) {
                Ok(Some((seq, chain))) => heads.push((*s, seq, chain)),
                Ok(None) => {}
                Err(e) => return Err(format!("witness: head of session {s}: {e}")),
            }
        }
        self.witness
            .record(&heads)
            .map_err(|e| format!("witness write failed: {e}"))?;
        if self.witness.wants_compaction() {
            let all = self
                .trees
                .heads_with_chains()
                .map_err(|e| format!("witness: heads: {e}"))?;
            self.witness
                .compact(&all)
                .map_err(|e| format!("witness rewrite failed: {e}"))?;
        }
        Ok(())
    }
}

/// A flush's failure as each of its callers sees it.
fn failed(e: &Failure) -> Failure {
    match e {
        Failure::Poisoned(why) => Failure::Poisoned(why.clone()),
        _ => Failure::Closed,
    }
}

/// An append's answer once its group's flush is done (or failed).
fn after_flush(
    flushed: &Result<(), Failure>,
    r: Result<Appended, Failure>,
) -> Result<Answer, Failure> {
    match (flushed, r) {
        (_, Err(e)) => Err(e),
        (Err(e), Ok(_)) => Err(failed(e)),
        (Ok(()), Ok(a)) => Ok(Answer::Appended(a)),
    }
}
