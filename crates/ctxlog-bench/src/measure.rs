//! How one figure is taken: a warm-up, then the median of `runs`
//! measurements ([`measure`]), each in a fresh directory ([`Scratch`]).

use crate::BenchError;
use std::path::{Path, PathBuf};

/// The median of measurements; an error when there are none.
pub fn median(mut v: Vec<f64>) -> Result<f64, BenchError> {
    if v.is_empty() {
        return Err(BenchError::Failed("bench: no measurements".into()));
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Ok(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// One warm-up, then `runs` measurements; the median.
pub fn measure(
    runs: usize,
    mut f: impl FnMut() -> Result<f64, BenchError>,
) -> Result<f64, BenchError> {
    f()?;
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs {
        v.push(f()?);
    }
    median(v)
}

/// Measurements taken side by side: a warm-up round (discarded), then
/// `runs` rounds, each taking every measurement of `takes` in turn, so that
/// a drift of the machine (the disk's sync rate, the page cache) falls on
/// all of them alike. One list per measurement, in round order.
pub fn side_by_side<const N: usize>(
    runs: usize,
    mut takes: [&mut dyn FnMut() -> Result<f64, BenchError>; N],
) -> Result<[Vec<f64>; N], BenchError> {
    let mut out: [Vec<f64>; N] = std::array::from_fn(|_| Vec::with_capacity(runs));
    for round in 0..=runs {
        for (take, list) in takes.iter_mut().zip(out.iter_mut()) {
            let v = take()?;
            if round > 0 {
                list.push(v);
            }
        }
    }
    Ok(out)
}

/// The median over rounds of `a[i] / b[i]`.
pub fn median_ratio(a: &[f64], b: &[f64]) -> Result<f64, BenchError> {
    median(a.iter().zip(b).map(|(x, y)| x / y).collect())
}

/// A fresh directory for one measurement (under the system temp dir),
/// removed when dropped.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// A directory named after `tag` that does not exist yet.
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "ctxlog-bench-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let _ = std::fs::remove_dir_all(&p);
        Scratch(p)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The CPU time (user and system, every thread's) this process has used so
/// far, in seconds, from `/proc/self/stat` (whose clock ticks are
/// `USER_HZ`, 100 on Linux); `None` where that file does not read.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; fields 14 and 15 (utime,
    // stime) count from the `)` that ends it.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) as f64 / 100.0)
}
