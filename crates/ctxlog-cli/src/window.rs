//! `window`: the exact model input of a stored session, at its head or
//! after an event, in ctxlog's form or as an agent sends it.

use crate::compact::engine;
use crate::store::stored_session;
use crate::{Cli, CliError, SummarizerKind};
use ctxlog_app::dates::Zone;
use ctxlog_app::logs::AnyLog;
use ctxlog_core::window::ToolResult;
use ctxlog_core::{window, SessionState};
use ctxlog_core::{SessionId, Window, WindowPart};
use ctxlog_engine::{Engine, EngineError};
use ctxlog_providers::Format;
use ctxlog_store::EventLog;
use serde_json::json;

/// How `window` prints the model input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum WindowFormat {
    /// ctxlog's messages and parts.
    Ctxlog,
    /// The chat-completions `messages` array, as OpenCode sends it.
    Openai,
    /// The Anthropic Messages API `messages` array, as pi sends it.
    Anthropic,
    /// The Anthropic Messages API `messages` array, as Claude Code sends it
    /// (consecutive user messages joined; its reminders not recorded).
    ClaudeCode,
    /// The OpenAI Responses API `input` items, as Codex sends them.
    Responses,
}

pub(crate) fn show_window(
    cli: &Cli,
    session: &str,
    at: Option<u64>,
    format: WindowFormat,
) -> Result<(), CliError> {
    let (store, session) = stored_session(cli, session)?;
    let engine = engine(store, SummarizerKind::Extractive)?;
    let failed = |e: EngineError| match e {
        EngineError::NoSuchSeq { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(e.to_string()),
    };
    let handle = engine.session(session).map_err(failed)?;
    // At the head, the engine's state is read in place: a copy of a long
    // session's state would double the command's memory.
    match at {
        Some(seq) => print_window(
            cli,
            &engine,
            session,
            &handle.state_at(seq).map_err(failed)?,
            format,
        ),
        None => handle
            .query(|state| print_window(cli, &engine, session, state, format))
            .map_err(failed)?,
    }
}

/// Prints the window of `state` (see [`show_window`]).
fn print_window(
    cli: &Cli,
    engine: &Engine<AnyLog>,
    session: SessionId,
    state: &SessionState,
    format: WindowFormat,
) -> Result<(), CliError> {
    let w = window(state);
    if let Some(sent) = sent_as(format) {
        let mut doc = json!({
            "ok": true,
            "format": sent.name(),
            "omitted": ["system", "tools"],
            "note": "ctxlog does not record the system prompt or the tool definitions; a provider receives them before and beside these messages",
        });
        doc[sent.key()] = serde_json::Value::Array(sent.encode(&w));
        println!("{doc}");
        return Ok(());
    }
    let at = engine
        .store()
        .read(session, state.head)
        .ok()
        .and_then(|mut r| r.next())
        .and_then(Result::ok)
        .map_or(state.started_at, |e| e.recorded_at);
    if cli.json {
        let view = ctxlog_app::views::WindowView::of(state, &w, state.head, None);
        let mut doc = json!(view);
        doc["ok"] = json!(true);
        doc["header"] = header_json(state, session, at);
        println!("{doc}");
        return Ok(());
    }
    window_header(state, &w, session, at, &cli.zone());
    for m in &w.messages {
        let role = m.role.as_str();
        for p in &m.parts {
            let line = part_line(p);
            println!("{role:>9}: {line}");
        }
    }
    Ok(())
}

/// The provider format of `format`; `None` for ctxlog's own view.
fn sent_as(format: WindowFormat) -> Option<Format> {
    match format {
        WindowFormat::Ctxlog => None,
        WindowFormat::Openai => Some(Format::Chat),
        WindowFormat::Anthropic => Some(Format::Anthropic),
        WindowFormat::ClaudeCode => Some(Format::ClaudeCode),
        WindowFormat::Responses => Some(Format::Responses),
    }
}

/// One part of the window as a line of text.
fn part_line(p: &WindowPart) -> String {
    match p {
        WindowPart::Text(t) => t.clone(),
        WindowPart::Reasoning(t) => format!("(reasoning) {t}"),
        WindowPart::File(a) => {
            format!("(file) {}", a.filename.as_deref().unwrap_or(&a.url))
        }
        WindowPart::Tool {
            tool,
            input,
            result,
            ..
        } => match result {
            ToolResult::Output { text, .. } => {
                format!("[{tool} {}] {}", input.to_json_string(), text)
            }
            ToolResult::Error(e) => {
                format!("[{tool} {}] error: {e}", input.to_json_string())
            }
        },
    }
}

/// The figures of the text header, for `window --json`: the session,
/// the seq and time it is taken after, the policy, what the last step
/// recorded, the usable context and the threshold.
fn header_json(state: &SessionState, session: SessionId, at: u64) -> serde_json::Value {
    let recorded = state.last_finished.as_ref().map(|l| {
        let t = ctxlog_core::StepTokens::of(&l.tokens);
        json!({"total": t.total, "input": t.input, "output": t.output,
               "reasoning": t.reasoning, "cache_read": t.cache_read, "cache_write": t.cache_write})
    });
    json!({
        "session": session.to_string(),
        "source_session": state.source_id,
        "seq": state.head,
        "time": ctxlog_app::dates::Zone::utc().rfc3339(at),
        "time_ms": at,
        "policy": state.policy.name,
        "recorded": recorded,
        "usable": state.policy.usable(&state.limits),
        "threshold": state.policy.threshold(&state.limits),
        "context": state.limits.context,
    })
}

/// What `window` prints above the messages: where in the session, the
/// tokens the last step reported against the estimate, the usable budget.
fn window_header(state: &SessionState, w: &Window, session: SessionId, at: u64, zone: &Zone) {
    let estimator = state.policy.estimator;
    println!(
        "session {session}{} · after seq {} · {} {} · policy {}",
        state
            .source_id
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default(),
        state.head,
        zone.minute(at),
        zone.offset(at),
        state.policy.name
    );
    let recorded = state.last_finished.as_ref().map(|l| {
        let t = ctxlog_core::StepTokens::of(&l.tokens);
        // Zeros say nothing of the context: never shown as 0 tokens.
        match (t.total, l.summary) {
            (0, true) => "not recorded at the last step (a summary whose tokens the recording does not give)".into(),
            (0, false) => "not recorded at the last step (it reported no usage: an aborted or interrupted call)".into(),
            _ => format!(
                "{} tokens at the last step (input {}, cache read {}, cache write {}, output {})",
                t.total, t.input, t.cache_read, t.cache_write, t.output
            ),
        }
    });
    println!(
        "recorded: {} · estimated window: ~{} tokens in {} messages{} · usable {} (threshold {})",
        recorded.unwrap_or_else(|| "no step yet".into()),
        w.estimate(&estimator),
        w.messages.len(),
        if w.pivot.is_some() {
            ", from a compaction"
        } else {
            ""
        },
        state
            .policy
            .usable(&state.limits)
            .map_or("unlimited".into(), |u| u.to_string()),
        state
            .policy
            .threshold(&state.limits)
            .map_or("-".into(), |u| u.to_string()),
    );
    println!("system prompt: not recorded (ctxlog keeps the messages; the agent sends its system prompt and tool definitions beside them)");
    println!();
}
