//! `compact`: compacting a stored session now, as its policy says, with a
//! summarizer of the user's choice.

use crate::store::stored_session_to_write;
use crate::{Cli, CliError, SummarizerKind};
use ctxlog_app::catalog;
use ctxlog_engine::openai::{OpenAiConfig, OpenAiSummarizer};
use ctxlog_engine::{Engine, EngineBuilder, EngineError, JobOutcome};
use ctxlog_store::EventLog;
use serde_json::json;
use std::sync::Arc;

pub(crate) fn engine<L: EventLog>(
    store: L,
    summarizer: SummarizerKind,
) -> Result<Engine<L>, CliError> {
    let mut builder = EngineBuilder::new();
    if summarizer == SummarizerKind::Openai {
        builder = builder.summarizer(Arc::new(OpenAiSummarizer::new(OpenAiConfig::from_env())));
    }
    builder
        .build(store)
        .map_err(|e| CliError::BadInput(e.to_string()))
}

pub(crate) fn compact(
    cli: &Cli,
    session: &str,
    summarizer: SummarizerKind,
) -> Result<(), CliError> {
    let (store, named) = stored_session_to_write(cli, session)?;
    let catalog_failed = |e: catalog::CatalogError| match e {
        e @ catalog::CatalogError::Replaced { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(e.to_string()),
    };
    // A session that mirrors a recording stays as the recording made it, so
    // later imports of the recording still extend it: the compaction is
    // kept in its copy `<source>@manual`.
    let (session, copy) = if catalog::mirrors_recording(&store, named).map_err(catalog_failed)? {
        let (copy, made) = catalog::manual_copy(&store, named).map_err(catalog_failed)?;
        (
            copy,
            Some((made, catalog::source_of(&store, copy).ok().flatten())),
        )
    } else {
        (named, None)
    };
    if let (Some((made, name)), false) = (&copy, cli.json) {
        let name = name.as_deref().unwrap_or("-");
        eprintln!(
            "ctxlog: {named} mirrors a recording, which later imports extend: the compaction is kept in {name} ({session}){}; `ctxlog report {named} --with {name}` shows both",
            if *made { ", a copy made now" } else { "" }
        );
    }
    let engine = engine(store, summarizer)?;
    let fail = |e: EngineError| CliError::Failed(e.to_string());
    // A job already pending (queued, or started and cut off by a crash) runs
    // instead of a new one.
    let pending = engine
        .query(session, |s| s.pending_jobs().next().map(|j| j.marker))
        .map_err(fail)?;
    let before = engine.window_estimate(session).map_err(fail)?;
    let job = match pending {
        Some(job) => job,
        None => engine.request_compaction(session).map_err(fail)?,
    };
    let outcomes = engine.run_pending(session).map_err(fail)?;
    let mine = outcomes.iter().find(|o| match o {
        JobOutcome::Completed { job: j, .. } | JobOutcome::Failed { job: j, .. } => *j == job,
    });
    let doc = match mine {
        Some(JobOutcome::Completed {
            summary,
            redactions,
            ..
        }) => json!({
            "ok": true, "session": session.to_string(), "job": job.to_string(),
            "recording_session": copy.is_some().then(|| named.to_string()),
            "kept_as": copy.as_ref().and_then(|(_, name)| name.clone()),
            "summary": summary.to_string(), "redactions": redactions,
            "window_tokens_before": before,
            "window_tokens_after": engine.window_estimate(session).map_err(fail)?,
        }),
        Some(JobOutcome::Failed { error, .. }) => {
            return Err(CliError::Failed(format!(
                "compaction of {session} failed: {error}"
            )))
        }
        None => return Err(CliError::Failed("the compaction job did not run".into())),
    };
    if cli.json {
        println!("{doc}");
    } else {
        let after = doc["window_tokens_after"].as_u64().unwrap_or(0);
        println!(
            "compacted {session}: job {job}, summary {}; window ~{before} -> ~{after} tokens ({} saved)",
            doc["summary"].as_str().unwrap_or(""),
            before.saturating_sub(after)
        );
    }
    Ok(())
}
