//! Answers as the model reads them: plain text, each hit and item with its
//! status and the id that gives it back, secrets replaced by markers
//! (unless told not to), and never more than the call's budget: the rest
//! is one call away, with the cursor the answer ends with.

use crate::call::{Scope, WorkError};
use ctxlog_app::history::{body_text, status_words, SessionLabel};
use ctxlog_core::SessionId;
use ctxlog_search::{char_floor, Found, Recalled, RecalledMessage, Replaced};
use std::collections::BTreeMap;
use std::fmt::Write;

type Labels = BTreeMap<SessionId, SessionLabel>;

/// A call's budget: its bytes, and whether secrets are redacted.
pub struct Budget {
    max_bytes: usize,
    redact: bool,
}

impl Budget {
    /// A budget of `max_bytes`.
    pub fn new(max_bytes: usize, redact: bool) -> Budget {
        Budget {
            max_bytes: max_bytes.max(256),
            redact,
        }
    }

    /// `text` redacted when asked.
    fn clean(&self, text: &str) -> String {
        if self.redact {
            ctxlog_core::redact::redact(text).text
        } else {
            text.to_owned()
        }
    }

    /// The part of `text` (redacted first) from byte `offset`, within the
    /// budget, and how to ask for the rest.
    pub fn page(&self, text: &str, offset: usize, tool: &str, arg: &str) -> String {
        let text = self.clean(text);
        let from = char_floor(&text, offset);
        let to = char_floor(&text, from.saturating_add(self.max_bytes));
        let mut out = text[from..to].to_owned();
        if to < text.len() {
            let _ = write!(
                out,
                "\n\n[… {} more bytes: call {tool} again with the same arguments ({arg}) and cursor \"{to}\"]",
                text.len() - to
            );
        }
        out
    }
}

/// A cursor given back: a count of hits or bytes already answered.
pub fn parse_cursor(cursor: Option<&str>) -> Result<usize, WorkError> {
    match cursor.map(str::trim).filter(|c| !c.is_empty()) {
        None => Ok(0),
        Some(c) => c.parse().map_err(|_| {
            WorkError::Arguments(format!(
                "cursor {c:?} is not one this server gave (a number)"
            ))
        }),
    }
}

/// The session an item belongs to.
pub fn session_of(item: &Recalled) -> SessionId {
    match item {
        Recalled::Part(p) => p.session,
        Recalled::Message(m) => m.session,
    }
}

fn session_words(labels: &Labels, s: SessionId) -> String {
    match labels.get(&s) {
        Some(l) => format!(
            "session \"{}\" ({}, {})",
            l.title.as_deref().unwrap_or("untitled"),
            l.agent.as_deref().unwrap_or("unknown agent"),
            l.source_session.as_deref().unwrap_or(&l.session)
        ),
        None => format!("session {s}"),
    }
}

/// A search's hits, as many as the budget holds.
pub fn hits(
    query: &str,
    scope: Scope,
    found: &Found,
    labels: &Labels,
    skip: usize,
    budget: &mut Budget,
) -> String {
    let scope = match scope {
        Scope::Session => "this session",
        Scope::Project => "this project",
        Scope::All => "every session",
    };
    if found.hits.is_empty() {
        return format!("nothing in {scope} matches {query:?}");
    }
    let mut out = format!("hits for {query:?} in {scope}, best first:\n");
    let mut shown = 0;
    for (i, h) in found.hits.iter().enumerate() {
        let who = match (&h.tool, &h.call_id) {
            (Some(t), Some(c)) => format!("{} called tool {t} (call {c})", h.author),
            _ => h.author.clone(),
        };
        let id = h.call_id.clone().unwrap_or_else(|| h.part.to_string());
        let entry = budget.clean(&format!(
            "\n[{}] {} · {} · seq {} · {}\n    {}\n    recall id: {id}\n",
            skip + i + 1,
            status_words(&h.status),
            session_words(labels, h.session),
            h.seq,
            who,
            h.snippet.trim().replace('\n', "\n    "),
        ));
        if out.len() + entry.len() > budget.max_bytes && shown > 0 {
            break;
        }
        out.push_str(&entry);
        shown += 1;
    }
    if shown < found.hits.len() || found.more {
        let _ = write!(
            out,
            "\n[more hits: call search_history again with the same query and cursor \"{}\"]",
            skip + shown
        );
    }
    out.push_str("\n(`recall` with a recall id gives the item back whole.)");
    out
}

/// Recalled items, whole.
pub fn items(items: &[Recalled], labels: &Labels) -> String {
    let mut out = String::new();
    for item in items {
        match item {
            Recalled::Part(p) => {
                let _ = writeln!(
                    out,
                    "{} · seq {} · {}{} · {}\n",
                    session_words(labels, p.session),
                    p.seq,
                    p.author,
                    p.tool
                        .as_ref()
                        .map(|t| format!(" tool {t}"))
                        .unwrap_or_default(),
                    status_words(&p.status)
                );
                out.push_str(&body_text(&p.body));
                out.push_str("\n\n");
            }
            Recalled::Message(m) => message(&mut out, m, labels),
        }
    }
    out
}

fn message(out: &mut String, m: &RecalledMessage, labels: &Labels) {
    let _ = writeln!(
        out,
        "{} message · {} · seq {} · {}\n",
        m.author,
        session_words(labels, m.session),
        m.seq,
        status_words(&m.status)
    );
    for p in &m.parts {
        out.push_str(&body_text(&p.body));
        out.push_str("\n\n");
    }
}

/// What one compaction replaced, and its summary.
pub fn replaced(r: &Replaced, total: usize, labels: &Labels) -> String {
    let mut out = format!(
        "compaction {} of {total} in {} (summary completed at seq {}) replaced {} messages:\n\n",
        r.number,
        session_words(labels, r.session),
        r.pivot.at,
        r.messages.len()
    );
    for m in &r.messages {
        message(&mut out, m, labels);
    }
    out.push_str("=== the summary that replaced them ===\n\n");
    match &r.summary {
        Some(s) => message(&mut out, s, labels),
        None => out.push_str("(not in the index)\n"),
    }
    out
}
