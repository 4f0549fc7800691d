//! Snapshots: a cache of derived states, never the truth.
//!
//! Key: session (16 bytes) ‖ reducer version (u32 BE) ‖ seq (u64 BE).
//! Value: [`record::snapshot_value`] (the chain of the record at seq ‖ the
//! state ‖ CRC32C). A snapshot whose chain no longer matches the log,
//! whose key or value does not decode, or of another reducer version is
//! ignored, and the state is replayed instead.

use crate::errors::from_sled;
use crate::trees::Trees;
use ctxlog_core::{Seq, SessionId, SessionState, REDUCER_VERSION};
use ctxlog_store::record;
use ctxlog_store::StoreError;

/// Length of a snapshot key.
const KEY_LEN: usize = 16 + 4 + 8;

fn key(session: SessionId, version: u32, seq: Seq) -> Vec<u8> {
    let mut k = prefix(session, version);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// The keys of one session's snapshots of one reducer version.
fn prefix(session: SessionId, version: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(KEY_LEN);
    k.extend_from_slice(session.as_bytes());
    k.extend_from_slice(&version.to_be_bytes());
    k
}

/// The seq named by a snapshot key; `None` if it is not a snapshot key.
fn seq_of(k: &[u8]) -> Option<Seq> {
    if k.len() != KEY_LEN {
        return None;
    }
    k.split_last_chunk::<8>()
        .map(|(_, seq)| Seq::from_be_bytes(*seq))
}

/// Saves a snapshot of `state` (keyed by session, reducer version and seq;
/// older snapshots of the session are dropped). Nothing is saved for a state
/// of no session or whose head record is not stored and sound.
pub(crate) fn save(trees: &Trees, state: &SessionState) -> Result<(), StoreError> {
    let Some(session) = state.session else {
        return Ok(());
    };
    // The chain of the record at the snapshot's head ties the snapshot to
    // the log it was derived from.
    let Some(chain) = trees.chain_at(session, state.head)? else {
        return Ok(());
    };
    let mut batch = sled::Batch::default();
    for old in trees.snapshots.scan_prefix(session.as_bytes()).keys() {
        batch.remove(old.map_err(from_sled)?);
    }
    batch.insert(
        key(session, REDUCER_VERSION, state.head),
        record::snapshot_value(&chain, state),
    );
    trees.snapshots.apply_batch(batch).map_err(from_sled)?;
    Ok(())
}

/// The newest snapshot of `session` for this reducer version, at or below
/// `head`, that decodes and still matches the log; `None` if there is none.
pub(crate) fn newest_usable(
    trees: &Trees,
    session: SessionId,
    head: Seq,
) -> Result<Option<SessionState>, StoreError> {
    for kv in trees
        .snapshots
        .scan_prefix(prefix(session, REDUCER_VERSION))
        .rev()
    {
        let (k, v) = kv.map_err(from_sled)?;
        let Some(seq) = seq_of(&k) else {
            tracing::warn!(%session, "snapshot with a damaged key ignored");
            continue;
        };
        if seq > head {
            continue;
        }
        match record::parse_snapshot_value(&v) {
            Some((chain, state))
                if state.session == Some(session)
                    && state.head == seq
                    && trees.chain_at(session, seq)? == Some(chain) =>
            {
                return Ok(Some(state));
            }
            _ => tracing::warn!(%session, seq, "snapshot unusable; falling back to replay"),
        }
    }
    Ok(None)
}
