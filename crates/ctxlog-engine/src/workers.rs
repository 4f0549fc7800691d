//! Background workers: a small pool runs compaction jobs for many sessions
//! at once, at most one per session at a time, fed by a bounded queue.
//!
//! Pending work is never only in memory: every job is a `CompactionRequested`
//! event in the log. Shutting down with [`Shutdown::Persist`] stops after the
//! jobs in progress and returns the sessions still queued; their jobs stay
//! pending in the log, and [`crate::Engine::pending_sessions`] finds them
//! after a restart.

use crate::{Engine, EngineError, JobOutcome};
use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use ctxlog_core::SessionId;
use ctxlog_store::EventLog;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::PoisonError;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use thiserror::Error;

/// How to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Run everything already queued, then stop.
    Drain,
    /// Finish the jobs in progress, leave the rest pending in the log.
    Persist,
}

/// What a worker did for one session.
#[derive(Debug)]
pub struct WorkerReport {
    /// The session.
    pub session: SessionId,
    /// Its jobs' outcomes, or the error that stopped them.
    pub result: Result<Vec<JobOutcome>, EngineError>,
}

/// Why a session could not be queued.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SubmitError {
    /// The bounded queue is full; try again later (the jobs stay pending in the log).
    #[error("the job queue is full")]
    Full,
    /// The pool is shutting down.
    #[error("the workers are shutting down")]
    ShuttingDown,
}

struct Shared {
    /// Sessions queued or being worked on: at most one entry per session.
    active: Mutex<BTreeSet<SessionId>>,
    stop: AtomicBool,
    dropped_reports: AtomicU64,
}

/// The pool.
pub struct Workers {
    queue: Option<Sender<SessionId>>,
    backlog: Receiver<SessionId>,
    handles: Vec<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl Workers {
    /// Starts `threads` workers over `engine` with a queue of `capacity`
    /// sessions; reports arrive on the returned bounded channel (dropped,
    /// and counted, when nobody reads them).
    /// `threads` and `capacity` below 1 count as 1. Fails only when the
    /// operating system refuses a thread.
    pub fn start<L: EventLog + 'static>(
        engine: Arc<Engine<L>>,
        threads: usize,
        capacity: usize,
    ) -> std::io::Result<(Self, Receiver<WorkerReport>)> {
        let (threads, capacity) = (threads.max(1), capacity.max(1));
        let (tx, rx) = bounded::<SessionId>(capacity);
        let (report_tx, report_rx) = bounded(capacity);
        let shared = Arc::new(Shared {
            active: Mutex::new(BTreeSet::new()),
            stop: AtomicBool::new(false),
            dropped_reports: AtomicU64::new(0),
        });
        let handles: Vec<JoinHandle<()>> = (0..threads)
            .map(|i| {
                let (engine, rx, report_tx, shared) = (
                    engine.clone(),
                    rx.clone(),
                    report_tx.clone(),
                    shared.clone(),
                );
                std::thread::Builder::new()
                    .name(format!("ctxlog-worker-{i}"))
                    .spawn(move || work(&engine, &rx, &report_tx, &shared))
            })
            .collect::<std::io::Result<_>>()?;
        Ok((
            Workers {
                queue: Some(tx),
                backlog: rx,
                handles,
                shared,
            },
            report_rx,
        ))
    }

    /// Queues `session`'s pending jobs. `Ok(false)` when it is already queued
    /// or running (its new jobs will be picked up by that run).
    pub fn submit(&self, session: SessionId) -> Result<bool, SubmitError> {
        let queue = self.queue.as_ref().ok_or(SubmitError::ShuttingDown)?;
        if self.shared.stop.load(Ordering::SeqCst) {
            return Err(SubmitError::ShuttingDown);
        }
        let mut active = self
            .shared
            .active
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !active.insert(session) {
            return Ok(false);
        }
        match queue.try_send(session) {
            Ok(()) => Ok(true),
            Err(TrySendError::Full(_)) => {
                active.remove(&session);
                Err(SubmitError::Full)
            }
            Err(TrySendError::Disconnected(_)) => {
                active.remove(&session);
                Err(SubmitError::ShuttingDown)
            }
        }
    }

    /// Reports dropped because the report channel was full.
    pub fn dropped_reports(&self) -> u64 {
        self.shared.dropped_reports.load(Ordering::Relaxed)
    }

    /// Stops the pool; returns the sessions left queued (with `Persist`),
    /// whose jobs remain pending in the log.
    pub fn shutdown(mut self, mode: Shutdown) -> Vec<SessionId> {
        if mode == Shutdown::Persist {
            self.shared.stop.store(true, Ordering::SeqCst);
        }
        self.queue.take();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        self.backlog.try_iter().collect()
    }
}

fn work<L: EventLog>(
    engine: &Engine<L>,
    rx: &Receiver<SessionId>,
    reports: &Sender<WorkerReport>,
    shared: &Shared,
) {
    while !shared.stop.load(Ordering::SeqCst) {
        let session = match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(s) => s,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => continue,
            // The pool dropped its sender and the queue is empty.
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
        };
        loop {
            let result = engine.run_pending(session);
            // Leave the active set first, then look for work queued during
            // the run without holding the set's lock (a session's lock can be
            // held for a whole summarizer call). If there is more and nobody
            // queued the session meanwhile, take it back and run again; if
            // someone did, their queue entry will run it.
            shared
                .active
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&session);
            let more = result.is_ok()
                && !shared.stop.load(Ordering::SeqCst)
                && engine.has_pending(session).unwrap_or(false)
                && shared
                    .active
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(session);
            if reports.try_send(WorkerReport { session, result }).is_err() {
                shared.dropped_reports.fetch_add(1, Ordering::Relaxed);
            }
            if !more {
                break;
            }
        }
    }
}
