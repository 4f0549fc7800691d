//! ctxlog-report: one session's context over time (or several sessions',
//! e.g. a recording and its simulations under other policies) as a single
//! self-contained HTML page: no network, no external script or font.
//!
//! The page holds the chart (an SVG drawn here, see [`chart`]), the
//! policies and limits, every lifecycle event with what it removed from the
//! window, each summary, and the exact window right after any step (picked
//! by clicking a point or a marker). Everything comes from the events, in a
//! pure fold: the same events give the same page, byte for byte.
//!
//! Files:
//! - `commonmark.rs`: Every recorded string written as CommonMark literal
//!   text.
//! - `data.rs`: What the page shows of one session (`SessionData`): each
//!   step's JSON, the message rendering, what left the window between two
//!   steps shown, the summaries.
//! - `fold.rs`: The page's fold of one session, an event at a time: `Survey`
//!   (a first pass: each step's total, 8 bytes a step, and the texts) and
//!   `PageFold` (beside `TimelineFold` over a state that holds what the next
//!   decision needs); a session of more than `PAGE_STEPS` steps is shown in
//!   about `SAMPLED_STEPS` runs of consecutive steps, each by its peak step
//!   and that step's window, its prunes merged into one line; summaries are
//!   taken while their message is held; what it keeps of dropped messages is
//!   forgotten at each pivot.
//! - `html.rs`: the page's HTML (`page`, `write_page`, `write_page_with`
//!   and its `Chrome`: one file, or served under a policy that forbids
//!   inline script), its sections and the data of its script, written in
//!   pieces; the script itself is `page.js` (`PAGE_SCRIPT`), which runs
//!   again on a page whose body was replaced by a newer one.
//! - `markdown.rs`: The Markdown transcript: markers and summaries set apart,
//!   pruned outputs marked as the model saw them, the window's start pointed
//!   out; written as the log is read again (`MarkdownSurvey` folds the state,
//!   `MarkdownWriter` holds only the events of messages not written yet).
//! - `messages.rs`: The rendered messages a page holds, in its compact form
//!   (JSON text, each distinct text once) from the moment each is rendered;
//!   `decoded` gives one back in the long form the page's script makes.
//! - `redacted.rs`: A redacted copy of a session's events (or of one event);
//!   the log is never changed.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod chart;
pub mod commonmark;
pub mod data;
pub mod fold;
mod html;
pub mod markdown;
pub mod messages;
pub mod redacted;

use ctxlog_core::{ContentError, Envelope, RefusedEvent};
use data::SessionData;
use fold::{PageFold, Survey};
pub use html::{page, write_page, write_page_with, Chrome, PAGE_SCRIPT};
pub use markdown::{markdown, MarkdownSurvey, MarkdownWriter};

/// Why a page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A session's events do not replay.
    #[error("{label}: the events do not replay at seq {}: {refused}", refused.seq)]
    Refused {
        /// The session's label on the page.
        label: String,
        /// What the reducer refused.
        refused: Box<RefusedEvent>,
    },
    /// A part's content is not in the events where their state says (the
    /// events are not one session's whole log).
    #[error("{label}: {error}")]
    Content {
        /// The session's label on the page.
        label: String,
        /// What could not be read.
        error: ContentError,
    },
    /// Nothing to show.
    #[error("a report needs at least one session")]
    Empty,
    /// The page could not be written.
    #[error("the page could not be written: {0}")]
    Write(std::io::Error),
    /// An event could not be copied for redaction (it does not round-trip
    /// through JSON).
    #[error("event at seq {seq} could not be redacted: {error}")]
    Redaction {
        /// The event's seq.
        seq: ctxlog_core::Seq,
        /// What failed.
        error: String,
    },
}

impl ReportError {
    /// The error of folding the session labelled `label`.
    pub(crate) fn refused(label: &str, refused: RefusedEvent) -> ReportError {
        ReportError::Refused {
            label: label.to_owned(),
            refused: Box::new(refused),
        }
    }

    /// The error of redacting the event at `seq`.
    pub(crate) fn redaction(seq: ctxlog_core::Seq, error: &serde_json::Error) -> ReportError {
        ReportError::Redaction {
            seq,
            error: error.to_string(),
        }
    }

    /// The error of reading back the session labelled `label`.
    pub(crate) fn content(label: &str, error: ContentError) -> ReportError {
        ReportError::Content {
            label: label.to_owned(),
            error,
        }
    }
}

/// One session on the page: its label (the policy, or "recorded") and its
/// events, seq 1 first.
pub struct Curve<'a> {
    /// How the page names it.
    pub label: String,
    /// Its title when the recording gives none (its first prompt): the
    /// main curve's heads the page.
    pub title: Option<String>,
    /// Its events.
    pub events: &'a [Envelope],
}

/// The most characters of recorded text a page holds, shared by its
/// sessions: each part's text is cut to its share (see
/// [`fold::Survey::part_chars`]), so a page of 10,000 steps stays under
/// 20 MB.
pub const PAGE_TEXT_CHARS: usize = 4_500_000;

/// One session on a page, folded.
pub struct Folded {
    /// How the page names it.
    pub label: String,
    /// Its title when the recording gives none (see [`Curve::title`]).
    pub title: Option<String>,
    /// What the page shows of it.
    pub data: SessionData,
}

/// The page for `curves`; the first is the main one (its title heads the
/// page, its usable line and threshold are drawn).
pub fn report(curves: &[Curve<'_>]) -> Result<String, ReportError> {
    let folded = curves
        .iter()
        .map(|c| {
            let mut survey = Survey::default();
            c.events.iter().for_each(|e| survey.see(e));
            let mut fold = PageFold::for_page(&c.label, &survey, curves.len());
            for e in c.events {
                fold.push(e)?;
            }
            Ok(Folded {
                label: c.label.clone(),
                title: c.title.clone(),
                data: fold.finish()?,
            })
        })
        .collect::<Result<Vec<_>, ReportError>>()?;
    page(&folded)
}

/// `text` safe inside HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
