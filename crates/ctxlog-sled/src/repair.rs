//! The marker of recent writes, and what the next open does when a crash
//! cut an append short.
//!
//! Before the committer first writes to a session, the marker (in `meta`)
//! is rewritten to name it among the sessions written since the marker was
//! last cleared (see `append.rs` for why there is no transaction). sled
//! recovers a prefix of its log, so after a crash every session that may
//! hold records past its head (an append whose head was never written,
//! hence never acknowledged as durable) is named by the marker.
//! [`finish_cut_appends`] removes exactly those records, newest first, so
//! that a crash while it works leaves what it can finish on the next open.
//! The committer clears the marker after a flush once it names more than
//! [`MARKED_MAX`] sessions, and after its last flush when the store
//! closes: a lone session costs one marker write and one removal per
//! process, and opening after a crash checks at most that many sessions
//! (plus a group's).

use crate::errors::damaged;
use crate::errors::from_sled;
use crate::index;
use crate::trees::Trees;
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::pack;
use ctxlog_store::record;
use ctxlog_store::StoreError;
use uuid::Uuid;

/// The `meta` key of the marker.
const MARKER_KEY: &[u8] = b"sessions-being-written";

/// The most sessions the marker names before a flush clears it.
pub(crate) const MARKED_MAX: usize = 64;

/// Writes the marker naming `sessions`.
pub(crate) fn mark(
    trees: &Trees,
    sessions: &std::collections::BTreeSet<SessionId>,
) -> Result<(), sled::Error> {
    let mut value = Vec::with_capacity(sessions.len() * 16);
    for s in sessions {
        value.extend_from_slice(s.as_bytes());
    }
    trees.meta.insert(MARKER_KEY, value)?;
    Ok(())
}

/// Removes the marker (after a flush: every append before it is whole).
pub(crate) fn unmark(trees: &Trees) -> Result<(), sled::Error> {
    trees.meta.remove(MARKER_KEY)?;
    Ok(())
}

/// When the marker is there, removes what appends to the sessions it names
/// wrote past their heads: the records that follow the head
/// without a gap and whose chain continues from it, and the index entries
/// that point at them. Anything else past a head is left for `verify` to
/// report; what was removed is logged.
pub(crate) fn finish_cut_appends(trees: &Trees) -> Result<(), StoreError> {
    let Some(marker) = trees.meta.get(MARKER_KEY).map_err(from_sled)? else {
        return Ok(());
    };
    for chunk in marker.chunks(16) {
        let Ok(bytes) = <[u8; 16]>::try_from(chunk) else {
            return Err(damaged(format!(
                "the marker of sessions being written is {} bytes, not a list of session ids",
                marker.len()
            )));
        };
        let session = SessionId(Uuid::from_bytes(bytes));
        if let Some((first, last)) = remove_past_head(trees, session)? {
            tracing::warn!(
                session = %session,
                "removed seqs {first}–{last}: an append a crash cut short before its head was written (never acknowledged as durable)",
            );
        }
    }
    unmark(trees).map_err(from_sled)?;
    trees.db.flush().map_err(from_sled)?;
    Ok(())
}

/// Removes the records of `session` that continue its chain past its head
/// (whole values: a pack is removed only when all of it does), and what
/// the index holds of them; the first and last seq removed, if any.
fn remove_past_head(trees: &Trees, session: SessionId) -> Result<Option<(Seq, Seq)>, StoreError> {
    let (head, mut chain) = trees
        .head(session)?
        .unwrap_or_else(|| (0, record::genesis(session)));
    let mut values = Vec::new();
    let mut ids = Vec::new();
    // A head at `Seq::MAX` (only damage says so) has nothing past it.
    let Some(mut expect) = head.checked_add(1) else {
        return Ok(None);
    };
    let range = record::key(session, expect)..=record::key(session, Seq::MAX);
    'values: for kv in trees.events.range(range) {
        let (k, v) = kv.map_err(from_sled)?;
        if record::parse_key(&k) != Some((session, expect)) {
            break;
        }
        let unpacked = pack::unpack(&v);
        if unpacked.damage.is_some() {
            break;
        }
        let (mut next_chain, mut next_ids) = (chain, Vec::new());
        for (seq, r) in unpacked.numbered(expect) {
            let bytes = &v[r];
            match record::decode(bytes, session, seq) {
                Ok(d) if d.chain_follows(&next_chain, bytes) => {
                    next_chain = d.chain;
                    next_ids.push((seq, d.envelope.id));
                }
                _ => break 'values,
            }
        }
        if next_ids.len() != unpacked.records.len() {
            break; // seqs past `Seq::MAX`: damage, left for `verify`
        }
        chain = next_chain;
        expect = expect.saturating_add(next_ids.len() as Seq);
        ids.extend(next_ids);
        values.push(k);
    }
    index::forget_past_head(trees, session, head, &ids)?;
    if values.is_empty() {
        return Ok(None);
    }
    for k in values.iter().rev() {
        trees.events.remove(k).map_err(from_sled)?;
    }
    Ok(Some((head + 1, expect - 1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::append::Appender;
    use crate::fixture::{events, fresh_trees};
    use crate::SledStore;
    use ctxlog_store::NewEvent;
    use ctxlog_store::{EventLog, Expected};
    use std::collections::BTreeSet;

    /// A store at a fresh directory holding three events of a session
    /// whose next two events were written past its head, as a crash
    /// between their records and their head leaves them; the marker is
    /// left when `marked`. (session, the five events, directory).
    fn cut_append(marked: bool) -> (SessionId, Vec<NewEvent>, std::path::PathBuf) {
        let (dir, trees) = fresh_trees(&format!("repair-{marked}"));
        let (session, events) = events(5, 5);
        let mut appender = Appender::new(&trees);
        appender
            .append(&trees, session, Expected::NoStream, events[..3].to_vec())
            .unwrap();
        let head = trees.heads.get(session.as_bytes()).unwrap().unwrap();
        if marked {
            mark(&trees, &BTreeSet::from([session])).unwrap();
        }
        appender
            .append(&trees, session, Expected::Exactly(3), events[3..].to_vec())
            .unwrap();
        trees.heads.insert(session.as_bytes(), head).unwrap();
        trees.db.flush().unwrap();
        drop(trees);
        (session, events, dir)
    }

    #[test]
    fn records_a_crash_left_past_a_marked_head_are_removed_at_open() {
        let (session, events, dir) = cut_append(true);
        let store = SledStore::open(&dir).unwrap();
        assert_eq!(store.head(session).unwrap(), 3);
        assert_eq!(store.read(session, 1).unwrap().count(), 3);
        let report = store.verify().unwrap();
        assert!(report.ok(), "{:?}", report.errors);
        // Their ids went with them: the same events append as new ones.
        let again = store
            .append(session, Expected::Exactly(3), events[3..].to_vec())
            .unwrap();
        assert_eq!((again.first, again.last, again.duplicate), (4, 5, false));
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn without_the_marker_records_past_a_head_are_left_for_verify_to_report() {
        let (session, _, dir) = cut_append(false);
        let store = SledStore::open(&dir).unwrap();
        // Never read as part of the session...
        assert_eq!(store.read(session, 1).unwrap().count(), 3);
        // ...and reported, not removed.
        let report = store.verify().unwrap();
        assert!(
            report
                .errors
                .iter()
                .any(|e| e.session == Some(session) && e.seq == Some(4)),
            "{:?}",
            report.errors
        );
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
