//! The sled database of a store: its trees and the small values kept
//! besides the records (session keys and heads).
//!
//! Trees: `events` (record key → record, see [`record`](crate::record)),
//! `heads` (session → last seq ‖ chain of that record), `ids` (event id →
//! record key) and `snapshots` (see `snapshot.rs`).

use crate::error::StoreError;
use crate::record::{self, Chain};
use ctxlog_core::{Seq, SessionId};
use std::path::Path;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The trees, shared by the writer and the readers.
#[derive(Clone)]
pub(crate) struct Trees {
    pub(crate) db: sled::Db,
    pub(crate) events: sled::Tree,
    pub(crate) heads: sled::Tree,
    pub(crate) ids: sled::Tree,
    pub(crate) snapshots: sled::Tree,
    /// Small facts about the store itself (see `witness.rs`).
    pub(crate) meta: sled::Tree,
}

/// How long `open` waits for the database lock a just-closed store of this
/// process may still hold (sled releases it from a background thread).
const LOCK_WAIT: Duration = Duration::from_secs(3);

impl Trees {
    /// Opens (or creates) the database at `path` and its trees.
    pub(crate) fn open(path: &Path) -> Result<Trees, StoreError> {
        let db = open_db(path)?;
        Ok(Trees {
            events: db.open_tree("events")?,
            heads: db.open_tree("heads")?,
            ids: db.open_tree("ids")?,
            snapshots: db.open_tree("snapshots")?,
            meta: db.open_tree("meta")?,
            db,
        })
    }

    /// The session's head seq and chain, `None` for no stream.
    pub(crate) fn head(&self, session: SessionId) -> Result<Option<(Seq, Chain)>, StoreError> {
        match self.heads.get(session.as_bytes())? {
            Some(v) => Ok(Some(decode_head(session, &v)?)),
            None => Ok(None),
        }
    }

    /// Every session with its head seq, in session-id order.
    pub(crate) fn heads(&self) -> Result<Vec<(SessionId, Seq)>, StoreError> {
        let mut out = Vec::new();
        for kv in self.heads.iter() {
            let (k, v) = kv?;
            let session = session_of(&k)?;
            out.push((session, decode_head(session, &v)?.0));
        }
        Ok(out)
    }

    /// Every session with its head seq and chain, in session-id order.
    pub(crate) fn heads_with_chains(&self) -> Result<Vec<(SessionId, Seq, Chain)>, StoreError> {
        let mut out = Vec::new();
        for kv in self.heads.iter() {
            let (k, v) = kv?;
            let session = session_of(&k)?;
            let (seq, chain) = decode_head(session, &v)?;
            out.push((session, seq, chain));
        }
        Ok(out)
    }

    /// The chain value of the record at (`session`, `seq`), if it is stored
    /// and sound.
    pub(crate) fn chain_at(
        &self,
        session: SessionId,
        seq: Seq,
    ) -> Result<Option<Chain>, StoreError> {
        Ok(self
            .events
            .get(record::key(session, seq))?
            .and_then(|v| record::decode(&v, session, seq).ok())
            .map(|d| d.chain))
    }
}

fn open_db(path: &Path) -> Result<sled::Db, StoreError> {
    let started = Instant::now();
    loop {
        let opened = sled::Config::new()
            .path(path)
            // The writer flushes itself; sled's background flusher would
            // blur what "acknowledged" means.
            .flush_every_ms(None)
            .open();
        match opened {
            Err(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock") => {
                let holder = lock_holder(&path.join("db"));
                // Another process does not let go by waiting; a store this
                // process just closed is released by a sled thread shortly.
                let wait = match holder {
                    Some(pid) if pid != std::process::id() => IN_USE_WAIT,
                    _ => LOCK_WAIT,
                };
                if started.elapsed() >= wait {
                    return Err(StoreError::InUse {
                        path: path.display().to_string(),
                        holder: holder.map(describe_process),
                    });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(sled::Error::Corruption { at: None, .. }) if remove_torn_snapshots(path) => {
                // Open again without the snapshot a killed sled left torn.
            }
            other => return Ok(other?),
        }
    }
}

/// sled 0.34 writes a snapshot of its page table to `snap.<lsn>.generating`
/// and renames it when done, but its recovery also reads a `.generating`
/// file: a process killed while writing one leaves a store that sled
/// refuses as corrupted. Such files are never finished: when no process
/// holds the store (sled's own lock on `db` is free), they are removed.
/// Whether any was.
fn remove_torn_snapshots(path: &Path) -> bool {
    use fs2::FileExt;
    let Ok(db) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path.join("db"))
    else {
        return false;
    };
    if db.try_lock_exclusive().is_err() {
        return false;
    }
    let mut removed = false;
    if let Ok(entries) = std::fs::read_dir(path) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("snap.") && name.ends_with(".generating") {
                tracing::warn!(file = %e.path().display(), "removing a snapshot sled did not finish");
                removed |= std::fs::remove_file(e.path()).is_ok();
            }
        }
    }
    let _ = FileExt::unlock(&db);
    removed
}

/// How long `open` waits for a store another process holds.
const IN_USE_WAIT: Duration = Duration::from_secs(1);

/// The process holding the lock on `file`, from `/proc/locks` (Linux);
/// `None` where that cannot be told.
fn lock_holder(file: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(file).ok()?.ino();
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|l| {
        // `1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF`
        let f: Vec<&str> = l.split_whitespace().collect();
        let (pid, dev_inode) = (f.get(4)?, f.get(5)?);
        let ino: u64 = dev_inode.rsplit(':').next()?.parse().ok()?;
        (ino == inode).then(|| pid.parse().ok()).flatten()
    })
}

/// `pid (command line)`.
fn describe_process(pid: u32) -> String {
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split('\0')
                .filter(|a| !a.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    if cmd.is_empty() {
        format!("process {pid}")
    } else {
        format!("process {pid} ({cmd})")
    }
}

/// Length of a head value: seq ‖ chain.
const HEAD_LEN: usize = 8 + record::CHAIN_LEN;

/// A head value: the last seq (big endian) ‖ the chain of that record.
pub(crate) fn encode_head(seq: Seq, chain: &Chain) -> [u8; HEAD_LEN] {
    let mut v = [0u8; HEAD_LEN];
    v[..8].copy_from_slice(&seq.to_be_bytes());
    v[8..].copy_from_slice(chain);
    v
}

/// Reads a head value of `session`; any other length is damage.
pub(crate) fn decode_head(session: SessionId, v: &[u8]) -> Result<(Seq, Chain), StoreError> {
    let damaged = || {
        StoreError::Damaged(format!(
            "head of session {session} is {} bytes, expected {HEAD_LEN}",
            v.len()
        ))
    };
    let (seq, chain) = v.split_first_chunk::<8>().ok_or_else(damaged)?;
    let chain = Chain::try_from(chain).map_err(|_| damaged())?;
    Ok((Seq::from_be_bytes(*seq), chain))
}

/// The session named by a `heads` key.
pub(crate) fn session_of(k: &[u8]) -> Result<SessionId, StoreError> {
    let bytes: [u8; 16] = k
        .try_into()
        .map_err(|_| StoreError::Damaged(format!("head key of {} bytes", k.len())))?;
    Ok(SessionId(Uuid::from_bytes(bytes)))
}
