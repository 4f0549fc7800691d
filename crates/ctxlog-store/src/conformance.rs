//! The log conformance suite: what every [`EventLog`] promises, as checks
//! any implementation runs (feature `testing`). The memory log runs it
//! in this crate's `tests/conformance.rs`, the sled and PostgreSQL logs in
//! their crates' (the same suite, unchanged); a new log runs it with
//! [`conformance_tests!`](crate::conformance_tests) and a [`Harness`].
//!
//! Every check takes a fresh log from the harness and panics, naming what
//! differs, when the log breaks a promise. Where a behaviour has one right
//! answer for every log (which append is refused, with which error), the
//! check also compares the log with [`MemoryLog`], the reference.

use crate::error::{AppendError, Expected, ReadError};
use crate::follower::{Followable, Follower};
use crate::log::{Appended, EventLog, NewEvent};
use crate::memory::MemoryLog;
use crate::SessionStates;
use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::{codec, Envelope, Event, PartBody, Seq, SessionId};
use std::collections::BTreeMap;
use std::time::Duration;

/// What the suite needs from a log implementation besides the trait.
pub trait Harness {
    /// The log under test.
    type Log: Followable + Clone + Send + Sync + 'static;

    /// A fresh, empty log.
    fn fresh(&mut self) -> Self::Log;

    /// Checks the whole log (records, chains, heads); the problems found,
    /// in words, or `Ok` when it is sound.
    fn verify(&self, log: &Self::Log) -> Result<(), String>;

    /// Whether [`EventLog::newest_snapshot`] gives back the snapshots
    /// [`EventLog::keep_snapshot`] keeps (a log may ignore them), so that
    /// [`SessionStates::load_state`] starts from them.
    fn keeps_snapshots(&self) -> bool;
}

/// A valid session of about `n` events (generated from `seed`), as events
/// to append.
pub fn session_events(seed: u64, n: usize) -> (SessionId, Vec<NewEvent>) {
    let config = GenerateConfig {
        seed,
        turns: (n / 12 + 2) as u32,
        max_output_chars: 4_000,
        ..GenerateConfig::default()
    };
    let events = generate(&config).expect("the generator makes valid sessions");
    let session = events[0].session;
    (
        session,
        events.into_iter().take(n).map(NewEvent::from).collect(),
    )
}

/// A session id made of one repeated byte.
pub fn sid(n: u8) -> SessionId {
    SessionId(uuid::Uuid::from_bytes([n; 16]))
}

/// Every event of `session` from `from` on.
pub fn read_all(log: &dyn EventLog, session: SessionId, from: Seq) -> Vec<Envelope> {
    log.read(session, from)
        .expect("read")
        .collect::<Result<Vec<_>, _>>()
        .expect("every event reads")
}

fn seqs(log: &dyn EventLog, session: SessionId, from: Seq) -> Vec<Seq> {
    read_all(log, session, from).iter().map(|e| e.seq).collect()
}

/// Runs `check` on a fresh log, then verifies the log.
fn on_fresh<H: Harness>(h: &mut H, check: impl FnOnce(&H::Log)) {
    let log = h.fresh();
    check(&log);
    if let Err(problems) = h.verify(&log) {
        panic!("the log does not verify after the check: {problems}");
    }
}

/// Appends are checked against the expected version; a refused append
/// names the actual head and writes nothing.
pub fn expected_versions<H: Harness>(h: &mut H) {
    on_fresh(h, |log| {
        let (s, ev) = session_events(1, 10);
        let a = log.append(s, Expected::NoStream, ev[..3].to_vec()).unwrap();
        assert_eq!((a.session, a.first, a.last, a.duplicate), (s, 1, 3, false));
        for (expected, n) in [(Expected::NoStream, 3), (Expected::Exactly(2), 3)] {
            match log.append(s, expected, ev[3..4].to_vec()).unwrap_err() {
                AppendError::WrongExpectedVersion {
                    session,
                    expected: e,
                    actual,
                } => assert_eq!((session, e, actual), (s, expected, n)),
                e => panic!("expected a version conflict, got: {e}"),
            }
        }
        // a new session: Exactly(0) is "no stream", Exactly(1) is not
        let other = sid(3);
        assert!(matches!(
            log.append(other, Expected::Exactly(1), ev[3..4].to_vec()),
            Err(AppendError::WrongExpectedVersion { actual: 0, .. })
        ));
        assert_eq!(log.head(other).unwrap(), 0);
        let a = log
            .append(s, Expected::Exactly(3), ev[3..5].to_vec())
            .unwrap();
        assert_eq!((a.first, a.last), (4, 5));
        let a = log.append(s, Expected::Any, ev[5..6].to_vec()).unwrap();
        assert_eq!((a.first, a.last), (6, 6));
        assert_eq!(log.head(s).unwrap(), 6);
        assert_eq!(seqs(log, s, 1), (1..=6).collect::<Vec<_>>());
    });
}

/// An empty batch is refused and creates nothing.
pub fn empty_appends<H: Harness>(h: &mut H) {
    on_fresh(h, |log| {
        let s = sid(1);
        for expected in [Expected::Any, Expected::NoStream] {
            assert!(matches!(
                log.append(s, expected, Vec::new()),
                Err(AppendError::EmptyAppend)
            ));
        }
        assert_eq!(log.head(s).unwrap(), 0);
        assert!(log.sessions().unwrap().is_empty());
        assert!(seqs(log, s, 1).is_empty());
    });
}

/// Appending stored ids with the same content is a retry that returns the
/// original position; other content, another place or a mixed batch is
/// refused, and nothing of a refused batch is written.
pub fn idempotent_ids<H: Harness>(h: &mut H) {
    on_fresh(h, |log| {
        let (s, ev) = session_events(3, 8);
        log.append(s, Expected::NoStream, ev[..4].to_vec()).unwrap();
        log.append(s, Expected::Exactly(4), ev[4..6].to_vec())
            .unwrap();
        // the same batch, even with a stale expected version
        let again = log.append(s, Expected::NoStream, ev[..4].to_vec()).unwrap();
        assert_eq!((again.first, again.last, again.duplicate), (1, 4, true));
        let again = log.append(s, Expected::Any, ev[4..6].to_vec()).unwrap();
        assert_eq!((again.first, again.last, again.duplicate), (5, 6, true));
        // a contiguous part of a stored batch is a retry too
        let again = log
            .append(s, Expected::Exactly(1), ev[1..3].to_vec())
            .unwrap();
        assert_eq!((again.first, again.last, again.duplicate), (2, 3, true));
        // same id, different content
        let mut changed = ev[1].clone();
        changed.recorded_at += 1;
        match log.append(s, Expected::Any, vec![changed]).unwrap_err() {
            AppendError::IdConflict { id, session, seq } => {
                assert_eq!((id, session, seq), (ev[1].id, s, 2))
            }
            e => panic!("expected an id conflict, got: {e}"),
        }
        // stored ids, not contiguous or out of order
        assert!(matches!(
            log.append(s, Expected::Any, vec![ev[0].clone(), ev[2].clone()]),
            Err(AppendError::IdConflict { seq: 3, .. })
        ));
        assert!(matches!(
            log.append(s, Expected::Any, vec![ev[1].clone(), ev[0].clone()]),
            Err(AppendError::IdConflict { seq: 1, .. })
        ));
        // same id to another session
        assert!(matches!(
            log.append(sid(7), Expected::Any, vec![ev[0].clone()]),
            Err(AppendError::IdConflict { seq: 1, .. })
        ));
        // a batch mixing stored and new events, or repeating an id
        match log.append(s, Expected::Any, ev[5..8].to_vec()).unwrap_err() {
            AppendError::PartialDuplicate { id } => assert_eq!(id, ev[5].id),
            e => panic!("expected a partial duplicate, got: {e}"),
        }
        match log
            .append(s, Expected::Any, vec![ev[6].clone(), ev[6].clone()])
            .unwrap_err()
        {
            AppendError::PartialDuplicate { id } => assert_eq!(id, ev[6].id),
            e => panic!("expected a partial duplicate, got: {e}"),
        }
        // nothing of the failed appends was written
        assert_eq!(log.head(s).unwrap(), 6);
        assert_eq!(log.head(sid(7)).unwrap(), 0);
        assert_eq!(log.sessions().unwrap(), vec![(s, 6)]);
        assert_eq!(log.replay(s).unwrap().head, 6);
        // and the refused events can still be appended where they belong
        let a = log
            .append(s, Expected::Exactly(6), ev[6..8].to_vec())
            .unwrap();
        assert_eq!((a.first, a.last, a.duplicate), (7, 8, false));
    });
}

/// Heads follow appends; a read starts at any seq and returns the events
/// as appended, stamped with their session and seq.
pub fn heads_and_reads<H: Harness>(h: &mut H) {
    on_fresh(h, |log| {
        let (s, ev) = session_events(5, 12);
        assert_eq!(log.head(s).unwrap(), 0);
        log.append(s, Expected::NoStream, ev[..5].to_vec()).unwrap();
        log.append(s, Expected::Exactly(5), ev[5..12].to_vec())
            .unwrap();
        assert_eq!(log.head(s).unwrap(), 12);
        assert_eq!(seqs(log, s, 0), (1..=12).collect::<Vec<_>>());
        assert_eq!(seqs(log, s, 1), (1..=12).collect::<Vec<_>>());
        assert_eq!(seqs(log, s, 5), (5..=12).collect::<Vec<_>>());
        assert_eq!(seqs(log, s, 12), vec![12]);
        assert!(seqs(log, s, 13).is_empty());
        assert!(seqs(log, s, Seq::MAX).is_empty());
        assert!(seqs(log, sid(9), 1).is_empty());
        for (e, n) in read_all(log, s, 5).iter().zip(&ev[4..]) {
            assert_eq!(e, &n.at(s, e.seq));
        }
    });
}

/// Many sessions, appended in any order, are listed in session-id order
/// with their heads, each read on its own.
pub fn many_sessions<H: Harness>(h: &mut H) {
    on_fresh(h, |log| {
        let sessions: Vec<(SessionId, Vec<NewEvent>)> =
            (0..64).map(|seed| session_events(100 + seed, 5)).collect();
        for (s, ev) in sessions.iter().rev() {
            log.append(*s, Expected::NoStream, ev.clone()).unwrap();
        }
        let mut want: Vec<(SessionId, Seq)> = sessions
            .iter()
            .map(|(s, ev)| (*s, ev.len() as Seq))
            .collect();
        want.sort();
        assert_eq!(log.sessions().unwrap(), want);
        for (s, ev) in &sessions {
            let read = read_all(log, *s, 1);
            assert_eq!(read.len(), ev.len());
            assert!(read.iter().all(|e| e.session == *s));
        }
    });
}

/// The same appends, retries, stale versions and repeats give the same
/// outcomes, the same events and the same states as the reference log.
pub fn same_as_the_reference<H: Harness>(h: &mut H) {
    on_fresh(h, |log| {
        let reference = MemoryLog::new();
        let logs: [&dyn EventLog; 2] = [log, &reference];
        let sessions: Vec<(SessionId, Vec<NewEvent>)> =
            (0..4).map(|seed| session_events(20 + seed, 60)).collect();
        let mut outcomes: [Vec<Result<Appended, String>>; 2] = [Vec::new(), Vec::new()];
        let mut at = vec![0usize; sessions.len()];
        let mut round = 0;
        while at.iter().zip(&sessions).any(|(a, (_, ev))| *a < ev.len()) {
            for (i, (s, ev)) in sessions.iter().enumerate() {
                if at[i] >= ev.len() {
                    continue;
                }
                let end = (at[i] + 1 + (round + i) % 7).min(ev.len());
                let batch = ev[at[i]..end].to_vec();
                let expected = match (round + i) % 3 {
                    0 => Expected::Any,
                    1 if at[i] == 0 => Expected::NoStream,
                    _ => Expected::Exactly(at[i] as Seq),
                };
                for (log, out) in logs.iter().zip(outcomes.iter_mut()) {
                    let outcome = |r: Result<Appended, AppendError>| r.map_err(|e| e.to_string());
                    out.push(outcome(log.append(*s, expected, batch.clone())));
                    out.push(outcome(log.append(*s, expected, batch.clone())));
                    out.push(outcome(log.append(
                        *s,
                        Expected::Exactly(at[i] as Seq),
                        ev[end..(end + 1).min(ev.len())].to_vec(),
                    )));
                }
                at[i] = end;
            }
            round += 1;
        }
        assert_eq!(outcomes[0], outcomes[1]);
        assert!(outcomes[0].iter().any(|o| o.is_err()));
        assert!(outcomes[0]
            .iter()
            .any(|o| o.as_ref().is_ok_and(|a| a.duplicate)));
        assert_eq!(log.sessions().unwrap(), reference.sessions().unwrap());
        for (s, _) in &sessions {
            for from in [0, 1, 17, 60, 61] {
                assert_eq!(read_all(log, *s, from), read_all(&reference, *s, from));
            }
            let want = reference.replay(*s).unwrap().digest();
            assert_eq!(log.replay(*s).unwrap().digest(), want);
            assert_eq!(log.load_state(*s).unwrap().state.digest(), want);
        }
        log.flush().unwrap();
    });
}

/// A saved snapshot never changes the state loaded; a log that keeps
/// snapshots folds only what follows one.
pub fn snapshots<H: Harness>(h: &mut H) {
    let keeps = h.keeps_snapshots();
    on_fresh(h, |log| {
        assert_eq!(log.keeps_snapshots(), keeps, "the log says what it does");
        let (s, ev) = session_events(30, 40);
        log.append(s, Expected::NoStream, ev[..30].to_vec())
            .unwrap();
        log.save_snapshot(&log.replay(s).unwrap()).unwrap();
        log.append(s, Expected::Exactly(30), ev[30..].to_vec())
            .unwrap();
        let loaded = log.load_state(s).unwrap();
        assert_eq!(loaded.state.digest(), log.replay(s).unwrap().digest());
        assert_eq!(loaded.state.head, 40);
        if keeps {
            assert_eq!((loaded.snapshot, loaded.replayed), (Some(30), 10));
        } else {
            assert_eq!((loaded.snapshot, loaded.replayed), (None, 40));
        }
        // Never another reducer version's.
        let version = ctxlog_core::REDUCER_VERSION;
        let newest = |v| log.newest_snapshot(s, v).unwrap();
        assert_eq!(newest(version).map(|n| n.head), keeps.then_some(30));
        assert_eq!(newest(version + 1), None);
        log.flush().unwrap();
    });
}

/// A large event (several MiB) is stored and read back unchanged; one past
/// the record limit is refused before anything is written.
pub fn large_events<H: Harness>(h: &mut H) {
    on_fresh(h, |log| {
        let (s, mut ev) = session_events(60, 12);
        let Some(i) = ev.iter().position(|e| {
            matches!(
                e.event,
                Event::PartAppended {
                    body: PartBody::Text { .. },
                    ..
                }
            )
        }) else {
            panic!("the generated session has no text part");
        };
        let grow = |e: &mut NewEvent, bytes: usize| {
            if let Event::PartAppended {
                body: PartBody::Text { text, .. },
                ..
            } = &mut e.event
            {
                *text = "ab".repeat(bytes / 2);
            }
        };
        grow(&mut ev[i], 6 << 20);
        log.append(s, Expected::NoStream, ev[..=i].to_vec())
            .unwrap();
        let read = read_all(log, s, 1);
        assert_eq!(read.len(), i + 1);
        assert_eq!(read[i], ev[i].at(s, i as Seq + 1));
        let mut over = ev[i + 1].clone();
        over.event = ev[i].event.clone();
        grow(&mut over, codec::MAX_ENCODED_BYTES as usize + 16);
        let over_id = over.id;
        match log.append(s, Expected::Any, vec![over]).unwrap_err() {
            AppendError::Encode { id, .. } => assert_eq!(id, over_id),
            e => panic!("expected an encoding refusal, got: {e}"),
        }
        assert_eq!(log.head(s).unwrap(), i as Seq + 1);
    });
}

/// Writers on one session that each append at the head they read, and on
/// a conflict read again and retry, leave every event exactly once in one
/// contiguous order; writers on other sessions never disturb them.
pub fn concurrent_appenders<H: Harness>(h: &mut H) {
    on_fresh(h, |log| {
        let shared = sid(42);
        let (_, ev) = session_events(70, 64);
        let writers: Vec<Vec<NewEvent>> = (0..4)
            .map(|w| ev.iter().skip(w).step_by(4).cloned().collect())
            .collect();
        let own: Vec<(SessionId, Vec<NewEvent>)> =
            (0..4).map(|w| session_events(80 + w, 20)).collect();
        std::thread::scope(|scope| {
            for (mine, (own_session, own_events)) in writers.iter().zip(&own) {
                let log = log.clone();
                scope.spawn(move || {
                    for e in mine {
                        append_retrying(&log, shared, e.clone());
                    }
                    for chunk in own_events.chunks(3) {
                        log.append(*own_session, Expected::Any, chunk.to_vec())
                            .unwrap();
                    }
                });
            }
        });
        let read = read_all(log, shared, 1);
        assert_eq!(read.len(), ev.len());
        assert_eq!(
            read.iter().map(|e| e.seq).collect::<Vec<_>>(),
            (1..=ev.len() as Seq).collect::<Vec<_>>()
        );
        let mut ids: Vec<_> = read.iter().map(|e| e.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), ev.len(), "an event was stored twice");
        for (s, events) in &own {
            assert_eq!(read_all(log, *s, 1).len(), events.len());
        }
    });
}

/// Appends `event` at the head it reads; on a version conflict reads again.
fn append_retrying(log: &dyn EventLog, session: SessionId, event: NewEvent) {
    for _ in 0..10_000 {
        let head = log.head(session).unwrap();
        match log.append(session, Expected::Exactly(head), vec![event.clone()]) {
            Ok(_) => return,
            Err(AppendError::WrongExpectedVersion { .. }) => std::thread::yield_now(),
            Err(e) => panic!("append failed: {e}"),
        }
    }
    panic!("no append won in 10000 tries");
}

/// A follower delivers every event once, in order, first what is stored,
/// then what is appended, and restarts from its checkpoints without a gap
/// or a duplicate.
pub fn subscriptions<H: Harness>(h: &mut H) {
    on_fresh(h, |log| {
        let (s, ev) = session_events(40, 20);
        log.append(s, Expected::NoStream, ev[..8].to_vec()).unwrap();
        let mut follower = Follower::new(log, BTreeMap::new());
        let first = follower.poll(Duration::from_millis(10)).unwrap();
        assert_eq!(
            first.iter().map(|e| e.seq).collect::<Vec<_>>(),
            (1..=8).collect::<Vec<_>>()
        );
        log.append(s, Expected::Exactly(8), ev[8..14].to_vec())
            .unwrap();
        let seen = poll_until(&mut follower, 6);
        assert_eq!(seen, (9..=14).collect::<Vec<_>>());
        // a restart from the saved checkpoints sees only what came after
        let saved = follower.checkpoints().clone();
        assert_eq!(saved.get(&s), Some(&14));
        drop(follower);
        log.append(s, Expected::Exactly(14), ev[14..].to_vec())
            .unwrap();
        let mut restarted = Follower::new(log, saved);
        assert_eq!(poll_until(&mut restarted, 6), (15..=20).collect::<Vec<_>>());
        assert!(restarted
            .poll(Duration::from_millis(20))
            .unwrap()
            .is_empty());
        // a checkpoint at the end of the seqs delivers nothing
        let mut done = Follower::new(log, BTreeMap::from([(s, Seq::MAX)]));
        assert!(done.poll(Duration::from_millis(1)).unwrap().is_empty());
    });
}

/// Polls until `n` events came; their seqs.
fn poll_until(follower: &mut Follower, n: usize) -> Vec<Seq> {
    let mut seen = Vec::new();
    while seen.len() < n {
        let got: Result<Vec<Envelope>, ReadError> = follower.poll(Duration::from_secs(5));
        let got = got.unwrap();
        assert!(!got.is_empty(), "no notification within 5 s");
        seen.extend(got.into_iter().map(|e| e.seq));
    }
    seen
}

/// One `#[test]` per check of the suite, on logs from `$harness` (an
/// expression making a [`Harness`]):
/// `ctxlog_store::conformance_tests!(MemoryHarness);`.
#[macro_export]
macro_rules! conformance_tests {
    ($harness:expr) => {
        $crate::conformance_tests!(@tests $harness;
            expected_versions, empty_appends, idempotent_ids, heads_and_reads,
            many_sessions, same_as_the_reference, snapshots, large_events,
            concurrent_appenders, subscriptions);
    };
    (@tests $harness:expr; $($check:ident),*) => {
        $(
            #[test]
            fn $check() {
                let mut harness = $harness;
                $crate::conformance::$check(&mut harness);
            }
        )*
    };
}
