//! `compact`: compacting a stored session now, as its policy says, with a
//! summarizer of the user's choice (`ctxlog_app::compaction`).

use crate::store::stored_session_to_write;
use crate::{Cli, CliError, SummarizerKind};
use ctxlog_app::compaction::{self, CompactError};
use ctxlog_engine::{Engine, EngineBuilder};
use ctxlog_providers::openai::{OpenAiConfig, OpenAiSummarizer};
use ctxlog_store::EventLog;
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
    let failed = |e: CompactError| match e {
        e @ CompactError::Replaced(_) => CliError::BadInput(e.to_string()),
        e => CliError::Failed(e.to_string()),
    };
    let target = compaction::target(&store, named).map_err(failed)?;
    if let (Some(name), false) = (&target.copy_name, cli.json) {
        eprintln!(
            "ctxlog: {named} mirrors a recording, which later imports extend: the compaction is kept in {name} ({}){}; `ctxlog report {named} --with {name}` shows both",
            target.session,
            if target.copy_made { ", a copy made now" } else { "" }
        );
    }
    let engine = engine(store, summarizer)?;
    let done = compaction::compact(&engine, &target).map_err(failed)?;
    if cli.json {
        println!(
            "{}",
            serde_json::to_string(&done).map_err(|e| CliError::Failed(e.to_string()))?
        );
    } else {
        println!(
            "compacted {}: job {}, summary {}; window ~{} -> ~{} tokens ({} saved)",
            done.session,
            done.job,
            done.summary,
            done.window_tokens_before,
            done.window_tokens_after,
            done.window_tokens_before
                .saturating_sub(done.window_tokens_after)
        );
    }
    Ok(())
}
