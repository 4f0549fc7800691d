//! The index against the reducer: every tool output's status is what the
//! window says of it; a catch-up in pieces (a kill between them) gives the
//! index one catch-up gives; queries, recall and compactions on a session
//! written to be found.

use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::window::ToolResult;
use ctxlog_core::{window, Envelope, SessionState, WindowPart};
use ctxlog_search::{
    catch_up, recall, replaced, search, Recalled, SearchIndex, SearchRequest, Status, Which,
};
use ctxlog_store::{EventLog, Expected, MemoryLog, NewEvent};
use ctxlog_testkit::TempDir;
use std::collections::BTreeMap;
use std::time::Duration;

fn store(log: &MemoryLog, events: &[Envelope]) {
    let session = events[0].session;
    let batch: Vec<NewEvent> = events.iter().cloned().map(NewEvent::from).collect();
    log.append(session, Expected::Any, batch).unwrap();
}

fn keep_all(_: &Envelope) -> bool {
    true
}

fn caught_up(index: &SearchIndex, log: &MemoryLog) {
    catch_up(index, log, &keep_all, Duration::ZERO, &mut |_| {}).unwrap();
}

/// A generated session with prunes and compactions.
fn session(seed: u64) -> Vec<Envelope> {
    let events = generate(&GenerateConfig {
        seed,
        turns: 30,
        limits: ctxlog_core::ModelLimits {
            context: 100_000,
            input: None,
            output: Some(8_000),
        },
        ..GenerateConfig::default()
    })
    .unwrap();
    let kinds = |k: &str| events.iter().filter(|e| e.event.kind() == k).count();
    assert!(kinds("parts_pruned") > 0 && kinds("summary_completed") > 1);
    events
}

/// What the window says of each tool call: sent whole, cleared, or absent.
fn window_statuses(events: &[Envelope]) -> BTreeMap<String, &'static str> {
    let state = SessionState::replay(events).unwrap();
    let mut out = BTreeMap::new();
    for m in window(&state).messages {
        for p in m.parts {
            if let WindowPart::Tool {
                call_id, result, ..
            } = p
            {
                let cleared = matches!(&result, ToolResult::Output { text, .. }
                    if text == ctxlog_core::window::PRUNED_PLACEHOLDER);
                out.insert(call_id, if cleared { "pruned" } else { "in_window" });
            }
        }
    }
    out
}

#[test]
fn every_tool_outputs_status_is_what_the_window_says() {
    let events = session(2);
    let log = MemoryLog::new();
    store(&log, &events);
    let dir = TempDir::new("search-status");
    let (index, remade) = SearchIndex::open(&dir.join("index")).unwrap();
    assert_eq!(remade, Some(ctxlog_search::Remade::Missing));
    caught_up(&index, &log);
    let sent = window_statuses(&events);
    let mut seen = BTreeMap::<&str, usize>::new();
    let calls: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            ctxlog_core::Event::PartAppended {
                body: ctxlog_core::PartBody::Tool { call_id, .. },
                ..
            } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    for call in &calls {
        let found = recall(&index, &log, call, None).unwrap();
        let [Recalled::Part(part)] = found.as_slice() else {
            panic!("{call}: {found:?}")
        };
        let status = match part.status {
            Status::InWindow => "in_window",
            Status::Pruned { .. } => "pruned",
            Status::Compacted { .. } => "compacted",
            Status::Withdrawn { .. } => "withdrawn",
        };
        let expected = sent.get(call).copied().unwrap_or("compacted");
        assert_eq!(status, expected, "call {call}");
        *seen.entry(status).or_default() += 1;
    }
    assert_eq!(seen.len(), 3, "every status is met: {seen:?}");
}

#[test]
fn a_catch_up_cut_into_pieces_ends_as_one_catch_up() {
    let events = session(6);
    let whole = MemoryLog::new();
    store(&whole, &events);
    let dir = TempDir::new("search-pieces");
    let (one, _) = SearchIndex::open(&dir.join("one")).unwrap();
    caught_up(&one, &whole);

    let growing = MemoryLog::new();
    let (pieces, _) = SearchIndex::open(&dir.join("pieces")).unwrap();
    for chunk in events.chunks(events.len() / 5 + 1) {
        store(&growing, chunk);
        caught_up(&pieces, &growing);
    }
    // Reopened as a new process would.
    drop(pieces);
    let (pieces, remade) = SearchIndex::open(&dir.join("pieces")).unwrap();
    assert_eq!(remade, None);
    assert_eq!(pieces.watermarks().unwrap(), one.watermarks().unwrap());
    for query in ["error", "the", "file*", "\"src main\""] {
        let a = every_hit(&one, &whole, query);
        let b = every_hit(&pieces, &growing, query);
        assert!(!a.is_empty(), "{query}");
        assert_eq!(a, b, "{query}");
    }
}

/// Every hit of `query` (page after page), as (part, status) in part
/// order: the order of equal scores may differ with the segments.
fn every_hit(
    index: &SearchIndex,
    log: &MemoryLog,
    query: &str,
) -> Vec<(ctxlog_core::PartId, Status)> {
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
    assert_eq!(out.len(), before, "{query}: a part found on two pages");
    out
}

#[test]
fn what_a_compaction_replaced_is_given_back_with_its_summary() {
    let events = session(11);
    let log = MemoryLog::new();
    store(&log, &events);
    let dir = TempDir::new("search-compaction");
    let (index, _) = SearchIndex::open(&dir.join("index")).unwrap();
    caught_up(&index, &log);
    let session = events[0].session;
    let count = ctxlog_search::compactions(&index, session).unwrap().len();
    let first = replaced(&index, &log, session, Which::FromLast(count))
        .unwrap()
        .unwrap();
    let last = replaced(&index, &log, session, Which::FromLast(1))
        .unwrap()
        .unwrap();
    assert_eq!(first.number, 1);
    assert!(last.number > 1);
    for r in [&first, &last] {
        assert!(!r.messages.is_empty());
        let summary = r.summary.as_ref().unwrap();
        assert_eq!(summary.author, "summary");
        assert!(!summary.parts.is_empty());
        for m in &r.messages {
            assert!(
                matches!(m.status, Status::Compacted { .. }),
                "{:?}",
                m.status
            );
        }
    }
    // The same compaction, named by the seq of its completion.
    let at = replaced(&index, &log, session, Which::At(last.pivot.at))
        .unwrap()
        .unwrap();
    assert_eq!(at.number, last.number);
    assert!(replaced(&index, &log, session, Which::At(1))
        .unwrap()
        .is_none());
}
