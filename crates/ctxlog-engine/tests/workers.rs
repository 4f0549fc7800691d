//! Background workers: many sessions at once, one job per session at a
//! time, clean shutdown that drains or leaves work pending in the log.

mod common;
use common::limits;

use ctxlog_core::*;
use ctxlog_engine::summarize::*;
use ctxlog_engine::workers::{Shutdown, Workers};
use ctxlog_engine::*;
use ctxlog_sled::SledStore;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Counts summaries in flight per session; sleeps a little.
#[derive(Default)]
struct Watch {
    in_flight: Mutex<BTreeMap<SessionId, u32>>,
    max_per_session: AtomicU32,
}
struct Slow(Arc<Watch>);
impl Summarizer for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn summarize(&self, r: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        let w = &self.0;
        {
            let mut m = w.in_flight.lock().unwrap();
            let n = m.entry(r.session).or_insert(0);
            *n += 1;
            w.max_per_session.fetch_max(*n, Ordering::SeqCst);
        }
        std::thread::sleep(Duration::from_millis(20));
        *w.in_flight.lock().unwrap().get_mut(&r.session).unwrap() -= 1;
        Ok(SummaryOutput {
            text: "summary".into(),
            tokens: TokenUsage::default(),
            finish: FinishReason::Stop,
            redacted: 0,
        })
    }
}

/// An engine over `dir`; a reopened store needs a different `seed` so that
/// new ids never repeat stored ones.
fn setup(dir: &std::path::Path, watch: Arc<Watch>, seed: u64) -> Arc<Engine<SledStore>> {
    let store = SledStore::open(dir).unwrap();
    let engine = EngineBuilder::new()
        .ids(SeededIds::new(seed))
        .clock(Arc::new(ManualClock::new(1_780_000_000_000)))
        .summarizer(Arc::new(Slow(watch)))
        .build(store);
    Arc::new(engine.unwrap())
}

#[test]
fn many_sessions_one_job_each_at_a_time() {
    let dir = std::env::temp_dir().join(format!("ctxlog-workers-{}-a", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let watch = Arc::new(Watch::default());
    let engine = setup(&dir, watch.clone(), 5);
    let sessions: Vec<SessionId> = (0..8)
        .map(|_| {
            engine
                .create_session(NewSession::new(limits()))
                .unwrap()
                .id()
        })
        .collect();
    let (workers, reports) = Workers::start(engine.clone(), 3, 64).unwrap();
    for round in 0..3 {
        for s in &sessions {
            engine
                .session(*s)
                .unwrap()
                .user(&format!("round {round}"))
                .unwrap();
            engine.session(*s).unwrap().request_compaction().unwrap();
            workers.submit(*s).unwrap();
            // a second submit while queued or running is folded into the first
            let _ = workers.submit(*s).unwrap();
        }
    }
    assert!(workers.shutdown(Shutdown::Drain).is_empty());
    let mut done = 0;
    for r in reports.try_iter() {
        done += r.result.unwrap().len();
    }
    assert_eq!(done, 24, "every job ran exactly once");
    for s in &sessions {
        let state = engine.session(*s).unwrap().state().unwrap();
        assert_eq!(state.pending_jobs().count(), 0);
        assert_eq!(
            state
                .jobs
                .iter()
                .filter(|j| matches!(j.status, JobStatus::Completed { .. }))
                .count(),
            3
        );
    }
    assert_eq!(
        watch.max_per_session.load(Ordering::SeqCst),
        1,
        "never two jobs of one session at once"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn persist_shutdown_leaves_jobs_pending_in_the_log_for_a_restart() {
    let dir = std::env::temp_dir().join(format!("ctxlog-workers-{}-b", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let watch = Arc::new(Watch::default());
    let sessions;
    {
        let engine = setup(&dir, watch.clone(), 5);
        sessions = (0..12)
            .map(|_| {
                engine
                    .create_session(NewSession::new(limits()))
                    .unwrap()
                    .id()
            })
            .collect::<Vec<_>>();
        for s in &sessions {
            let s = engine.session(*s).unwrap();
            s.user("x").unwrap();
            s.request_compaction().unwrap();
        }
        let (workers, _reports) = Workers::start(engine.clone(), 1, 64).unwrap();
        for s in &sessions {
            workers.submit(*s).unwrap();
        }
        std::thread::sleep(Duration::from_millis(30));
        let left = workers.shutdown(Shutdown::Persist);
        assert!(
            !left.is_empty(),
            "a one-worker pool cannot have finished 12 slow jobs"
        );
        let pending = engine.pending_sessions().unwrap();
        let mut left_sorted = left.clone();
        left_sorted.sort();
        assert_eq!(
            pending, left_sorted,
            "what was left is exactly what is pending in the log"
        );
    }
    // after a restart, the pending sessions are found and finished
    let engine = setup(&dir, watch, 6);
    let pending = engine.pending_sessions().unwrap();
    assert!(!pending.is_empty());
    let (workers, reports) = Workers::start(engine.clone(), 2, 64).unwrap();
    for s in &pending {
        workers.submit(*s).unwrap();
    }
    workers.shutdown(Shutdown::Drain);
    for r in reports.try_iter() {
        r.result.unwrap();
    }
    assert!(engine.pending_sessions().unwrap().is_empty());
    for s in &sessions {
        assert_eq!(
            engine.session(*s).unwrap().state().unwrap().jobs.len(),
            1,
            "no job ran twice or was lost"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
