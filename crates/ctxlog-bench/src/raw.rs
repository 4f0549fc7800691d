//! The raw sled baselines: sled opened directly ([`raw_db`]), the records
//! the store would write ([`encoded`]), and a raw scan-and-decode
//! ([`raw_scan_rate`]). This is the one crate besides the store that opens
//! sled directly.

use crate::sizes::first;
use crate::{failed, BenchError};
use ctxlog_core::{Envelope, SessionId};
use ctxlog_store::{pack, record};
use std::path::Path;
use std::time::Instant;

/// The raw baseline: sled opened directly at `path`, with the store's
/// settings (no background flusher).
pub fn raw_db(path: &Path) -> Result<sled::Db, BenchError> {
    // The same sled settings as the store: no background flusher.
    sled::Config::new()
        .path(path)
        .flush_every_ms(None)
        .open()
        .map_err(|e| failed("raw sled")(&e))
}

/// A stored record: its key and bytes.
pub type Record = ([u8; 24], Vec<u8>);

/// The records the store writes for `events`, keyed as it keys them.
pub fn encoded(events: &[Envelope]) -> Result<Vec<Record>, BenchError> {
    let mut prev = record::genesis(first(events)?.session);
    let mut out = Vec::with_capacity(events.len());
    for e in events {
        let (bytes, chain) = record::encode(e, &prev).map_err(|e| failed("encode")(&e))?;
        prev = chain;
        out.push((record::key(e.session, e.seq), bytes));
    }
    Ok(out)
}

/// The raw baseline of the replay: open sled, scan the session's keys and
/// decode every record (a value holds one, or a pack of them:
/// [`pack::unpack`]); events/s.
pub fn raw_scan_rate(dir: &Path, session: SessionId) -> Result<f64, BenchError> {
    let t = Instant::now();
    let db = raw_db(dir)?;
    let tree = db.open_tree("events").map_err(|e| failed("raw")(&e))?;
    let mut n = 0u64;
    for kv in tree.scan_prefix(session.0.as_bytes()) {
        let (k, v) = kv.map_err(|e| failed("raw scan")(&e))?;
        let (s, first) =
            record::parse_key(&k).ok_or_else(|| BenchError::Failed("bad key".into()))?;
        let unpacked = pack::unpack(&v);
        if let Some(problem) = unpacked.damage {
            return Err(failed("unpack")(&problem));
        }
        for (seq, r) in (first..).zip(unpacked.records) {
            let d = record::decode(&v[r], s, seq).map_err(|e| failed("decode")(&e))?;
            n += u64::from(d.envelope.seq > 0);
        }
    }
    let rate = n as f64 / t.elapsed().as_secs_f64();
    drop(tree);
    drop(db);
    std::thread::sleep(std::time::Duration::from_millis(20));
    Ok(rate)
}
