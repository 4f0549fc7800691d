//! The event-id index: where (session, seq) an event id is stored, so that
//! a retried append is recognised and an id is never stored twice.
//!
//! Two trees. `id_runs` holds runs: the events of consecutive seqs of one
//! session whose ids are UUIDv7 and whose time prefixes (their first 6
//! bytes: milliseconds) never decrease with seq. Event ids are UUIDv7 and
//! an agent's appends come in order, so its events nearly always form runs;
//! an append that continues the run written last (same session, from the
//! seq after its last) rewrites that run's entry instead of adding a key:
//! a lone session's whole history is one entry. A run's span, from its key
//! to its greatest id, holds the ids that were above every span when they
//! were appended; `ids` holds an entry (id → session ‖ seq, big endian, as
//! stores before runs kept every id) for every other id: those of an
//! append with an id of another version or whose time prefixes go back,
//! and those drawn in the millisecond of the last span's end but below it
//! (their seqs still in the run). An id is looked for among the entries
//! first.
//!
//! Spans never overlap (each starts above every span before it), so the run
//! that may hold an id not among the entries is the last starting at or
//! before it. Within it time prefixes never decrease with seq: its records
//! are bisected for the id's millisecond, then read through it.

use crate::errors::damaged;
use crate::errors::from_sled;
use crate::trees::Trees;
use ctxlog_core::{EventId, Seq, SessionId};
use ctxlog_store::record;
use ctxlog_store::ReadError;
use ctxlog_store::StoreError;
use uuid::Uuid;

/// An event id as the index keys it.
pub(crate) type IdKey = [u8; 16];

/// Length of a run value: session ‖ first seq ‖ last seq ‖ last id.
const RUN_LEN: usize = 16 + 8 + 8 + 16;

/// A run of the index: seqs `first..=last` of `session`, ids from the
/// entry's key to `last_id` (the least and the greatest; after a repair
/// `last_id` may be above what is left, which only widens the span).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) session: SessionId,
    pub(crate) first: Seq,
    pub(crate) last: Seq,
    pub(crate) last_id: IdKey,
}

impl Run {
    fn encode(&self) -> [u8; RUN_LEN] {
        let mut v = [0u8; RUN_LEN];
        v[..16].copy_from_slice(self.session.as_bytes());
        v[16..24].copy_from_slice(&self.first.to_be_bytes());
        v[24..32].copy_from_slice(&self.last.to_be_bytes());
        v[32..].copy_from_slice(&self.last_id);
        v
    }

    /// The run stored under `k`; damage when either does not read.
    pub(crate) fn decode(k: &[u8], v: &[u8]) -> Result<(IdKey, Run), StoreError> {
        let damaged = || {
            damaged(format!(
                "an entry of the id index's runs ({} and {} bytes)",
                k.len(),
                v.len()
            ))
        };
        let key: IdKey = k.try_into().map_err(|_| damaged())?;
        let v: &[u8; RUN_LEN] = v.try_into().map_err(|_| damaged())?;
        let seq = |r: std::ops::Range<usize>| -> Result<Seq, StoreError> {
            Ok(Seq::from_be_bytes(v[r].try_into().map_err(|_| damaged())?))
        };
        let run = Run {
            session: SessionId(Uuid::from_slice(&v[..16]).map_err(|_| damaged())?),
            first: seq(16..24)?,
            last: seq(24..32)?,
            last_id: v[32..].try_into().map_err(|_| damaged())?,
        };
        if run.first == 0 || run.first > run.last || key > run.last_id {
            return Err(damaged());
        }
        Ok((key, run))
    }

    /// Whether the run may hold the event `id` stored at (`session`, `seq`).
    pub(crate) fn covers(
        &self,
        first_id: &IdKey,
        id: &IdKey,
        session: SessionId,
        seq: Seq,
    ) -> bool {
        self.session == session
            && (self.first..=self.last).contains(&seq)
            && (first_id..=&self.last_id).contains(&id)
    }
}

/// The value of an `ids` entry: session ‖ seq.
fn position(session: SessionId, seq: Seq) -> [u8; 24] {
    record::key(session, seq)
}

/// What the appender keeps of the index between appends: it is its only
/// writer while the store is open.
#[derive(Debug, Clone, Default)]
pub(crate) struct IndexTail {
    /// The greatest id indexed; an id above it cannot be stored.
    greatest: Option<IdKey>,
    /// The greatest id in a run's span; a new span starts above it.
    run_floor: Option<IdKey>,
    /// The run with the greatest key, and that key.
    last_run: Option<(IdKey, Run)>,
}

impl IndexTail {
    /// The tail of the index as stored. An index whose last keys do not
    /// read (damage `verify` reports) only costs the shortcut: every id is
    /// then searched for, and no run is continued.
    pub(crate) fn read(trees: &Trees) -> IndexTail {
        let unknown = IndexTail {
            greatest: Some([u8::MAX; 16]),
            run_floor: Some([u8::MAX; 16]),
            last_run: None,
        };
        let entry = match trees.ids.last() {
            Ok(e) => e.map(|(k, _)| <IdKey>::try_from(&k[..]).unwrap_or([u8::MAX; 16])),
            Err(_) => return unknown,
        };
        let last_run = match trees.id_runs.last() {
            Ok(None) => None,
            Ok(Some((k, v))) => match Run::decode(&k, &v) {
                Ok(r) => Some(r),
                Err(_) => return unknown,
            },
            Err(_) => return unknown,
        };
        let run_floor = last_run.map(|(_, r)| r.last_id);
        IndexTail {
            greatest: entry.max(run_floor),
            run_floor,
            last_run,
        }
    }

    /// Whether `id` may be stored (it is not above every indexed id).
    pub(crate) fn may_hold(&self, id: &EventId) -> bool {
        self.greatest.is_some_and(|g| *id.as_bytes() <= g)
    }

    /// Indexes `ids`, stored at seqs `first..` of `session`: as a run
    /// (continuing the last one when it ends at `first - 1` of the same
    /// session) when they are UUIDv7 whose time prefixes never decrease,
    /// from the millisecond the last span ends in on, and some are above
    /// every span (those that are not get entries too); else an entry
    /// each. What is remembered changes only once sled took the writes.
    pub(crate) fn write(
        &mut self,
        trees: &Trees,
        session: SessionId,
        first: Seq,
        ids: &[EventId],
    ) -> Result<(), sled::Error> {
        let Some(highest) = ids.iter().max() else {
            return Ok(());
        };
        // Above every run's span: what this run's span holds. The others
        // (drawn in the millisecond of the last id of a run, but below it)
        // get entries of their own, and the run still covers their seqs.
        let in_span = |id: &EventId| self.run_floor.is_none_or(|f| *id.as_bytes() > f);
        let above = ids.iter().filter(|id| in_span(id)).min();
        let ordered = ids.iter().all(|id| id.0.get_version_num() == 7)
            && ids.windows(2).all(|w| prefix(&w[0]) <= prefix(&w[1]))
            && self.run_floor.is_none_or(|f| prefix(&ids[0]) >= &f[..6]);
        let lowest_above = match above {
            Some(lowest) if ordered => lowest,
            _ => {
                for (seq, id) in (first..).zip(ids) {
                    trees
                        .ids
                        .insert(id.as_bytes(), &position(session, seq)[..])?;
                }
                self.raise(highest);
                return Ok(());
            }
        };
        for (seq, id) in (first..).zip(ids).filter(|(_, id)| !in_span(id)) {
            trees
                .ids
                .insert(id.as_bytes(), &position(session, seq)[..])?;
        }
        let last = first + (ids.len() as Seq - 1);
        let last_id = *highest.as_bytes();
        let (key, run) = match self.last_run {
            Some((key, run))
                if run.session == session && run.last.checked_add(1) == Some(first) =>
            {
                (
                    key,
                    Run {
                        last,
                        last_id,
                        ..run
                    },
                )
            }
            _ => (
                *lowest_above.as_bytes(),
                Run {
                    session,
                    first,
                    last,
                    last_id,
                },
            ),
        };
        trees.id_runs.insert(key, &run.encode()[..])?;
        self.last_run = Some((key, run));
        self.run_floor = Some(last_id);
        self.raise(highest);
        Ok(())
    }

    /// Remembers that `id` is indexed.
    fn raise(&mut self, id: &EventId) {
        let id = *id.as_bytes();
        self.greatest = Some(self.greatest.map_or(id, |g| g.max(id)));
    }
}

/// The time prefix of an id: a UUIDv7's milliseconds.
fn prefix(id: &EventId) -> &[u8] {
    &id.as_bytes()[..6]
}

/// Where `id` is stored, if it is; `tail` says which ids cannot be.
pub(crate) fn locate(
    trees: &Trees,
    tail: &IndexTail,
    id: &EventId,
) -> Result<Option<(SessionId, Seq)>, StoreError> {
    if !tail.may_hold(id) {
        return Ok(None);
    }
    if let Some(pos) = trees.ids.get(id.as_bytes()).map_err(from_sled)? {
        let at = record::parse_key(&pos)
            .ok_or_else(|| damaged(format!("id index entry of event {id}")))?;
        return Ok(Some(at));
    }
    let Some(kv) = trees.id_runs.range(..=*id.as_bytes()).next_back() else {
        return Ok(None);
    };
    let (k, v) = kv.map_err(from_sled)?;
    let (_, run) = Run::decode(&k, &v)?;
    if *id.as_bytes() > run.last_id {
        return Ok(None);
    }
    search_run(trees, &run, id)
}

/// Whether the index says `id` is stored at (`session`, `seq`): its entry
/// points there, or a run of that session covers the seq and the id (that
/// ids increase within the run is not checked here). A sled error names
/// the tree it came from (`ids` or `id-runs`).
pub(crate) fn holds(
    trees: &Trees,
    id: &EventId,
    session: SessionId,
    seq: Seq,
) -> Result<bool, (&'static str, sled::Error)> {
    if let Some(pos) = trees.ids.get(id.as_bytes()).map_err(|e| ("ids", e))? {
        return Ok(pos[..] == position(session, seq));
    }
    let Some(kv) = trees.id_runs.range(..=*id.as_bytes()).next_back() else {
        return Ok(false);
    };
    let (k, v) = kv.map_err(|e| ("id-runs", e))?;
    Ok(Run::decode(&k, &v)
        .is_ok_and(|(first_id, run)| run.covers(&first_id, id.as_bytes(), session, seq)))
}

/// Every run of the index, with its first id; those that do not read as
/// their problem.
pub(crate) fn runs(trees: &Trees) -> impl Iterator<Item = Result<(IdKey, Run), StoreError>> + '_ {
    trees
        .id_runs
        .iter()
        .map(|kv| kv.map_err(from_sled).and_then(|(k, v)| Run::decode(&k, &v)))
}

/// Searches the records of `run` for `id`: the first seq whose time
/// prefix is not below the id's, by bisection, then each seq with the
/// same prefix.
fn search_run(
    trees: &Trees,
    run: &Run,
    id: &EventId,
) -> Result<Option<(SessionId, Seq)>, StoreError> {
    let (mut lo, mut hi) = (run.first, run.last + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if prefix(&id_at(trees, run.session, mid)?) < prefix(id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    for seq in lo..=run.last {
        let at = id_at(trees, run.session, seq)?;
        if at == *id {
            return Ok(Some((run.session, seq)));
        }
        if prefix(&at) != prefix(id) {
            break;
        }
    }
    Ok(None)
}

/// The id of the event stored at (`session`, `seq`), which a run says is
/// stored; its absence or damage is an error.
fn id_at(trees: &Trees, session: SessionId, seq: Seq) -> Result<EventId, StoreError> {
    let bytes = trees.record_at(session, seq)?.ok_or_else(|| {
        damaged(format!(
            "the id index holds session {session} seq {seq}, which is not stored"
        ))
    })?;
    let d = record::decode(&bytes, session, seq).map_err(|problem| {
        StoreError::Read(ReadError::Corrupt {
            session,
            seq,
            problem,
        })
    })?;
    Ok(d.envelope.id)
}

/// Removes what the index holds of seqs past `head` of `session`: its
/// entries among `ids` (given with their seqs) and the part of the last
/// run past the head. For what a crash left past a head (`repair.rs`).
pub(crate) fn forget_past_head(
    trees: &Trees,
    session: SessionId,
    head: Seq,
    ids: &[(Seq, EventId)],
) -> Result<(), StoreError> {
    for (seq, id) in ids.iter().rev() {
        if trees.ids.get(id.as_bytes()).map_err(from_sled)?.as_deref()
            == Some(&position(session, *seq)[..])
        {
            trees.ids.remove(id.as_bytes()).map_err(from_sled)?;
        }
    }
    let Some(kv) = trees.id_runs.last().map_err(from_sled)? else {
        return Ok(());
    };
    // A run that does not read is left for `verify` to report: opening
    // the store does not fail on it.
    let Ok((key, run)) = Run::decode(&kv.0, &kv.1) else {
        return Ok(());
    };
    if run.session != session || run.last <= head {
        return Ok(());
    }
    if run.first > head {
        trees.id_runs.remove(key).map_err(from_sled)?;
    } else {
        // `last_id` stays: a span wider than the ids left is still apart
        // from every later run, and a search in it finds only what is left.
        let trimmed = Run { last: head, ..run };
        trees
            .id_runs
            .insert(key, &trimmed.encode()[..])
            .map_err(from_sled)?;
    }
    Ok(())
}
