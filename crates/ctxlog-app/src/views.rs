//! What a session looks like: its events read whole, its audit trail
//! ([`AuditLine`]), and its model input at a point ([`WindowView`]), in
//! the shapes every front door gives (`ctxlog audit --json`, `ctxlog
//! window --json`, Python's `Store.audit()` and `Store.window()`).

use crate::catalog::{self, CatalogError};
use ctxlog_core::window::{ToolResult, Window, WindowPart};
use ctxlog_core::{
    had_output, source_in, timeline, AuditEntry, Auditor, Envelope, Event, Json, SessionId,
};
use ctxlog_core::{Attachment, SessionState};
use ctxlog_store::EventLog;
use serde::Serialize;
use thiserror::Error;

/// Why a view could not be made.
#[derive(Debug, Error)]
pub enum ViewError {
    /// The session could not be named or read.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// A stored event was refused by the reducer.
    #[error(transparent)]
    Refused(#[from] ctxlog_core::RefusedEvent),
    /// A step the session does not have.
    #[error("session {session} has no step {step} (it has {steps})")]
    NoSuchStep {
        /// The session.
        session: SessionId,
        /// The step asked for (1-based).
        step: u64,
        /// How many it has.
        steps: usize,
    },
    /// An event the session does not have.
    #[error("session {session} has no event {seq} (head {head})")]
    NoSuchSeq {
        /// The session.
        session: SessionId,
        /// The seq asked for.
        seq: u64,
        /// Its head.
        head: u64,
    },
}

ctxlog_store::log_errors_into!(ViewError, ViewError::catalog_store);

impl ViewError {
    /// A log error, through the catalog's.
    fn catalog_store(e: ctxlog_store::StoreError) -> ViewError {
        ViewError::Catalog(CatalogError::Store(e))
    }
}

/// Every event of `session`, read whole.
pub fn events(log: &impl EventLog, session: SessionId) -> Result<Vec<Envelope>, ViewError> {
    Ok(log.read(session, 1)?.collect::<Result<Vec<_>, _>>()?)
}

/// [`events`], then the session's descriptions placed after them
/// ([`catalog::descriptions_after`]): what a report or a transcript reads.
pub fn described_events(
    log: &impl EventLog,
    session: SessionId,
) -> Result<Vec<Envelope>, ViewError> {
    let mut events = events(log, session)?;
    let head = events.last().map_or(0, |e| e.seq);
    events.extend(catalog::descriptions_after(log, session, head)?);
    Ok(events)
}

pub use ctxlog_report::data::streamed_outputs;

/// One line of a session's audit trail: a prune, restore, withdrawal,
/// compaction step, pause or synthetic continue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditLine {
    /// What core's audit says of it.
    #[serde(flatten)]
    pub entry: AuditEntry,
    /// The tokens of each of `entry.ids` where the event says (a prune's
    /// estimate of each output it cleared), else `None` for each.
    pub part_tokens: Vec<Option<u64>>,
}

/// The audit trail of `session` ([`each_audit_line`] up to its head).
pub fn audit_lines(log: &impl EventLog, session: SessionId) -> Result<Vec<AuditLine>, ViewError> {
    let head = log.head(session)?;
    let mut lines = Vec::new();
    each_audit_line(log, session, head, |l| lines.push(l))?;
    Ok(lines)
}

/// Hands `each` the audit trail of `session` up to `head`, a line at a
/// time, read from `log` an event at a time beside its state (which says
/// whether a tool part had an output and names each id's source id):
/// neither the events, nor the trail, nor a record of every id are held.
/// The session's captures (a few a turn, read first from its description
/// stream) each come after the event at their head.
pub fn each_audit_line(
    log: &impl EventLog,
    session: SessionId,
    head: u64,
    mut each: impl FnMut(AuditLine),
) -> Result<(), ViewError> {
    let mut captures = catalog::captures(log, session)?;
    captures.retain(|(_, c)| c.head <= head);
    captures.sort_by_key(|(at, c)| (std::cmp::Reverse(c.head), std::cmp::Reverse(*at)));
    let mut captured_by = |seq: u64, each: &mut dyn FnMut(AuditLine)| {
        while captures.last().is_some_and(|(_, c)| c.head <= seq) {
            if let Some((at, c)) = captures.pop() {
                each(capture_line(at, &c));
            }
        }
    };
    let mut state = SessionState::new();
    let mut auditor = Auditor::beside_state();
    for e in log.read(session, 1)? {
        let e = e?;
        if e.seq > head {
            break;
        }
        let had_output = had_output(&state, &e.event);
        state.evolve(&e)?;
        if let Some(mut entry) = auditor.push_told(&e, had_output) {
            entry.source_ids = entry.ids.iter().map(|id| source_in(&state, id)).collect();
            let part_tokens = match &e.event {
                Event::PartsPruned { parts, .. } if entry.kind == "parts_pruned" => {
                    parts.iter().map(|p| Some(p.tokens)).collect()
                }
                _ => vec![None; entry.ids.len()],
            };
            each(AuditLine { entry, part_tokens });
        }
        captured_by(e.seq, &mut each);
    }
    captured_by(head, &mut each);
    Ok(())
}

/// The audit line of a capture: the agent's hook stored the session up to
/// its head at that moment.
fn capture_line(at: u64, c: &ctxlog_core::Capture) -> AuditLine {
    AuditLine {
        entry: AuditEntry {
            seq: c.head,
            at,
            kind: "captured".into(),
            ids: Vec::new(),
            source_ids: Vec::new(),
            tokens: None,
            policy: c.agent.clone(),
            what: format!(
                "{}: {}'s hook stored the session up to seq {}",
                c.words(),
                c.agent,
                c.head
            ),
        },
        part_tokens: Vec::new(),
    }
}

/// Where in a session a view is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// At the head.
    Head,
    /// Right after event `seq`.
    Seq(u64),
    /// Right after model step `n` (1-based, as the timeline counts them).
    Step(u64),
}

/// The state of `session` (whose events are `events`) at `at`, and the
/// seq it is taken after.
pub fn state_at(
    session: SessionId,
    events: &[Envelope],
    at: At,
) -> Result<(SessionState, u64), ViewError> {
    let head = events.last().map_or(0, |e| e.seq);
    let seq = match at {
        At::Head => head,
        At::Seq(seq) if seq == 0 || seq > head => {
            return Err(ViewError::NoSuchSeq { session, seq, head })
        }
        At::Seq(seq) => seq,
        At::Step(step) => {
            let t = timeline(events)?;
            let row = (step as usize).checked_sub(1).and_then(|i| t.steps.get(i));
            match row {
                Some(row) => row.seq,
                None => {
                    return Err(ViewError::NoSuchStep {
                        session,
                        step,
                        steps: t.steps.len(),
                    })
                }
            }
        }
    };
    let mut state = SessionState::new();
    for e in events.iter().take_while(|e| e.seq <= seq) {
        state.evolve(e)?;
    }
    Ok((state, seq))
}

/// The model input at a point of a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowView {
    /// The session's event it is taken after.
    pub seq: u64,
    /// The model step it is taken after, when asked by step.
    pub step: Option<u64>,
    /// Its estimated tokens.
    pub tokens: u64,
    /// The compaction marker it starts from, if any.
    pub pivot: Option<String>,
    /// Its messages, in order.
    pub messages: Vec<MessageView>,
}

/// One message of a window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageView {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// ctxlog's id of the message.
    pub id: String,
    /// Its parts as sent.
    pub parts: Vec<PartView>,
}

/// One part of a window's message, as sent.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum PartView {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning.
    Reasoning {
        /// The text.
        text: String,
    },
    /// A file.
    File(FileView),
    /// A tool call with its result.
    Tool(ToolView),
}

/// A file part or attachment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileView {
    /// Its media type.
    pub mime: String,
    /// Its name, when known.
    pub filename: Option<String>,
    /// Its URL (often a data URL).
    pub url: String,
}

/// A tool call as sent: its input and its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolView {
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Its input.
    pub input: Json,
    /// Its result.
    #[serde(flatten)]
    pub result: ResultView,
}

/// A tool call's result as sent.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ResultView {
    /// Its output (the placeholder when a prune cleared it).
    Output {
        /// The output text.
        output: String,
        /// Files it returned.
        attachments: Vec<FileView>,
    },
    /// Its error.
    Error {
        /// The error text.
        error: String,
    },
}

impl WindowView {
    /// The window `w` of `state`, taken after event `seq` (model step
    /// `step` when asked by step).
    pub fn of(state: &SessionState, w: &Window, seq: u64, step: Option<u64>) -> WindowView {
        WindowView {
            seq,
            step,
            tokens: w.estimate(&state.policy.estimator),
            pivot: w.pivot.map(|p| p.to_string()),
            messages: w
                .messages
                .iter()
                .map(|m| MessageView {
                    role: m.role.as_str(),
                    id: m.id.to_string(),
                    parts: m.parts.iter().map(part_view).collect(),
                })
                .collect(),
        }
    }
}

fn file_view(a: &Attachment) -> FileView {
    FileView {
        mime: a.mime.clone(),
        filename: a.filename.clone(),
        url: a.url.clone(),
    }
}

fn part_view(p: &WindowPart) -> PartView {
    match p {
        WindowPart::Text(text) => PartView::Text { text: text.clone() },
        WindowPart::Reasoning(text) => PartView::Reasoning { text: text.clone() },
        WindowPart::File(a) => PartView::File(file_view(a)),
        WindowPart::Tool {
            call_id,
            tool,
            input,
            result,
        } => PartView::Tool(ToolView {
            call_id: call_id.clone(),
            tool: tool.clone(),
            input: input.clone(),
            result: match result {
                ToolResult::Output { text, attachments } => ResultView::Output {
                    output: text.clone(),
                    attachments: attachments.iter().map(file_view).collect(),
                },
                ToolResult::Error(e) => ResultView::Error { error: e.clone() },
            },
        }),
    }
}
