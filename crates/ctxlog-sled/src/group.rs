//! What the leader of a group (or the flusher) does with the trees: the
//! group's appends committed (`append.rs`), one flush, the witness
//! written, every request answered, and verifications finished between
//! groups ([`Core`]).

use crate::append::{Appender, NotWritten};
use crate::config::{Durability, StoreConfig};
use crate::errors::{clone_kind, sled_cause};
use crate::repair;
use crate::shared::Shared;
use crate::ticket::{Answer, Ticket};
use crate::trees::Trees;
use crate::verify::{finish, sled_unreadable, Scan};
use crate::witness::{self, Witness};
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::Expected;
use ctxlog_store::ReadError;
use ctxlog_store::StoreError;
use ctxlog_store::VerifyReport;
use ctxlog_store::{Appended, NewEvent};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
pub(crate) struct Queued {
    pub(crate) request: Request,
    pub(crate) ticket: Arc<Ticket>,
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
pub(crate) struct Core {
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
    /// The leader's side of a store just opened: nothing committed yet.
    pub(crate) fn new(trees: Trees, witness: Witness, config: StoreConfig) -> Self {
        Core {
            appender: Appender::new(&trees),
            trees,
            witness,
            config,
            unflushed: BTreeMap::new(),
            deadline: None,
            marked: BTreeSet::new(),
        }
    }

    /// Serves a group: commits its appends, flushes (durable mode, or when
    /// a flush was asked for), answers, runs its verifications. Whether a
    /// due time was set or moved earlier (the flusher must look).
    pub(crate) fn serve(&mut self, shared: &Shared, group: Vec<Queued>) -> bool {
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
    ) -> Vec<Result<Appended, StoreError>> {
        if let Err(e) = shared.check() {
            return appends.iter().map(|_| Err(clone_kind(&e))).collect();
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
    ) -> Vec<Result<Appended, StoreError>> {
        let why = format!("write failed: {e}");
        shared.poison(why.clone());
        (0..appends)
            .map(|_| Err(StoreError::Read(ReadError::Poisoned(why.clone()))))
            .collect()
    }

    /// The next time the flusher has work: buffered mode's deadline or the
    /// witness's sync.
    pub(crate) fn due(&self) -> Option<Instant> {
        match (self.deadline, self.witness.sync_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Does what is due at `now`.
    pub(crate) fn tick(&mut self, shared: &Shared, now: Instant) {
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
    pub(crate) fn close(&mut self, shared: &Shared) {
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
    ) -> (Result<(), StoreError>, BTreeMap<SessionId, Seq>) {
        self.deadline = None;
        let committed = std::mem::take(&mut self.unflushed);
        let poisoned = |why: String| {
            shared.poison(why.clone());
            StoreError::Read(ReadError::Poisoned(why))
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
    fn verify(&self, scan: Scan) -> Result<VerifyReport, StoreError> {
        let mut report = finish(&self.trees, scan)?;
        match witness::check(&self.trees, &self.config.path) {
            Ok((_, losses)) => {
                for l in &losses {
                    report.push(l.as_error());
                }
            }
            Err(e) => match sled_cause(&e) {
                Some(sled) => sled_unreadable(&mut report, sled, "heads", None),
                None => return Err(e),
            },
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
fn failed(e: &StoreError) -> StoreError {
    match e {
        StoreError::Read(ReadError::Poisoned(why)) => {
            StoreError::Read(ReadError::Poisoned(why.clone()))
        }
        _ => StoreError::Read(ReadError::Closed),
    }
}

/// An append's answer once its group's flush is done (or failed).
fn after_flush(
    flushed: &Result<(), StoreError>,
    r: Result<Appended, StoreError>,
) -> Result<Answer, StoreError> {
    match (flushed, r) {
        (_, Err(e)) => Err(e),
        (Err(e), Ok(_)) => Err(failed(e)),
        (Ok(()), Ok(a)) => Ok(Answer::Appended(a)),
    }
}
