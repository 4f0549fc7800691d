//! `verify` and `salvage`: what a store holds, checked, and what is
//! intact copied out of a damaged one.

use crate::store::open_existing;
use crate::store::open_existing_dir;
use crate::store::open_store_dir;
use crate::{Cli, CliError};
use serde_json::json;
use std::path::Path;

pub(crate) fn verify(cli: &Cli) -> Result<(), CliError> {
    let store = open_existing(&cli.db)?;
    let report = store
        .verify()
        .map_err(|e| CliError::Failed(format!("verify failed: {e}")))?;
    let index = ctxlog_app::search_index::index_health(&cli.db, &store)
        .map_err(|e| CliError::Failed(format!("verify failed: {e}")))?;
    if cli.json {
        let heads: serde_json::Map<String, serde_json::Value> = report
            .heads
            .iter()
            .map(|(s, q)| (s.to_string(), json!(q)))
            .collect();
        let errors: Vec<_> = report
            .errors
            .iter()
            .map(|e| {
                json!({
                    "kind": e.kind,
                    "session": e.session.map(|s| s.to_string()),
                    "seq": e.seq,
                    "file": e.file.as_ref().map(|f| match cli.db.dir() {
                        Some(dir) => dir.join(f).display().to_string(),
                        None => f.clone(),
                    }),
                    "offset": e.offset,
                    "detail": e.detail,
                })
            })
            .collect();
        println!(
            "{}",
            json!({"ok": report.ok(), "sessions": report.sessions, "events": report.events, "heads": heads, "errors": errors, "index": index})
        );
    } else {
        println!(
            "{}: {} sessions, {} events",
            cli.db, report.sessions, report.events
        );
        for e in &report.errors {
            println!("error: {e}");
        }
        if let Some(words) = index_words(&index) {
            println!("search index: {words}");
        }
        println!("{}", if report.ok() { "ok" } else { "NOT OK" });
    }
    if report.ok() {
        Ok(())
    } else {
        Err(CliError::Reported(report.errors.len()))
    }
}

/// What `verify` says of the search index, when there is one to speak of.
fn index_words(health: &ctxlog_app::search_index::IndexHealth) -> Option<String> {
    use ctxlog_app::search_index::IndexHealth;
    match health {
        IndexHealth::Missing => None,
        IndexHealth::UpToDate => Some("up to date".into()),
        IndexHealth::Lagging { sessions, events } => Some(format!(
            "{events} events of {sessions} sessions not indexed yet (the next search or `ctxlog index` takes them in)"
        )),
        IndexHealth::Damaged { why } => Some(format!("damaged: {why}")),
    }
}

pub(crate) fn salvage(json_out: bool, from: &Path, to: &Path) -> Result<(), CliError> {
    if to.exists() {
        return Err(CliError::BadInput(format!(
            "{}: already exists; salvage writes a new store",
            to.display()
        )));
    }
    let source = open_existing_dir(from)?;
    let target = open_store_dir(to)?;
    let report = ctxlog_sled::salvage(&source, &target)
        .map_err(|e| CliError::Failed(format!("salvage failed: {e}")))?;
    target
        .flush()
        .map_err(|e| CliError::Failed(format!("salvage: {}: {e}", to.display())))?;
    if json_out {
        let saved: serde_json::Map<String, serde_json::Value> = report
            .saved
            .iter()
            .map(|(s, q)| (s.to_string(), json!(q)))
            .collect();
        let unsaved: Vec<_> = report
            .unsaved
            .iter()
            .map(|u| json!({"session": u.session.to_string(), "seq": u.seq, "detail": u.detail}))
            .collect();
        println!(
            "{}",
            json!({"ok": report.complete(), "complete": report.complete(), "saved": saved, "unsaved": unsaved})
        );
    } else {
        let events: u64 = report.saved.values().sum();
        println!(
            "saved {} sessions, {events} events, into {}",
            report.saved.len(),
            to.display()
        );
        for u in &report.unsaved {
            println!(
                "NOT SAVED: session {} from seq {}: {}",
                u.session, u.seq, u.detail
            );
        }
    }
    if report.complete() {
        Ok(())
    } else {
        Err(CliError::Reported(report.unsaved.len()))
    }
}
