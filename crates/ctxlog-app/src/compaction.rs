//! Compacting a stored session now, as its policy says. A session that
//! mirrors a recording stays as the recording made it, so that later
//! imports of the recording still extend it: its compaction is kept in its
//! copy `<source>@manual` ([`catalog::manual_copy`]).

use crate::catalog::{self, CatalogError};
use ctxlog_core::SessionId;
use ctxlog_engine::{Engine, EngineError, JobOutcome};
use ctxlog_store::EventLog;
use serde::Serialize;
use thiserror::Error;

/// Why a compaction did not happen.
#[derive(Debug, Error)]
pub enum CompactError {
    /// The session named is a version another one replaced.
    #[error(transparent)]
    Replaced(CatalogError),
    /// The session or its copy could not be read or written.
    #[error(transparent)]
    Catalog(CatalogError),
    /// The engine failed (the log, the state).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The summarizer failed; the session is as it was.
    #[error("compaction of {session} failed: {error}")]
    Failed {
        /// The session compacted.
        session: SessionId,
        /// Why.
        error: String,
    },
    /// The job was queued but did not run.
    #[error("the compaction job did not run")]
    DidNotRun,
}

impl From<CatalogError> for CompactError {
    fn from(e: CatalogError) -> Self {
        match e {
            e @ CatalogError::Replaced { .. } => CompactError::Replaced(e),
            e => CompactError::Catalog(e),
        }
    }
}

/// Which session a compaction of the one named is written to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The session named.
    pub named: SessionId,
    /// The session compacted: the one named, or its manual copy.
    pub session: SessionId,
    /// The manual copy's name, when the session named mirrors a recording.
    pub copy_name: Option<String>,
    /// Whether the copy was made now (it did not exist).
    pub copy_made: bool,
}

/// The session to compact for `named` (see the module doc): the manual
/// copy of a session that mirrors a recording, made when missing.
pub fn target(log: &impl EventLog, named: SessionId) -> Result<Target, CompactError> {
    if !catalog::mirrors_recording(log, named)? {
        return Ok(Target {
            named,
            session: named,
            copy_name: None,
            copy_made: false,
        });
    }
    let (copy, made) = catalog::manual_copy(log, named)?;
    let name = catalog::source_of(log, copy)
        .map_err(|e| CompactError::Catalog(e.into()))?
        .unwrap_or_else(|| format!("{named}@{}", catalog::MANUAL));
    Ok(Target {
        named,
        session: copy,
        copy_name: Some(name),
        copy_made: made,
    })
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Compacted {
    /// Always true: a failed compaction is an error.
    pub ok: bool,
    /// The session compacted.
    pub session: String,
    /// The compaction job.
    pub job: String,
    /// The session named, when the compaction was kept in its copy.
    pub recording_session: Option<String>,
    /// The copy's name, when kept in a copy.
    pub kept_as: Option<String>,
    /// The summary message.
    pub summary: String,
    /// Secrets redacted from the summary.
    pub redactions: u32,
    /// The estimated window before, in tokens.
    pub window_tokens_before: u64,
    /// The estimated window after, in tokens.
    pub window_tokens_after: u64,
}

/// Compacts `target.session` now: a job already pending (queued, or
/// started and cut off by a crash) runs instead of a new one.
pub fn compact<L: EventLog>(
    engine: &Engine<L>,
    target: &Target,
) -> Result<Compacted, CompactError> {
    let session = target.session;
    let handle = engine.session(session)?;
    let pending = handle.query(|s| s.pending_jobs().next().map(|j| j.marker))?;
    let before = handle.window_estimate()?;
    let job = match pending {
        Some(job) => job,
        None => handle.request_compaction()?,
    };
    let outcomes = handle.run_pending()?;
    match outcomes.into_iter().find(|o| o.job() == job) {
        Some(JobOutcome::Completed {
            summary,
            redactions,
            ..
        }) => Ok(Compacted {
            ok: true,
            session: session.to_string(),
            job: job.to_string(),
            recording_session: target.copy_name.is_some().then(|| target.named.to_string()),
            kept_as: target.copy_name.clone(),
            summary: summary.to_string(),
            redactions,
            window_tokens_before: before,
            window_tokens_after: handle.window_estimate()?,
        }),
        Some(JobOutcome::Failed { error, .. }) => Err(CompactError::Failed { session, error }),
        None => Err(CompactError::DidNotRun),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::{self, Input};
    use ctxlog_engine::EngineBuilder;
    use ctxlog_import::ImportOptions;
    use ctxlog_store::MemoryLog;
    use std::path::PathBuf;

    /// The repository's Claude Code fixture, stored in `log`.
    fn recorded(log: &MemoryLog) -> SessionId {
        let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/sessions/claude-code/edge-cases.jsonl");
        let imported = inputs::read(&Input::File(file), None, &ImportOptions::default(), &())
            .expect("the fixture reads")
            .expect("the fixture holds a session");
        let session = imported.session;
        catalog::store_recording(log, imported.events).expect("stored");
        session
    }

    #[test]
    fn a_recording_is_compacted_in_its_manual_copy_and_stays_as_recorded() {
        let log = MemoryLog::new();
        let named = recorded(&log);
        let recorded_head = log.head(named).unwrap();
        let first = target(&log, named).unwrap();
        assert_ne!(first.session, named);
        assert!(first.copy_made);
        assert!(first
            .copy_name
            .as_deref()
            .is_some_and(|n| n.ends_with("@manual")));
        let again = target(&log, named).unwrap();
        assert_eq!(again.session, first.session, "one copy, found again");
        assert!(!again.copy_made);

        let engine = EngineBuilder::new().build(log).unwrap();
        let done = compact(&engine, &first).unwrap();
        assert_eq!(done.session, first.session.to_string());
        assert_eq!(done.recording_session, Some(named.to_string()));
        assert_eq!(done.kept_as, first.copy_name);
        let completed = |session| -> Vec<String> {
            crate::views::events(engine.store(), session)
                .unwrap()
                .into_iter()
                .filter_map(|e| match e.event {
                    ctxlog_core::Event::SummaryCompleted { job, .. } => Some(job.to_string()),
                    _ => None,
                })
                .collect()
        };
        let mut expected = completed(named);
        expected.push(done.job.clone());
        assert_eq!(
            completed(first.session),
            expected,
            "the copy holds the recording's compactions and the one reported"
        );
        assert_eq!(engine.store().head(named).unwrap(), recorded_head);
    }
}
