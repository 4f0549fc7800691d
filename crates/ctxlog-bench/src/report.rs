//! What a run reports: the [`Report`] of ratios and figures, the [`GOALS`]
//! each ratio is aimed at, and the [`machine`] it ran on.

use crate::sizes::Sizes;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// What one run measured: the ratios the goals are about, every other
/// figure, and where and how it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The ratios of [`GOALS`], each against its baseline of the same run.
    pub ratios: Map<String, Value>,
    /// Every other figure (rates, seconds, bytes), by name.
    pub figures: BTreeMap<String, Value>,
    /// [`machine`].
    pub machine: Value,
    /// Whether the sizes were [`Sizes::QUICK`].
    pub quick: bool,
    /// Measured runs per figure.
    pub runs: usize,
}

impl Report {
    /// An empty report for a run of `sizes`.
    pub fn new(quick: bool, sizes: &Sizes) -> Self {
        Report {
            ratios: Map::new(),
            figures: BTreeMap::new(),
            machine: machine(),
            quick,
            runs: sizes.runs,
        }
    }

    /// Records a ratio.
    pub fn set_ratio(&mut self, name: &str, value: f64) {
        self.ratios.insert(name.into(), json!(value));
    }

    /// Records a figure.
    pub fn set_figure(&mut self, name: impl Into<String>, value: Value) {
        self.figures.insert(name.into(), value);
    }
}

/// A ratio's goal, for the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Goal {
    /// The ratio's name in [`Report::ratios`].
    pub ratio: &'static str,
    /// The value aimed at.
    pub goal: f64,
    /// Whether higher is better (the goal is a minimum) or lower (a maximum).
    pub higher: bool,
}

impl Goal {
    /// Whether `value` meets the goal (a NaN never does).
    pub fn met(&self, value: f64) -> bool {
        if self.higher {
            value >= self.goal
        } else {
            value <= self.goal
        }
    }
}

const fn goal(ratio: &'static str, goal: f64, higher: bool) -> Goal {
    Goal {
        ratio,
        goal,
        higher,
    }
}

/// The goals of the issue, one per ratio, in the order of the table.
pub const GOALS: &[Goal] = &[
    goal("append_buffered_vs_raw", 0.5, true),
    goal("append_durable_vs_raw_flush", 0.8, true),
    goal("group_commit_gain", 4.0, true),
    goal("replay_vs_raw_scan", 0.3, true),
    goal("step_cost_growth", 1.5, false),
    goal("incremental_vs_refold", 100.0, true),
    goal("durable_append_vs_jsonl_fdatasync", 0.9, true),
    goal("durable_append_vs_opencode_sqlite", 1.0, true),
    goal("import_vs_parse", 0.4, true),
    goal("import_rss_vs_file", 3.0, false),
    goal("stress_rss_growth", 1.1, false),
    goal("acks_one_reader_vs_none", 0.7, true),
    goal("acks_20_readers_vs_none", 0.4, true),
    goal("pg_append_vs_insert_floor", 0.8, true),
    goal("pg_writers_gain", 4.0, true),
    goal("pg_step_cost_growth", 1.5, false),
    goal("import_with_index_vs_without", 0.75, true),
    goal("index_vs_log_bytes", 1.0, false),
    goal("search_p50_vs_50ms", 1.0, false),
    goal("hook_worst_vs_budget", 1.0, false),
    goal("serve_list_vs_sessions", 1.0, false),
    goal("serve_page_first_vs_report", 1.0, false),
    goal("serve_list_open_vs_1s", 1.0, false),
    goal("serve_page_open_vs_1s", 1.0, false),
    // Sending a session costs no more than storing it did.
    goal("otel_http_vs_import", 1.0, false),
    // The export holds what is open, not the session: no more than a
    // streamed view of it.
    goal("otel_rss_vs_audit", 1.0, false),
];

/// The machine the bench ran on: cores, cpu, memory, kernel, os, arch and
/// build (debug or release).
pub fn machine() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_owned());
    let mem_kb = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse::<u64>().ok());
    json!({
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "cpu": cpu,
        "memory_bytes": mem_kb.map(|k| k * 1024),
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "build": if cfg!(debug_assertions) { "debug" } else { "release" },
    })
}
