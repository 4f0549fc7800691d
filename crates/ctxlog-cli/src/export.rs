//! `export`: a stored session written back as a file (ctxlog's events,
//! JSON lines, or a Markdown transcript, redacted when asked).

use crate::redaction::redacted_copy;
use crate::redaction::redaction_json;
use crate::redaction::redaction_line;
use crate::redaction::write_page;
use crate::store::resolve_session;
use crate::store::stored_session;
use crate::Cli;
use crate::CliError;
use ctxlog_app::catalog::{self};
use ctxlog_import::export::ExportError;
use ctxlog_store::EventLog;
use serde_json::json;
use std::fs::File;
use std::path::{Path, PathBuf};

use ctxlog_report::redacted::RedactionCounts;

/// `export SESSION --format opencode`: the export itself on stdout, or to
/// `--out` with a short report (JSON with `--json`) on stdout.
pub fn export(json: bool, db: &Path, session: &str, out: Option<&PathBuf>) -> Result<(), CliError> {
    let store = crate::store::open_existing(db)?;
    let session = resolve_session(&store, db, session)?;
    // The events are folded as they are read, and sealed content read back
    // from the log: memory holds the state, not the session.
    let contents = ctxlog_store::SessionContents::new(&store, session);
    let write = |out: &mut dyn std::io::Write| {
        // The descriptions follow the events, as if they were the
        // session's own (`catalog::descriptions_after`).
        let head = store
            .head(session)
            .map_err(|e| ExportError::Read(e.to_string()))?;
        let events = store
            .read(session, 1)
            .map_err(|e| ExportError::Read(e.to_string()))?
            .take_while(move |e| e.as_ref().map_or(true, |e| e.seq <= head))
            .map(|e| e.map_err(|e| ExportError::Read(e.to_string())));
        let descriptions = catalog::descriptions_after(&store, session, head)
            .map_err(|e| ExportError::Read(e.to_string()))?;
        ctxlog_import::export::opencode_streamed(
            events.chain(descriptions.into_iter().map(Ok)),
            &contents,
            out,
        )
    };
    let result = match out {
        Some(path) => {
            let f = File::create(path)
                .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
            let r = write(&mut std::io::BufWriter::new(f));
            if let Ok(events) = r {
                let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                if json {
                    println!(
                        "{}",
                        json!({"session": session.to_string(), "format": "opencode", "out": path.display().to_string(), "events": events, "bytes": bytes})
                    );
                } else {
                    println!(
                        "exported {session} ({events} events) to {} ({bytes} bytes)",
                        path.display()
                    );
                }
            }
            r.map(|_| ())
        }
        None => match write(&mut std::io::stdout().lock()) {
            Err(ExportError::Io(e)) => crate::stdout_failed(&e),
            Err(ExportError::Json(e)) if e.io_error_kind().is_some() => {
                crate::stdout_failed(&std::io::Error::from(e))
            }
            r => r.map(|_| ()),
        },
    };
    result.map_err(|e| CliError::Failed(e.to_string()))
}

/// `export SESSION --format markdown [--out FILE]`.
pub(crate) fn export_markdown(
    cli: &Cli,
    session: &str,
    out: Option<&Path>,
    redact: bool,
) -> Result<(), CliError> {
    let (store, id) = stored_session(cli, session)?;
    let mut events = crate::store::read_described(&store, id)?;
    let mut redacted = RedactionCounts::new();
    if redact {
        events = redacted_copy(id, &events, &mut redacted)?;
        if !cli.json || out.is_none() {
            eprintln!("{}", redaction_line(&redacted));
        }
    }
    let text = ctxlog_report::markdown(&events)
        .map_err(|e| CliError::Failed(format!("session {id}: {e}")))?;
    match out {
        Some(path) => {
            write_page(path, &text)?;
            if cli.json {
                println!(
                    "{}",
                    json!({"session": id.to_string(), "format": "markdown", "out": path.display().to_string(), "events": events.len(), "bytes": text.len(), "redacted": redact.then(|| redaction_json(&redacted))})
                );
            } else {
                println!(
                    "exported {id} ({} events) to {} ({} bytes)",
                    events.len(),
                    path.display(),
                    text.len()
                );
            }
        }
        None => crate::write_stdout(format_args!("{text}")),
    }
    Ok(())
}
