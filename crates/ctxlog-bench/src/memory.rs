//! The peak memory of the commands a user runs on large sessions
//! ([`bench_memory`]), each in a child process of its own: replaying a
//! 1,000,000-event session, listing and rendering it from its snapshot, and
//! `stress` appending as many events to one session (and three times as
//! many), then replaying it and printing its timeline and audit. The import's peak is
//! measured beside its speed (`crate::import`).

use crate::measure::Scratch;
use crate::report::Report;
use crate::sizes::{generator_config, Sizes};
use crate::stores::write_generated;
use crate::{failed, BenchError};
use ctxlog_sled::SledStore;
use ctxlog_store::{EventLog, SessionStates};
use serde_json::json;
use std::ffi::{OsStr, OsString};
use std::path::Path;

/// What a child process measured: its peak resident memory and how long it
/// ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChildRun {
    /// The child's peak resident memory (its `ru_maxrss`), in bytes.
    pub peak_rss_bytes: u64,
    /// Wall-clock seconds from its start to its exit.
    pub seconds: f64,
}

/// Runs this `ctxlog` binary with the arguments in a child process and
/// measures it; a child that fails is an error naming its arguments and
/// what it printed. The CLI passes itself (`ctxlog bench`).
pub type RunCtxlog<'a> = &'a dyn Fn(&[OsString]) -> Result<ChildRun, BenchError>;

/// `--db DIR` and then `args`, as a child's arguments.
pub(crate) fn ctxlog_args(db: &Path, args: &[&dyn AsRef<OsStr>]) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["--db".into(), db.into()];
    v.extend(args.iter().map(|a| a.as_ref().to_owned()));
    v
}

/// Stage 9: peak memory, each in a child process: a replay from seq 1
/// (`bench-replay-rss`), `sessions` and `window` on the same store once a
/// snapshot is kept (as the engine and the import keep one), and `stress`
/// writing one session of as many events and of three times as many
/// (`stress_rss_growth`: the larger's peak over the smaller's), each
/// replayed, its timeline and its audit printed and its report written
/// after.
pub fn bench_memory(z: &Sizes, r: &mut Report, run: RunCtxlog<'_>) -> Result<(), BenchError> {
    let big = Scratch::new("rss");
    let (session, head) = write_generated(big.path(), &generator_config(41, z.rss))?;
    // Let sled release its lock before the child opens the store.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let id = session.to_string();
    let replay = run(&ctxlog_args(big.path(), &[&"bench-replay-rss", &id]))?;
    set_child_figures(r, "replay", head, replay);

    {
        let store = SledStore::open(big.path()).map_err(|e| failed("open")(&e))?;
        let loaded = store.load_state(session).map_err(|e| failed("fold")(&e))?;
        store
            .save_snapshot(&loaded.state)
            .map_err(|e| failed("snapshot")(&e))?;
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    for (name, args) in [
        ("sessions", vec![&"sessions" as &dyn AsRef<OsStr>]),
        ("window", vec![&"window", &id]),
    ] {
        let child = run(&ctxlog_args(big.path(), &args))?;
        set_child_figures(r, name, head, child);
    }
    drop(big);

    let small = stress(z.rss, r, run)?;
    let large = stress(z.rss_large, r, run)?;
    r.set_ratio("stress_rss_growth", large as f64 / small.max(1) as f64);
    Ok(())
}

/// The one session `stress --sessions 1` wrote into the store at `db`.
pub(crate) fn only_session(db: &Path) -> Result<ctxlog_core::SessionId, BenchError> {
    let store = SledStore::open(db).map_err(|e| failed("open")(&e))?;
    let sessions = store.sessions().map_err(|e| failed("sessions")(&e))?;
    let [(session, _)] = sessions[..] else {
        return Err(BenchError::Failed(format!(
            "bench: stress wrote {} sessions, not one",
            sessions.len()
        )));
    };
    Ok(session)
}

/// `stress` writing one session of `events` events, then a replay, the
/// `timeline`, the `audit` and the `report` of that session, each in a
/// child process; the stress's peak memory.
fn stress(events: u64, r: &mut Report, run: RunCtxlog<'_>) -> Result<u64, BenchError> {
    let stressed = Scratch::new("stress");
    let n = events.to_string();
    let args: [&dyn AsRef<OsStr>; 7] = [
        &"stress",
        &"--sessions",
        &"1",
        &"--events",
        &n,
        &"--batch",
        &"200",
    ];
    let child = run(&ctxlog_args(stressed.path(), &args))?;
    set_child_figures(r, "stress", events, child);
    r.set_figure(
        format!("stress_rss_{}", short(events)),
        json!(child.peak_rss_bytes),
    );
    let session = only_session(stressed.path())?;
    std::thread::sleep(std::time::Duration::from_millis(100));
    let id = session.to_string();
    let replay = run(&ctxlog_args(stressed.path(), &[&"bench-replay-rss", &id]))?;
    r.set_figure(
        format!("replay_rss_{}", short(events)),
        json!(replay.peak_rss_bytes),
    );
    // The views that read the whole session, an event at a time.
    for view in ["timeline", "audit"] {
        let child = run(&ctxlog_args(stressed.path(), &[&"--json", &view, &id]))?;
        r.set_figure(
            format!("{view}_rss_{}", short(events)),
            json!(child.peak_rss_bytes),
        );
    }
    // The page: read twice, written a piece at a time.
    let page = stressed.path().with_extension("html");
    let report = run(&ctxlog_args(
        stressed.path(),
        &[&"report", &id, &"--out", &page],
    ))?;
    r.set_figure(
        format!("report_rss_{}", short(events)),
        json!(report.peak_rss_bytes),
    );
    r.set_figure(
        format!("report_page_bytes_{}", short(events)),
        json!(std::fs::metadata(&page).map_or(0, |m| m.len())),
    );
    let _ = std::fs::remove_file(&page);
    Ok(child.peak_rss_bytes)
}

/// `1m`, `3m`, `300k`.
fn short(events: u64) -> String {
    if events.is_multiple_of(1_000_000) {
        format!("{}m", events / 1_000_000)
    } else {
        format!("{}k", events / 1_000)
    }
}

/// `{name}_peak_rss_bytes_{events}_events` and `{name}_seconds_{events}_events`.
fn set_child_figures(r: &mut Report, name: &str, events: u64, child: ChildRun) {
    r.set_figure(
        format!("{name}_peak_rss_bytes_{events}_events"),
        json!(child.peak_rss_bytes),
    );
    r.set_figure(
        format!("{name}_seconds_{events}_events"),
        json!(child.seconds),
    );
}
