//! The sled database of a store: its trees and the small values kept
//! besides the records (session keys and heads).
//!
//! Trees: `events` (key of a session's record → that record, or a pack of
//! it and the next ones: see [`record`](ctxlog_store::record) and `pack.rs`),
//! `heads` (session → last seq ‖ chain of that record), `ids` and
//! `id-runs` (the event-id index, see `index.rs`) and `snapshots` (see
//! `snapshot.rs`).

use crate::errors::damaged;
use crate::errors::from_sled;
use crate::guard::guarded;
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::pack;
use ctxlog_store::record::{self, Chain};
use ctxlog_store::OpenError;
use ctxlog_store::StoreError;
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
    pub(crate) id_runs: sled::Tree,
    pub(crate) snapshots: sled::Tree,
    /// Small facts about the store itself (see `witness.rs`).
    pub(crate) meta: sled::Tree,
}

/// How long `open` waits for the database lock a just-closed store of this
/// process may still hold (sled releases it from a background thread).
const LOCK_WAIT: Duration = Duration::from_secs(3);

impl Trees {
    /// Opens (or creates) the database at `path` and its trees, waiting
    /// up to `in_use_wait` for a store another process holds.
    pub(crate) fn open(
        path: &Path,
        in_use_wait: Duration,
        cache_bytes: u64,
    ) -> Result<Trees, StoreError> {
        let db = open_db(path, in_use_wait, cache_bytes)?;
        Ok(Trees {
            events: db.open_tree("events").map_err(from_sled)?,
            heads: db.open_tree("heads").map_err(from_sled)?,
            ids: db.open_tree("ids").map_err(from_sled)?,
            id_runs: db.open_tree("id-runs").map_err(from_sled)?,
            snapshots: db.open_tree("snapshots").map_err(from_sled)?,
            meta: db.open_tree("meta").map_err(from_sled)?,
            db,
        })
    }

    /// The session's head seq and chain, `None` for no stream.
    pub(crate) fn head(&self, session: SessionId) -> Result<Option<(Seq, Chain)>, StoreError> {
        match self.heads.get(session.as_bytes()).map_err(from_sled)? {
            Some(v) => Ok(Some(decode_head(session, &v)?)),
            None => Ok(None),
        }
    }

    /// Every session with its head seq, in session-id order.
    pub(crate) fn heads(&self) -> Result<Vec<(SessionId, Seq)>, StoreError> {
        let mut out = Vec::new();
        for kv in self.heads.iter() {
            let (k, v) = kv.map_err(from_sled)?;
            let session = session_of(&k)?;
            out.push((session, decode_head(session, &v)?.0));
        }
        Ok(out)
    }

    /// Every session with its head seq and chain, in session-id order.
    pub(crate) fn heads_with_chains(&self) -> Result<Vec<(SessionId, Seq, Chain)>, StoreError> {
        let mut out = Vec::new();
        for kv in self.heads.iter() {
            let (k, v) = kv.map_err(from_sled)?;
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
            .record_at(session, seq)?
            .and_then(|v| record::decode(&v, session, seq).ok())
            .map(|d| d.chain))
    }

    /// The bytes of the record at (`session`, `seq`), alone or in a pack;
    /// `None` when no value holds it or its pack does not read that far.
    pub(crate) fn record_at(
        &self,
        session: SessionId,
        seq: Seq,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(kv) = self.events.range(..=record::key(session, seq)).next_back() else {
            return Ok(None);
        };
        let (k, v) = kv.map_err(from_sled)?;
        let Some((s, first)) = record::parse_key(&k).filter(|(s, _)| *s == session) else {
            return Ok(None);
        };
        debug_assert!(s == session && first <= seq);
        let unpacked = pack::unpack(&v);
        let index = usize::try_from(seq - first).unwrap_or(usize::MAX);
        Ok(unpacked.records.get(index).map(|r| v[r.clone()].to_vec()))
    }

    /// The values of `session` holding seqs `from..=last`, from the one
    /// holding `from` (a pack may start before it).
    pub(crate) fn values_from(
        &self,
        session: SessionId,
        from: Seq,
        last: Seq,
    ) -> Result<Values, StoreError> {
        let at = record::key(session, from);
        let start = match self.events.range(record::key(session, 0)..=at).next_back() {
            Some(kv) => kv.map_err(from_sled)?.0.to_vec(),
            None => at.to_vec(),
        };
        Ok(Values::new(
            &self.events,
            start,
            Some(record::key(session, last).to_vec()),
        ))
    }
}

/// The values of a range of keys of a tree, in key order, each found by a
/// descent of its own.
///
/// sled 0.34 learns that a page was read only once 64 reads of pages of
/// its shard (one of 256) have queued, and a held `sled::Iter` reads each
/// leaf once: a long scan kept up to some 16,000 leaves beyond the cache's
/// bound (a replay of a million packed events held 450 MB). A descent per
/// value reads the leaf once per value, so the queues fill and the cache
/// evicts as the scan goes, at no cost in speed here (BENCHMARKS.md).
pub(crate) struct Values {
    tree: sled::Tree,
    /// Where the next value is looked for.
    from: std::ops::Bound<Vec<u8>>,
    /// The last key in the range (none: to the end of the tree).
    last: Option<Vec<u8>>,
    done: bool,
}

impl Values {
    /// The values of `tree` from key `first` to `last` (both included).
    pub(crate) fn new(tree: &sled::Tree, first: Vec<u8>, last: Option<Vec<u8>>) -> Values {
        Values {
            tree: tree.clone(),
            from: std::ops::Bound::Included(first),
            last,
            done: false,
        }
    }
}

impl Iterator for Values {
    type Item = sled::Result<(sled::IVec, sled::IVec)>;

    fn next(&mut self) -> Option<Self::Item> {
        use std::ops::Bound;
        if self.done {
            return None;
        }
        let last = match &self.last {
            Some(k) => Bound::Included(k.clone()),
            None => Bound::Unbounded,
        };
        let next = self
            .tree
            .range::<Vec<u8>, _>((self.from.clone(), last))
            .next();
        match &next {
            Some(Ok((k, _))) => self.from = Bound::Excluded(k.to_vec()),
            _ => self.done = true,
        }
        next
    }
}

fn open_db(path: &Path, in_use_wait: Duration, cache_bytes: u64) -> Result<sled::Db, StoreError> {
    let started = Instant::now();
    let mut recovered = 0u8;
    loop {
        let opened = guarded(path, "opening the store", || {
            Ok(sled::Config::new()
                .path(path)
                .cache_capacity(cache_bytes)
                // The writer flushes itself; sled's background flusher would
                // blur what "acknowledged" means.
                .flush_every_ms(None)
                .open())
        });
        let opened = match opened {
            Ok(opened) => opened,
            // sled panics on a log its snapshot says is longer (a truncated
            // or deleted `db`): its log may still be read without it.
            Err(panicked) if recovered == 0 => {
                recovered = 2;
                if recover_snapshots(path) {
                    continue;
                }
                return Err(panicked);
            }
            Err(panicked) => return Err(panicked),
        };
        match opened {
            Err(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock") => {
                let holder = lock_holder(&path.join("db"));
                // Another process does not let go by waiting; a store this
                // process just closed is released by a sled thread shortly.
                let wait = match holder {
                    Some(pid) if pid != std::process::id() => in_use_wait,
                    _ => LOCK_WAIT,
                };
                if started.elapsed() >= wait {
                    return Err(StoreError::Open(OpenError::InUse {
                        path: path.display().to_string(),
                        holder: holder.map(describe_process),
                    }));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // A store whose creation was cut short: sled wrote its `conf`
            // and was killed before its log (`db`) existed, so nothing was
            // ever written to it; without that `conf` it is created again.
            Err(sled::Error::Corruption { at: None, .. }) if set_aside_unborn(path) => {}
            Err(e @ sled::Error::Corruption { at: None, .. }) if recovered < 2 => {
                // Open again without the derived file sled could not read:
                // its snapshots first, then its config file.
                let stage = recovered;
                recovered += 1;
                let changed = if stage == 0 {
                    recover_snapshots(path)
                } else {
                    set_aside_config(path)
                };
                if !changed && stage == 1 {
                    return Err(from_sled(e));
                }
            }
            other => return other.map_err(from_sled),
        }
    }
}

/// The directory inside a store where snapshots sled could not read are
/// kept.
pub(crate) const SET_ASIDE: &str = "unreadable-sled-snapshots";

/// sled's snapshot of its page table (`snap.<lsn>`) is derived from its log,
/// but sled refuses to open a store whose newest snapshot does not read:
/// - sled 0.34 writes a snapshot to `snap.<lsn>.generating` and renames it
///   when done, yet its recovery also reads a `.generating` file, so a
///   process killed while writing one leaves a store sled calls corrupted;
/// - a damaged snapshot file does the same.
///
/// When no process holds the store (sled's own lock on `db` is free), the
/// unfinished snapshots are removed and the others moved into
/// [`SET_ASIDE`], so that sled rebuilds its page table from its log (the
/// witness then checks that nothing acknowledged is missing). Whether any
/// file was moved or removed.
fn recover_snapshots(path: &Path) -> bool {
    unheld(path, || {
        let mut changed = false;
        let aside = path.join(SET_ASIDE);
        let Ok(entries) = std::fs::read_dir(path) else {
            return false;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("snap.") {
                continue;
            }
            if name.ends_with(".generating") {
                tracing::warn!(file = %e.path().display(), "removing a snapshot sled did not finish");
                changed |= std::fs::remove_file(e.path()).is_ok();
            } else if std::fs::create_dir_all(&aside).is_ok() {
                tracing::warn!(file = %e.path().display(), aside = %aside.display(), "setting aside a sled snapshot that does not read");
                changed |= std::fs::rename(e.path(), aside.join(&name)).is_ok();
            }
        }
        changed
    })
}

/// Moves the `conf` of a store that has no log (`db`) yet into
/// [`SET_ASIDE`]: sled wrote it first when it created the store, and a
/// process killed right after leaves a store sled refuses to open, though
/// it never held anything. Whether it was moved.
fn set_aside_unborn(path: &Path) -> bool {
    if path.join("db").exists() || !path.join("conf").exists() {
        return false;
    }
    let aside = path.join(SET_ASIDE);
    let moved = std::fs::create_dir_all(&aside).is_ok()
        && std::fs::rename(path.join("conf"), aside.join("conf-without-a-log")).is_ok();
    if moved {
        tracing::warn!(store = %path.display(), "a store whose creation was cut short (a config file, no log): created again");
    }
    moved
}

/// sled's `conf` file holds the configuration ctxlog always opens with
/// (sled writes it again when it is absent); one that does not read makes
/// sled refuse the store. When no process holds the store it is moved into
/// [`SET_ASIDE`]. Whether it was.
fn set_aside_config(path: &Path) -> bool {
    unheld(path, || {
        let aside = path.join(SET_ASIDE);
        let moved = std::fs::create_dir_all(&aside).is_ok()
            && std::fs::rename(path.join("conf"), aside.join("conf")).is_ok();
        if moved {
            tracing::warn!(aside = %aside.display(), "setting aside a sled config file that does not read");
        }
        moved
    })
}

/// Runs `f` holding sled's own lock on the store's `db` file, so that no
/// process has the store open meanwhile; false when the lock is taken (or
/// the file cannot be opened).
fn unheld(path: &Path, f: impl FnOnce() -> bool) -> bool {
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
    let done = f();
    let _ = FileExt::unlock(&db);
    done
}

/// The process holding sled's lock on the store at `store`, described.
pub(crate) fn holder_of(store: &Path) -> Option<String> {
    lock_holder(&store.join("db")).map(describe_process)
}

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
        damaged(format!(
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
        .map_err(|_| damaged(format!("head key of {} bytes", k.len())))?;
    Ok(SessionId(Uuid::from_bytes(bytes)))
}
