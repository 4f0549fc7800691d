//! A store's search index: which one it has (tantivy's in a sled store's
//! directory, PostgreSQL's own full-text search beside a PostgreSQL log),
//! where it lives when the store is another user's, which sessions it
//! takes in, how long a search waits for another process that is indexing,
//! and what `verify` says of it.

use crate::catalog;
use crate::logs::{AnyLog, Location};
use crate::sessions;
use ctxlog_core::{Envelope, Event, MessageId, PartId, Seq, SessionId};
use ctxlog_postgres::PgSearch;
use ctxlog_search::lookup::{Lookup, Stored};
use ctxlog_search::project::Mark;
use ctxlog_search::query::Parsed;
use ctxlog_search::{
    catch_up, CaughtUp, Engine, Remade, SearchError, SearchIndex, SearchRequest, Watermarks,
};
use ctxlog_store::{EventLog, ReadError};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// A store's search index.
#[derive(Debug)]
pub enum Index {
    /// tantivy's, in the sled store's directory (or a private one).
    Embedded(Box<SearchIndex>),
    /// PostgreSQL's full-text search, in the log's database.
    Postgres(PgSearch),
}

/// The same call on either index.
macro_rules! each {
    ($index:expr, $i:ident => $body:expr) => {
        match $index {
            Index::Embedded($i) => $body,
            Index::Postgres($i) => $body,
        }
    };
}

impl Index {
    /// The index of the store at `location` whose log is `log`: opened,
    /// made when missing or damaged (said in `remade`), emptied first when
    /// `rebuild`.
    pub fn open(
        location: &Location,
        log: &AnyLog,
        rebuild: bool,
    ) -> Result<(Index, Option<Remade>), SearchError> {
        if let AnyLog::Postgres(pg) = log {
            let search = pg.search();
            if rebuild {
                search.clear(CATCH_UP_WAIT)?;
            }
            return Ok((Index::Postgres(search), None));
        }
        let Some(dir) = index_dir(location) else {
            return Err(SearchError::Io {
                path: PathBuf::from(location.to_string()),
                source: std::io::Error::other("a PostgreSQL log opened as another kind of store"),
            });
        };
        if rebuild {
            return Ok((Index::Embedded(Box::new(SearchIndex::remake(&dir)?)), None));
        }
        let (index, remade) = SearchIndex::open(&dir)?;
        Ok((Index::Embedded(Box::new(index)), remade))
    }

    /// Where it is, in words.
    pub fn name(&self) -> String {
        match self {
            Index::Embedded(i) => i.dir().display().to_string(),
            Index::Postgres(p) => format!("{p:?}"),
        }
    }

    /// What it has indexed of each session.
    pub fn watermarks(&self) -> Result<Watermarks, SearchError> {
        match self {
            Index::Embedded(i) => Engine::watermarks(i.as_ref()),
            Index::Postgres(p) => Engine::watermarks(p),
        }
    }

    /// Sees what other processes committed since.
    pub fn reload(&self) -> Result<(), SearchError> {
        match self {
            Index::Embedded(i) => Engine::reload(i.as_ref()),
            Index::Postgres(p) => Engine::reload(p),
        }
    }

    /// The bytes it takes (files, or tables with their indexes).
    pub fn disk_bytes(&self) -> Result<u64, SearchError> {
        match self {
            Index::Embedded(i) => Ok(i.disk_bytes()),
            Index::Postgres(p) => p.disk_bytes(),
        }
    }
}

impl Lookup for Index {
    fn ranked(
        &self,
        query: &Parsed,
        request: &SearchRequest,
        limit: usize,
    ) -> Result<Vec<(f32, Stored)>, SearchError> {
        each!(self, i => i.ranked(query, request, limit))
    }

    fn compaction_marks(&self, session: SessionId) -> Result<Vec<(Seq, Mark)>, SearchError> {
        each!(self, i => i.compaction_marks(session))
    }

    fn marks_naming(
        &self,
        message: MessageId,
        part: Option<PartId>,
    ) -> Result<Vec<(Seq, Mark)>, SearchError> {
        each!(self, i => i.marks_naming(message, part))
    }

    fn message(&self, message: MessageId) -> Result<Option<Stored>, SearchError> {
        each!(self, i => i.message(message))
    }

    fn named(&self, id: &str, sessions: Option<&[SessionId]>) -> Result<Vec<Stored>, SearchError> {
        each!(self, i => i.named(id, sessions))
    }

    fn messages_between(
        &self,
        session: SessionId,
        from: Seq,
        to: Seq,
    ) -> Result<Vec<Stored>, SearchError> {
        each!(self, i => i.messages_between(session, from, to))
    }

    fn parts_of(&self, message: MessageId) -> Result<Vec<Stored>, SearchError> {
        each!(self, i => i.parts_of(message))
    }
}

/// The directory of a sled store's index, inside the store.
pub const INDEX_DIR: &str = "search";

/// How long a search waits for another process that is bringing the index
/// up to date before it searches what is indexed, and says so.
pub const CATCH_UP_WAIT: Duration = Duration::from_secs(10);

/// The index's directory for the store at `location`; `None` for a
/// PostgreSQL log, whose index is in PostgreSQL.
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
    index: &Index,
    log: &impl EventLog,
    progress: &mut dyn FnMut(u64),
) -> Result<Option<CaughtUp>, SearchError> {
    let done = match index {
        Index::Embedded(i) => catch_up(i.as_ref(), log, &is_indexed, CATCH_UP_WAIT, progress),
        Index::Postgres(p) => catch_up(p, log, &is_indexed, CATCH_UP_WAIT, progress),
    };
    match done {
        Ok(done) => Ok(Some(done)),
        Err(SearchError::Busy { .. }) => {
            index.reload()?;
            Ok(None)
        }
        Err(e) => Err(e),
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
}

/// The health of the index of the store at `location`, whose log is `log`;
/// nothing is changed.
pub fn index_health(location: &Location, log: &AnyLog) -> Result<IndexHealth, ReadError> {
    let damaged = |why: String| Ok(IndexHealth::Damaged { why });
    let marks = match log {
        AnyLog::Postgres(pg) => match Engine::watermarks(&pg.search()) {
            Ok(m) => m,
            Err(e) => return damaged(e.to_string()),
        },
        _ => {
            let Some(dir) = index_dir(location) else {
                return Ok(IndexHealth::Missing);
            };
            if !dir.join("meta.json").exists() {
                return Ok(IndexHealth::Missing);
            }
            let index = match SearchIndex::open_existing(&dir) {
                Ok(index) => index,
                Err(e) => return damaged(e.to_string()),
            };
            match index.damaged_files() {
                Ok(bad) if bad.is_empty() => {}
                Ok(bad) => {
                    return damaged(format!("files failing their checksum: {}", bad.join(", ")))
                }
                Err(e) => return damaged(e.to_string()),
            }
            match index.watermarks() {
                Ok(m) => m,
                Err(e) => return damaged(e.to_string()),
            }
        }
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
