//! Many writers, one subscriber: 8 processes append to 50 sessions each at
//! once while this process tails the log; every event is delivered exactly
//! once, each session in seq order, each writer's appends in the order it
//! made them. Needs a server (`CTXLOG_TEST_POSTGRES`).

use ctxlog_core::{Seq, SessionId};
use ctxlog_postgres::{PgLog, PgOptions, Position};
use ctxlog_store::conformance::session_events;
use ctxlog_store::{EventLog, Expected};
use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WRITERS: u64 = 8;
const SESSIONS: u64 = 50;
/// Appends per session, of [`BATCH`] events each.
const ROUNDS: u64 = 3;
const BATCH: usize = 2;

/// The writer `k`'s session `j`: its id and events.
fn session(k: u64, j: u64) -> (SessionId, Vec<ctxlog_store::NewEvent>) {
    session_events(10_000 + k * SESSIONS + j, ROUNDS as usize * BATCH)
}

/// `<name>_<pid>`, dropped first: a run killed before its end leaves its
/// schema behind, and a later run may get the same process id.
fn fresh_schema(url: &str, name: &str) -> String {
    let schema = format!("{name}_{}", std::process::id());
    postgres::Client::connect(url, postgres::NoTls)
        .unwrap()
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .unwrap();
    schema
}

fn open(url: &str, schema: &str) -> PgLog {
    PgLog::open_with(
        url,
        PgOptions {
            schema: Some(schema.to_owned()),
        },
    )
    .expect("the log opens")
}

/// One writer process: round by round, one append to each of its sessions.
#[test]
#[ignore = "run by eight_writers_one_tail in a child process"]
fn tail_writer() {
    let (Ok(url), Ok(schema), Ok(k)) = (
        std::env::var("CTXLOG_TEST_POSTGRES"),
        std::env::var("CTXLOG_TAIL_SCHEMA"),
        std::env::var("CTXLOG_TAIL_WRITER"),
    ) else {
        panic!("run by eight_writers_one_tail, which sets the environment");
    };
    let k: u64 = k.parse().unwrap();
    let log = open(&url, &schema);
    let sessions: Vec<_> = (0..SESSIONS).map(|j| session(k, j)).collect();
    for round in 0..ROUNDS {
        for (id, events) in &sessions {
            let from = round as usize * BATCH;
            log.append(
                *id,
                Expected::Exactly(from as Seq),
                events[from..from + BATCH].to_vec(),
            )
            .expect("an append of this writer's own session");
        }
    }
}

#[test]
fn eight_writers_one_tail() {
    let Some(url) = ctxlog_testkit::postgres_url("eight_writers_one_tail") else {
        return;
    };
    let schema = fresh_schema(&url, "tail");
    let log = open(&url, &schema);
    let mut tail = log.tail(Position::default());
    let children: Vec<_> = (0..WRITERS)
        .map(|k| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--ignored", "--exact", "tail_writer", "--quiet"])
                .env("CTXLOG_TAIL_SCHEMA", &schema)
                .env("CTXLOG_TAIL_WRITER", k.to_string())
                .stdout(Stdio::null())
                .spawn()
                .expect("a writer starts")
        })
        .collect();

    // Which writer wrote each session, and in which of its appends.
    let mut owner: BTreeMap<SessionId, (u64, u64)> = BTreeMap::new();
    for k in 0..WRITERS {
        for j in 0..SESSIONS {
            owner.insert(session(k, j).0, (k, j));
        }
    }
    let total = (WRITERS * SESSIONS * ROUNDS) as usize * BATCH;
    let mut delivered = Vec::with_capacity(total);
    let deadline = Instant::now() + Duration::from_secs(180);
    while delivered.len() < total && Instant::now() < deadline {
        delivered.extend(
            tail.poll(Duration::from_millis(500))
                .expect("the tail reads"),
        );
    }
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a writer failed");
    }
    // Nothing more than what was written.
    delivered.extend(tail.poll(Duration::from_millis(200)).unwrap());
    if delivered.len() != total {
        // Seen twice in 2026-11 runs (2,368 of 2,400): say whether the
        // missing events were stored (the tail passed over them) or not
        // (an acknowledged append was lost), and where they are.
        let seen: BTreeSet<String> = delivered.iter().map(|(_, e)| e.id.to_string()).collect();
        let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let rows = c
            .query(
                &format!(
                    "SELECT id::text, tx::text, position FROM \"{schema}\".ctxlog_events ORDER BY tx, position"
                ),
                &[],
            )
            .unwrap();
        let missing: Vec<String> = rows
            .iter()
            .filter(|r| !seen.contains(&r.get::<_, String>(0)))
            .map(|r| {
                format!(
                    "tx {} position {}",
                    r.get::<_, String>(1),
                    r.get::<_, i64>(2)
                )
            })
            .take(8)
            .collect();
        panic!(
            "{} of {total} events delivered, {} stored; not delivered: {missing:?}; checkpoint {:?}",
            delivered.len(),
            rows.len(),
            tail.checkpoint()
        );
    }

    let ids: BTreeSet<_> = delivered.iter().map(|(_, e)| e.id).collect();
    assert_eq!(ids.len(), total, "no event twice");
    assert!(
        delivered.windows(2).all(|w| w[0].0 < w[1].0),
        "positions strictly increase"
    );
    let mut next_seq: BTreeMap<SessionId, Seq> = BTreeMap::new();
    let mut last_append: BTreeMap<u64, u64> = BTreeMap::new();
    for (_, e) in &delivered {
        let want = next_seq.entry(e.session).or_insert(1);
        assert_eq!(e.seq, *want, "session {} in seq order", e.session);
        *want += 1;
        // The writer's append number: round-major over its sessions.
        let (k, j) = owner[&e.session];
        let append = (e.seq - 1) / BATCH as Seq * SESSIONS + j;
        let last = last_append.entry(k).or_insert(0);
        assert!(
            append >= *last,
            "writer {k}'s appends in the order it made them"
        );
        *last = append;
    }
    assert_eq!(tail.checkpoint(), delivered.last().unwrap().0);

    // A tail restarted from a checkpoint delivers only what follows it.
    let middle = delivered[total / 2].0;
    let mut again = log.tail(middle);
    let rest = again.poll(Duration::from_millis(100)).unwrap();
    assert_eq!(
        rest.first().map(|(p, _)| *p),
        Some(delivered[total / 2 + 1].0)
    );

    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .unwrap();
}

/// A follower of one handle sees what another handle (as another process
/// would) appends: woken by its notifications, or by the listener's sweep.
#[test]
fn a_follower_sees_another_writers_appends() {
    let Some(url) = ctxlog_testkit::postgres_url("a_follower_sees_another_writers_appends") else {
        return;
    };
    let schema = fresh_schema(&url, "follow");
    let (reader, writer) = (open(&url, &schema), open(&url, &schema));
    let mut follower = ctxlog_store::Follower::new(&reader, BTreeMap::new());
    assert!(follower.poll(Duration::from_millis(50)).unwrap().is_empty());
    let (s, events) = session(99, 0);
    for (at, e) in (0..).zip(events) {
        let expected = if at == 0 {
            Expected::NoStream
        } else {
            Expected::Exactly(at)
        };
        writer.append(s, expected, vec![e]).unwrap();
    }
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.len() < ROUNDS as usize * BATCH && Instant::now() < deadline {
        seen.extend(
            follower
                .poll(Duration::from_millis(500))
                .unwrap()
                .into_iter()
                .map(|e| e.seq),
        );
    }
    assert_eq!(seen, (1..=(ROUNDS * BATCH as u64)).collect::<Vec<_>>());
    drop((reader, writer));
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .unwrap();
}
