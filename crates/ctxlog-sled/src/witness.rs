//! The witness: an append-only file beside sled's (`<store>/witness`) that
//! says which events were acknowledged, independently of sled.
//!
//! sled can lose the tail of its log without noticing: a flipped bit in its
//! log makes its recovery truncate everything after it as if it were a torn
//! write, and the store then answers as if those events had never been
//! written. The witness holds, for every flush, the durable head of each
//! session the flush made durable: (session, seq, chain of that record).
//! Opening a store and [`verify`](crate::SledStore::verify) check every
//! session's last witnessed head against the log: a head that is missing, or
//! a record whose chain differs, is a loss named by session and seq range.
//!
//! Writes: after sled's flush and before the acknowledgement, one `write`
//! per flush, without an `fsync` of its own; the file is synced at most
//! [`SYNC_INTERVAL`] later and when the store closes. A process crash loses
//! none of it (the kernel has the writes); a power loss can lose the last
//! interval, which only makes the witness claim less, never more.
//!
//! Layout: the 16-byte [`HEADER`], then records of [`RECORD_LEN`] bytes:
//! session (16) ‖ seq (8, big endian) ‖ chain (32) ‖ CRC32C (4, little
//! endian) of the 56 bytes before it. A record cut short at the end is a torn
//! write and is dropped; any other record whose CRC fails is damage, reported
//! by its offset. Past [`COMPACT_AT`] bytes the file is rewritten with one
//! record per session (`witness.new`, synced, renamed over it).

use crate::errors::damaged;
use crate::errors::from_sled;
use crate::trees::Trees;
use ctxlog_store::record::{Chain, CHAIN_LEN};
use ctxlog_store::StoreError;

use ctxlog_core::{Seq, SessionId};
use ctxlog_store::VerifyError;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The first bytes of a witness file (format version 1).
pub const HEADER: &[u8; 16] = b"ctxlog-witness\x00\x01";
/// Length of one record.
pub const RECORD_LEN: usize = 16 + 8 + CHAIN_LEN + 4;
/// The longest a written record stays unsynced.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);
/// The file size past which it is rewritten with one record per session.
pub const COMPACT_AT: u64 = 16 << 20;
/// The witness's file name inside the store directory.
pub const FILE_NAME: &str = "witness";

/// The last witnessed head of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Witnessed {
    /// The acknowledged head.
    pub seq: Seq,
    /// The chain of the record at that seq.
    pub chain: Chain,
    /// Where in the file the record is.
    pub offset: u64,
}

/// What a witness file says.
#[derive(Debug, Default)]
pub struct WitnessFile {
    /// The last head witnessed for each session.
    pub heads: BTreeMap<SessionId, Witnessed>,
    /// Records that could not be read, by offset, with what is wrong.
    pub damaged: Vec<(u64, String)>,
    /// The length of the readable file (a torn last record excluded).
    pub len: u64,
    /// Whether the file exists.
    pub exists: bool,
}

/// The `meta` key that says the store keeps a witness (so that a missing
/// file is damage, not a store from before the witness).
const WITNESSED: &[u8] = b"witnessed";
/// The `meta` key that records why the witness was rebuilt (kept for good:
/// what it could have vouched for before is unknown).
const REBUILT: &[u8] = b"witness-rebuilt";
/// The `meta` key that records where the damage that caused the rebuild
/// was in the old witness (a big-endian `u64` offset).
const REBUILT_AT: &[u8] = b"witness-rebuilt-at";

/// A problem the witness shows: acknowledged events missing from the log
/// or changed (`lost`), or the witness itself damaged or missing
/// (`witness`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    /// `lost` or `witness`.
    pub kind: &'static str,
    /// The session whose events are lost.
    pub session: Option<SessionId>,
    /// The first and last acknowledged seq that are gone.
    pub seqs: Option<(Seq, Seq)>,
    /// Where in the witness file the evidence (or the damage) is.
    pub offset: Option<u64>,
    /// What is wrong, what is lost and what to do.
    pub detail: String,
}

impl Loss {
    /// A problem of the witness itself, at `offset` when it is placed.
    fn of_witness(offset: Option<u64>, detail: String) -> Loss {
        Loss {
            kind: "witness",
            session: None,
            seqs: None,
            offset,
            detail,
        }
    }

    /// As a verification error.
    pub(crate) fn as_error(&self) -> VerifyError {
        VerifyError {
            kind: self.kind,
            session: self.session,
            seq: self.seqs.map(|(first, _)| first),
            file: Some(FILE_NAME.to_owned()),
            offset: self.offset,
            detail: self.detail.clone(),
        }
    }
}

/// What to do about a loss.
const SALVAGE: &str = "`ctxlog salvage` copies every intact event into a new store";

/// Checks the log against what the witness of the store at `dir` says;
/// every loss, in session order, with the file read.
pub(crate) fn check(trees: &Trees, dir: &Path) -> Result<(WitnessFile, Vec<Loss>), StoreError> {
    let file = read(dir).map_err(|e| io_error(dir, e))?;
    let mut losses = Vec::new();
    if let Some(why) = trees.meta.get(REBUILT).map_err(from_sled)? {
        // Where the damage that caused the rebuild was (older stores did
        // not keep it; a missing witness has none: the detail says so).
        let at = trees
            .meta
            .get(REBUILT_AT)
            .map_err(from_sled)?
            .and_then(|v| <[u8; 8]>::try_from(v.as_ref()).ok())
            .map(u64::from_be_bytes);
        losses.push(Loss::of_witness(
            at,
            format!(
                "the witness was rebuilt ({}): losses of events acknowledged before then cannot be detected; {SALVAGE}",
                String::from_utf8_lossy(&why)
            ),
        ));
    }
    if !file.exists && trees.meta.get(WITNESSED).map_err(from_sled)?.is_some() {
        losses.push(Loss::of_witness(
            None,
            format!(
                "the witness file is missing: the acknowledged heads cannot be checked; {SALVAGE}"
            ),
        ));
    }
    for (offset, what) in &file.damaged {
        losses.push(Loss::of_witness(
            Some(*offset),
            format!("{what}: a head it held cannot be checked; {SALVAGE}"),
        ));
    }
    for (session, w) in &file.heads {
        if let Some(loss) = check_head(trees, *session, w)? {
            losses.push(loss);
        }
    }
    Ok((file, losses))
}

/// The loss of one session, if the log does not hold its witnessed head.
fn check_head(
    trees: &Trees,
    session: SessionId,
    w: &Witnessed,
) -> Result<Option<Loss>, StoreError> {
    let head = trees.head(session)?.map_or(0, |(seq, _)| seq);
    let lost = |first: Seq, why: String| {
        Loss {
        kind: "lost",
        session: Some(session),
        seqs: Some((first, w.seq)),
        offset: Some(w.offset),
        detail: format!(
            "events {first} to {} were acknowledged (witness record at byte {}) and {why}; {SALVAGE}",
            w.seq, w.offset
        ),
    }
    };
    if head < w.seq {
        return Ok(Some(lost(
            head + 1,
            format!("are missing from the log, whose head is {head}"),
        )));
    }
    match trees.chain_at(session, w.seq)? {
        Some(c) if c == w.chain => Ok(None),
        Some(_) => Ok(Some(lost(
            w.seq,
            "the record stored at the last of them differs".into(),
        ))),
        None => Ok(Some(lost(
            w.seq,
            "the record of the last of them is missing or damaged".into(),
        ))),
    }
}

/// Opens the witness of the store at `dir` for the writer. A store that has
/// none yet starts one from its heads; a witness found missing or damaged is
/// rebuilt, keeping every witnessed head the log lost (so the loss stays
/// visible), and the rebuild is noted for good.
pub(crate) fn open_for_writer(
    trees: &Trees,
    dir: &Path,
    file: &WitnessFile,
    losses: &[Loss],
) -> Result<Witness, StoreError> {
    let damaged = losses
        .iter()
        .any(|l| l.kind == "witness" && l.offset.is_some());
    let missing = !file.exists && trees.meta.get(WITNESSED).map_err(from_sled)?.is_some();
    let mut w = Witness::open(dir, file).map_err(|e| io_error(dir, e))?;
    // A file cut before its header was complete holds nothing yet either.
    let empty = file.len < HEADER.len() as u64;
    if !file.exists || damaged || empty {
        let mut heads: BTreeMap<SessionId, (Seq, Chain)> = trees
            .heads_with_chains()?
            .into_iter()
            .map(|(s, q, c)| (s, (q, c)))
            .collect();
        for l in losses.iter().filter(|l| l.kind == "lost") {
            if let (Some(s), Some(h)) = (l.session, l.session.and_then(|s| file.heads.get(&s))) {
                heads.insert(s, (h.seq, h.chain));
            }
        }
        let heads: Vec<_> = heads.into_iter().map(|(s, (q, c))| (s, q, c)).collect();
        w.compact(&heads).map_err(|e| io_error(dir, e))?;
        if missing || damaged {
            let first_damage = losses
                .iter()
                .filter(|l| l.kind == "witness")
                .find_map(|l| l.offset.map(|o| (o, l.detail.as_str())));
            let why = match (missing, first_damage) {
                (true, _) | (false, None) => "the file was missing".to_owned(),
                (false, Some((offset, detail))) => {
                    trees
                        .meta
                        .insert(REBUILT_AT, &offset.to_be_bytes()[..])
                        .map_err(from_sled)?;
                    format!("it was damaged at byte {offset}: {detail}")
                }
            };
            trees
                .meta
                .insert(REBUILT, why.as_bytes())
                .map_err(from_sled)?;
        }
        trees.meta.insert(WITNESSED, &b"1"[..]).map_err(from_sled)?;
        trees.db.flush().map_err(from_sled)?;
    }
    Ok(w)
}

fn io_error(dir: &Path, e: io::Error) -> StoreError {
    damaged(format!("{}: {e}", path(dir).display()))
}

/// The witness file of the store at `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// One record's bytes.
fn encode(session: SessionId, seq: Seq, chain: &Chain) -> [u8; RECORD_LEN] {
    let mut r = [0u8; RECORD_LEN];
    r[..16].copy_from_slice(session.as_bytes());
    r[16..24].copy_from_slice(&seq.to_be_bytes());
    r[24..24 + CHAIN_LEN].copy_from_slice(chain);
    let crc = crc32c::crc32c(&r[..RECORD_LEN - 4]);
    r[RECORD_LEN - 4..].copy_from_slice(&crc.to_le_bytes());
    r
}

/// Reads the witness of the store at `dir` (an absent file says nothing).
pub fn read(dir: &Path) -> io::Result<WitnessFile> {
    let mut bytes = Vec::new();
    match File::open(path(dir)) {
        Ok(mut f) => f.read_to_end(&mut bytes)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(WitnessFile::default()),
        Err(e) => return Err(e),
    };
    Ok(parse(&bytes))
}

/// What the bytes of a witness file say.
fn parse(bytes: &[u8]) -> WitnessFile {
    let mut w = WitnessFile {
        exists: true,
        ..WitnessFile::default()
    };
    if bytes.len() < HEADER.len() {
        // A file cut before its header was being created: it says nothing.
        return w;
    }
    if &bytes[..HEADER.len()] != HEADER {
        w.damaged.push((0, "not a ctxlog witness header".into()));
        return w;
    }
    let mut offset = HEADER.len();
    while offset + RECORD_LEN <= bytes.len() {
        let r = &bytes[offset..offset + RECORD_LEN];
        let (body, crc) = r.split_at(RECORD_LEN - 4);
        if crc32c::crc32c(body).to_le_bytes() != crc {
            w.damaged
                .push((offset as u64, "witness record fails its CRC".into()));
        } else {
            let session = SessionId(Uuid::from_bytes(body[..16].try_into().unwrap_or([0; 16])));
            let seq = Seq::from_be_bytes(body[16..24].try_into().unwrap_or([0; 8]));
            let mut chain = [0u8; CHAIN_LEN];
            chain.copy_from_slice(&body[24..24 + CHAIN_LEN]);
            w.heads.insert(
                session,
                Witnessed {
                    seq,
                    chain,
                    offset: offset as u64,
                },
            );
        }
        offset += RECORD_LEN;
    }
    w.len = offset as u64;
    w
}

/// The open witness of a store, written by its committer (`writer.rs`).
pub(crate) struct Witness {
    dir: PathBuf,
    file: File,
    len: u64,
    synced: Instant,
    dirty: bool,
}

impl Witness {
    /// Opens the witness at `dir` for appending after what `read` found
    /// (a torn last record is cut off); creates it, with the header, when
    /// absent.
    pub(crate) fn open(dir: &Path, read: &WitnessFile) -> io::Result<Witness> {
        let p = path(dir);
        let mut file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(&p)?;
        let len = if read.len < HEADER.len() as u64 {
            file.set_len(0)?;
            file.write_all(HEADER)?;
            file.sync_all()?;
            sync_dir(dir);
            HEADER.len() as u64
        } else {
            file.set_len(read.len)?;
            read.len
        };
        let file = OpenOptions::new().append(true).open(&p)?;
        Ok(Witness {
            dir: dir.to_owned(),
            file,
            len,
            synced: Instant::now(),
            dirty: false,
        })
    }

    /// Records that `heads` (session, seq, chain) are durable: one write.
    pub(crate) fn record(&mut self, heads: &[(SessionId, Seq, Chain)]) -> io::Result<()> {
        if heads.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::with_capacity(heads.len() * RECORD_LEN);
        for (s, q, c) in heads {
            buf.extend_from_slice(&encode(*s, *q, c));
        }
        self.file.write_all(&buf)?;
        self.len += buf.len() as u64;
        if !self.dirty {
            // The interval runs from the first unsynced write.
            self.synced = Instant::now();
            self.dirty = true;
        }
        Ok(())
    }

    /// Syncs what was written since the last sync.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        if self.dirty {
            self.file.sync_data()?;
            self.dirty = false;
        }
        self.synced = Instant::now();
        Ok(())
    }

    /// When what was written must be synced by, if anything is unsynced.
    pub(crate) fn sync_due(&self) -> Option<Instant> {
        self.dirty.then(|| self.synced + SYNC_INTERVAL)
    }

    /// Whether the file has grown past [`COMPACT_AT`].
    pub(crate) fn wants_compaction(&self) -> bool {
        self.len > COMPACT_AT
    }

    /// Rewrites the file with one record per session in `heads` (written
    /// aside, synced, renamed over it).
    pub(crate) fn compact(&mut self, heads: &[(SessionId, Seq, Chain)]) -> io::Result<()> {
        let fresh = self.dir.join(format!("{FILE_NAME}.new"));
        let mut f = File::create(&fresh)?;
        let mut buf = HEADER.to_vec();
        for (s, q, c) in heads {
            buf.extend_from_slice(&encode(*s, *q, c));
        }
        f.write_all(&buf)?;
        f.sync_all()?;
        std::fs::rename(&fresh, path(&self.dir))?;
        sync_dir(&self.dir);
        self.file = OpenOptions::new().append(true).open(path(&self.dir))?;
        self.len = buf.len() as u64;
        self.dirty = false;
        self.synced = Instant::now();
        Ok(())
    }
}

/// Syncs a directory's entries (a new or renamed file); best effort.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(n: u8) -> SessionId {
        SessionId(Uuid::from_bytes([n; 16]))
    }

    #[test]
    fn the_last_record_of_each_session_wins_and_damage_is_placed() {
        let mut bytes = HEADER.to_vec();
        bytes.extend_from_slice(&encode(sid(1), 3, &[7; CHAIN_LEN]));
        bytes.extend_from_slice(&encode(sid(2), 9, &[8; CHAIN_LEN]));
        bytes.extend_from_slice(&encode(sid(1), 5, &[9; CHAIN_LEN]));
        let w = parse(&bytes);
        assert_eq!(w.heads[&sid(1)].seq, 5);
        assert_eq!(w.heads[&sid(1)].chain, [9; CHAIN_LEN]);
        assert_eq!(w.heads[&sid(2)].seq, 9);
        assert!(w.damaged.is_empty());
        // A flipped bit in the middle record is damage at its offset.
        let mut flipped = bytes.clone();
        flipped[HEADER.len() + RECORD_LEN + 3] ^= 1;
        let w = parse(&flipped);
        assert_eq!(
            w.damaged,
            vec![(
                (HEADER.len() + RECORD_LEN) as u64,
                "witness record fails its CRC".to_owned()
            )]
        );
        assert!(!w.heads.contains_key(&sid(2)));
        // A record cut short at the end is a torn write: dropped, not damage.
        let w = parse(&bytes[..bytes.len() - 10]);
        assert!(w.damaged.is_empty());
        assert_eq!(w.heads[&sid(1)].seq, 3);
        assert_eq!(w.len, (HEADER.len() + 2 * RECORD_LEN) as u64);
    }
}
