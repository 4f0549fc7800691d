//! The slow path of an append (the usual one is `fast.rs`): one
//! transaction that takes the session's lock and its head row, answers a
//! retry of stored ids with their original position, checks the expected
//! version, inserts the records chained from the head and moves the head.
//! Nothing is stored unless it commits.

use crate::error::{backend, is_unique_violation};
use crate::target::Target;
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::backend::{check_expected, repeated_id, retried_position};
use ctxlog_store::record::{self, Chain};
use ctxlog_store::{AppendError, Appended, Expected, NewEvent, ReadError};
use postgres::Client;
use std::collections::BTreeMap;
use uuid::Uuid;

/// The first key of the advisory locks that queue a session's appends
/// (the second is a hash of the session id).
pub(crate) const SESSION_LOCKS: i32 = 0x6374_786c;

/// What an attempt came to: done, or lost a race on a unique key to a
/// writer of the same ids (the caller tries once more, and then finds them).
pub(crate) enum Attempt {
    Done(Appended),
    Raced,
}

/// A seq as the database keeps it (`bigint`).
pub(crate) fn sql_seq(seq: Seq) -> Result<i64, ReadError> {
    i64::try_from(seq)
        .map_err(|_| ReadError::Damaged(format!("seq {seq} is beyond the log's range")))
}

/// A stored seq back as ctxlog's.
pub(crate) fn seq_of(v: i64) -> Result<Seq, ReadError> {
    Seq::try_from(v).map_err(|_| ReadError::Damaged(format!("a negative seq ({v}) is stored")))
}

/// A stored chain value.
pub(crate) fn chain_of(session: SessionId, bytes: &[u8]) -> Result<Chain, ReadError> {
    Chain::try_from(bytes).map_err(|_| {
        ReadError::Damaged(format!(
            "session {session}: its head's chain is {} bytes",
            bytes.len()
        ))
    })
}

/// Appends `events` to `session` if its head is `expected` (see
/// `EventLog::append`).
pub(crate) fn append(
    client: &mut Client,
    target: &Target,
    session: SessionId,
    expected: Expected,
    events: &[NewEvent],
) -> Result<Attempt, AppendError> {
    let sql = |what: &'static str| {
        move |e: postgres::Error| AppendError::Backend(backend(target, what, e))
    };
    let sid = session.0;
    let mut tx = client
        .transaction()
        .map_err(sql("cannot begin an append"))?;
    let (head, mut chain) = locked_head(&mut tx, target, session)?;

    if let Some(done) = retried(&mut tx, target, session, events)? {
        return Ok(Attempt::Done(done));
    }
    check_expected(session, expected, head)?;

    let mut seqs = Vec::with_capacity(events.len());
    let mut ids = Vec::with_capacity(events.len());
    let mut kinds = Vec::with_capacity(events.len());
    let mut records = Vec::with_capacity(events.len());
    for (seq, e) in (head + 1..).zip(events) {
        let envelope = e.at(session, seq);
        let (bytes, next) = record::encode(&envelope, &chain)
            .map_err(|source| AppendError::Encode { id: e.id, source })?;
        seqs.push(sql_seq(seq)?);
        ids.push(e.id.0);
        kinds.push(i16::from(envelope.event.kind_index()));
        records.push(bytes);
        chain = next;
    }
    let last = head + events.len() as Seq;
    let inserted = tx.execute(
        "INSERT INTO ctxlog_events (session, seq, id, kind, record) \
         SELECT $1, * FROM unnest($2::bigint[], $3::uuid[], $4::smallint[], $5::bytea[])",
        &[&sid, &seqs, &ids, &kinds, &records],
    );
    match inserted {
        Err(e) if is_unique_violation(&e) => return Ok(Attempt::Raced),
        other => other.map_err(sql("cannot insert the events"))?,
    };
    tx.execute(
        "UPDATE ctxlog_heads SET seq = $2, chain = $3 WHERE session = $1",
        &[&sid, &sql_seq(last)?, &chain.as_slice()],
    )
    .map_err(sql("cannot move the session's head"))?;
    tx.commit().map_err(|e| {
        AppendError::Backend(backend(
            target,
            "the commit's outcome is unknown (the append may be stored or not; \
             retrying it with the same event ids is safe)",
            e,
        ))
    })?;
    Ok(Attempt::Done(Appended {
        session,
        first: head + 1,
        last,
        duplicate: false,
    }))
}

/// Takes `session`'s lock and its head row in `tx`: its head and the chain
/// of its last record (the genesis chain for a new session).
fn locked_head(
    tx: &mut postgres::Transaction<'_>,
    target: &Target,
    session: SessionId,
) -> Result<(Seq, Chain), AppendError> {
    let sql = |what: &'static str| {
        move |e: postgres::Error| AppendError::Backend(backend(target, what, e))
    };
    let sid = session.0;
    // First, before anything gives the transaction an id: appends to one
    // session queue here, so a later append's transaction id is always
    // greater than that of the append before it, and the order
    // subscriptions read (`tail.rs`) keeps each session's seq order.
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&SESSION_LOCKS, &session.to_string()],
    )
    .map_err(sql("cannot lock the session"))?;
    tx.execute(
        "INSERT INTO ctxlog_heads (session, seq, chain) VALUES ($1, 0, $2) \
         ON CONFLICT (session) DO NOTHING",
        &[&sid, &record::genesis(session).as_slice()],
    )
    .map_err(sql("cannot lock the session's head"))?;
    let row = tx
        .query_one(
            "SELECT seq, chain FROM ctxlog_heads WHERE session = $1 FOR UPDATE",
            &[&sid],
        )
        .map_err(sql("cannot lock the session's head"))?;
    let head = seq_of(row.get::<_, i64>(0))?;
    let chain = chain_of(session, row.get::<_, &[u8]>(1))?;
    Ok((head, chain))
}

/// A batch whose ids are already stored: its original position when it is
/// a retry of the same events, else the refusal `EventLog::append`
/// promises; `None` when none of its ids is stored.
fn retried(
    tx: &mut postgres::Transaction<'_>,
    target: &Target,
    session: SessionId,
    events: &[NewEvent],
) -> Result<Option<Appended>, AppendError> {
    if let Some(id) = repeated_id(events) {
        return Err(AppendError::PartialDuplicate { id });
    }
    let ids: Vec<Uuid> = events.iter().map(|e| e.id.0).collect();
    let rows = tx
        .query(
            "SELECT id, session, seq, record FROM ctxlog_events WHERE id = ANY($1)",
            &[&ids],
        )
        .map_err(|e| AppendError::Backend(backend(target, "cannot look up the event ids", e)))?;
    if rows.is_empty() {
        return Ok(None);
    }
    let mut found: BTreeMap<Uuid, (SessionId, Seq, Vec<u8>)> = BTreeMap::new();
    for row in rows {
        let seq = seq_of(row.get::<_, i64>(2))?;
        found.insert(row.get(0), (SessionId(row.get(1)), seq, row.get(3)));
    }
    let stored: Vec<(&NewEvent, SessionId, Seq)> = events
        .iter()
        .filter_map(|e| found.get(&e.id.0).map(|(s, q, _)| (e, *s, *q)))
        .collect();
    retried_position(
        session,
        events,
        &stored,
        |e| e,
        |e, s, seq| {
            let bytes = &found[&e.id.0].2;
            let decoded = record::decode(bytes, s, seq).map_err(|problem| {
                AppendError::Read(ReadError::Corrupt {
                    session: s,
                    seq,
                    problem,
                })
            })?;
            Ok(e.is_stored_as(&decoded.envelope))
        },
    )
}
