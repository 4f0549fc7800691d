//! The search index in PostgreSQL's full-text search against the embedded
//! one (tantivy) over the same log: the same hits with the same statuses,
//! the same recalls and compactions; a catch-up in pieces ends as one; a
//! long output is found by words far apart and by a phrase across its
//! chunks. Needs a server (`CTXLOG_TEST_POSTGRES`); skipped with a message
//! without one, outside CI.

use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::{Envelope, Event, PartBody, PartId};
use ctxlog_postgres::{PgLog, PgOptions, PgSearch};
use ctxlog_search::{
    catch_up, compactions, recall, replaced, search, Engine, Lookup, SearchIndex, SearchRequest,
    Status, Which,
};
use ctxlog_store::{EventLog, Expected, NewEvent};
use ctxlog_testkit::TempDir;
use std::time::Duration;

/// A fresh log in a schema of its own, dropped afterwards.
struct Fresh {
    url: String,
    schema: String,
    log: PgLog,
}

impl Fresh {
    fn new(test: &str) -> Option<Fresh> {
        let url = ctxlog_testkit::postgres_url(test)?;
        let schema = format!("search_{test}_{}", std::process::id());
        let log = PgLog::open_with(
            &url,
            PgOptions {
                schema: Some(schema.clone()),
            },
        )
        .expect("a fresh log opens");
        Some(Fresh { url, schema, log })
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA \"{}\" CASCADE", self.schema));
        }
    }
}

fn keep_all(_: &Envelope) -> bool {
    true
}

fn caught_up<E: Engine + ?Sized>(index: &E, log: &PgLog) {
    catch_up(index, log, &keep_all, Duration::from_secs(5), &mut |_| {}).unwrap();
}

fn store(log: &PgLog, events: &[Envelope]) {
    let batch: Vec<NewEvent> = events.iter().cloned().map(NewEvent::from).collect();
    log.append(events[0].session, Expected::Any, batch).unwrap();
}

/// A generated session with prunes and compactions.
fn session(seed: u64) -> Vec<Envelope> {
    generate(&GenerateConfig {
        seed,
        turns: 30,
        limits: ctxlog_core::ModelLimits {
            context: 100_000,
            input: None,
            output: Some(8_000),
        },
        ..GenerateConfig::default()
    })
    .unwrap()
}

/// Every hit of `query` (page after page), as (part, status), in part
/// order: the engines rank differently.
fn every_hit<I: Lookup + ?Sized>(index: &I, log: &PgLog, query: &str) -> Vec<(PartId, Status)> {
    let mut out = Vec::new();
    loop {
        let request = SearchRequest {
            query: query.into(),
            limit: ctxlog_search::MAX_LIMIT,
            skip: out.len(),
            ..SearchRequest::default()
        };
        let found = search(index, log, &request).unwrap();
        out.extend(found.hits.iter().map(|h| (h.part, h.status)));
        if !found.more {
            break;
        }
        assert!(
            out.len() <= ctxlog_search::MAX_SKIP,
            "{query}: too many hits for a test"
        );
    }
    out.sort_by_key(|(p, _)| *p);
    let before = out.len();
    out.dedup_by_key(|(p, _)| *p);
    assert_eq!(out.len(), before, "{query}: a part found twice");
    out
}

#[test]
fn postgres_finds_what_tantivy_finds_with_the_same_statuses() {
    let Some(pg) = Fresh::new("same") else { return };
    let events = session(2);
    // In pieces, as a session grows while it is searched.
    let search_pg: PgSearch = pg.log.search();
    for chunk in events.chunks(events.len() / 4 + 1) {
        store(&pg.log, chunk);
        caught_up(&search_pg, &pg.log);
    }
    let dir = TempDir::new("pg-search-same");
    let (embedded, _) = SearchIndex::open(&dir.join("index")).unwrap();
    caught_up(&embedded, &pg.log);
    assert_eq!(
        search_pg.watermarks().unwrap(),
        embedded.watermarks().unwrap()
    );
    for query in [
        "error",
        "the",
        "file*",
        "\"src main\"",
        "error -the",
        "zzz OR error",
    ] {
        let a = every_hit(&embedded, &pg.log, query);
        assert!(!a.is_empty(), "{query}");
        assert_eq!(every_hit(&search_pg, &pg.log, query), a, "{query}");
    }
    let mut statuses = std::collections::BTreeSet::new();
    for e in &events {
        if let Event::PartAppended {
            body: PartBody::Tool { call_id, .. },
            ..
        } = &e.event
        {
            let a = recall(&embedded, &pg.log, call_id, None).unwrap();
            assert_eq!(recall(&search_pg, &pg.log, call_id, None).unwrap(), a);
            if let [ctxlog_search::Recalled::Part(p)] = a.as_slice() {
                statuses.insert(match p.status {
                    Status::InWindow => "in_window",
                    Status::Pruned { .. } => "pruned",
                    Status::Compacted { .. } => "compacted",
                    Status::Withdrawn { .. } => "withdrawn",
                });
            }
        }
    }
    assert!(statuses.len() >= 3, "every status is met: {statuses:?}");
    let session = events[0].session;
    let all = compactions(&embedded, session).unwrap();
    assert!(all.len() > 1);
    assert_eq!(compactions(&search_pg, session).unwrap(), all);
    for back in 1..=all.len() {
        let which = Which::FromLast(back);
        assert_eq!(
            replaced(&search_pg, &pg.log, session, which).unwrap(),
            replaced(&embedded, &pg.log, session, which).unwrap()
        );
    }
}

#[test]
fn a_long_output_is_found_by_far_words_and_by_a_phrase_across_chunks() {
    let Some(pg) = Fresh::new("long") else { return };
    let mut events = session(5);
    // 40,000 words: the first and the last far apart, a phrase across
    // the first chunk's end (16,000 words).
    let mut words: Vec<String> = (0..40_000).map(|i| format!("filler{}", i % 97)).collect();
    words[0] = "alphastart".into();
    words[39_999] = "omegaend".into();
    words[15_999] = "bridgeleft".into();
    words[16_000] = "bridgeright".into();
    let long = words.join(" ");
    let part = events
        .iter_mut()
        .find_map(|e| match &mut e.event {
            Event::PartAppended {
                part,
                body: PartBody::Text { text, .. },
                ..
            } => {
                *text = long.clone();
                Some(*part)
            }
            _ => None,
        })
        .unwrap();
    store(&pg.log, &events);
    let index = pg.log.search();
    caught_up(&index, &pg.log);
    for query in [
        "alphastart omegaend",
        "\"bridgeleft bridgeright\"",
        "omega*",
    ] {
        let hits = every_hit(&index, &pg.log, query);
        assert_eq!(
            hits.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
            [part],
            "{query}"
        );
    }
    assert!(every_hit(&index, &pg.log, "alphastart -omegaend").is_empty());
    // The snippet shows the phrase met.
    let found = search(
        &index,
        &pg.log,
        &SearchRequest {
            query: "\"bridgeleft bridgeright\"".into(),
            limit: 1,
            ..SearchRequest::default()
        },
    )
    .unwrap();
    assert!(found.hits[0].snippet.contains("bridgeleft bridgeright"));
    // Made again from nothing, it holds the same.
    index.clear(Duration::ZERO).unwrap();
    assert!(every_hit(&index, &pg.log, "alphastart").is_empty());
    caught_up(&index, &pg.log);
    assert_eq!(every_hit(&index, &pg.log, "alphastart").len(), 1);
}

#[test]
fn one_writer_at_a_time_and_the_second_waits_or_says_busy() {
    let Some(pg) = Fresh::new("busy") else { return };
    store(&pg.log, &session(7));
    let index = pg.log.search();
    let writer = index.writer(Duration::ZERO).unwrap();
    let other = pg.log.search();
    let busy = catch_up(
        &other,
        &pg.log,
        &keep_all,
        Duration::from_millis(200),
        &mut |_| {},
    );
    assert!(
        matches!(busy, Err(ctxlog_search::SearchError::Busy { .. })),
        "{busy:?}"
    );
    drop(writer);
    caught_up(&other, &pg.log);
    assert!(!every_hit(&other, &pg.log, "the").is_empty());
}
