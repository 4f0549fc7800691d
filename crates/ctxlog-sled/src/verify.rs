//! Store-wide verification: every record (CRC, header, decode, key, chain,
//! contiguity, id index) and every head, each problem named by (session,
//! seq). The records are scanned beside the writer, up to the heads that
//! were durable when the scan began ([`scan`]); the heads and what was
//! appended meanwhile are checked by the committer between groups
//! ([`finish`]), so appends in flight never cause a false error and a
//! verification does not stop the writer for the length of the log.

use crate::errors::{describe_sled, sled_cause, sled_location};
use crate::index;
use crate::trees::{decode_head, session_of, Trees, Values};
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::pack;
use ctxlog_store::record::{self, Chain, RecordProblem};
use ctxlog_store::StoreError;
use ctxlog_store::{VerifyError, VerifyReport};
use std::collections::{BTreeMap, BTreeSet};

/// sled could not read its files past `after` (the last key read): a
/// problem of kind `sled` in `report`.
pub(crate) fn sled_unreadable(
    report: &mut VerifyReport,
    e: &sled::Error,
    tree: &str,
    after: Option<(SessionId, Seq)>,
) {
    let (file, offset) = match sled_location(e) {
        Some((f, o)) => (f, Some(o)),
        None => ("db".to_owned(), None),
    };
    let from = match after {
        Some((s, q)) => format!("after session {s} seq {q}"),
        None => "from the start".into(),
    };
    report.push(VerifyError {
        kind: "sled",
        session: after.map(|(s, _)| s),
        seq: after.map(|(_, q)| q.saturating_add(1)),
        file: Some(file),
        offset,
        detail: format!(
            "sled cannot read its {tree} tree {from} (sled: {}): what is stored there is unreadable; `ctxlog salvage` copies what can be read",
            describe_sled(e)
        ),
    });
}

/// The part of a verification that runs beside the writer: every record
/// up to the durable head each session had when it started (records that
/// were flushed before it began, so no append in flight is half seen).
pub(crate) struct Scan {
    report: VerifyReport,
    walked: BTreeMap<SessionId, Walk>,
    cut: BTreeSet<SessionId>,
}

/// Scans the records of the store up to `bound` (the durable heads when the
/// scan starts); see [`finish`] for the rest. Appends go on meanwhile.
/// `pace` is called between chunks of records (a served verification
/// takes turns with other readers and rests while the writer is busy).
pub(crate) fn scan(
    t: &Trees,
    bound: &BTreeMap<SessionId, Seq>,
    pace: &mut dyn FnMut(),
) -> Result<Scan, StoreError> {
    let mut report = VerifyReport::default();
    let mut walked = BTreeMap::new();
    let mut cut = BTreeSet::new();
    if let Some(broken) = walk_records(t, &mut report, bound, &mut walked, pace)? {
        // sled could not read past one place of its log: each session from
        // there on is walked on its own, from its own first key, so that
        // only what is unreadable is reported so.
        if let Some(s) = broken {
            cut.insert(s);
        }
        for s in bound.keys().filter(|s| broken.is_none_or(|b| **s > b)) {
            walked.remove(s);
            let mut walk = Walk::start(*s);
            let upto = bound.get(s).copied().unwrap_or(0);
            if !walk_session(t, &mut report, *s, upto, &mut walk)? {
                cut.insert(*s);
            }
            if walk.last > 0 {
                walked.insert(*s, walk);
            }
        }
    }
    Ok(Scan {
        report,
        walked,
        cut,
    })
}

/// Ends a verification in the committer, between append groups, so
/// that heads and records are read as one state: reads every head, walks
/// each session's records the scan left (those appended since it started,
/// and every session it did not bound), and compares. Costs the writer
/// the heads and what was appended during the scan, not the whole log.
pub(crate) fn finish(t: &Trees, scan: Scan) -> Result<VerifyReport, StoreError> {
    let Scan {
        mut report,
        mut walked,
        cut,
    } = scan;
    let heads = read_heads(t, &mut report)?;
    let mut sessions: BTreeSet<SessionId> = heads.keys().copied().collect();
    sessions.extend(walked.keys().copied());
    sessions.extend(unbounded_sessions(t, &walked, &mut report));
    let mut cut_now = cut;
    for s in sessions {
        if cut_now.contains(&s) {
            continue;
        }
        let mut walk = walked.remove(&s).unwrap_or_else(|| Walk::start(s));
        if !walk_session(t, &mut report, s, Seq::MAX, &mut walk)? {
            cut_now.insert(s);
        }
        if walk.last > 0 {
            walked.insert(s, walk);
        }
    }
    compare_heads(&heads, &walked, &cut_now, &mut report);
    check_runs(t, &heads, &mut report);
    for (s, walk) in &walked {
        if !heads.contains_key(s) {
            report.at(
                *s,
                walk.last,
                "head",
                "records stored without a head".into(),
            );
        }
        report.heads.insert(*s, walk.last);
    }
    report.sessions = heads
        .keys()
        .chain(walked.keys())
        .filter(|s| !ctxlog_core::is_description_stream(**s))
        .collect::<BTreeSet<_>>()
        .len() as u64;
    report.errors.sort_by_key(|e| (e.session, e.seq));
    Ok(report)
}

/// The sessions with records that the scan did not walk at all (new since
/// it started, or records without a head): their first keys, found by
/// seeking past each walked session.
fn unbounded_sessions(
    t: &Trees,
    walked: &BTreeMap<SessionId, Walk>,
    report: &mut VerifyReport,
) -> Vec<SessionId> {
    let mut out = Vec::new();
    let mut from = record::key(SessionId(uuid::Uuid::nil()), 0).to_vec();
    loop {
        let next = match t.events.range(from.as_slice()..).next() {
            None => break,
            Some(Ok((k, _))) => k,
            Some(Err(e)) => {
                sled_unreadable(report, &e, "events", None);
                break;
            }
        };
        let Some((session, _)) = record::parse_key(&next) else {
            // A key of another length (reported by the scan): step past it.
            from = next.to_vec();
            from.push(0);
            continue;
        };
        if !walked.contains_key(&session) {
            out.push(session);
        }
        match session.0.as_u128().checked_add(1) {
            Some(n) => from = record::key(SessionId(uuid::Uuid::from_u128(n)), 0).to_vec(),
            None => break,
        }
    }
    out
}

/// Every head that decodes; the others are reported.
fn read_heads(
    t: &Trees,
    report: &mut VerifyReport,
) -> Result<BTreeMap<SessionId, (Seq, Chain)>, StoreError> {
    let mut heads = BTreeMap::new();
    for kv in t.heads.iter() {
        let (k, v) = match kv {
            Ok(kv) => kv,
            Err(e) => {
                sled_unreadable(report, &e, "heads", None);
                break;
            }
        };
        match session_of(&k).and_then(|s| Ok((s, decode_head(s, &v)?))) {
            Ok((s, h)) => {
                heads.insert(s, h);
            }
            Err(e) => report.unplaced("head", e.to_string()),
        }
    }
    Ok(heads)
}

/// Where the walk through one session's records stands.
struct Walk {
    /// The last seq seen.
    last: Seq,
    /// The chain the next record must continue from.
    chain: Chain,
    /// Whether that chain can be trusted: not after a gap or a record that
    /// did not decode.
    trusted: bool,
    /// Whether the last value was a pack whose framing did not read: the
    /// seqs it held are not reported missing again.
    after_broken_pack: bool,
}

impl Walk {
    fn start(session: SessionId) -> Walk {
        Walk {
            last: 0,
            chain: record::genesis(session),
            trusted: true,
            after_broken_pack: false,
        }
    }

    /// Checks the records of the value `v` stored under (`session`,
    /// `first`) from seq `from` up to `upto`.
    fn check_value(
        &mut self,
        t: &Trees,
        report: &mut VerifyReport,
        (session, first): (SessionId, Seq),
        v: &[u8],
        (from, upto): (Seq, Seq),
    ) {
        let unpacked = pack::unpack(v);
        for (seq, r) in unpacked.numbered(first) {
            if seq < from {
                continue;
            }
            if seq > upto {
                return;
            }
            report.events += 1;
            self.check(t, report, (session, seq), &v[r]);
        }
        if let Some(problem) = unpacked.damage {
            let seq = first.saturating_add(unpacked.records.len() as Seq);
            if seq >= from && seq <= upto {
                report.events += 1;
                report.at(
                    session,
                    seq,
                    "record",
                    format!("{problem}: the records packed from here do not read"),
                );
                self.trusted = false;
                self.last = seq;
                self.after_broken_pack = true;
            }
        }
    }

    /// Checks the record `v` at (`session`, `seq`).
    fn check(
        &mut self,
        t: &Trees,
        report: &mut VerifyReport,
        (session, seq): (SessionId, Seq),
        v: &[u8],
    ) {
        if seq > self.last.saturating_add(1) && !self.after_broken_pack {
            // seq ≥ last + 2 here, so neither bound overflows.
            let missing = if seq - self.last == 2 {
                format!("record missing (seq {} absent)", self.last + 1)
            } else {
                format!(
                    "records missing (seq {} to {} absent)",
                    self.last + 1,
                    seq - 1
                )
            };
            report.at(session, self.last + 1, "missing", missing);
            self.trusted = false;
        }
        self.after_broken_pack = false;
        match record::decode(v, session, seq) {
            Ok(d) => {
                if self.trusted && !d.chain_follows(&self.chain, v) {
                    report.at(session, seq, "record", RecordProblem::Chain.to_string());
                }
                match index::holds(t, &d.envelope.id, session, seq) {
                    Ok(true) => {}
                    Ok(false) => report.at(session, seq, "index", RecordProblem::Index.to_string()),
                    Err((tree, e)) => {
                        sled_unreadable(report, &e, tree, Some((session, seq.saturating_sub(1))))
                    }
                }
                self.chain = d.chain;
                self.trusted = true;
            }
            Err(p) => {
                // One bad record is one error: the next one's chain is not
                // checked against bytes that could not be read.
                report.at(session, seq, "record", p.to_string());
                self.trusted = false;
            }
        }
        self.last = seq;
    }
}

/// The scan calls its `pace` once per this many records.
const PACE_EVERY: u64 = crate::pace::CHUNK as u64;

/// Walks every record in key order into `finished` (where each session's
/// walk ended). When sled cannot read on, `Some(session it was in)`.
fn walk_records(
    t: &Trees,
    report: &mut VerifyReport,
    bound: &BTreeMap<SessionId, Seq>,
    finished: &mut BTreeMap<SessionId, Walk>,
    pace: &mut dyn FnMut(),
) -> Result<Option<Option<SessionId>>, StoreError> {
    let mut cur: Option<(SessionId, Walk)> = None;
    let mut broken = None;
    for kv in Values::new(&t.events, Vec::new(), None) {
        let (k, v) = match kv {
            Ok(kv) => kv,
            Err(e) => {
                let after = cur.as_ref().map(|(s, walk)| (*s, walk.last));
                sled_unreadable(report, &e, "events", after);
                broken = Some(after.map(|(s, _)| s));
                break;
            }
        };
        let Some((session, first)) = record::parse_key(&k) else {
            report.events += 1;
            report.unplaced("record", format!("record key of {} bytes", k.len()));
            continue;
        };
        let upto = bound.get(&session).copied().unwrap_or(0);
        if first > upto {
            continue; // left to `finish`
        }
        let before = report.events;
        let mut walk = match cur.take() {
            Some((s, walk)) if s == session => walk,
            other => {
                if let Some((s, walk)) = other {
                    finished.insert(s, walk);
                }
                Walk::start(session)
            }
        };
        walk.check_value(t, report, (session, first), &v, (first, upto));
        if before / PACE_EVERY != report.events / PACE_EVERY {
            pace();
        }
        cur = Some((session, walk));
    }
    if let Some((s, walk)) = cur {
        finished.insert(s, walk);
    }
    Ok(broken)
}

/// Walks the records of `session` after `walk.last`, up to seq `upto`;
/// false when sled could not read all of them (reported).
fn walk_session(
    t: &Trees,
    report: &mut VerifyReport,
    session: SessionId,
    upto: Seq,
    walk: &mut Walk,
) -> Result<bool, StoreError> {
    let Some(from) = walk.last.checked_add(1) else {
        return Ok(true);
    };
    if from > upto {
        return Ok(true);
    }
    let values = match t.values_from(session, from, upto) {
        Ok(values) => values,
        Err(e) => match sled_cause(&e) {
            Some(sled) => {
                sled_unreadable(report, sled, "events", Some((session, walk.last)));
                return Ok(false);
            }
            None => return Err(e),
        },
    };
    for kv in values {
        let (k, v) = match kv {
            Ok(kv) => kv,
            Err(e) => {
                sled_unreadable(report, &e, "events", Some((session, walk.last)));
                return Ok(false);
            }
        };
        match record::parse_key(&k).filter(|(s, _)| *s == session) {
            Some((s, first)) => {
                let from = walk.last.saturating_add(1);
                walk.check_value(t, report, (s, first), &v, (from, upto));
            }
            None => report.events += 1,
        }
    }
    Ok(true)
}

/// Each run of the id index against its session's head: a run past the
/// head would answer for ids that are not stored.
fn check_runs(t: &Trees, heads: &BTreeMap<SessionId, (Seq, Chain)>, report: &mut VerifyReport) {
    for r in index::runs(t) {
        match r {
            Ok((_, run)) => {
                let head = heads.get(&run.session).map_or(0, |h| h.0);
                if run.last > head {
                    report.at(
                        run.session,
                        head.max(run.first - 1) + 1,
                        "index",
                        format!(
                            "the id index holds seqs {} to {} as one run, past head {head}",
                            run.first, run.last
                        ),
                    );
                }
            }
            Err(e) => match sled_cause(&e) {
                Some(sled) => {
                    sled_unreadable(report, sled, "id-runs", None);
                    break;
                }
                None => report.unplaced("index", e.to_string()),
            },
        }
    }
}

/// Each head against the last record of its session (but for the sessions
/// in `cut`).
fn compare_heads(
    heads: &BTreeMap<SessionId, (Seq, Chain)>,
    walked: &BTreeMap<SessionId, Walk>,
    cut: &BTreeSet<SessionId>,
    report: &mut VerifyReport,
) {
    // A session sled could not read to its end is reported as such already.
    for (s, (head, head_chain)) in heads.iter().filter(|(s, _)| !cut.contains(*s)) {
        let Some(walk) = walked.get(s) else {
            report.at(
                *s,
                1,
                "head",
                format!("head is {head} but no record is stored"),
            );
            continue;
        };
        let last = walk.last;
        if last < *head {
            report.at(
                *s,
                last + 1,
                "head",
                format!("head is {head} but the last record is seq {last}"),
            );
        } else if last > *head {
            report.at(*s, head + 1, "head", format!("record beyond head {head}"));
        } else if walk.trusted && walk.chain != *head_chain {
            report.at(
                *s,
                *head,
                "head",
                "head chain differs from the last record".into(),
            );
        }
    }
}
