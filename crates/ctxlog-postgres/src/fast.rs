//! The usual append in one round trip: the records are encoded from the
//! head this process last saw (or read), and one call of `ctxlog_append`
//! (`schema.rs`) checks that head under the session's lock and stores
//! them. A head that moved meanwhile comes back with the call; ids already
//! stored, or a race on a unique key, send the append down the
//! transaction path of `append.rs`, which answers retries.

use crate::append::{chain_of, seq_of, sql_seq, SESSION_LOCKS};
use crate::error::{backend, is_unique_violation};
use crate::pool::Conn;
use crate::target::Target;
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::record::{self, Chain};
use ctxlog_store::{AppendError, NewEvent, ReadError};

/// What the call came to.
pub(crate) enum Called {
    /// Stored: the new head and its chain.
    Stored(Seq, Chain),
    /// The head is not the one the records were encoded from: it is this.
    Moved(Seq, Chain),
    /// Some ids are stored already, or another writer stored them meanwhile.
    TakeTheSlowPath,
}

const CALL: &str =
    "SELECT o_status, o_head, o_chain FROM ctxlog_append($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const HEAD: &str = "SELECT seq, chain FROM ctxlog_heads WHERE session = $1";

/// The session's head and its chain as stored (`0` and the genesis chain
/// for a session with no events).
pub(crate) fn head(
    conn: &mut Conn,
    target: &Target,
    session: SessionId,
) -> Result<(Seq, Chain), ReadError> {
    let read = |e: postgres::Error| ReadError::Backend(backend(target, "cannot read a head", e));
    let statement = conn.prepared(HEAD).map_err(read)?;
    let row = conn
        .client
        .query_opt(&statement, &[&session.0])
        .map_err(read)?;
    match row {
        Some(r) if r.get::<_, i64>(0) > 0 => Ok((seq_of(r.get(0))?, chain_of(session, r.get(1))?)),
        _ => Ok((0, record::genesis(session))),
    }
}

/// Encodes `events` after `(head, chain)` and calls `ctxlog_append`.
pub(crate) fn call(
    conn: &mut Conn,
    target: &Target,
    session: SessionId,
    (head, chain): (Seq, Chain),
    events: &[NewEvent],
) -> Result<Called, AppendError> {
    let sql = |what: &'static str| {
        move |e: postgres::Error| AppendError::Backend(backend(target, what, e))
    };
    let mut seqs = Vec::with_capacity(events.len());
    let mut ids = Vec::with_capacity(events.len());
    let mut kinds = Vec::with_capacity(events.len());
    let mut records = Vec::with_capacity(events.len());
    let mut last_chain = chain;
    for (seq, e) in (head + 1..).zip(events) {
        let envelope = e.at(session, seq);
        let (bytes, next) = record::encode(&envelope, &last_chain)
            .map_err(|source| AppendError::Encode { id: e.id, source })?;
        seqs.push(sql_seq(seq)?);
        ids.push(e.id.0);
        kinds.push(i16::from(envelope.event.kind_index()));
        records.push(bytes);
        last_chain = next;
    }
    let statement = conn
        .prepared(CALL)
        .map_err(sql("cannot prepare an append"))?;
    let row = conn.client.query_one(
        &statement,
        &[
            &session.0,
            &sql_seq(head)?,
            &chain.as_slice(),
            &seqs,
            &ids,
            &kinds,
            &records,
            &last_chain.as_slice(),
            &SESSION_LOCKS,
        ],
    );
    let row = match row {
        Err(e) if is_unique_violation(&e) => return Ok(Called::TakeTheSlowPath),
        other => other.map_err(|e| {
            AppendError::Backend(backend(
                target,
                "the append failed (if the connection was lost while it committed, it may be \
                 stored: retrying it with the same event ids is safe)",
                e,
            ))
        })?,
    };
    let status: &str = row.get(0);
    let at = seq_of(row.get(1))?;
    let at_chain = if at == 0 {
        record::genesis(session)
    } else {
        chain_of(session, row.get(2))?
    };
    Ok(match status {
        "ok" => Called::Stored(at, at_chain),
        "moved" => Called::Moved(at, at_chain),
        _ => Called::TakeTheSlowPath,
    })
}
