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
use ctxlog_search::{CaughtUp, Remade, SearchError, SearchIndex};
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
pub fn index_dir(location: &Location) -> Option<PathBuf> {
    location.dir().map(|d| d.join(INDEX_DIR))
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

/// The index of the sled store at `dir` (a directory holding a store),
/// made or made anew when it must be (said in the second value).
pub fn open_index(dir: &std::path::Path) -> Result<(SearchIndex, Option<Remade>), SearchError> {
    SearchIndex::open(&dir.join(INDEX_DIR))
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
