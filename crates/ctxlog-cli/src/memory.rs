//! The process's memory: its allocator settings, and its peak memory
//! written at exit for a parent that measures it (`ctxlog bench`).

/// Caps glibc's malloc at two arenas, before any other thread starts.
///
/// glibc gives threads that allocate at once arenas of their own (up to
/// eight per core), and memory freed in one arena is reused only by
/// allocations from it: an import frees its events on the main thread as
/// they are stored, while the store's writer thread and sled's flusher
/// allocate the encoded records in theirs, so the peak is the sum of both.
/// Measured on a 106 MB OpenCode export: 330 MB peak RSS with glibc's
/// default, 253 MB with two arenas (BENCHMARKS.md, "Peak memory").
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn limit_arenas() {
    // SAFETY: `mallopt` only sets a parameter of the allocator; it is
    // thread-safe and takes no pointers. Its result (0 when refused) only
    // means the default stays.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Elsewhere the allocator keeps its defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn limit_arenas() {}

/// The environment variable naming a file where the process writes its
/// peak resident memory (`VmHWM`, in bytes) as it exits: how `ctxlog bench`
/// measures the commands it runs as child processes. (`wait4`'s
/// `ru_maxrss` would also count the parent's memory at the fork.)
pub const PEAK_RSS_FILE: &str = "CTXLOG_PEAK_RSS_FILE";

/// This process's peak resident memory so far, in bytes; `None` where
/// `/proc/self/status` does not say.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

/// Writes the peak to the file [`PEAK_RSS_FILE`] names, when it is set; a
/// failure is only a warning (the command itself succeeded or failed on
/// its own).
pub fn report_peak() {
    let Some(file) = std::env::var_os(PEAK_RSS_FILE) else {
        return;
    };
    let peak = peak_rss_bytes().map_or_else(String::new, |b| b.to_string());
    if let Err(e) = std::fs::write(&file, peak) {
        eprintln!(
            "ctxlog: warning: cannot write the peak memory to {}: {e}",
            std::path::Path::new(&file).display()
        );
    }
}
