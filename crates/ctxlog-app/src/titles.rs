//! What a session is called where it is listed: the agent's own title
//! (OpenCode's, a Claude Code summary, a Codex thread name), else its first
//! real prompt, cut with an ellipsis. The one place that decides it.

use ctxlog_core::{Envelope, Event, MessageId, PartBody, Role, SessionId};
use ctxlog_store::{EventLog, ReadError};
use std::collections::BTreeSet;

/// The longest title a prompt gives, in characters (the ellipsis
/// included): tables cut it further to fit.
pub const PROMPT_TITLE_CHARS: usize = 80;

/// How many of a session's first events are searched for its first prompt:
/// a session whose first real prompt comes later is listed untitled.
pub const PROMPT_SEARCH_EVENTS: usize = 4_096;

/// Codex's IDE extension puts the open files first and the request after
/// this line.
const CODEX_REQUEST_MARK: &str = "## My request for Codex:";

/// The title of `session`'s first real prompt: the first text a person
/// wrote in a user message (not one the runtime wrote, such as Codex's
/// `<environment_context>` or Claude Code's command caveats, and not a lone
/// slash command), made one line and cut to [`PROMPT_TITLE_CHARS`].
/// `None` when its first [`PROMPT_SEARCH_EVENTS`] events hold none.
pub fn first_prompt(log: &impl EventLog, session: SessionId) -> Result<Option<String>, ReadError> {
    let mut search = PromptSearch::default();
    for e in log.read(session, 1)?.take(PROMPT_SEARCH_EVENTS) {
        if let Some(title) = search.see(&e?.event) {
            return Ok(Some(title));
        }
    }
    Ok(None)
}

/// [`first_prompt`] of a session's events already read.
pub fn first_prompt_in(events: &[Envelope]) -> Option<String> {
    let mut search = PromptSearch::default();
    events
        .iter()
        .take(PROMPT_SEARCH_EVENTS)
        .find_map(|e| search.see(&e.event))
}

/// The search for a first prompt ([`first_prompt`]), one event at a time.
#[derive(Debug, Default)]
pub struct PromptSearch {
    /// The user messages a person wrote, so far.
    prompts: BTreeSet<MessageId>,
}

impl PromptSearch {
    /// The title `event` gives, if it is the first prompt's text.
    pub fn see(&mut self, event: &Event) -> Option<String> {
        match event {
            Event::MessageAppended {
                message,
                role: Role::User,
                synthetic: false,
                ..
            } => {
                self.prompts.insert(*message);
                None
            }
            Event::PartAppended {
                message,
                body:
                    PartBody::Text {
                        text,
                        synthetic: false,
                        ..
                    },
                ..
            } if self.prompts.contains(message) => prompt_title(text),
            _ => None,
        }
    }
}

/// A prompt's text as a title: Codex's IDE context and leading XML-like
/// blocks (`<ide_opened_file>…</ide_opened_file>`) dropped, whitespace
/// made single spaces, cut to [`PROMPT_TITLE_CHARS`] with `…`. `None` for
/// an empty prompt or a lone slash command (`/mode`).
pub fn prompt_title(text: &str) -> Option<String> {
    let text = match text.find(CODEX_REQUEST_MARK) {
        Some(at) => &text[at + CODEX_REQUEST_MARK.len()..],
        None => text,
    };
    let text = without_leading_blocks(text);
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        [] => return None,
        [only] if only.starts_with('/') => return None,
        _ => {}
    }
    let line = words.join(" ");
    if line.chars().count() <= PROMPT_TITLE_CHARS {
        return Some(line);
    }
    let mut cut: String = line.chars().take(PROMPT_TITLE_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    Some(cut)
}

/// `text` without the `<tag>…</tag>` blocks it starts with (a tag name of
/// letters, digits, `_` and `-`).
fn without_leading_blocks(mut text: &str) -> &str {
    loop {
        let trimmed = text.trim_start();
        let Some(rest) = trimmed.strip_prefix('<') else {
            return trimmed;
        };
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        let name = &rest[..name_len];
        if name.is_empty() || !rest[name_len..].starts_with('>') {
            return trimmed;
        }
        let close = format!("</{name}>");
        match rest.find(&close) {
            Some(end) => text = &rest[end + close.len()..],
            None => return trimmed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_becomes_a_one_line_title() {
        assert_eq!(
            prompt_title("  fix\nthe   bug "),
            Some("fix the bug".into())
        );
        assert_eq!(prompt_title("/mode"), None);
        assert_eq!(prompt_title(" \n "), None);
        assert_eq!(
            prompt_title("/review the parser please"),
            Some("/review the parser please".into())
        );
        assert_eq!(
            prompt_title("# Context from my IDE setup:\n## Open tabs:\n- a.ts\n\n## My request for Codex:\nrename the route\n"),
            Some("rename the route".into())
        );
        assert_eq!(
            prompt_title(
                "<ide_opened_file>The user opened x.rs</ide_opened_file>\nwhy does it panic?"
            ),
            Some("why does it panic?".into())
        );
        assert_eq!(prompt_title("<b>bold</b>"), None);
        assert_eq!(prompt_title("a < b and <c"), Some("a < b and <c".into()));
        let long = "word ".repeat(40);
        let title = prompt_title(&long).unwrap();
        assert!(title.chars().count() <= PROMPT_TITLE_CHARS, "{title}");
        assert!(title.ends_with("word…"), "{title}");
    }
}
