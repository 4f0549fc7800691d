//! Every session's events in one order, from a checkpoint: the log's tail,
//! for subscribers across processes and hosts.
//!
//! Each row carries its global `position` (an identity) and the id of the
//! transaction that wrote it (`tx`, `pg_current_xact_id()`). Positions
//! are taken when rows are inserted, not when they commit, so a reader that
//! went by position alone would pass over a row whose transaction commits
//! late (Marten's daemon did). The tail is read in `(tx, position)` order
//! and only below the oldest transaction still running
//! (`pg_snapshot_xmin(pg_current_snapshot())`): every transaction below it
//! has ended, so nothing can ever appear before a [`Position`] already
//! delivered. The same pattern as Emmett's and the Python `eventsourcing`
//! library's PostgreSQL stores.
//!
//! What the order promises: each session's events in seq order (appends
//! to one session queue on a lock taken before their transaction has an
//! id, so a later append has a greater one); an append that began after
//! another was acknowledged comes after it; every subscriber sees one and
//! the same order. A transaction that stays open (ctxlog's or any other
//! client's) holds the tail back until it ends.

use crate::append::seq_of;
use crate::error::backend;
use crate::log::PgLog;
use ctxlog_core::{Envelope, SessionId};
use ctxlog_store::{record, Followable, ReadError, Subscription};
use std::time::Duration;

/// A place in the tail's order: the writing transaction's id, then the
/// row's position. `Position::default()` is before every event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    /// The id of the transaction that wrote the event (`xid8`).
    pub tx: u64,
    /// The event's row position.
    pub position: i64,
}

impl PgLog {
    /// At most `limit` events after `after`, in the tail's order (see the
    /// module doc), each with its position (the checkpoint to keep).
    pub fn events_after(
        &self,
        after: Position,
        limit: usize,
    ) -> Result<Vec<(Position, Envelope)>, ReadError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let target = self.inner().pool.target();
        let rows = self.inner().pool.with(|c| {
            c.query(
                "SELECT tx::text, position, session, seq, record FROM ctxlog_events \
                 WHERE (tx, position) > ($1::text::xid8, $2) \
                   AND tx < pg_snapshot_xmin(pg_current_snapshot()) \
                 ORDER BY tx, position LIMIT $3",
                &[&after.tx.to_string(), &after.position, &limit],
            )
            .map_err(|e| ReadError::Backend(backend(target, "cannot read the tail", e)))
        })?;
        rows.into_iter()
            .map(|row| {
                let tx: &str = row.get(0);
                let tx = tx.parse().map_err(|_| {
                    ReadError::Damaged(format!("a transaction id {tx:?} is stored"))
                })?;
                let session = SessionId(row.get(2));
                let seq = seq_of(row.get(3))?;
                let decoded = record::decode(row.get(4), session, seq).map_err(|problem| {
                    ReadError::Corrupt {
                        session,
                        seq,
                        problem,
                    }
                })?;
                let position = Position {
                    tx,
                    position: row.get(1),
                };
                Ok((position, decoded.envelope))
            })
            .collect()
    }

    /// A follower of the tail from `after`.
    pub fn tail(&self, after: Position) -> Tail {
        Tail {
            sub: self.subscribe(),
            log: self.clone(),
            after,
        }
    }
}

/// Follows the log's tail (see the module doc) from a checkpoint.
pub struct Tail {
    log: PgLog,
    sub: Subscription,
    after: Position,
}

/// Events read per poll.
const BATCH: usize = 1024;

impl Tail {
    /// The events after the checkpoint, waiting up to `timeout` for some
    /// when there are none yet; the checkpoint moves past those returned.
    pub fn poll(&mut self, timeout: Duration) -> Result<Vec<(Position, Envelope)>, ReadError> {
        let found = self.read()?;
        if !found.is_empty() {
            return Ok(found);
        }
        // A wake-up, or the timeout: a transaction that held the tail back
        // may have ended without ringing.
        let _ = self.sub.recv_timeout(timeout);
        self.read()
    }

    /// The checkpoint: the last position delivered.
    pub fn checkpoint(&self) -> Position {
        self.after
    }

    fn read(&mut self) -> Result<Vec<(Position, Envelope)>, ReadError> {
        let found = self.log.events_after(self.after, BATCH)?;
        if let Some((last, _)) = found.last() {
            self.after = *last;
        }
        Ok(found)
    }
}
