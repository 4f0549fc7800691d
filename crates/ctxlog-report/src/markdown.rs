//! A session as a Markdown transcript, for pasting into an issue or a
//! review: every message in order, compaction markers and summaries set
//! apart, pruned tool outputs marked as the model saw them (the original
//! folded below), the message the window starts at now pointed out.

use crate::commonmark::{code_span, fenced, inline, literal};
use crate::ReportError;
use ctxlog_core::window::{window_order, PRUNED_PLACEHOLDER};
use ctxlog_core::{
    ContentError, Envelope, JobStatus, Message, Part, PartBody, Role, SessionState, ToolState,
};
use std::fmt::Write;

/// The longest tool output or input shown; longer ones are cut with their
/// size said.
pub const MAX_OUTPUT_CHARS: usize = 2_000;

/// The transcript of `events`, headed by the recording's title, else
/// `untitled` (its first prompt, as `sessions` and `report` show it), else
/// its id.
pub fn markdown(events: &[Envelope], untitled: Option<&str>) -> Result<String, ReportError> {
    let label = "session";
    let state =
        SessionState::replay_keeping_history(events).map_err(|r| ReportError::refused(label, r))?;
    let mut out = String::new();
    let about = state.about.as_ref();
    let title = crate::data::title(&state)
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
    let pivot = window_order(&state).0;
    let tail = pivot.and_then(|p| state.job(p)).and_then(|j| j.tail_start);
    for m in &state.messages {
        if tail == Some(m.id) {
            out.push_str("> **The recent tail starts here**: these messages, up to the compaction below, are still sent, after its summary.\n\n");
        }
        if pivot == Some(m.id) {
            out.push_str(if tail.is_some() {
                "> **The model's window starts here now**: this compaction, its summary, the recent tail marked above, then everything after.\n\n"
            } else {
                "> **The model's window starts here now**: this compaction and its summary replace everything above.\n\n"
            });
        }
        message(&mut out, &state, events, m).map_err(|e| ReportError::content(label, e))?;
    }
    Ok(out)
}

/// One message.
fn message(
    out: &mut String,
    state: &SessionState,
    events: &[Envelope],
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
fn summary(out: &mut String, events: &[Envelope], m: &Message) -> Result<(), ContentError> {
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
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
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
fn part(out: &mut String, events: &[Envelope], p: &Part) -> Result<(), ContentError> {
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
