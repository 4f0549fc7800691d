//! Every session's history, given back: the search index of a store kept
//! up to its log, searches over the sessions a filter keeps, and the items
//! an id names, each told with the session it belongs to (title, agent,
//! project). The index itself is `ctxlog-search`'s; which index a store
//! has, which sessions it takes in, and how long a search waits for
//! another process that is indexing are decided here.

use crate::catalog;
use crate::logs::Location;
use crate::sessions::{self, row_of, Filter, SortBy};
use ctxlog_core::{Envelope, Event, SessionId};
use ctxlog_search::{CaughtUp, SearchError, SearchIndex};
use ctxlog_store::{EventLog, ReadError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The directory of a sled store's index, inside the store.
pub const INDEX_DIR: &str = "search";

/// How long a search waits for another process that is bringing the index
/// up to date before it searches what is indexed, and says so.
pub const CATCH_UP_WAIT: Duration = Duration::from_secs(10);

/// The index's directory for the store at `location`; `None` for a
/// PostgreSQL log, which searches with PostgreSQL's own full-text search.
/// A store of another user (root reading it) is never written to: its
/// index is made in a private directory of this process's, for this run.
pub fn index_dir(location: &Location) -> Option<PathBuf> {
    let dir = location.dir()?;
    if owns(dir) {
        return Some(dir.join(INDEX_DIR));
    }
    Some(private_index_dir())
}

/// The directory this process made for an index of a store it does not
/// own, once.
static PRIVATE_INDEX: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Where this process makes the index of a store it does not own: in a
/// directory of its own, made for this run only (0700, a name nobody had
/// before), removed by [`remove_private_index`].
fn private_index_dir() -> PathBuf {
    PRIVATE_INDEX
        .get_or_init(|| {
            use std::os::unix::fs::DirBuilderExt;
            let nanos = |attempt: u32| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos())
                    .wrapping_add(u128::from(attempt))
            };
            let mut dir = PathBuf::new();
            for attempt in 0..8 {
                dir = std::env::temp_dir().join(format!(
                    "ctxlog-index-{}-{}",
                    std::process::id(),
                    nanos(attempt)
                ));
                // Made here, never found: a directory someone else made
                // first is not used.
                if std::fs::DirBuilder::new().mode(0o700).create(&dir).is_ok() {
                    break;
                }
            }
            dir
        })
        .join("index")
}

/// Removes the index this process made of a store it does not own.
pub fn remove_private_index() {
    if let Some(dir) = PRIVATE_INDEX.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Whether this process's user owns the store at `dir` (a store not made
/// yet is the maker's).
pub fn owns(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self").map(|m| m.uid());
    match (std::fs::metadata(dir), me) {
        (Ok(store), Ok(me)) => store.uid() == me,
        _ => true,
    }
}

/// Whether a session is indexed, told by its first event: a kept
/// simulation repeats its recording and is not.
pub fn is_indexed(first: &Envelope) -> bool {
    match &first.event {
        Event::SessionStarted {
            source_id: Some(source),
            policy,
            ..
        } => sessions::simulation_of(source, &policy.name).is_none(),
        _ => true,
    }
}

/// Brings `index` up to `log`; when another process is doing it and does
/// not finish within [`CATCH_UP_WAIT`], `Ok(None)`: what is indexed is
/// searched, and the caller says the index lags.
pub fn bring_up_to_date(
    index: &SearchIndex,
    log: &impl EventLog,
    progress: &mut dyn FnMut(u64),
) -> Result<Option<CaughtUp>, SearchError> {
    match ctxlog_search::catch_up(index, log, &is_indexed, CATCH_UP_WAIT, progress) {
        Ok(done) => Ok(Some(done)),
        Err(SearchError::Busy { .. }) => {
            index.reload()?;
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

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

/// What `verify` says of a store's index (derived: never a fault of the
/// store, and made again from the log by `ctxlog index --rebuild`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum IndexHealth {
    /// Not made yet (the first search makes it).
    Missing,
    /// It does not open, or a file fails its checksum.
    Damaged {
        /// What is wrong.
        why: String,
    },
    /// Events of the log it has not taken in yet (the next search does).
    Lagging {
        /// Sessions with events not indexed.
        sessions: usize,
        /// Those events.
        events: u64,
    },
    /// Up to the log.
    UpToDate,
    /// The log is PostgreSQL's.
    NotKept,
}

/// The health of the index of the store at `location`, whose log is `log`;
/// nothing is changed.
pub fn index_health(location: &Location, log: &impl EventLog) -> Result<IndexHealth, ReadError> {
    let Some(dir) = index_dir(location) else {
        return Ok(IndexHealth::NotKept);
    };
    if !dir.join("meta.json").exists() {
        return Ok(IndexHealth::Missing);
    }
    let damaged = |why: String| Ok(IndexHealth::Damaged { why });
    let index = match SearchIndex::open_existing(&dir) {
        Ok(index) => index,
        Err(e) => return damaged(e.to_string()),
    };
    match index.damaged_files() {
        Ok(bad) if bad.is_empty() => {}
        Ok(bad) => return damaged(format!("files failing their checksum: {}", bad.join(", "))),
        Err(e) => return damaged(e.to_string()),
    }
    let marks = match index.watermarks() {
        Ok(m) => m,
        Err(e) => return damaged(e.to_string()),
    };
    let (mut sessions, mut events) = (0, 0);
    for (s, head) in catalog::sessions(log)? {
        let behind = head.saturating_sub(marks.of(s));
        if behind > 0 {
            sessions += 1;
            events += behind;
        }
    }
    Ok(if sessions == 0 {
        IndexHealth::UpToDate
    } else {
        IndexHealth::Lagging { sessions, events }
    })
}
