//! Replay against raw sled ([`bench_replay`]: open + fold against open +
//! scan + decode, and bytes on disk), and the child process that replays a
//! large session for its peak memory ([`replay_for_rss`], run by
//! `crate::memory`).

use crate::measure::{measure, Scratch};
use crate::raw::{encoded, raw_scan_rate};
use crate::report::Report;
use crate::sizes::{generated, Sizes};
use crate::stores::write_log;
use crate::{failed, BenchError};
use ctxlog_core::{SessionId, SessionState};
use ctxlog_sled::SledStore;
use ctxlog_store::EventLog;
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// 4. Replay: open + fold to state, against open + scan + decode.
pub fn bench_replay(z: &Sizes, r: &mut Report) -> Result<(), BenchError> {
    let log = Scratch::new("replay");
    let replay_events = generated(9, z.replay)?;
    let replay_encoded: u64 = encoded(&replay_events)?
        .iter()
        .map(|(_, v)| v.len() as u64)
        .sum();
    let n_replay = replay_events.len() as u64;
    let session = write_log(log.path(), &replay_events)?;
    drop(replay_events);
    // Let sled release its lock before the measured opens.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let on_disk = dir_bytes(log.path());
    let ours = measure(z.runs, || {
        let t = Instant::now();
        let s = SledStore::open(log.path()).map_err(|e| failed("open")(&e))?;
        let mut state = SessionState::new();
        for e in s.read(session, 1).map_err(|e| failed("read")(&e))? {
            let e = e.map_err(|e| failed("read")(&e))?;
            state.evolve(&e).map_err(|e| failed("fold")(&e))?;
        }
        let rate = state.head as f64 / t.elapsed().as_secs_f64();
        drop(s);
        std::thread::sleep(std::time::Duration::from_millis(20));
        Ok(rate)
    })?;
    let raw_scan = measure(z.runs, || raw_scan_rate(log.path(), session))?;
    r.set_ratio("replay_vs_raw_scan", ours / raw_scan);
    r.set_figure("replay_events_per_s", json!(ours));
    r.set_figure("raw_scan_decode_events_per_s", json!(raw_scan));
    r.set_figure(
        "disk_bytes_per_event_vs_encoded",
        json!((on_disk as f64 / n_replay as f64) / (replay_encoded as f64 / n_replay as f64)),
    );
    r.set_figure(
        "encoded_bytes_per_event",
        json!(replay_encoded as f64 / n_replay as f64),
    );
    r.set_figure(
        "disk_bytes_per_event",
        json!(on_disk as f64 / n_replay as f64),
    );
    r.set_figure("replay_log_events", json!(n_replay));
    Ok(())
}

/// The bytes of the files under `dir`, recursively; 0 for what cannot be
/// read.
fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            total += if p.is_dir() {
                dir_bytes(&p)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            };
        }
    }
    total
}

/// What the child process of the RSS figure measured
/// ([`replay_for_rss`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RssReport {
    /// The head of the replayed session.
    pub events: u64,
    /// The process's peak resident memory (`VmHWM`), in bytes; 0 where
    /// `/proc/self/status` does not say.
    pub peak_rss_bytes: u64,
    /// Seconds to open the store and fold the session.
    pub seconds: f64,
}

/// The RSS figure's measurement, run in a process of its own: open the
/// store at `db`, fold `session` to its state, read the peak memory.
pub fn replay_for_rss(db: &Path, session: SessionId) -> Result<RssReport, BenchError> {
    let t = Instant::now();
    let s = SledStore::open(db).map_err(|e| failed("open")(&e))?;
    let mut state = SessionState::new();
    for e in s.read(session, 1).map_err(|e| failed("read")(&e))? {
        let e = e.map_err(|e| failed("read")(&e))?;
        state.evolve(&e).map_err(|e| failed("fold")(&e))?;
    }
    let seconds = t.elapsed().as_secs_f64();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    Ok(RssReport {
        events: state.head,
        peak_rss_bytes: kb * 1024,
        seconds,
    })
}
