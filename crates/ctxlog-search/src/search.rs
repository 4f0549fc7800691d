//! Running a query: the parts whose text matches, best first, each with
//! where it is, who wrote it, a snippet cut from the log, and its status
//! now.

use crate::error::SearchError;
use crate::lookup::{Lookup, Stored};
use crate::query::{parse, SearchRequest};
use crate::session_view::{author_of, body_at, parse_id, stale, text_of, view_of, SessionView};
use crate::snippet::Snippets;
use crate::status::Status;
use ctxlog_core::{MessageId, PartId, Seq, SessionId};
use ctxlog_store::EventLog;
use serde::Serialize;
use std::collections::BTreeMap;

/// The most hits one request may pass over (`skip`): a search is for the
/// best hits, not for walking every one.
pub const MAX_SKIP: usize = 1_000;

/// The most hits one request returns.
pub const MAX_LIMIT: usize = 200;

/// The most documents one request fetches from the engine to fill its
/// page (`--dropped` passes over what is still in the window).
const MAX_FETCH: usize = 16 * (MAX_SKIP + MAX_LIMIT);

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
    /// Relevance (tantivy's BM25, or PostgreSQL's `ts_rank`: compare
    /// within one search only).
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
pub fn search<I: Lookup + ?Sized, L: EventLog + ?Sized>(
    index: &I,
    log: &L,
    request: &SearchRequest,
) -> Result<Found, SearchError> {
    let parsed = parse(&request.query)?;
    let snippets = Snippets::of(&parsed);
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
    let wanted = request.skip + limit + 1;
    let mut views: BTreeMap<SessionId, SessionView> = BTreeMap::new();
    let mut page = if request.dropped { wanted * 4 } else { wanted };
    loop {
        let found = index.ranked(&parsed, request, page.max(1))?;
        let exhausted = found.len() < page;
        let mut kept = Vec::new();
        for (score, d) in found {
            // Only `--dropped` needs a status to choose; the others are
            // worked out for the page shown.
            if request.dropped {
                match resolve(index, &mut views, &d, score) {
                    Ok(hit) if !hit.status.is_dropped() => continue,
                    Ok(_) => {}
                    Err(e @ SearchError::Stale { .. }) => {
                        tracing::warn!("{e}");
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            kept.push((score, d));
        }
        // In the engine's order, which is total (equal scores in the
        // order of its documents): every page is a slice of one ranking.
        if exhausted || kept.len() >= wanted || page >= MAX_FETCH {
            let more = kept.len() >= wanted;
            let mut hits = Vec::new();
            for (score, d) in kept.into_iter().skip(request.skip).take(limit) {
                // One document the log no longer backs does not hide the
                // others: it is left out, and said in the log.
                match resolve(index, &mut views, &d, score).and_then(|mut hit| {
                    let body = body_at(log, hit.session, hit.seq, hit.part)?;
                    (hit.snippet, hit.highlights) = snippets.cut(&text_of(&body));
                    Ok(hit)
                }) {
                    Ok(hit) => hits.push(hit),
                    Err(e @ SearchError::Stale { .. }) => tracing::warn!("{e}"),
                    Err(e) => return Err(e),
                }
            }
            return Ok(Found { hits, more });
        }
        page = page.saturating_mul(4);
    }
}

/// The hit of a matching part document, its snippet not cut yet.
fn resolve<I: Lookup + ?Sized>(
    index: &I,
    views: &mut BTreeMap<SessionId, SessionView>,
    d: &Stored,
    score: f32,
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
        snippet: String::new(),
        highlights: Vec::new(),
        status,
    })
}
