//! What each tool does, synchronously (the server runs it off its async
//! thread): bring the project's recordings in, bring the index up to the
//! log, then search, recall or list a compaction's replacements, answered
//! as text within the call's budget.

use crate::call::{Scope, WorkError};
use crate::render::{self, Budget};
use crate::settings::Settings;
use ctxlog_app::history::{self, ProjectImports};
use ctxlog_app::logs::{AnyLog, Location};
use ctxlog_app::search_index::{self, Index};
use ctxlog_app::sessions::{self, Filter, Listed, SortBy};
use ctxlog_core::SessionId;
use ctxlog_search::{SearchRequest, Which};
use ctxlog_sled::SharedStore;
use std::sync::Mutex;

/// The server's state between calls.
pub struct Work {
    settings: Settings,
    imports: Mutex<ProjectImports>,
}

impl Work {
    /// A server working with `settings`.
    pub fn new(settings: Settings) -> Work {
        Work {
            settings,
            imports: Mutex::new(ProjectImports::default()),
        }
    }

    /// The store, the project's recordings brought in, and its index
    /// brought up to the log.
    fn ready(&self) -> Result<(AnyLog, Index), WorkError> {
        let s = &self.settings;
        let log = open(&s.db)?;
        if s.import_project {
            let mut imports = self.imports.lock().unwrap_or_else(|p| p.into_inner());
            let done = imports.import(&log, &s.places, &s.project);
            for why in &done.refused {
                tracing::warn!("{why}");
            }
        }
        let (index, _) = Index::open(&s.db, &log, false)?;
        search_index::bring_up_to_date(&index, &log, &mut |_| {})?;
        Ok((log, index))
    }

    /// `search_history`.
    pub fn search(
        &self,
        query: &str,
        scope: Scope,
        dropped: bool,
        limit: Option<usize>,
        cursor: Option<&str>,
    ) -> Result<String, WorkError> {
        let (log, index) = self.ready()?;
        let skip = render::parse_cursor(cursor)?;
        let sessions = match scope {
            Scope::All => None,
            Scope::Project => Some(self.project_sessions(&log)?),
            Scope::Session => Some(self.current_session(&log)?.into_iter().collect()),
        };
        let limit = limit
            .unwrap_or(self.settings.max_items)
            .clamp(1, self.settings.max_items);
        let request = SearchRequest {
            query: query.to_owned(),
            sessions,
            since: None,
            until: None,
            dropped,
            limit,
            skip,
        };
        let found = ctxlog_search::search(&index, &log, &request)?;
        let labels = history::labels(&log, found.hits.iter().map(|h| h.session));
        let mut budget = Budget::new(self.settings.max_bytes, self.settings.redact);
        Ok(render::hits(
            query,
            scope,
            &found,
            &labels,
            skip,
            &mut budget,
        ))
    }

    /// `recall`.
    pub fn recall(&self, id: &str, cursor: Option<&str>) -> Result<String, WorkError> {
        let (log, index) = self.ready()?;
        let offset = render::parse_cursor(cursor)?;
        let items = ctxlog_search::recall(&index, &log, id, None)?;
        let labels = history::labels(&log, items.iter().map(render::session_of));
        let text = render::items(&items, &labels);
        let budget = Budget::new(self.settings.max_bytes, self.settings.redact);
        Ok(budget.page(&text, offset, "recall", id))
    }

    /// `compactions`: what compaction `back` (1: the last) of the current
    /// session replaced.
    pub fn compaction(&self, back: usize, cursor: Option<&str>) -> Result<String, WorkError> {
        let (log, index) = self.ready()?;
        let offset = render::parse_cursor(cursor)?;
        let Some(session) = self.current_session(&log)? else {
            return Ok(format!(
                "no session of {} is stored yet",
                self.settings.project.display()
            ));
        };
        let all = ctxlog_search::compactions(&index, session)?;
        let Some(r) = ctxlog_search::replaced(&index, &log, session, Which::FromLast(back))? else {
            return Ok(format!(
                "the current session ({session}) has {} compaction(s); there is no compaction {back} from the last",
                all.len()
            ));
        };
        let labels = history::labels(&log, [session]);
        let text = render::replaced(&r, all.len(), &labels);
        let budget = Budget::new(self.settings.max_bytes, self.settings.redact);
        Ok(budget.page(&text, offset, "compactions", &back.to_string()))
    }

    /// The sessions recorded in the project directory (or below it).
    fn project_sessions(&self, log: &AnyLog) -> Result<Vec<SessionId>, WorkError> {
        Ok(self
            .project_rows(log)?
            .into_iter()
            .map(|(s, _)| s)
            .collect())
    }

    fn project_rows(&self, log: &AnyLog) -> Result<Vec<(SessionId, u64)>, WorkError> {
        let dir = self.settings.project.to_string_lossy().into_owned();
        let filter = Filter {
            simulations: Some(false),
            project: Some(dir.clone()),
            ..Filter::default()
        };
        let listing = sessions::list(log, &filter, SortBy::Date, false)?;
        Ok(listing
            .rows
            .into_iter()
            .filter_map(|r| match r {
                Listed::Row(r) => Some(*r),
                Listed::Unreadable(_) => None,
            })
            .filter(|r| {
                r.directory
                    .as_deref()
                    .is_some_and(|d| d == dir || d.starts_with(&format!("{dir}/")))
            })
            .filter_map(|r| {
                let id = r.session.parse::<uuid::Uuid>().ok()?;
                Some((SessionId(id), r.started_at))
            })
            .collect())
    }

    /// The agent's current session: the one the agent named (Claude Code
    /// gives its id to the servers it starts), else the project's newest.
    fn current_session(&self, log: &AnyLog) -> Result<Option<SessionId>, WorkError> {
        if let Some(hint) = &self.settings.session_hint {
            if let Ok(s) = ctxlog_app::catalog::resolve_session(log, hint) {
                return Ok(Some(s));
            }
        }
        let rows = self.project_rows(log)?;
        Ok(rows
            .into_iter()
            .max_by_key(|(_, started)| *started)
            .map(|(s, _)| s))
    }
}

/// Opens the store at `db`: through the process that holds it when one
/// does, else here; never another user's.
fn open(db: &Location) -> Result<AnyLog, WorkError> {
    let failed = |why: String| WorkError::Store {
        store: db.to_string(),
        why,
    };
    match db {
        Location::Dir(dir) => SharedStore::open(dir)
            .map(AnyLog::Shared)
            .map_err(|e| failed(e.to_string())),
        Location::Postgres(target) => ctxlog_postgres::PgLog::open_at(
            (**target).clone(),
            ctxlog_postgres::PgOptions::default(),
        )
        .map(AnyLog::Postgres)
        .map_err(|e| failed(e.to_string())),
    }
}
