//! What a session is written out as: the HTML report of one or more
//! sessions side by side, a Markdown transcript, and OpenCode's own export
//! format; secrets redacted when asked.

use crate::catalog;
use crate::titles::{PromptSearch, PROMPT_SEARCH_EVENTS};
use crate::views::ViewError;
use ctxlog_core::{Envelope, Event, SessionId};
use ctxlog_import::export::ExportError;
use ctxlog_report::fold::{PageFold, Survey};
use ctxlog_report::redacted::RedactionCounts;
use ctxlog_report::{Chrome, Folded, MarkdownSurvey, ReportError};
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

impl From<ctxlog_store::ReadError> for PageError {
    fn from(e: ctxlog_store::ReadError) -> Self {
        PageError::Read(ViewError::from(e))
    }
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
    /// Of those, how many the page shows (`None`: all of them): a
    /// transcript cuts long tool outputs, and with them what was redacted
    /// in the part it leaves out.
    pub redacted_shown: Option<u32>,
}

/// What a report written to its output shows.
#[derive(Debug, Clone)]
pub struct Written {
    /// The sessions it shows, in order.
    pub sessions: Vec<PageSession>,
    /// The secrets redacted, by kind (`None`: not asked to redact).
    pub redacted: Option<RedactionCounts>,
    /// Of those, how many the page shows, when it cuts what it shows (a
    /// transcript cuts long tool outputs, and with them what was redacted
    /// in the part it leaves out).
    pub redacted_shown: Option<u32>,
}

/// The HTML report of `sessions` side by side (see [`write_report`]).
pub fn report(
    log: &impl EventLog,
    sessions: &[SessionId],
    redact: bool,
) -> Result<Page, PageError> {
    let mut out = Vec::new();
    let written = write_report(log, sessions, redact, &mut out)?;
    let text = String::from_utf8(out)
        .map_err(|e| PageError::Report(ReportError::Write(std::io::Error::other(e))))?;
    Ok(Page {
        text,
        sessions: written.sessions,
        redacted: written.redacted,
        redacted_shown: written.redacted_shown,
    })
}

/// Writes the HTML report of `sessions` side by side (the first is the one
/// compared against) to `out`, each labelled by [`label`] (`#2`, `#3` …
/// added to repeated labels); secrets redacted with `redact`. Each session
/// is read twice, an event at a time: once to survey it (its steps, texts,
/// label and first prompt), once to fold it into the page, which is
/// written a piece at a time: memory holds what the page shows and a
/// state, never a session's events nor the whole page. Nothing is written
/// before every session is folded.
pub fn write_report(
    log: &impl EventLog,
    sessions: &[SessionId],
    redact: bool,
    out: &mut dyn std::io::Write,
) -> Result<Written, PageError> {
    write_report_with(log, sessions, redact, Chrome::File, out)
}

/// [`write_report`], its script carried as `chrome` says (linked by a page
/// a server sends).
pub fn write_report_with(
    log: &impl EventLog,
    sessions: &[SessionId],
    redact: bool,
    chrome: Chrome<'_>,
    out: &mut dyn std::io::Write,
) -> Result<Written, PageError> {
    let mut redacted = redact.then(RedactionCounts::new);
    let mut surveyed: Vec<(PageSession, Survey, Option<String>, u64)> =
        Vec::with_capacity(sessions.len());
    let mut bases: Vec<String> = Vec::with_capacity(sessions.len());
    for &id in sessions {
        let mut survey = Survey::default();
        let first = first_reading(log, id, redact, |e| {
            survey.see(e);
            Ok(())
        })?;
        let (head, title, events) = (first.head, first.title, first.events);
        let base = first.labels.label();
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
            events,
        };
        surveyed.push((shown, survey, title, head));
    }
    let mut folded = Vec::with_capacity(surveyed.len());
    for ((shown, survey, title, head), &id) in surveyed.iter().zip(sessions) {
        let mut fold = PageFold::for_page(&shown.label, survey, sessions.len());
        each_page_event(log, id, *head, redacted.as_mut(), |e| {
            fold.push(&e)
                .map_err(|error| PageError::Render { session: id, error })
        })?;
        let data = fold
            .finish()
            .map_err(|error| PageError::Render { session: id, error })?;
        folded.push(Folded {
            label: shown.label.clone(),
            title: title.clone(),
            data,
        });
    }
    ctxlog_report::write_page_with(&folded, chrome, out).map_err(PageError::Report)?;
    Ok(Written {
        sessions: surveyed.into_iter().map(|(shown, ..)| shown).collect(),
        redacted,
        redacted_shown: None,
    })
}

/// Hands `each` the described events of `session` up to `head` (its
/// events, then its descriptions, as [`crate::views::described_events`] has them),
/// an event at a time, redacted into `counts` when given.
fn each_page_event(
    log: &impl EventLog,
    session: SessionId,
    head: u64,
    mut counts: Option<&mut RedactionCounts>,
    mut each: impl FnMut(Envelope) -> Result<(), PageError>,
) -> Result<(), PageError> {
    let mut hand = |e: Envelope| match counts.as_deref_mut() {
        None => each(e),
        Some(counts) => {
            let e = ctxlog_report::redacted::redacted_event(&e, counts)
                .map_err(|error| PageError::Render { session, error })?;
            each(e)
        }
    };
    for e in log.read(session, 1)? {
        let e = e?;
        if e.seq > head {
            break;
        }
        hand(e)?;
    }
    let descriptions = catalog::descriptions_after(log, session, head).map_err(ViewError::from)?;
    for e in descriptions {
        hand(e)?;
    }
    Ok(())
}

/// The Markdown transcript of `session` ([`write_markdown`]), held as a
/// page.
pub fn markdown(log: &impl EventLog, session: SessionId, redact: bool) -> Result<Page, PageError> {
    let mut out = Vec::new();
    let written = write_markdown(log, session, redact, &mut out)?;
    let text = String::from_utf8(out)
        .map_err(|e| PageError::Report(ReportError::Write(std::io::Error::other(e))))?;
    Ok(Page {
        text,
        sessions: written.sessions,
        redacted: written.redacted,
        redacted_shown: written.redacted_shown,
    })
}

/// Writes the Markdown transcript of `session` to `out`, secrets redacted
/// with `redact`. The session is read twice, an event at a time (its
/// state, its label and first prompt; then the messages, each written
/// once the events it needs are read: `ctxlog_report::markdown`), so
/// memory does not grow with the session.
pub fn write_markdown(
    log: &impl EventLog,
    session: SessionId,
    redact: bool,
    out: &mut dyn std::io::Write,
) -> Result<Written, PageError> {
    let render = |error| PageError::Render { session, error };
    let mut survey = MarkdownSurvey::new();
    let first = first_reading(log, session, redact, |e| survey.push(e).map_err(render))?;
    let mut redacted = redact.then(RedactionCounts::new);
    let mut writer = survey.writer(first.title.as_deref(), out).map_err(render)?;
    each_page_event(log, session, first.head, redacted.as_mut(), |e| {
        writer.push(e).map_err(render)
    })?;
    let shown = writer.finish().map_err(render)?;
    let redacted_shown = redacted.as_ref().map(|counts| {
        let total: u32 = counts.values().sum();
        shown.min(total)
    });
    Ok(Written {
        sessions: vec![PageSession {
            session: session.to_string(),
            label: first.labels.label(),
            events: first.events,
        }],
        redacted,
        redacted_shown,
    })
}

/// What a page's first reading of a session learnt beside what `see` made
/// of its events.
struct FirstReading {
    /// Where both readings stop: a session an agent still writes is shown
    /// as it was when the first began.
    head: u64,
    labels: Labeler,
    /// Its first prompt, the title of a session the recording gives none.
    title: Option<String>,
    events: usize,
}

/// Reads `session` once, up to its head now, an event at a time, redacted
/// when `redact` (its secrets are counted on the second reading), handing
/// each event to `see`.
fn first_reading(
    log: &impl EventLog,
    session: SessionId,
    redact: bool,
    mut see: impl FnMut(&Envelope) -> Result<(), PageError>,
) -> Result<FirstReading, PageError> {
    let head = log.head(session)?;
    let mut labels = Labeler::default();
    let mut prompt = PromptSearch::default();
    let (mut title, mut events) = (None, 0);
    let mut uncounted = redact.then(RedactionCounts::new);
    each_page_event(log, session, head, uncounted.as_mut(), |e| {
        see(&e)?;
        labels.see(&e);
        if title.is_none() && events < PROMPT_SEARCH_EVENTS {
            title = prompt.see(&e.event);
        }
        events += 1;
        Ok(())
    })?;
    Ok(FirstReading {
        head,
        labels,
        title,
        events,
    })
}

/// How a page names a session: a kept simulation by its policy, a
/// compaction by hand as `by hand (<policy>)`, a recording as
/// `recorded (<policy>)`.
pub fn label(events: &[Envelope]) -> String {
    let mut labels = Labeler::default();
    events.iter().for_each(|e| labels.see(e));
    labels.label()
}

/// [`label`] learnt an event at a time.
#[derive(Debug, Default)]
struct Labeler {
    /// The policy last started or changed to.
    policy: Option<String>,
    /// The first event's source id, when it starts the session.
    source: Option<Option<String>>,
}

impl Labeler {
    fn see(&mut self, e: &Envelope) {
        let first = self.source.is_none();
        match &e.event {
            Event::SessionStarted {
                policy, source_id, ..
            } => {
                self.policy = Some(policy.name.clone());
                if first {
                    self.source = Some(source_id.clone());
                }
            }
            Event::PolicyChanged { policy } => self.policy = Some(policy.name.clone()),
            _ => {}
        }
        if first && self.source.is_none() {
            self.source = Some(None);
        }
    }

    fn label(&self) -> String {
        let policy = self.policy.clone().unwrap_or_else(|| "-".into());
        match self
            .source
            .as_ref()
            .and_then(|s| s.as_deref())
            .and_then(|s| s.split_once('@'))
        {
            Some((_, catalog::MANUAL)) => format!("by hand ({policy})"),
            Some(_) => policy,
            None => format!("recorded ({policy})"),
        }
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
