//! A session as a Markdown transcript, for pasting into an issue or a
//! review: every message in order, compaction markers and summaries set
//! apart, pruned tool outputs marked as the model saw them (the original
//! folded below), the message the window starts at now pointed out.
//!
//! Written as the log is read, twice, an event at a time: a survey
//! ([`MarkdownSurvey`]) folds the session's state, which keeps each
//! message's parts by the seq of the event that holds their content; the
//! writing ([`MarkdownWriter`]) then keeps only the events a message not
//! yet written needs, and writes each message once the last of them was
//! read. So memory follows the messages whose parts are still being read,
//! not the session.

use crate::commonmark::{code_span, fenced, inline, literal};
use crate::ReportError;
use ctxlog_core::window::{window_order, PRUNED_PLACEHOLDER};
use ctxlog_core::{
    ContentError, Contents, Envelope, JobStatus, Message, MessageId, Part, PartBody, Seq,
    SessionState, ToolState,
};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The longest tool output or input shown; longer ones are cut with their
/// size said.
pub const MAX_OUTPUT_CHARS: usize = 2_000;

/// How the errors of a transcript name the session.
const LABEL: &str = "session";

/// The transcript of `events` (held whole), headed by the recording's
/// title, else `untitled` (its first prompt, as `sessions` and `report`
/// show it), else its id: [`MarkdownSurvey`] and [`MarkdownWriter`] over
/// them.
pub fn markdown(events: &[Envelope], untitled: Option<&str>) -> Result<String, ReportError> {
    let mut survey = MarkdownSurvey::new();
    for e in events {
        survey.push(e)?;
    }
    let mut out = Vec::new();
    let mut writer = survey.writer(untitled, &mut out)?;
    for e in events {
        writer.push(e.clone())?;
    }
    writer.finish()?;
    String::from_utf8(out).map_err(|e| ReportError::Write(std::io::Error::other(e)))
}

/// The first reading of a session for its transcript: its state, keeping
/// every message (their parts' contents left in the log).
pub struct MarkdownSurvey {
    state: SessionState,
}

impl Default for MarkdownSurvey {
    fn default() -> Self {
        MarkdownSurvey::new()
    }
}

impl MarkdownSurvey {
    /// Nothing read yet.
    pub fn new() -> MarkdownSurvey {
        MarkdownSurvey {
            state: SessionState::keeping_history(),
        }
    }

    /// Reads the session's next event.
    pub fn push(&mut self, e: &Envelope) -> Result<(), ReportError> {
        self.state
            .evolve(e)
            .map(|_| ())
            .map_err(|r| ReportError::refused(LABEL, r))
    }

    /// Writes the transcript's heading to `out`, and gives what writes the
    /// messages as the session is read again.
    pub fn writer<W: std::io::Write>(
        self,
        untitled: Option<&str>,
        out: W,
    ) -> Result<MarkdownWriter<W>, ReportError> {
        let state = self.state;
        // Each message is written once the last event its parts' contents
        // are in has been read again.
        let mut needed: BTreeMap<Seq, usize> = BTreeMap::new();
        let ready: Vec<Seq> = state
            .messages
            .iter()
            .map(|m| {
                let seqs = m.parts.iter().filter(|p| p.is_sealed()).map(|p| p.seq);
                let mut last = 0;
                for seq in seqs {
                    *needed.entry(seq).or_insert(0) += 1;
                    last = last.max(seq);
                }
                last
            })
            .collect();
        let pivot = window_order(&state).0;
        let tail = pivot.and_then(|p| state.job(p)).and_then(|j| j.tail_start);
        let mut writer = MarkdownWriter {
            out,
            state,
            ready,
            next: 0,
            needed,
            held: Held::default(),
            pivot,
            tail,
            markers: 0,
            most_held: 0,
        };
        let heading = writer.heading(untitled);
        writer.write(&heading)?;
        Ok(writer)
    }
}

/// The second reading: each message written once every event it needs
/// was read, in the session's order.
pub struct MarkdownWriter<W: std::io::Write> {
    out: W,
    state: SessionState,
    /// Per message (in order), the last seq whose event it needs.
    ready: Vec<Seq>,
    /// The next message to write.
    next: usize,
    /// The events messages not yet written need, with how many parts of
    /// them need each.
    needed: BTreeMap<Seq, usize>,
    /// Those events, as read.
    held: Held,
    pivot: Option<MessageId>,
    tail: Option<MessageId>,
    /// Redaction markers written (`[REDACTED …]`).
    markers: u32,
    /// The most events held at once.
    most_held: usize,
}

/// The events kept for the messages not yet written, by seq.
#[derive(Default)]
struct Held(BTreeMap<Seq, Envelope>);

impl Contents for Held {
    fn event_at(&self, seq: Seq) -> Result<Cow<'_, Envelope>, ContentError> {
        self.0
            .get(&seq)
            .map(Cow::Borrowed)
            .ok_or(ContentError::Missing { seq })
    }
}

impl<W: std::io::Write> MarkdownWriter<W> {
    /// Reads the session's next event again; writes the messages it made
    /// ready.
    pub fn push(&mut self, e: Envelope) -> Result<(), ReportError> {
        let seq = e.seq;
        if self.needed.contains_key(&seq) {
            self.held.0.insert(seq, e);
            self.most_held = self.most_held.max(self.held.0.len());
        }
        while self.ready.get(self.next).is_some_and(|&r| r <= seq) {
            self.write_next()?;
        }
        Ok(())
    }

    /// The most events it held at once so far: what its memory follows.
    pub fn most_held(&self) -> usize {
        self.most_held
    }

    /// Writes what is left; how many redaction markers the transcript
    /// shows.
    pub fn finish(mut self) -> Result<u32, ReportError> {
        while self.next < self.ready.len() {
            self.write_next()?;
        }
        self.out.flush().map_err(ReportError::Write)?;
        Ok(self.markers)
    }

    /// Writes the next message, then lets go of the events only it needed.
    fn write_next(&mut self) -> Result<(), ReportError> {
        let m = &self.state.messages[self.next];
        let mut text = String::new();
        if self.tail == Some(m.id) {
            text.push_str("> **The recent tail starts here**: these messages, up to the compaction below, are still sent, after its summary.\n\n");
        }
        if self.pivot == Some(m.id) {
            text.push_str(if self.tail.is_some() {
                "> **The model's window starts here now**: this compaction, its summary, the recent tail marked above, then everything after.\n\n"
            } else {
                "> **The model's window starts here now**: this compaction and its summary replace everything above.\n\n"
            });
        }
        message(&mut text, &self.state, &self.held, m)
            .map_err(|e| ReportError::content(LABEL, e))?;
        for seq in m.parts.iter().filter(|p| p.is_sealed()).map(|p| p.seq) {
            if let Some(left) = self.needed.get_mut(&seq) {
                *left -= 1;
                if *left == 0 {
                    self.needed.remove(&seq);
                    self.held.0.remove(&seq);
                }
            }
        }
        self.next += 1;
        self.write(&text)
    }

    fn write(&mut self, text: &str) -> Result<(), ReportError> {
        self.markers += ctxlog_core::redact::count_markers(text)
            .values()
            .sum::<u32>();
        self.out
            .write_all(text.as_bytes())
            .map_err(ReportError::Write)
    }

    /// The title and the facts above the messages.
    fn heading(&self, untitled: Option<&str>) -> String {
        let state = &self.state;
        let mut out = String::new();
        let about = state.about.as_ref();
        let title = crate::data::title(state)
            .or_else(|| untitled.map(str::to_owned))
            .or_else(|| state.source_id.clone())
            .unwrap_or_else(|| "session".into());
        let _ = writeln!(out, "# {}\n", inline(&title));
        let mut facts = vec![format!(
            "session {}",
            code_span(&state.session.map_or("-".into(), |s| s.to_string()))
        )];
        if let Some(s) = &state.source_id {
            facts.push(format!("recorded as {}", code_span(s)));
        }
        if let Some(a) = about.and_then(|a| a.agent.as_deref()) {
            facts.push(format!("agent {}", inline(a)));
        }
        if let Some(m) = about.and_then(|a| a.model.as_deref()) {
            facts.push(format!("model {}", inline(m)));
        }
        facts.push(format!("policy {}", inline(&state.policy.name)));
        if state.limits.context > 0 {
            facts.push(format!("context {} tokens", state.limits.context));
        }
        let _ = writeln!(out, "{}\n", facts.join(" · "));
        out
    }
}

/// One message.
fn message(
    out: &mut String,
    state: &SessionState,
    events: &(impl Contents + ?Sized),
    m: &Message,
) -> Result<(), ContentError> {
    if m.marker {
        marker(out, state, m);
        return Ok(());
    }
    if m.summary {
        return summary(out, events, m);
    }
    heading(out, m);
    for p in &m.parts {
        part(out, events, p)?;
    }
    Ok(())
}

/// A compaction marker: automatic or manual, its job's status, and why
/// the job failed.
fn marker(out: &mut String, state: &SessionState, m: &Message) {
    let job = state.job(m.id);
    let status = job.map_or("requested", |j| match &j.status {
        JobStatus::Completed { .. } => "completed",
        JobStatus::Failed { .. } => "failed",
        JobStatus::Running => "running",
        JobStatus::Requested => "requested",
    });
    let _ = writeln!(
        out,
        "---\n\n### Compaction ({}, {status}), requested at seq {}\n",
        if job.is_some_and(|j| j.auto) {
            "automatic"
        } else {
            "manual"
        },
        m.created_seq
    );
    if let Some(JobStatus::Failed { error }) = job.map(|j| &j.status) {
        let _ = writeln!(out, "Failed: {}\n", inline(error));
    }
}

/// A summary, quoted, as the model reads it.
fn summary(
    out: &mut String,
    events: &(impl Contents + ?Sized),
    m: &Message,
) -> Result<(), ContentError> {
    let _ = writeln!(
        out,
        "**Summary** (the model reads this instead of the history above):\n"
    );
    for text in m.texts_in(events)? {
        out.push_str(&literal(&text, "> "));
        out.push('\n');
    }
    out.push_str("---\n\n");
    Ok(())
}

/// A message's role, and whether it is synthetic, withdrawn or failed.
fn heading(out: &mut String, m: &Message) {
    let role = m.role.as_str();
    let _ = writeln!(
        out,
        "**{role}**{}{}{}",
        if m.synthetic { " _(synthetic)_" } else { "" },
        if m.withdrawn {
            " _(withdrawn by the agent: no longer sent)_"
        } else {
            ""
        },
        m.error
            .as_ref()
            .map(|e| format!(" _(error: {})_", inline(&e.name)))
            .unwrap_or_default()
    );
    out.push('\n');
}

/// One part of a message.
fn part(out: &mut String, events: &(impl Contents + ?Sized), p: &Part) -> Result<(), ContentError> {
    match &*p.body_in(events)? {
        PartBody::Text { text, .. } => {
            let _ = writeln!(out, "{}", literal(text, ""));
        }
        PartBody::Reasoning { text, .. } => {
            let _ = writeln!(
                out,
                "<details><summary>reasoning</summary>\n\n{}\n</details>\n",
                fenced(text)
            );
        }
        PartBody::File(a) => {
            let _ = writeln!(
                out,
                "_(file: {})_\n",
                inline(a.filename.as_deref().unwrap_or(&a.mime))
            );
        }
        PartBody::Tool {
            call_id,
            tool,
            state: tool_state,
        } => tool_call(out, p, call_id, tool, tool_state),
        PartBody::StepStart { .. }
        | PartBody::StepFinish { .. }
        | PartBody::Compaction { .. }
        | PartBody::Other { .. } => {}
    }
    Ok(())
}

/// A tool call: its input, then its output (pruned or not) or its error.
fn tool_call(out: &mut String, p: &Part, call_id: &str, tool: &str, tool_state: &ToolState) {
    let input = tool_state.input().to_json_string();
    let _ = writeln!(
        out,
        "Tool {} (call {}): {}",
        code_span(tool),
        code_span(call_id),
        code_span(&cut(&input, 200))
    );
    out.push('\n');
    match tool_state {
        ToolState::Completed { output, .. } => match &p.pruned {
            Some(mark) => {
                let _ = writeln!(
                    out,
                    "Output cleared by a prune at seq {} ({}, ~{} tokens); the model sees {}.\n\n<details><summary>the original output, kept in the log</summary>\n\n{}\n</details>\n",
                    mark.seq,
                    inline(&mark.policy),
                    mark.tokens,
                    code_span(PRUNED_PLACEHOLDER),
                    fenced(&cut(output, MAX_OUTPUT_CHARS))
                );
            }
            None => {
                let _ = writeln!(out, "{}", fenced(&cut(output, MAX_OUTPUT_CHARS)));
            }
        },
        ToolState::Error { error, .. } => {
            let _ = writeln!(out, "Error:\n\n{}", fenced(&cut(error, MAX_OUTPUT_CHARS)));
        }
        ToolState::Pending { .. } | ToolState::Running { .. } => {
            out.push_str("_(no result recorded)_\n\n");
        }
    }
}

/// At most `max` characters, the rest said.
fn cut(text: &str, max: usize) -> String {
    match crate::data::cut_at(text, max) {
        (all, 0) => all,
        (mut kept, left) => {
            let _ = write!(kept, "… ({left} more characters)");
            kept
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_with_its_size_said() {
        assert_eq!(cut("abcdef", 3), "abc… (3 more characters)");
    }
}
