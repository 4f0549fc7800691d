//! The durable append path alone, for `perf`: one event per durable
//! append through the engine into a fresh store, as `ctxlog bench`'s
//! `durable_append_vs_jsonl_fdatasync` measures it, with nothing else in
//! the process but the generator that makes the events first.
//!
//! ```text
//! cargo build --release -p ctxlog-bench --example durable_appends
//! perf record -F 4000 --call-graph dwarf,32768 \
//!     target/release/examples/durable_appends 5000 /tmp/durable-appends
//! ```
//!
//! Prints the rate (appends/s) on stderr. The store directory (second
//! argument, default a directory under the system's temporary one) is
//! removed first and left behind for inspection.

use ctxlog_core::{Event, ModelLimits, Policy, SeededIds};
use ctxlog_engine::{EngineBuilder, ManualClock, NewSession};
use ctxlog_sled::{Durability, SledStore, StoreConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

fn main() -> ExitCode {
    match run() {
        Ok(rate) => {
            eprintln!("{rate:.0} durable appends/s");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("durable_appends: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<f64, String> {
    let mut args = std::env::args().skip(1);
    let n: u64 = match args.next() {
        Some(a) => a.parse().map_err(|e| format!("events {a:?}: {e}"))?,
        None => 5_000,
    };
    let dir = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("ctxlog-durable-appends"));
    let events = ctxlog_bench::generated(7, n).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    let mut config = StoreConfig::new(&dir);
    config.durability = Durability::Durable;
    let store = SledStore::open_with(config).map_err(|e| e.to_string())?;
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = EngineBuilder::new()
        .clock(clock.clone())
        .ids(SeededIds::new(11))
        .build(store)
        .map_err(|e| e.to_string())?;
    // As the bench: the recorded events carry their own compactions.
    let (policy, limits) = match events.first().map(|e| &e.event) {
        Some(Event::SessionStarted { policy, limits, .. }) => (policy.clone(), limits.clone()),
        _ => (Policy::opencode_seed(), ModelLimits::default()),
    };
    let policy = Policy {
        auto: false,
        ..policy
    };
    let session = engine
        .create_session(NewSession::new(limits).policy(policy))
        .map_err(|e| e.to_string())?;
    let t = Instant::now();
    for e in events.iter().skip(1) {
        clock.advance(1);
        session
            .record(vec![e.event.clone()])
            .map_err(|e| e.to_string())?;
    }
    Ok(events.len().saturating_sub(1) as f64 / t.elapsed().as_secs_f64())
}
