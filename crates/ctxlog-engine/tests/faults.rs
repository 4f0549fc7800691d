//! The engine against a log that fails on schedule
//! (`ctxlog_store::faults::FaultyLog`), from seeds: each seed draws an
//! agent session (user messages, steps with tool outputs, overflows that
//! compact, turns that prune, manual compactions) and faults at chosen
//! operations (a failed call, a lost acknowledgement, a crash before or
//! after the commit point, a failed sync, an outage). After every fault:
//! what the log acknowledged is still there, the engine's state is the
//! log's, and the session goes on to the end of its script.
//!
//! A failure names its seed; `CTXLOG_FAULT_SEED=n cargo test -p
//! ctxlog-engine --test faults` replays that one seed alone.

mod common;
use common::limits;
use ctxlog_store::SessionStates;

use ctxlog_core::{
    FinishReason, Json, MessageId, PartBody, Policy, SeededIds, SessionId, Step, TokenUsage,
    ToolState,
};
use ctxlog_engine::{Engine, EngineBuilder, EngineError, ManualClock, NewSession};
use ctxlog_sled::SledStore;
use ctxlog_store::faults::{Fault, Faultable, FaultyLog};
use ctxlog_store::EventLog;
use ctxlog_store::MemoryLog;
use ctxlog_testkit::Rng;
use ctxlog_testkit::TempDir;
use std::cell::RefCell;
use std::sync::Arc;

/// Seeds run by default (each a few hundred log operations).
const SEEDS: u64 = 256;

/// Seeds run on the sled store.
const SLED_SEEDS: u64 = 32;

/// How often one command may fail before the test calls it stuck.
const MAX_TRIES: u32 = 12;

/// One thing the agent does.
#[derive(Debug, Clone)]
enum Act {
    User(String),
    Step { output_chars: usize, input: u64 },
    RunPending,
    EndTurn,
    Compact,
}

/// A session's script drawn from `rng`.
fn script(rng: &mut Rng) -> Vec<Act> {
    let mut acts = Vec::new();
    for turn in 0..rng.range(3, 7) {
        acts.push(Act::User(format!("turn {turn}")));
        for _ in 0..rng.range(1, 4) {
            acts.push(Act::Step {
                output_chars: rng.heavy_tail(200, 60_000) as usize,
                input: rng.range(10_000, 98_000),
            });
            acts.push(Act::RunPending);
        }
        if rng.chance(15) {
            acts.push(Act::Compact);
            acts.push(Act::RunPending);
        }
        acts.push(Act::EndTurn);
    }
    acts
}

/// An engine over `log`; `generation` keeps the ids of engines started
/// after a restart apart from those already stored.
fn engine<L: Faultable>(log: &FaultyLog<L>, seed: u64, generation: u64) -> Engine<FaultyLog<L>> {
    EngineBuilder::new()
        .ids(SeededIds::new(
            seed.wrapping_mul(1_000).wrapping_add(generation),
        ))
        .clock(Arc::new(ManualClock::new(1_780_000_000_000)))
        .build(log.clone())
        .expect("a valid configuration")
}

/// Does `act` (`asked`: the last user message it knows was stored); the
/// error of the engine when the log failed.
fn perform<L: Faultable>(
    engine: &Engine<FaultyLog<L>>,
    session: SessionId,
    act: &Act,
    asked: &mut Option<MessageId>,
) -> Result<(), EngineError> {
    let s = engine.session(session)?;
    match act {
        Act::User(text) => {
            *asked = Some(s.user(text)?);
            Ok(())
        }
        Act::Step {
            output_chars,
            input,
        } => {
            let Some(parent) = *asked else {
                return Ok(());
            };
            let tool = PartBody::Tool {
                call_id: format!("call_{output_chars}_{input}"),
                tool: "read".into(),
                state: ToolState::Completed {
                    input: Json::Object(vec![("filePath".into(), "src/lib.rs".into())]),
                    output: "x".repeat(*output_chars),
                    title: None,
                    metadata: Json::Null,
                    start: 1,
                    end: 2,
                    attachments: vec![],
                },
            };
            let step = Step::new(parent)
                .part(tool)
                .tokens(TokenUsage {
                    input: *input,
                    output: 100,
                    ..TokenUsage::default()
                })
                .finish(FinishReason::ToolCalls);
            s.step(step).map(drop)
        }
        Act::RunPending => s.run_pending().map(drop),
        Act::EndTurn => s.end_turn().map(drop),
        Act::Compact => s.request_compaction().map(drop),
    }
}

/// The engine's state of `session` is the log's; `Ok(false)` when the log
/// did not answer (an outage not over yet), so nothing could be compared.
fn coherent<L: Faultable>(
    engine: &Engine<FaultyLog<L>>,
    log: &FaultyLog<L>,
    session: SessionId,
) -> Result<bool, String> {
    let (Ok(cached), Ok(replayed)) = (
        engine.session(session).and_then(|s| s.state()),
        log.replay(session),
    ) else {
        return Ok(false);
    };
    if cached.digest() == replayed.digest() {
        Ok(true)
    } else {
        Err(format!(
            "the engine's state (head {}) is not the log's (head {})",
            cached.head, replayed.head
        ))
    }
}

/// Runs one seed; what went wrong, in words.
fn run_seed<L: Faultable>(fresh: &dyn Fn() -> FaultyLog<L>, seed: u64) -> Result<Summary, String> {
    let mut rng = Rng::new(seed);
    let acts = script(&mut rng);
    let session = SessionId(uuid::Uuid::from_u64_pair(seed, 0xC7_1096));
    // Faults at operations drawn over the length of a run without them.
    let span = clean_operations(fresh(), seed, session, &acts);
    let log = fresh();
    for _ in 0..rng.range(1, 4) {
        let fault = match rng.range(0, 5) {
            0 => Fault::Fail,
            1 => Fault::LostAck,
            2 => Fault::Crash {
                written: rng.chance(50),
            },
            3 => Fault::SyncError {
                survives: rng.chance(50),
            },
            _ => Fault::Outage {
                calls: rng.range(1, 4) as u32,
            },
        };
        log.fail_at(rng.range(1, span), fault);
    }
    let mut generation = 0;
    let mut engine = engine(&log, seed, generation);
    let mut recoveries = 0;
    let new = NewSession::new(limits()).policy(Policy::opencode_seed());
    let mut started = false;
    let mut at = 0;
    let mut tries = 0;
    let mut asked = None;
    while at < acts.len() || !started {
        let done = if started {
            perform(&engine, session, &acts[at], &mut asked)
        } else {
            engine.create_session(new.clone().id(session)).map(drop)
        };
        let failed = match done {
            Ok(()) => None,
            // A start whose acknowledgement was lost: the session is there.
            Err(_) if !started && !log.needs_restart() && log.head(session).unwrap_or(0) > 0 => {
                None
            }
            Err(e) => Some(e),
        };
        let Some(error) = failed else {
            if started {
                at += 1;
            }
            started = true;
            tries = 0;
            continue;
        };
        tries += 1;
        if tries > MAX_TRIES {
            return Err(format!(
                "act {at} ({:?}) keeps failing: {error}",
                acts.get(at)
            ));
        }
        recoveries += 1;
        if log.needs_restart() {
            // The process that held the engine is gone: a new one starts
            // over the log once it is back.
            log.restart();
            generation += 1;
            engine = self::engine(&log, seed, generation);
        }
        log.check_acknowledged()
            .map_err(|e| format!("after {error}: {e}"))?;
        if started || log.head(session).unwrap_or(0) > 0 {
            started = true;
            // Read what the log holds; an outage may still refuse it.
            coherent(&engine, &log, session).map_err(|e| format!("after {error}: {e}"))?;
        }
    }
    if settle(&log) {
        engine = self::engine(&log, seed, generation + 1);
    }
    log.check_acknowledged()?;
    if !coherent(&engine, &log, session)? {
        return Err("the log does not answer at the end".into());
    }
    let s = engine
        .session(session)
        .map_err(|e| format!("session: {e}"))?;
    s.window().map_err(|e| format!("window: {e}"))?;
    let audit = s.audit().map_err(|e| format!("audit: {e}"))?;
    Ok(Summary {
        struck: log.struck().len(),
        recoveries,
        restarts: generation,
        audited: audit.len(),
    })
}

/// How many log operations the script takes without a fault.
fn clean_operations<L: Faultable>(
    log: FaultyLog<L>,
    seed: u64,
    session: SessionId,
    acts: &[Act],
) -> u64 {
    let engine = engine(&log, seed, 0);
    let new = NewSession::new(limits()).policy(Policy::opencode_seed());
    engine
        .create_session(new.id(session))
        .expect("a clean start");
    let mut asked = None;
    for act in acts {
        perform(&engine, session, act, &mut asked).expect("a clean run");
    }
    log.operations()
}

/// Ends what is still planned for the checks at the end of a run; whether
/// the log had to restart (its engine is gone with the process).
fn settle<L: Faultable>(log: &FaultyLog<L>) -> bool {
    log.disarm();
    let restart = log.needs_restart();
    if restart {
        log.restart();
    }
    restart
}

/// What a seed's run went through.
#[derive(Debug, Default)]
struct Summary {
    struck: usize,
    recoveries: u32,
    restarts: u64,
    audited: usize,
}

/// Runs every seed (or `CTXLOG_FAULT_SEED` alone) up to `seeds` on logs
/// from `fresh`; what they went through, in all.
fn run_seeds<L: Faultable>(fresh: &dyn Fn() -> FaultyLog<L>, seeds: u64, which: &str) -> Summary {
    let seeds: Vec<u64> = match std::env::var("CTXLOG_FAULT_SEED") {
        Ok(one) => vec![one.parse().expect("CTXLOG_FAULT_SEED is a number")],
        Err(_) => (0..seeds).collect(),
    };
    let mut total = Summary::default();
    for seed in seeds {
        match run_seed(fresh, seed) {
            Ok(s) => {
                total.struck += s.struck;
                total.recoveries += s.recoveries;
                total.restarts += s.restarts;
                total.audited += s.audited;
            }
            Err(e) => panic!(
                "seed {seed} on {which}: {e}\nreplay it alone: CTXLOG_FAULT_SEED={seed} cargo test -p ctxlog-engine --test faults"
            ),
        }
    }
    eprintln!("{which}: {total:?}");
    // The faults struck and were recovered from; a run without them would
    // prove nothing (one seed alone may have no restart).
    assert!(total.struck > 0 && total.recoveries > 0, "{total:?}");
    assert!(total.audited > 0);
    total
}

/// Fresh sled stores for one test, each in its own directory (removed
/// when the test ends).
struct SledStores(RefCell<Vec<TempDir>>);

impl SledStores {
    fn fresh(&self) -> FaultyLog<SledStore> {
        let dir = TempDir::new("faults");
        let store = SledStore::open(dir.path()).expect("a fresh store opens");
        self.0.borrow_mut().push(dir);
        FaultyLog::over(store)
    }
}

#[test]
fn the_engine_survives_seeded_log_faults() {
    let total = run_seeds(
        &|| FaultyLog::over(MemoryLog::new()),
        SEEDS,
        "the memory log",
    );
    if std::env::var_os("CTXLOG_FAULT_SEED").is_none() {
        assert!(total.restarts > 0, "{total:?}");
    }
}

#[test]
fn the_engine_survives_seeded_faults_of_the_sled_store() {
    // Fewer seeds: every append here is a durable one (an fsync).
    let stores = SledStores(RefCell::new(Vec::new()));
    run_seeds(&|| stores.fresh(), SLED_SEEDS, "the sled store");
}

/// The fault kinds of the exhaustive tests.
const KINDS: [Fault; 7] = [
    Fault::Fail,
    Fault::LostAck,
    Fault::Crash { written: false },
    Fault::Crash { written: true },
    Fault::SyncError { survives: false },
    Fault::SyncError { survives: true },
    Fault::Outage { calls: 2 },
];

/// A fault of each kind at each operation of the short script, on logs
/// from `fresh`.
fn every_fault_everywhere<L: Faultable>(fresh: &dyn Fn() -> FaultyLog<L>) {
    let clean = fresh();
    drive_clean(&clean);
    let operations = clean.operations();
    assert!(operations >= 8, "{operations} operations");
    for op in 1..=operations {
        for kind in KINDS {
            if let Err(e) = drive_with(fresh(), op, kind) {
                panic!("{kind:?} at operation {op}: {e}");
            }
        }
    }
}

#[test]
fn a_fault_at_every_operation_of_one_session_is_survived() {
    every_fault_everywhere(&|| FaultyLog::over(MemoryLog::new()));
}

#[test]
fn a_fault_at_every_operation_of_one_session_on_sled_is_survived() {
    let stores = SledStores(RefCell::new(Vec::new()));
    every_fault_everywhere(&|| stores.fresh());
}

/// The short script of the exhaustive test, on `log`, with no fault.
fn drive_clean<L: Faultable>(log: &FaultyLog<L>) {
    let e = engine(log, 7, 0);
    let s = SessionId(uuid::Uuid::from_u64_pair(7, 7));
    e.create_session(NewSession::new(limits()).id(s)).unwrap();
    let mut asked = None;
    for act in short_script() {
        perform(&e, s, &act, &mut asked).unwrap();
    }
}

fn short_script() -> Vec<Act> {
    vec![
        Act::User("hello".into()),
        Act::Step {
            output_chars: 30_000,
            input: 40_000,
        },
        Act::RunPending,
        Act::EndTurn,
        Act::User("again".into()),
        Act::Step {
            output_chars: 100,
            input: 95_000,
        },
        Act::RunPending,
        Act::EndTurn,
    ]
}

/// The short script with `fault` at operation `op`, recovering as
/// `run_seed` does.
fn drive_with<L: Faultable>(log: FaultyLog<L>, op: u64, fault: Fault) -> Result<(), String> {
    log.fail_at(op, fault);
    let s = SessionId(uuid::Uuid::from_u64_pair(7, 7));
    let mut generation = 0;
    let mut e = engine(&log, 7, generation);
    let mut acts = short_script().into_iter().map(Some).collect::<Vec<_>>();
    acts.insert(0, None);
    let mut asked = None;
    for act in &acts {
        let mut tries = 0;
        loop {
            let done = match act {
                None => e.create_session(NewSession::new(limits()).id(s)).map(drop),
                Some(act) => perform(&e, s, act, &mut asked),
            };
            let Err(error) = done else { break };
            if act.is_none() && !log.needs_restart() && log.head(s).unwrap_or(0) > 0 {
                break;
            }
            tries += 1;
            if tries > MAX_TRIES {
                return Err(format!("{act:?} keeps failing: {error}"));
            }
            if log.needs_restart() {
                log.restart();
                generation += 1;
                e = engine(&log, 7, generation);
            }
            log.check_acknowledged()
                .map_err(|x| format!("after {error}: {x}"))?;
            if log.head(s).unwrap_or(0) > 0 {
                coherent(&e, &log, s).map_err(|x| format!("after {error}: {x}"))?;
            }
        }
    }
    if settle(&log) {
        e = engine(&log, 7, generation + 1);
    }
    log.check_acknowledged()?;
    match coherent(&e, &log, s)? {
        true => Ok(()),
        false => Err("the log does not answer at the end".into()),
    }
}
