//! Running a query: the parts whose text matches, best first, each with
//! where it is, who wrote it, a snippet cut from the log, and its status
//! now.

use crate::error::SearchError;
use crate::index::SearchIndex;
use crate::query::parse;
use crate::schema::Stored;
use crate::session_view::{
    author_of, body_at, parse_id, stale, term_query, text_of, view_of, SessionView,
};
use crate::snippet::{Snippets, SNIPPET_CHARS};
use crate::status::Status;
use ctxlog_core::{MessageId, PartId, Seq, SessionId};
use ctxlog_store::EventLog;
use serde::Serialize;
use std::collections::BTreeMap;
use std::ops::Bound;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, RangeQuery};
use tantivy::snippet::SnippetGenerator;
use tantivy::Term;

/// The most hits one request may pass over (`skip`): a search is for the
/// best hits, not for walking every one.
pub const MAX_SKIP: usize = 1_000;

/// The most hits one request returns.
pub const MAX_LIMIT: usize = 200;

/// What to look for, and where.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    /// The query, as typed ([`crate::query`]).
    pub query: String,
    /// Only in these sessions (`None`: every session indexed).
    pub sessions: Option<Vec<SessionId>>,
    /// Only items recorded at or after this time, ms.
    pub since: Option<u64>,
    /// Only items recorded before this time, ms.
    pub until: Option<u64>,
    /// Only what the model no longer sees whole: pruned, compacted away,
    /// withdrawn.
    pub dropped: bool,
    /// Hits to return (at most [`MAX_LIMIT`]).
    pub limit: usize,
    /// Hits to pass over first (a cursor: the hits returned before; at
    /// most [`MAX_SKIP`]).
    pub skip: usize,
}

/// One hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The session.
    pub session: SessionId,
    /// The seq of the event that holds the part as it is now.
    pub seq: Seq,
    /// When that event was recorded, ms since the epoch.
    pub time: u64,
    /// The part.
    pub part: PartId,
    /// Its message.
    pub message: MessageId,
    /// Who wrote it: `user`, `assistant`, or `summary` for a compaction's
    /// summary.
    pub author: String,
    /// `text`, `reasoning`, `tool` or `file`.
    pub kind: String,
    /// The tool, for a tool part.
    pub tool: Option<String>,
    /// The provider's call id, for a tool part.
    pub call_id: Option<String>,
    /// The agent's own id for the part, else for its message.
    pub source_id: Option<String>,
    /// Relevance (BM25).
    pub score: f32,
    /// The best passage, as recorded (not made printable: a front door
    /// does that).
    pub snippet: String,
    /// Byte ranges of the matched words in `snippet`.
    pub highlights: Vec<(usize, usize)>,
    /// What became of it.
    pub status: Status,
}

/// The hits of one request.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Found {
    /// The hits, best first.
    pub hits: Vec<Hit>,
    /// Whether more hits follow (ask again with `skip` past these).
    pub more: bool,
}

/// Runs `request` on `index`, reading snippets from `log`.
pub fn search<L: EventLog + ?Sized>(
    index: &SearchIndex,
    log: &L,
    request: &SearchRequest,
) -> Result<Found, SearchError> {
    let searcher = index.searcher();
    let f = index.fields;
    let analyzer = searcher
        .index()
        .tokenizer_for_field(f.text)
        .map_err(SearchError::index(index.dir()))?;
    let parsed = parse(&request.query, &searcher, f.text, &analyzer)?;
    let snippets = Snippets {
        generator: SnippetGenerator::new(parsed.highlight, analyzer.clone(), f.text, SNIPPET_CHARS),
        phrases: parsed.phrases,
        analyzer,
    };
    if request.skip > MAX_SKIP {
        return Err(SearchError::Query {
            query: request.query.clone(),
            why: format!(
                "a search gives its best {MAX_SKIP} hits; narrow it instead of passing over {}",
                request.skip
            ),
        });
    }
    let limit = request.limit.clamp(1, MAX_LIMIT);
    let query = filtered(index, parsed.query, request);
    let wanted = request.skip + limit + 1;
    let mut views: BTreeMap<SessionId, SessionView> = BTreeMap::new();
    let mut page = if request.dropped { wanted * 4 } else { wanted };
    loop {
        let found = searcher
            .search(&query, &TopDocs::with_limit(page.max(1)).order_by_score())
            .map_err(SearchError::index(index.dir()))?;
        let exhausted = found.len() < page;
        let mut kept = Vec::new();
        for (score, address) in found {
            let d = index
                .read_docs(&searcher, std::iter::once(address))?
                .remove(0);
            let hit = match resolve(index, log, &mut views, &d, score, &snippets) {
                Ok(hit) => hit,
                // One document the log no longer backs does not hide the
                // others: it is left out, and said in the log.
                Err(e @ SearchError::Stale { .. }) => {
                    tracing::warn!("{e}");
                    continue;
                }
                Err(e) => return Err(e),
            };
            if !request.dropped || hit.status.is_dropped() {
                kept.push(hit);
            }
            if kept.len() == wanted {
                break;
            }
        }
        if kept.len() == wanted || exhausted {
            let more = kept.len() == wanted;
            // Equal scores in log order, whatever the segments' order.
            kept.sort_by(|a, b| {
                b.score
                    .total_cmp(&a.score)
                    .then(a.session.cmp(&b.session))
                    .then(a.seq.cmp(&b.seq))
                    .then(a.part.cmp(&b.part))
            });
            let hits = kept.into_iter().skip(request.skip).take(limit).collect();
            return Ok(Found { hits, more });
        }
        page = page.saturating_mul(4);
    }
}

/// `query` limited to the request's sessions and times. Only parts have
/// text, and every query needs a word of it: no clause for the kind (one
/// over every part would be intersected with every query).
fn filtered(index: &SearchIndex, query: Box<dyn Query>, request: &SearchRequest) -> BooleanQuery {
    let f = index.fields;
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, query)];
    if let Some(sessions) = &request.sessions {
        let any: Vec<(Occur, Box<dyn Query>)> = sessions
            .iter()
            .map(|s| (Occur::Should, term_query(f.session, &s.to_string())))
            .collect();
        clauses.push((Occur::Must, Box::new(BooleanQuery::new(any))));
    }
    if request.since.is_some() || request.until.is_some() {
        let lower = request.since.map_or(Bound::Unbounded, |t| {
            Bound::Included(Term::from_field_u64(f.time, t))
        });
        let upper = request.until.map_or(Bound::Unbounded, |t| {
            Bound::Excluded(Term::from_field_u64(f.time, t))
        });
        clauses.push((Occur::Must, Box::new(RangeQuery::new(lower, upper))));
    }
    BooleanQuery::new(clauses)
}

/// The hit of a matching part document.
fn resolve<L: EventLog + ?Sized>(
    index: &SearchIndex,
    log: &L,
    views: &mut BTreeMap<SessionId, SessionView>,
    d: &Stored,
    score: f32,
    snippets: &Snippets,
) -> Result<Hit, SearchError> {
    let ids = (
        parse_id(&d.session),
        d.part.as_deref().and_then(parse_id),
        d.message.as_deref().and_then(parse_id),
    );
    let (Some(session), Some(part), Some(message)) = ids else {
        return Err(stale(d, "a part"));
    };
    let (session, part, message) = (SessionId(session), PartId(part), MessageId(message));
    let view = view_of(views, index, session)?;
    let info = view.message(index, message)?;
    let status = view.status(
        index,
        message,
        info.as_ref().map_or(d.seq, |i| i.seq),
        Some(part),
    )?;
    let author = author_of(info.as_ref());
    let body = body_at(log, session, d.seq, part)?;
    let (snippet, highlights) = snippets.cut(&text_of(&body));
    Ok(Hit {
        session,
        seq: d.seq,
        time: d.time,
        part,
        message,
        author,
        kind: d.kind.clone().unwrap_or_default(),
        tool: d.tool.clone(),
        call_id: d.call.clone(),
        source_id: d.source.clone().or_else(|| info.and_then(|i| i.source_id)),
        score,
        snippet,
        highlights,
        status,
    })
}
