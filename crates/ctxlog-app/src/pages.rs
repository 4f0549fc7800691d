//! What a session is written out as: the HTML report of one or more
//! sessions side by side, a Markdown transcript, and OpenCode's own export
//! format; secrets redacted when asked.

use crate::catalog;
use crate::views::{self, ViewError};
use ctxlog_core::{Envelope, Event, SessionId};
use ctxlog_import::export::ExportError;
use ctxlog_report::redacted::RedactionCounts;
use ctxlog_report::{Curve, ReportError};
use ctxlog_store::EventLog;
use serde::Serialize;
use thiserror::Error;

/// Why a page could not be made.
#[derive(Debug, Error)]
pub enum PageError {
    /// A session could not be read.
    #[error(transparent)]
    Read(#[from] ViewError),
    /// A session's events could not be redacted or rendered.
    #[error("session {session}: {error}")]
    Render {
        /// The session.
        session: SessionId,
        /// What failed.
        error: ReportError,
    },
    /// The page of several sessions could not be rendered.
    #[error(transparent)]
    Report(ReportError),
}

/// One session on a report page.
#[derive(Debug, Clone, Serialize)]
pub struct PageSession {
    /// Its id.
    pub session: String,
    /// How the page names it (see [`label`]).
    pub label: String,
    /// How many events it was drawn from.
    pub events: usize,
}

/// A page written: its text, what it shows, what was redacted.
#[derive(Debug, Clone)]
pub struct Page {
    /// The page (HTML or Markdown).
    pub text: String,
    /// The sessions it shows, in order.
    pub sessions: Vec<PageSession>,
    /// The secrets redacted, by kind (`None`: not asked to redact).
    pub redacted: Option<RedactionCounts>,
}

/// A session's described events ([`views::described_events`]), redacted
/// into `counts` when given.
fn page_events(
    log: &impl EventLog,
    session: SessionId,
    counts: Option<&mut RedactionCounts>,
) -> Result<Vec<Envelope>, PageError> {
    let events = views::described_events(log, session)?;
    let Some(counts) = counts else {
        return Ok(events);
    };
    let (events, found) = ctxlog_report::redacted::redacted_events(&events)
        .map_err(|error| PageError::Render { session, error })?;
    for (kind, n) in found {
        *counts.entry(kind).or_insert(0) += n;
    }
    Ok(events)
}

/// The HTML report of `sessions` side by side (the first is the one
/// compared against), each labelled by [`label`] (`#2`, `#3` … added to
/// repeated labels); secrets redacted with `redact`.
pub fn report(
    log: &impl EventLog,
    sessions: &[SessionId],
    redact: bool,
) -> Result<Page, PageError> {
    let mut redacted = redact.then(RedactionCounts::new);
    let mut logs: Vec<(PageSession, Vec<Envelope>)> = Vec::with_capacity(sessions.len());
    let mut bases: Vec<String> = Vec::with_capacity(sessions.len());
    for &id in sessions {
        let events = page_events(log, id, redacted.as_mut())?;
        let base = label(&events);
        let same = bases.iter().filter(|l| **l == base).count();
        bases.push(base.clone());
        let name = if same == 0 {
            base
        } else {
            format!("{base} #{}", same + 1)
        };
        let shown = PageSession {
            session: id.to_string(),
            label: name,
            events: events.len(),
        };
        logs.push((shown, events));
    }
    let curves: Vec<Curve<'_>> = logs
        .iter()
        .map(|(shown, events)| Curve {
            label: shown.label.clone(),
            title: crate::titles::first_prompt_in(events),
            events,
        })
        .collect();
    let text = ctxlog_report::report(&curves).map_err(PageError::Report)?;
    Ok(Page {
        text,
        sessions: logs.into_iter().map(|(shown, _)| shown).collect(),
        redacted,
    })
}

/// The Markdown transcript of `session`; secrets redacted with `redact`.
pub fn markdown(log: &impl EventLog, session: SessionId, redact: bool) -> Result<Page, PageError> {
    let mut redacted = redact.then(RedactionCounts::new);
    let events = page_events(log, session, redacted.as_mut())?;
    let text =
        ctxlog_report::markdown(&events).map_err(|error| PageError::Render { session, error })?;
    Ok(Page {
        text,
        sessions: vec![PageSession {
            session: session.to_string(),
            label: label(&events),
            events: events.len(),
        }],
        redacted,
    })
}

/// How a page names a session: a kept simulation by its policy, a
/// compaction by hand as `by hand (<policy>)`, a recording as
/// `recorded (<policy>)`.
pub fn label(events: &[Envelope]) -> String {
    let policy = events.iter().rev().find_map(|e| match &e.event {
        Event::SessionStarted { policy, .. } | Event::PolicyChanged { policy } => {
            Some(policy.name.clone())
        }
        _ => None,
    });
    let policy = policy.unwrap_or_else(|| "-".into());
    let source = events.first().and_then(|e| match &e.event {
        Event::SessionStarted { source_id, .. } => source_id.as_deref(),
        _ => None,
    });
    match source.and_then(|s| s.split_once('@')) {
        Some((_, catalog::MANUAL)) => format!("by hand ({policy})"),
        Some(_) => policy,
        None => format!("recorded ({policy})"),
    }
}

/// Writes `session` to `out` in OpenCode's export format, its descriptions
/// after its events as if they were the session's own
/// ([`catalog::descriptions_after`]); returns how many events were written.
/// The events are folded as they are read and sealed content read back
/// from the log: memory holds the state, not the session.
pub fn export_opencode<L: EventLog>(
    log: &L,
    session: SessionId,
    out: &mut dyn std::io::Write,
) -> Result<u64, ExportError> {
    let read = |e: &dyn std::fmt::Display| ExportError::Read(e.to_string());
    let contents = ctxlog_store::SessionContents::new(log, session);
    let head = log.head(session).map_err(|e| read(&e))?;
    let events = log
        .read(session, 1)
        .map_err(|e| read(&e))?
        .take_while(move |e| e.as_ref().map_or(true, |e| e.seq <= head))
        .map(|e| e.map_err(|e| ExportError::Read(e.to_string())));
    let descriptions = catalog::descriptions_after(log, session, head).map_err(|e| read(&e))?;
    ctxlog_import::export::opencode_streamed(
        events.chain(descriptions.into_iter().map(Ok)),
        &contents,
        out,
    )
}
