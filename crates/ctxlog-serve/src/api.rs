//! The page's data as JSON, each from the use case every front door calls:
//! the session list (`ctxlog sessions`), search (`ctxlog search`), a
//! session's audit (`ctxlog audit`) and the usage rollup (`ctxlog usage`).
//! Each answer is bounded: a page of the list, a page of hits.

use crate::admit::query_value;
use crate::reply::{self, Reply};
use crate::Shared;
use ctxlog_app::catalog;
use ctxlog_app::history;
use ctxlog_app::sessions::{self, Filter, Listed, SortBy};
use ctxlog_app::usage::{GroupBy, UsageFilter};
use ctxlog_app::views;
use ctxlog_core::SessionId;
use ctxlog_search::{SearchError, SearchRequest};
use serde_json::json;

/// Lines of the list one answer holds at most.
pub(crate) const MAX_LINES: usize = 500;

/// Hits one answer holds at most.
pub(crate) const MAX_HITS: usize = 50;

/// Lines of a session's audit trail one answer holds at most (the newest;
/// `ctxlog audit` prints them all).
pub(crate) const MAX_AUDIT_LINES: usize = 2_000;

/// A number parameter, `default` when absent or not a number.
fn number(query: &str, name: &str, default: usize) -> usize {
    query_value(query, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A text parameter, `None` when absent or blank.
fn text(query: &str, name: &str) -> Option<String> {
    query_value(query, name).filter(|v| !v.trim().is_empty())
}

/// The session `?session=` names (its id, a prefix, or the recording's
/// id), or the answer saying it names none.
fn session_param(shared: &Shared, query: &str) -> Result<Option<SessionId>, Reply> {
    let Some(name) = text(query, "session") else {
        return Ok(None);
    };
    catalog::resolve_session(&shared.log, &name)
        .map(Some)
        .map_err(|e| reply::error(404, &e.to_string()))
}

/// `/api/sessions?sort=&desc=&offset=&limit=&q=&agent=&project=`: a page
/// of the list, filtered and ordered as `ctxlog sessions` orders it.
pub(crate) fn sessions(shared: &Shared, query: &str) -> Reply {
    let sort = match query_value(query, "sort").as_deref() {
        Some("agent") => SortBy::Agent,
        Some("steps") => SortBy::Steps,
        Some("peak") => SortBy::Peak,
        Some("events") => SortBy::Events,
        Some("title") => SortBy::Title,
        _ => SortBy::Date,
    };
    let desc = query_value(query, "desc").as_deref() != Some("0");
    let offset = number(query, "offset", 0);
    let limit = number(query, "limit", 100).clamp(1, MAX_LINES);
    let filter = Filter {
        simulations: Some(false),
        agent: text(query, "agent"),
        project: text(query, "project"),
        text: text(query, "q"),
        ..Filter::default()
    };
    let (mut lines, complete, version, trouble, stored) = shared.live.rows(|rows| {
        let kept: Vec<Listed> = rows
            .lines
            .values()
            .map(|line| &line.listed)
            .filter(|l| match l {
                Listed::Row(r) => filter.keeps(r),
                Listed::Unreadable(_) => !filter.is_set(),
            })
            .cloned()
            .collect();
        (
            kept,
            rows.complete,
            rows.version,
            rows.trouble.clone(),
            rows.lines.len(),
        )
    });
    sessions::sort_rows(&mut lines, sort, desc);
    let total = lines.len();
    let page: Vec<&Listed> = lines.iter().skip(offset).take(limit).collect();
    reply::json(
        200,
        &json!({
            "ok": trouble.is_none(),
            "complete": complete,
            "version": version,
            "stored": stored,
            "total": total,
            "offset": offset,
            "rows": page,
            "error": trouble,
        }),
    )
}

/// `/api/search?q=&skip=&session=&dropped=`: a page of hits over every
/// session (or one), each with its session's label and status now.
pub(crate) fn search(shared: &Shared, query: &str) -> Reply {
    let Some(q) = text(query, "q") else {
        return reply::error(400, "a search needs words: ?q=…");
    };
    let sessions = match session_param(shared, query) {
        Err(refused) => return refused,
        Ok(Some(id)) => Some(vec![id]),
        // The recordings and native sessions, as `ctxlog search` has them
        // (no kept simulation); while the list is first read, every
        // session indexed, so that none is missed.
        Ok(None) => shared.live.rows(|rows| {
            rows.complete.then(|| {
                rows.lines
                    .iter()
                    .filter(|(_, l)| !matches!(&l.listed, Listed::Row(r) if r.simulation.is_some()))
                    .map(|(s, _)| *s)
                    .collect()
            })
        }),
    };
    let request = SearchRequest {
        query: q.clone(),
        sessions,
        since: None,
        until: None,
        dropped: query_value(query, "dropped").as_deref() == Some("1"),
        limit: number(query, "limit", 20).clamp(1, MAX_HITS),
        skip: number(query, "skip", 0),
    };
    let found = match shared.search(&request) {
        Ok(found) => found,
        Err(e @ SearchError::Query { .. }) => return reply::error(400, &e.to_string()),
        Err(e) => return reply::error(500, &e.to_string()),
    };
    let labels = history::labels(&shared.log, found.hits.iter().map(|h| h.session));
    let mut hits = history::labelled_hits(&found, &labels);
    for (v, h) in hits.iter_mut().zip(&found.hits) {
        v["status_words"] = json!(history::status_words(&h.status));
        if shared.redact {
            v["snippet"] = json!(ctxlog_core::redact::redact(&h.snippet).text);
            v["highlights"] = json!([]);
        }
    }
    reply::json(
        200,
        &json!({ "ok": true, "query": q, "hits": hits, "more": found.more }),
    )
}

/// `/api/audit?session=`: the session's audit trail, as `ctxlog audit
/// --json` has it, its newest [`MAX_AUDIT_LINES`] lines.
pub(crate) fn audit(shared: &Shared, query: &str) -> Reply {
    let session = match session_param(shared, query) {
        Ok(Some(s)) => s,
        Ok(None) => return reply::error(400, "an audit needs ?session=ID"),
        Err(refused) => return refused,
    };
    match views::audit_lines(&shared.log, session) {
        Ok(mut lines) => {
            // The newest: a long session's first prunes matter least.
            let left_out = lines.len().saturating_sub(MAX_AUDIT_LINES);
            lines.drain(..left_out);
            reply::json(
                200,
                &json!({ "ok": true, "lines": lines, "left_out": left_out }),
            )
        }
        Err(e) => reply::error(404, &e.to_string()),
    }
}

/// `/api/usage?by=day|week|month|project|model|agent`: the rollup of every
/// session, as `ctxlog usage --json` has it.
pub(crate) fn usage(shared: &Shared, query: &str) -> Reply {
    let by = match query_value(query, "by").as_deref() {
        Some("week") => GroupBy::Week,
        Some("month") => GroupBy::Month,
        Some("project") => GroupBy::Project,
        Some("model") => GroupBy::Model,
        Some("agent") => GroupBy::Agent,
        _ => GroupBy::Day,
    };
    // Made again only when a head moved since (it reads every event).
    let version = shared.live.rows(|rows| rows.version);
    if let Some(doc) = shared.kept_usage(version, by) {
        return reply::json(200, &doc);
    }
    let rollup = ctxlog_app::usage::usage(
        &shared.log,
        by,
        &UsageFilter::default(),
        &shared.zone,
        &shared.prices,
    );
    match rollup.map(|r| serde_json::to_value(&r)) {
        Ok(Ok(mut doc)) => {
            doc["ok"] = json!(true);
            shared.keep_usage(version, by, doc.clone());
            reply::json(200, &doc)
        }
        Ok(Err(e)) => reply::error(500, &e.to_string()),
        Err(e) => reply::error(500, &e.to_string()),
    }
}
