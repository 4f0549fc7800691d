//! Every session's history, given back: searches over the sessions a
//! filter keeps and the items an id names, each told with the session it
//! belongs to (title, agent, project); the recordings of a project brought
//! in as they grow. Which index a store has is `search_index`'s.

use crate::catalog;
use crate::sessions::{self, row_of, Filter, SortBy};
use ctxlog_core::SessionId;
use ctxlog_store::{EventLog, ReadError};
use serde::Serialize;
use std::collections::BTreeMap;

/// The sessions `filter` keeps (its agent and project; times filter the
/// items themselves, not here); `None` when it keeps every session.
pub fn sessions_kept(
    log: &impl EventLog,
    filter: &Filter,
) -> Result<Option<Vec<SessionId>>, ReadError> {
    if filter.agent.is_none() && filter.project.is_none() {
        return Ok(None);
    }
    let by_session = Filter {
        since: None,
        until: None,
        ..filter.clone()
    };
    let listing = sessions::list(log, &by_session, SortBy::Date, false)?;
    Ok(Some(
        listing
            .rows
            .iter()
            .filter_map(|r| r.session().parse::<uuid::Uuid>().ok().map(SessionId))
            .collect(),
    ))
}

/// A session as a hit names it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionLabel {
    /// ctxlog's id.
    pub session: String,
    /// The recording's own id.
    pub source_session: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// The agent that recorded it.
    pub agent: Option<String>,
    /// The project (the directory's last components).
    pub project: Option<String>,
}

/// `found`'s hits as JSON, each with its session's label from `labels`
/// (`label`: null when it has none), as `search --json` and the page give
/// them.
pub fn labelled_hits(
    found: &ctxlog_search::Found,
    labels: &BTreeMap<SessionId, SessionLabel>,
) -> Vec<serde_json::Value> {
    found
        .hits
        .iter()
        .map(|h| {
            let mut v = serde_json::to_value(h).unwrap_or_default();
            v["label"] = serde_json::to_value(labels.get(&h.session)).unwrap_or_default();
            v
        })
        .collect()
}

/// The labels of `sessions`, each read once; a session whose description
/// does not read is labelled by its id only.
pub fn labels(
    log: &impl EventLog,
    sessions: impl IntoIterator<Item = SessionId>,
) -> BTreeMap<SessionId, SessionLabel> {
    let mut out = BTreeMap::new();
    for s in sessions {
        if out.contains_key(&s) {
            continue;
        }
        let label = match catalog::load_described(log, s) {
            Ok(loaded) => {
                let row = row_of(s, 0, &loaded.state, false);
                let title = row
                    .title
                    .or_else(|| crate::titles::first_prompt(log, s).ok().flatten());
                SessionLabel {
                    session: row.session,
                    source_session: row.source_session,
                    title,
                    agent: row.agent,
                    project: row.project,
                }
            }
            Err(_) => SessionLabel {
                session: s.to_string(),
                ..SessionLabel::default()
            },
        };
        out.insert(s, label);
    }
    out
}

/// What the agents recorded in one project directory, imported as it
/// grows: the front door that serves an agent (`ctxlog mcp`) brings its
/// sessions in before each answer, so what was compacted away a moment
/// ago is found.
#[derive(Debug, Default)]
pub struct ProjectImports {
    /// Each input's stamp when it was last imported.
    seen: BTreeMap<String, crate::inputs::Stamp>,
}

/// What one round of [`ProjectImports::import`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Imported {
    /// Inputs read and stored (new or grown).
    pub stored: usize,
    /// Inputs refused, each why.
    pub refused: Vec<String>,
}

impl ProjectImports {
    /// Imports the sessions recorded in `dir` (found at `places`) whose
    /// files changed since the last round, as live recordings (what is
    /// stored already is not written again).
    pub fn import(
        &mut self,
        log: &impl EventLog,
        places: &ctxlog_import::discover::Places,
        dir: &std::path::Path,
    ) -> Imported {
        let found =
            ctxlog_import::projects::of_project(ctxlog_import::discover::discover(places), dir);
        let request = crate::importing::Request {
            format: None,
            options: ctxlog_import::ImportOptions::default(),
            replace: false,
        };
        let mut done = Imported::default();
        for f in found {
            let input = crate::inputs::Input::Found(f);
            let name = input.name();
            let stamp = input.stamp();
            if self.seen.get(&name) == Some(&stamp) {
                continue;
            }
            let read = crate::inputs::read(&input, None, &request.options, &());
            let outcome = match read {
                Ok(Some(imported)) => {
                    crate::importing::store_input(log, &input, imported, &request)
                        .map(|_| ())
                        .map_err(|e| format!("{name}: {e}"))
                }
                Ok(None) => continue,
                Err(e) => Err(e.to_string()),
            };
            match outcome {
                Ok(()) => done.stored += 1,
                Err(why) => done.refused.push(why),
            }
            self.seen.insert(name, stamp);
        }
        done
    }
}

/// A part's content whole, as recorded, in plain text: a text's words; a
/// tool call's input (JSON) and its output or error; a file's name and
/// type.
pub fn body_text(body: &ctxlog_core::PartBody) -> String {
    use ctxlog_core::{PartBody, ToolState};
    match body {
        PartBody::Text { text, .. } | PartBody::Reasoning { text, .. } => text.clone(),
        PartBody::Tool { state, .. } => {
            let input = format!("input: {}", state.input().to_json_string());
            match state {
                ToolState::Completed { output, .. } => format!("{input}\noutput:\n{output}"),
                ToolState::Error { error, .. } => format!("{input}\nerror:\n{error}"),
                ToolState::Pending { .. } | ToolState::Running { .. } => {
                    format!("{input}\n({}: no output recorded)", state.status())
                }
            }
        }
        PartBody::File(f) => format!(
            "file {} ({})",
            f.filename.as_deref().unwrap_or("(unnamed)"),
            f.mime
        ),
        other => format!("({} part)", other.kind()),
    }
}

/// What became of an item, in words.
pub fn status_words(status: &ctxlog_search::Status) -> String {
    use ctxlog_search::Status;
    match status {
        Status::InWindow => "in the window".to_owned(),
        Status::Pruned { at } => format!("pruned at seq {at}"),
        Status::Compacted { at, .. } => format!("compacted away at seq {at}"),
        Status::Withdrawn { at } => format!("withdrawn at seq {at}"),
    }
}
