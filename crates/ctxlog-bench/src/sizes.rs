//! How big a bench run is ([`Sizes`]) and the seeded sessions it measures
//! ([`generated`]).

use crate::BenchError;
use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::Envelope;

/// Sizes of one bench run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Measured runs of each figure (after one warm-up); the median is kept.
    pub runs: usize,
    /// Events of the session the buffered appends write.
    pub append: u64,
    /// Events the durable appends write (one flush each).
    pub durable: u64,
    /// Concurrent durable writers of the group-commit figure.
    pub writers: u64,
    /// Events of the replayed log.
    pub replay: u64,
    /// Events of history of the small step-cost session.
    pub small: u64,
    /// Events of history of the large step-cost session (and of the re-fold).
    pub large: u64,
    /// Steps measured on each step-cost session.
    pub steps: usize,
    /// Events of the imported OpenCode export.
    pub import: u64,
    /// Events of the session replayed for peak memory (and of the smaller
    /// `stress`).
    pub rss: u64,
    /// Events of the larger `stress` (and of its replay): memory that does
    /// not grow with history is the same at both sizes.
    pub rss_large: u64,
    /// Events of the smaller recording `simulate` runs (the larger has twice).
    pub simulate: u64,
    /// Events of history at which a step is measured against OpenCode's
    /// storage shape.
    pub baseline_histories: &'static [u64],
    /// Steps measured at each of them.
    pub baseline_steps: usize,
    /// Rows and lines of the durable-append baselines.
    pub baseline_durable: u64,
    /// Events of the session whose bytes on disk are compared.
    pub baseline_bytes: u64,
    /// Events of the store searched.
    pub search: u64,
    /// Times each search query is timed.
    pub search_rounds: usize,
    /// Sessions of the store `serve` lists.
    pub serve_sessions: u64,
    /// Events of each of them.
    pub serve_session_events: u64,
    /// Events of the session whose page `serve` makes (67,000: ~10,000
    /// steps).
    pub serve_long_events: u64,
}

impl Sizes {
    /// `ctxlog bench --quick`: a check that the bench runs, in under a minute.
    pub const QUICK: Sizes = Sizes {
        runs: 3,
        append: 5_000,
        durable: 150,
        writers: 8,
        replay: 20_000,
        small: 1_000,
        large: 100_000,
        steps: 100,
        import: 10_000,
        rss: 100_000,
        rss_large: 300_000,
        simulate: 10_000,
        baseline_histories: &[1_000, 10_000, 100_000],
        baseline_steps: 15,
        baseline_durable: 150,
        baseline_bytes: 20_000,
        search: 40_000,
        search_rounds: 5,
        serve_sessions: 1_000,
        serve_session_events: 20,
        serve_long_events: 13_000,
    };

    /// `ctxlog bench`: the figures BENCHMARKS.md reports.
    pub const FULL: Sizes = Sizes {
        runs: 5,
        append: 50_000,
        durable: 1_000,
        writers: 8,
        replay: 200_000,
        small: 1_000,
        large: 100_000,
        steps: 300,
        import: 100_000,
        rss: 1_000_000,
        rss_large: 3_000_000,
        simulate: 40_000,
        baseline_histories: &[1_000, 10_000, 100_000],
        baseline_steps: 21,
        baseline_durable: 1_000,
        baseline_bytes: 200_000,
        search: 1_000_000,
        search_rounds: 20,
        serve_sessions: 10_000,
        serve_session_events: 40,
        serve_long_events: 67_000,
    };

    /// [`Sizes::QUICK`] or [`Sizes::FULL`].
    pub fn of(quick: bool) -> Sizes {
        if quick {
            Sizes::QUICK
        } else {
            Sizes::FULL
        }
    }
}

/// The generator's settings for bench sessions: heavy-tailed tool outputs
/// (Pareto from 400 chars, cut at 40,000), a 128k window, compaction and
/// pruning as the seed policy does them.
pub fn generator_config(seed: u64, events: u64) -> GenerateConfig {
    GenerateConfig {
        seed,
        turns: u32::MAX,
        max_events: events,
        min_output_chars: 400,
        max_output_chars: 40_000,
        ..GenerateConfig::default()
    }
}

/// A generated bench session of about `events` events
/// ([`generator_config`]).
pub fn generated(seed: u64, events: u64) -> Result<Vec<Envelope>, BenchError> {
    generate(&generator_config(seed, events))
        .map_err(|e| BenchError::Failed(format!("generator: {e}")))
}

/// The first event (the session's start) of generated events.
pub(crate) fn first(events: &[Envelope]) -> Result<&Envelope, BenchError> {
    events
        .first()
        .ok_or_else(|| BenchError::Failed("bench: the generator wrote no events".into()))
}
