//! `export`: a stored session written back as a file (ctxlog's events,
//! JSON lines, or a Markdown transcript, redacted when asked).

use crate::redaction::redaction_json;
use crate::redaction::redaction_line;
use crate::redaction::write_page;
use crate::store::resolve_session;
use crate::store::stored_session;
use crate::Cli;
use crate::CliError;
use ctxlog_app::logs::Location;
use ctxlog_import::export::ExportError;
use serde_json::json;
use std::fs::File;
use std::path::{Path, PathBuf};

/// `export SESSION --format opencode`: the export itself on stdout, or to
/// `--out` with a short report (JSON with `--json`) on stdout.
pub fn export(
    json: bool,
    db: &Location,
    session: &str,
    out: Option<&PathBuf>,
) -> Result<(), CliError> {
    let store = crate::store::open_existing(db)?;
    let session = resolve_session(&store, db, session)?;
    let write =
        |out: &mut dyn std::io::Write| ctxlog_app::pages::export_opencode(&store, session, out);
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
                        json!({"ok": true, "session": session.to_string(), "format": "opencode", "out": path.display().to_string(), "events": events, "bytes": bytes})
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
    let page = ctxlog_app::pages::markdown(&store, id, redact)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    if let (Some(redacted), false) = (&page.redacted, cli.json && out.is_some()) {
        let mut line = redaction_line(redacted);
        let total: u32 = redacted.values().sum();
        if let Some(shown) = page.redacted_shown.filter(|&shown| shown < total) {
            line.push_str(&format!(
                "; the transcript shows {shown} of them, the rest were in the parts of long tool outputs it leaves out"
            ));
        }
        eprintln!("{line}");
    }
    let text = &page.text;
    let events = page.sessions.first().map_or(0, |s| s.events);
    match out {
        Some(path) => {
            write_page(path, text)?;
            if cli.json {
                println!(
                    "{}",
                    json!({"ok": true, "session": id.to_string(), "format": "markdown", "out": path.display().to_string(), "events": events, "bytes": text.len(), "redacted": page.redacted.as_ref().map(redaction_json), "redacted_shown": page.redacted_shown})
                );
            } else {
                println!(
                    "exported {id} ({events} events) to {} ({} bytes)",
                    path.display(),
                    text.len()
                );
            }
        }
        // With --json, stdout is one JSON document: the transcript in it.
        None if cli.json => println!(
            "{}",
            json!({"ok": true, "session": id.to_string(), "format": "markdown", "events": events, "text": text, "redacted": page.redacted.as_ref().map(redaction_json), "redacted_shown": page.redacted_shown})
        ),
        None => crate::write_stdout(format_args!("{text}")),
    }
    Ok(())
}
