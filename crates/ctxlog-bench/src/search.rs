//! Search over a store of generated sessions ([`bench_search`]): what
//! bringing the index up to the log costs against writing the log, the
//! index's size against the log's, and the latency of queries of every
//! kind (a word in every part, a phrase, a prefix, an exclusion, `OR`);
//! then the same queries over the real recordings in `../shared/sessions`
//! when that folder is there.

use crate::measure::Scratch;
use crate::postgres::{load, Schema};
use crate::report::Report;
use crate::sizes::{generated, Sizes};
use crate::stores::write_log;
use crate::{failed, BenchError};
use ctxlog_search::{catch_up, search, Lookup, SearchIndex, SearchRequest};
use ctxlog_sled::Durability;
use ctxlog_store::EventLog;
use serde_json::json;
use std::time::{Duration, Instant};

/// Sessions the search store holds (its events split evenly).
const SESSIONS: u64 = 4;

/// The queries timed, one of each kind.
const QUERIES: &[&str] = &[
    "parse",
    "\"parse token\"",
    "tok*",
    "cargo -test",
    "window OR struct",
    "\"file 7\"",
];

/// Queries over the real recordings (words their tool outputs hold).
const SHARED_QUERIES: &[&str] = &[
    "error",
    "\"cargo test\"",
    "test*",
    "file -test",
    "read OR write",
];

/// Where the real recordings are, from the repository's root.
const SHARED_SESSIONS: &str = "../shared/sessions";

/// Stage 8: search over `z.search` events, on sled and (when a server is
/// named) on PostgreSQL.
pub fn bench_search(z: &Sizes, r: &mut Report, postgres: Option<&str>) -> Result<(), BenchError> {
    let dir = Scratch::new("search");
    // Each session as `ctxlog import` takes it in: its recording (an
    // OpenCode export) read, then stored; only reading and storing timed.
    let (mut read_seconds, mut store_seconds) = (0.0, 0.0);
    for i in 0..SESSIONS {
        let mut export = Vec::new();
        ctxlog_import::export::opencode(&generated(41 + i, z.search / SESSIONS)?, &mut export)
            .map_err(|e| failed("export")(&e))?;
        let t = Instant::now();
        let imported = ctxlog_import::import(
            &export[..],
            "bench",
            ctxlog_import::Format::OpenCode,
            &ctxlog_import::ImportOptions::default(),
        )
        .map_err(|e| failed("import")(&e))?;
        let events = imported.events.to_vec().map_err(|e| failed("decode")(&e))?;
        read_seconds += t.elapsed().as_secs_f64();
        let t = Instant::now();
        write_log(dir.path(), &events)?;
        store_seconds += t.elapsed().as_secs_f64();
    }
    let log = crate::stores::store(dir.path(), Durability::Buffered)?;
    let events = total_events(&log)?;
    let (index, _) =
        SearchIndex::open(&dir.path().join("search")).map_err(|e| failed("index")(&e))?;
    let t = Instant::now();
    catch_up(&index, &log, &|_| true, Duration::ZERO, &mut |_| {})
        .map_err(|e| failed("catch up")(&e))?;
    let index_seconds = t.elapsed().as_secs_f64();
    let import_seconds = read_seconds + store_seconds;
    r.set_figure("search_events", json!(events));
    r.set_figure("index_events_per_s", json!(events as f64 / index_seconds));
    r.set_figure("store_events_per_s", json!(events as f64 / store_seconds));
    r.set_figure("import_events_per_s", json!(events as f64 / import_seconds));
    // What indexing costs an import (the measure), and the bare
    // writing of the events, a stricter floor.
    r.set_ratio(
        "import_with_index_vs_without",
        import_seconds / (import_seconds + index_seconds),
    );
    r.set_ratio(
        "store_with_index_vs_without",
        store_seconds / (store_seconds + index_seconds),
    );
    let index_bytes = index.disk_bytes();
    let log_bytes = ctxlog_search::bytes_under(dir.path()).saturating_sub(index_bytes);
    r.set_figure("index_bytes", json!(index_bytes));
    r.set_figure("log_bytes", json!(log_bytes));
    r.set_ratio(
        "index_vs_log_bytes",
        index_bytes as f64 / log_bytes.max(1) as f64,
    );

    let (p50, p99, per_query) = latencies(&index, &log, QUERIES, z.search_rounds, true)?;
    r.set_figure("search_p50_ms", json!(p50));
    r.set_figure("search_p99_ms", json!(p99));
    r.set_figure(
        "search_p50_ms_by_query",
        serde_json::Value::Object(per_query),
    );
    r.set_ratio("search_p50_vs_50ms", p50 / 50.0);
    bench_shared_search(z, r)?;
    bench_postgres_search(z, r, postgres)
}

/// The same events and queries on PostgreSQL's full-text search, when a
/// server is named: indexing speed, latency, size.
fn bench_postgres_search(z: &Sizes, r: &mut Report, url: Option<&str>) -> Result<(), BenchError> {
    let Some(url) = url else {
        r.set_figure("pg_search", json!("skipped: no server"));
        return Ok(());
    };
    let target = ctxlog_postgres::Target::parse(url)
        .map_err(|e| BenchError::Failed(format!("bench: {e}")))?;
    let schema = Schema::new(&target, "search");
    let log = schema.log()?;
    for i in 0..SESSIONS {
        load(&log, &generated(41 + i, z.search / SESSIONS)?)?;
    }
    let index = log.search();
    let t = Instant::now();
    catch_up(&index, &log, &|_| true, Duration::ZERO, &mut |_| {})
        .map_err(|e| failed("catch up on postgres")(&e))?;
    let seconds = t.elapsed().as_secs_f64();
    let events = total_events(&log)?;
    let (p50, p99, _) = latencies(&index, &log, QUERIES, z.search_rounds, true)?;
    r.set_figure("pg_index_events_per_s", json!(events as f64 / seconds));
    r.set_figure(
        "pg_index_bytes",
        json!(index.disk_bytes().map_err(|e| failed("size")(&e))?),
    );
    r.set_figure("pg_search_p50_ms", json!(p50));
    r.set_figure("pg_search_p99_ms", json!(p99));
    Ok(())
}

/// The same queries over the real recordings, imported into a store of
/// their own; said skipped when the folder is not there.
fn bench_shared_search(z: &Sizes, r: &mut Report) -> Result<(), BenchError> {
    let folder = std::path::Path::new(SHARED_SESSIONS);
    let mut files = Vec::new();
    for agent in ["claude-code", "codex", "pi", "opencode"] {
        if let Ok(entries) = std::fs::read_dir(folder.join(agent)) {
            files.extend(entries.filter_map(Result::ok).map(|e| e.path()));
        }
    }
    files.sort();
    if files.is_empty() {
        r.set_figure(
            "shared_search",
            json!(format!("skipped: no recordings in {SHARED_SESSIONS}")),
        );
        return Ok(());
    }
    let dir = Scratch::new("search-shared");
    for file in &files {
        let bytes = std::fs::read(file).map_err(|e| failed("read a recording")(&e))?;
        let Some(format) = ctxlog_import::Format::sniff(&bytes[..bytes.len().min(8192)]) else {
            continue;
        };
        let name = file.display().to_string();
        let imported = ctxlog_import::import(
            &bytes[..],
            &name,
            format,
            &ctxlog_import::ImportOptions::default(),
        )
        .map_err(|e| failed("import a recording")(&e))?;
        let events = imported
            .events
            .to_vec()
            .map_err(|e| failed("decode a recording")(&e))?;
        write_log(dir.path(), &events)?;
    }
    let log = crate::stores::store(dir.path(), Durability::Buffered)?;
    let (index, _) =
        SearchIndex::open(&dir.path().join("search")).map_err(|e| failed("index")(&e))?;
    catch_up(&index, &log, &|_| true, Duration::ZERO, &mut |_| {})
        .map_err(|e| failed("catch up")(&e))?;
    let (p50, p99, _) = latencies(&index, &log, SHARED_QUERIES, z.search_rounds, false)?;
    r.set_figure("shared_search_files", json!(files.len()));
    r.set_figure("shared_search_events", json!(total_events(&log)?));
    r.set_figure("shared_search_p50_ms", json!(p50));
    r.set_figure("shared_search_p99_ms", json!(p99));
    Ok(())
}

/// The p50 and p99 of `rounds` runs of each query, in ms, and each
/// query's p50; when `required`, a query that finds nothing fails the
/// bench (its figure would measure nothing).
fn latencies<I: Lookup + ?Sized, L: EventLog + ?Sized>(
    index: &I,
    log: &L,
    queries: &[&str],
    rounds: usize,
    required: bool,
) -> Result<(f64, f64, serde_json::Map<String, serde_json::Value>), BenchError> {
    let mut millis = Vec::new();
    let mut per_query = serde_json::Map::new();
    for q in queries {
        let request = SearchRequest {
            query: (*q).to_owned(),
            limit: 10,
            ..SearchRequest::default()
        };
        let mut hits = 0;
        let mut these = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            let found = search(index, log, &request).map_err(|e| failed("search")(&e))?;
            these.push(t.elapsed().as_secs_f64() * 1e3);
            hits = found.hits.len();
        }
        if hits == 0 && required {
            return Err(BenchError::Failed(format!(
                "bench: the query {q:?} found nothing"
            )));
        }
        per_query.insert((*q).to_owned(), json!(percentile(&mut these.clone(), 50)));
        millis.extend(these);
    }
    let p50 = percentile(&mut millis.clone(), 50);
    let p99 = percentile(&mut millis, 99);
    Ok((p50, p99, per_query))
}

/// Every event of the log's sessions.
fn total_events<L: EventLog + ?Sized>(log: &L) -> Result<u64, BenchError> {
    Ok(log
        .sessions()
        .map_err(|e| failed("sessions")(&e))?
        .iter()
        .map(|(_, head)| head)
        .sum())
}

/// The `p`-th percentile of `v` (nearest rank).
fn percentile(v: &mut [f64], p: usize) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let rank = (p * v.len()).div_ceil(100).clamp(1, v.len());
    v[rank - 1]
}
