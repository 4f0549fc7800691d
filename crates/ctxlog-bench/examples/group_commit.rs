//! Group commit alone, for `perf`: `writers` threads each doing durable
//! appends (one event each) through one engine into sessions of their own,
//! as `ctxlog bench`'s `group_commit_gain` measures it.
//!
//! ```text
//! cargo build --release -p ctxlog-bench --example group_commit
//! perf record -F 1500 --call-graph dwarf,16384 \
//!     target/release/examples/group_commit 8 2000 /tmp/group-commit
//! ```
//!
//! Prints on stderr the rate, appends per flush, the time callers spent
//! leading groups per append (the committer's serial section) and the
//! process's CPU per append. The store directory (third argument, default
//! a directory under the system's temporary one) is removed first and
//! left behind for inspection.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("group_commit: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut number = |name: &str, default: u64| -> Result<u64, String> {
        match args.next() {
            Some(a) => a.parse().map_err(|e| format!("{name} {a:?}: {e}")),
            None => Ok(default),
        }
    };
    let writers = number("writers", 8)?.max(1);
    let n = number("events", 2_000)?;
    let dir = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("ctxlog-group-commit"));
    let events = ctxlog_bench::generated(7, n).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    let run = ctxlog_bench::durable_writers(&dir, &events, writers).map_err(|e| e.to_string())?;
    let cpu = run
        .cpu_us_per_append
        .map_or("unknown".to_owned(), |c| format!("{c:.1} µs"));
    eprintln!(
        "{writers} writer(s): {:.0} durable appends/s, {:.1} appends a flush, \
         leading {:.1} µs an append, CPU {cpu} an append",
        run.rate, run.appends_per_flush, run.leading_us_per_append
    );
    Ok(())
}
