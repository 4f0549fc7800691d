//! The single writer thread of a [`SledStore`](crate::SledStore): group
//! commit, the append transaction, flushes, acknowledgements and
//! notifications, poisoning.
//!
//! Each group of appends is applied in one sled transaction (each append
//! with its own outcome; readers wait for the whole group, since sled 0.34
//! transactions hold its global write lock), flushed once, then acknowledged,
//! then announced to subscribers. Verification also runs here, between
//! groups, so it sees no half-applied append.

use crate::error::Expected;
use crate::log::{check_expected, repeated_id, retried_position, Appended, NewEvent};
use crate::record::{self, Chain};
use crate::sled::config::{Durability, StoreConfig};
use crate::sled::failure::Failure;
use crate::sled::guard::guarded;
use crate::sled::trees::{decode_head, encode_head, Trees};
use crate::sled::verify::{finish, Scan, VerifyReport};
use crate::sled::witness::{self, Witness};
use crate::subscribe::Hub;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use ctxlog_core::{EventId, Seq, SessionId};
use sled::transaction::{ConflictableTransactionError, TransactionError, TransactionalTree};
use sled::Transactional;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

/// Counters of the writer's work since the store was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreStats {
    /// Appends committed (idempotent retries excluded).
    pub appends: u64,
    /// Events committed.
    pub events: u64,
    /// Flushes (fsyncs) performed: fewer than `appends` means group commit.
    pub flushes: u64,
}

#[derive(Default)]
struct Counters {
    appends: AtomicU64,
    events: AtomicU64,
    flushes: AtomicU64,
}

/// State shared between the store's handles and its writer.
#[derive(Default)]
pub(crate) struct Shared {
    counters: Counters,
    /// Why the store is poisoned, once it is.
    poison: Mutex<Option<String>>,
    /// Heads known to be flushed (initialised from disk at open).
    durable: RwLock<BTreeMap<SessionId, Seq>>,
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
    pub(crate) fn check_session(&self, session: SessionId) -> Result<(), Failure> {
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
    pub(crate) fn check(&self) -> Result<(), Failure> {
        // An `Option<String>` is valid whatever a panicking holder did.
        match &*self.poison.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(why) => Err(Failure::Poisoned(why.clone())),
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
        }
    }
}

/// The witnessed head of a session that lost acknowledged events.
#[derive(Debug, Clone)]
pub(crate) struct LostHead {
    /// The last acknowledged seq.
    pub(crate) seq: Seq,
    /// The chain of that record.
    pub(crate) chain: crate::record::Chain,
    /// What is lost, and what to do.
    pub(crate) detail: String,
}

impl LostHead {
    /// The error of reading or appending past the loss.
    pub(crate) fn error(&self, session: SessionId) -> Failure {
        Failure::Lost {
            session,
            detail: self.detail.clone(),
        }
    }
}

/// What a handle asks of the writer.
pub(crate) enum Request {
    Append {
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
        reply: Sender<Result<Appended, Failure>>,
    },
    Flush {
        reply: Sender<Result<(), Failure>>,
    },
    /// Ends a verification whose records were scanned beside the writer.
    Verify {
        scan: Box<Scan>,
        reply: Sender<Result<VerifyReport, Failure>>,
    },
}

/// One append of a group, waiting for its outcome.
struct AppendRequest {
    session: SessionId,
    expected: Expected,
    events: Vec<NewEvent>,
    reply: Sender<Result<Appended, Failure>>,
}

/// The requests of one group, sorted by kind.
#[derive(Default)]
struct Group {
    appends: Vec<AppendRequest>,
    flushes: Vec<Sender<Result<(), Failure>>>,
    verifies: Vec<(Box<Scan>, VerifyReply)>,
}

/// Where a verification's report goes.
type VerifyReply = Sender<Result<VerifyReport, Failure>>;

impl Group {
    fn sort(requests: Vec<Request>) -> Group {
        let mut group = Group::default();
        for req in requests {
            match req {
                Request::Append {
                    session,
                    expected,
                    events,
                    reply,
                } => group.appends.push(AppendRequest {
                    session,
                    expected,
                    events,
                    reply,
                }),
                Request::Flush { reply } => group.flushes.push(reply),
                Request::Verify { scan, reply } => group.verifies.push((scan, reply)),
            }
        }
        group
    }
}

/// A reply waiting for the group's flush.
enum Pending {
    Append(Sender<Result<Appended, Failure>>, Result<Appended, Failure>),
    Flush(Sender<Result<(), Failure>>),
}

/// What the writer carries from one group to the next.
#[derive(Default)]
struct Unflushed {
    /// Committed but not yet flushed: session → last seq.
    heads: BTreeMap<SessionId, Seq>,
    /// Buffered mode: when the oldest unflushed commit must be flushed by.
    deadline: Option<Instant>,
}

/// The single writer; see the module doc.
pub(crate) struct Writer {
    pub(crate) trees: Trees,
    pub(crate) witness: Witness,
    pub(crate) shared: Arc<Shared>,
    pub(crate) rx: Receiver<Request>,
    pub(crate) config: StoreConfig,
}

/// The result of a step inside the append transaction: `Abort` refuses the
/// append, any other error fails the transaction.
type TxResult<T> = Result<T, ConflictableTransactionError<Failure>>;

/// The three trees an append writes, inside the group's transaction.
struct Tx<'a> {
    events: &'a TransactionalTree,
    heads: &'a TransactionalTree,
    ids: &'a TransactionalTree,
}

impl Writer {
    /// Serves requests until every handle is gone, then flushes what buffered
    /// mode acknowledged.
    pub(crate) fn run(mut self) {
        let mut unflushed = Unflushed::default();
        while let Some(requests) = self.next_group(&mut unflushed) {
            let path = self.config.path.clone();
            let served = guarded(&path, "writing", || {
                self.serve(Group::sort(requests), &mut unflushed);
                Ok(())
            });
            if let Err(e) = served {
                // The group's replies were dropped while unwinding: their
                // callers wait for this poison (`SledStore::no_reply`).
                self.shared.poison(e.to_string());
            }
        }
        // Never after a failure: sled 0.34 can block forever flushing after
        // an I/O error.
        if self.shared.check().is_ok() {
            if let Err(e) = self.trees.db.flush() {
                self.shared.poison(format!("final flush failed: {e}"));
            }
        }
        if let Err(e) = self.witness.sync() {
            self.shared.poison(format!("witness sync failed: {e}"));
        }
    }

    /// Waits for the next request (flushing at the buffered deadline
    /// meanwhile) and takes up to `max_group` requests; `None` once closed.
    fn next_group(&mut self, unflushed: &mut Unflushed) -> Option<Vec<Request>> {
        let first = loop {
            if unflushed.deadline.is_some_and(|d| Instant::now() >= d) {
                self.flush(unflushed, Vec::new(), false);
            }
            if self.witness.sync_due().is_some_and(|d| Instant::now() >= d) {
                if let Err(e) = self.witness.sync() {
                    self.shared.poison(format!("witness sync failed: {e}"));
                }
            }
            let deadline = match (unflushed.deadline, self.witness.sync_due()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            match deadline {
                None => break self.rx.recv().ok()?,
                Some(d) => match self.rx.recv_deadline(d) {
                    Ok(r) => break r,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return None,
                },
            }
        };
        let mut group = vec![first];
        while group.len() < self.config.max_group {
            match self.rx.try_recv() {
                Ok(r) => group.push(r),
                Err(_) => break,
            }
        }
        Some(group)
    }

    /// Commits a group, then acknowledges it (after the flush, or at once in
    /// buffered mode unless a flush was asked for) and runs its verifies.
    fn serve(&mut self, group: Group, unflushed: &mut Unflushed) {
        let force = !group.flushes.is_empty();
        let mut pending = self.commit(group.appends, &mut unflushed.heads);
        pending.extend(group.flushes.into_iter().map(Pending::Flush));
        if self.config.durability == Durability::Buffered && !force {
            for p in pending {
                if let Pending::Append(reply, r) = p {
                    let _ = reply.send(r);
                }
            }
            if !unflushed.heads.is_empty() && unflushed.deadline.is_none() {
                let interval = Duration::from_millis(self.config.buffered_flush_ms.max(1));
                unflushed.deadline = Some(Instant::now() + interval);
            }
        } else {
            self.flush(unflushed, pending, force);
        }
        for (scan, reply) in group.verifies {
            let _ = reply.send(self.shared.check().and_then(|()| self.verify(*scan)));
        }
    }

    /// Applies the appends (all refused if the store is poisoned), counts
    /// what was committed into `unflushed`, and pairs each outcome with its
    /// reply.
    fn commit(
        &self,
        appends: Vec<AppendRequest>,
        unflushed: &mut BTreeMap<SessionId, Seq>,
    ) -> Vec<Pending> {
        let results = match self.shared.check() {
            Ok(()) => self.apply_group(&appends),
            Err(e) => appends.iter().map(|_| Err(e.clone_kind())).collect(),
        };
        for a in results.iter().flatten().filter(|a| !a.duplicate) {
            let c = &self.shared.counters;
            c.appends.fetch_add(1, Relaxed);
            c.events.fetch_add(a.last - a.first + 1, Relaxed);
            let last = unflushed.entry(a.session).or_insert(0);
            *last = (*last).max(a.last);
        }
        // One result per append; a reply left without one drops its sender,
        // which its caller sees as `Closed`.
        appends
            .into_iter()
            .zip(results)
            .map(|(a, r)| Pending::Append(a.reply, r))
            .collect()
    }

    /// Flushes (when anything was committed, or when `force`d), then answers
    /// `pending` (errors if the flush failed) and notifies subscribers of what
    /// became durable.
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
            match self.trees.head(*s) {
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

    fn flush(&mut self, unflushed: &mut Unflushed, pending: Vec<Pending>, force: bool) {
        unflushed.deadline = None;
        let committed = std::mem::take(&mut unflushed.heads);
        let flushed = match self.shared.check() {
            Err(e) => Err(e),
            Ok(()) if committed.is_empty() && !force => Ok(()),
            Ok(()) => {
                self.shared.counters.flushes.fetch_add(1, Relaxed);
                self.trees.db.flush().map(|_| ()).map_err(|e| {
                    let why = format!("flush failed: {e}");
                    self.shared.poison(why.clone());
                    Failure::Poisoned(why)
                })
            }
        };
        // What was flushed is witnessed before it is acknowledged.
        let flushed = match flushed {
            Ok(()) if !committed.is_empty() => self.witness_heads(&committed).map_err(|why| {
                self.shared.poison(why.clone());
                Failure::Poisoned(why)
            }),
            other => other,
        };
        if flushed.is_ok() && !committed.is_empty() {
            let mut durable = self
                .shared
                .durable
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            for (s, q) in &committed {
                durable.insert(*s, *q);
            }
        }
        answer(pending, &flushed);
        if flushed.is_ok() {
            self.shared.hub.notify(&committed);
        }
    }

    /// Applies a group of appends in one transaction; one outcome each, in order.
    fn apply_group(&self, appends: &[AppendRequest]) -> Vec<Result<Appended, Failure>> {
        // Repeated ids inside a batch can never be stored.
        let precheck: Vec<Option<EventId>> =
            appends.iter().map(|a| repeated_id(&a.events)).collect();
        let t = &self.trees;
        let result = (&t.events, &t.heads, &t.ids).transaction(|(events, heads, ids)| {
            let tx = Tx { events, heads, ids };
            // Built afresh by every attempt of the closure.
            let mut outcomes = Vec::with_capacity(appends.len());
            for (a, repeated) in appends.iter().zip(&precheck) {
                outcomes.push(match repeated {
                    Some(id) => Err(Failure::PartialDuplicate { id: *id }),
                    None => tx.apply_one(a.session, a.expected, &a.events)?,
                });
            }
            Ok::<_, ConflictableTransactionError<Failure>>(outcomes)
        });
        match result {
            Ok(outcomes) => outcomes,
            Err(TransactionError::Abort(e)) => {
                appends.iter().map(|_| Err(e.clone_kind())).collect()
            }
            Err(TransactionError::Storage(e)) => {
                let why = format!("write failed: {e}");
                self.shared.poison(why.clone());
                appends
                    .iter()
                    .map(|_| Err(Failure::Poisoned(why.clone())))
                    .collect()
            }
        }
    }
}

/// Answers the replies of a group once its flush is done (or failed).
fn answer(pending: Vec<Pending>, flushed: &Result<(), Failure>) {
    let failed = |e: &Failure| match e {
        Failure::Poisoned(why) => Failure::Poisoned(why.clone()),
        _ => Failure::Closed,
    };
    for p in pending {
        match p {
            Pending::Append(reply, r) => {
                let r = match (flushed, r) {
                    (_, Err(e)) => Err(e),
                    (Err(e), Ok(_)) => Err(failed(e)),
                    (Ok(()), Ok(a)) => Ok(a),
                };
                let _ = reply.send(r);
            }
            Pending::Flush(reply) => {
                let _ = reply.send(flushed.as_ref().map(|_| ()).map_err(failed));
            }
        }
    }
}

fn abort(e: impl Into<Failure>) -> ConflictableTransactionError<Failure> {
    ConflictableTransactionError::Abort(e.into())
}

impl Tx<'_> {
    /// One append inside the group's transaction. The outer `Err` is a
    /// storage error (the transaction fails); the inner one refuses only this
    /// append, before it wrote anything.
    fn apply_one(
        &self,
        session: SessionId,
        expected: Expected,
        events: &[NewEvent],
    ) -> TxResult<Result<Appended, Failure>> {
        match self.append(session, expected, events) {
            Ok(a) => Ok(Ok(a)),
            Err(ConflictableTransactionError::Abort(e)) => Ok(Err(e)),
            Err(other) => Err(other),
        }
    }

    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: &[NewEvent],
    ) -> TxResult<Appended> {
        // Idempotency first (a retry of a stored batch must not fail the
        // version check).
        if let Some(original) = self.stored_position(session, events)? {
            return Ok(original);
        }
        let (head, chain) = match self.heads.get(session.as_bytes())? {
            Some(v) => decode_head(session, &v).map_err(abort)?,
            None => (0, record::genesis(session)),
        };
        check_expected(session, expected, head).map_err(abort)?;
        // Encode everything before writing anything: a refused append must
        // leave no trace in the group's transaction, which commits.
        let (records, chain) = encode_batch(session, head, chain, events)?;
        let mut last = head;
        for (id, seq, bytes) in records {
            let key = record::key(session, seq);
            self.events.insert(&key[..], bytes)?;
            self.ids.insert(id.as_bytes(), &key[..])?;
            last = seq;
        }
        self.heads
            .insert(session.as_bytes(), &encode_head(last, &chain)[..])?;
        Ok(Appended {
            session,
            first: head + 1,
            last,
            duplicate: false,
        })
    }

    /// If any event's id is stored: the original position when the whole
    /// batch is stored unchanged at contiguous seqs of `session`, else the
    /// refusal. `None` when no id is stored.
    fn stored_position(
        &self,
        session: SessionId,
        events: &[NewEvent],
    ) -> TxResult<Option<Appended>> {
        let mut stored = Vec::new();
        for e in events {
            if let Some(pos) = self.ids.get(e.id.as_bytes())? {
                let (s, seq) = record::parse_key(&pos).ok_or_else(|| {
                    abort(Failure::Damaged(format!(
                        "id index entry of event {}",
                        e.id
                    )))
                })?;
                stored.push((e, s, seq));
            }
        }
        retried_position(session, events, &stored, abort, |e, s, seq| {
            let bytes = self.events.get(record::key(s, seq))?.ok_or_else(|| {
                abort(Failure::Damaged(format!(
                    "event {} indexed at session {s} seq {seq} but not stored",
                    e.id
                )))
            })?;
            let stored = record::decode(&bytes, s, seq).map_err(|problem| {
                abort(Failure::Corrupt {
                    session: s,
                    seq,
                    problem,
                })
            })?;
            Ok(e.is_stored_as(&stored.envelope))
        })
    }
}

/// One encoded record: event id, seq, bytes.
type Record = (EventId, Seq, Vec<u8>);

/// The records of `events` after `head`, and the chain of the last one.
fn encode_batch(
    session: SessionId,
    head: Seq,
    mut chain: Chain,
    events: &[NewEvent],
) -> TxResult<(Vec<Record>, Chain)> {
    let mut seq = head;
    let mut records = Vec::with_capacity(events.len());
    for e in events {
        seq = seq.checked_add(1).ok_or_else(|| {
            abort(Failure::Damaged(format!(
                "head of session {session} is {head}: no seq left"
            )))
        })?;
        let (bytes, next) = record::encode(&e.at(session, seq), &chain)
            .map_err(|source| abort(Failure::Encode { id: e.id, source }))?;
        chain = next;
        records.push((e.id, seq, bytes));
    }
    Ok((records, chain))
}
