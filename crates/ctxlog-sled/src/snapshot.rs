//! Snapshots: a cache of derived states, never the truth.
//!
//! Key: session (16 bytes) ‖ reducer version (u32 BE) ‖ seq (u64 BE).
//! Value: [`record::snapshot_value`] (the chain of the record at seq ‖ the
//! state's bytes ‖ CRC32C). A snapshot whose chain no longer matches the
//! log, whose key or value does not decode, or of another reducer version
//! is never given back (the state is replayed instead).

use crate::errors::from_sled;
use crate::trees::Trees;
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::record;
use ctxlog_store::{Snapshot, StoreError};

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

/// Keeps `snapshot` (keyed by session, reducer version and seq; older
/// snapshots of the session are dropped). Nothing is kept when the record
/// at its head is not stored and sound.
pub(crate) fn save(trees: &Trees, snapshot: Snapshot) -> Result<(), StoreError> {
    let session = snapshot.session;
    // The chain of the record at the snapshot's head ties the snapshot to
    // the log it was derived from.
    let Some(chain) = trees.chain_at(session, snapshot.head)? else {
        return Ok(());
    };
    let mut batch = sled::Batch::default();
    for old in trees.snapshots.scan_prefix(session.as_bytes()).keys() {
        batch.remove(old.map_err(from_sled)?);
    }
    batch.insert(
        key(session, snapshot.version, snapshot.head),
        record::snapshot_value(&chain, &snapshot.state),
    );
    trees.snapshots.apply_batch(batch).map_err(from_sled)?;
    Ok(())
}

/// The newest snapshot of `session` of reducer `version`, at or below
/// `head`, whose value is sound and whose chain still matches the log;
/// `None` if there is none.
pub(crate) fn newest_usable(
    trees: &Trees,
    session: SessionId,
    version: u32,
    head: Seq,
) -> Result<Option<Snapshot>, StoreError> {
    for kv in trees.snapshots.scan_prefix(prefix(session, version)).rev() {
        let (k, v) = kv.map_err(from_sled)?;
        let Some(seq) = seq_of(&k) else {
            tracing::warn!(%session, "snapshot with a damaged key ignored");
            continue;
        };
        if seq > head {
            continue;
        }
        match record::parse_snapshot_value(&v) {
            Some((chain, state)) if trees.chain_at(session, seq)? == Some(chain) => {
                return Ok(Some(Snapshot {
                    session,
                    head: seq,
                    version,
                    state: state.to_vec(),
                }));
            }
            _ => tracing::warn!(%session, seq, "snapshot unusable; falling back to replay"),
        }
    }
    Ok(None)
}
