//! A window as the `messages` Claude Code 2.1 sends (`window --format
//! claude-code`), checked against the requests of `@anthropic-ai/claude-code`
//! 2.1.328 by the differential test.
//!
//! The Anthropic mapping ([`crate::anthropic`]), then what Claude Code does
//! to the messages between two answers (its `normalizeMessagesForAPI`):
//! - its reminders (the `<system-reminder>` texts its `attachment` lines
//!   became, and those sent before a summary in its message) go before the
//!   other user blocks of the run, after the tool results, in their order;
//! - a reminder recorded with the `system` role right after tool results is
//!   folded into the last result: `content.trim() + "\n\n" +
//!   reminder.trim()`; one recorded as `user` (the commit attribution) is a
//!   block beside them; reminders join one another with nothing between;
//! - a user message joining the run gives the text block before it a
//!   trailing `"\n"`.
//!
//! A reminder is told by its text: it opens with `<system-reminder>` (a
//! prompt that does is taken for one).

use crate::anthropic::{assistant, user};
use ctxlog_core::window::{Window, WindowMessage};
use ctxlog_core::Role;
use serde_json::{json, Value};

/// Where a reminder text starts.
const REMINDER: &str = "<system-reminder>";

/// The window's messages as Claude Code 2.1 sends them.
pub(crate) fn messages(window: &Window) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut run: Vec<&WindowMessage> = Vec::new();
    let mut results: Vec<Value> = Vec::new();
    for m in &window.messages {
        if m.role.is_input() {
            run.push(m);
            continue;
        }
        flush(&mut out, std::mem::take(&mut results), &mut run);
        let mut rendered = Vec::new();
        assistant(m, &mut rendered);
        let mut rendered = rendered.into_iter();
        out.extend(rendered.next());
        results = rendered
            .next()
            .and_then(|r| r["content"].as_array().cloned())
            .unwrap_or_default();
    }
    flush(&mut out, results, &mut run);
    out
}

/// Sends the user side of one run as one message: the tool results, then
/// every reminder of the run in order, then the other blocks, message by
/// message.
fn flush(out: &mut Vec<Value>, results: Vec<Value>, run: &mut Vec<&WindowMessage>) {
    let mut reminders: Vec<(bool, Value)> = Vec::new();
    let mut others: Vec<Vec<Value>> = Vec::new();
    for m in run.drain(..) {
        let folds = m.role == Role::System;
        let content = user(m)
            .and_then(|u| u["content"].as_array().cloned())
            .unwrap_or_default();
        let (own, rest): (Vec<Value>, Vec<Value>) = content
            .into_iter()
            .partition(|b| b["text"].as_str().is_some_and(|t| t.starts_with(REMINDER)));
        reminders.extend(own.into_iter().map(|b| (folds, b)));
        if !rest.is_empty() {
            others.push(rest);
        }
    }
    let mut blocks = results;
    for (folds, b) in reminders {
        match (folds, blocks.last_mut(), b["text"].as_str()) {
            (true, Some(last), Some(text)) if last["type"] == "tool_result" => fold(last, text),
            _ => blocks.push(b),
        }
    }
    for content in others {
        if let Some(Value::String(t)) = blocks
            .last_mut()
            .filter(|b| b["type"] == "text")
            .and_then(|b| b.get_mut("text"))
        {
            t.push('\n');
        }
        blocks.extend(content);
    }
    if !blocks.is_empty() {
        out.push(json!({"role": "user", "content": blocks}));
    }
}

/// Folds a reminder into a tool result's content.
fn fold(result: &mut Value, reminder: &str) {
    let content = result["content"].as_str().unwrap_or("").trim().to_owned();
    let joined = [content.as_str(), reminder.trim()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    result["content"] = json!(joined);
}
