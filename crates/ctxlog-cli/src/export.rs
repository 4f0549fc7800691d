//! `export`: a stored session written back as a file (ctxlog's events,
//! JSON lines, or a Markdown transcript, redacted when asked).

use crate::redaction::redaction_json;
use crate::redaction::redaction_line;
use crate::store::resolve_session;
use crate::store::stored_session;
use crate::Cli;
use crate::CliError;
use ctxlog_app::logs::Location;
use ctxlog_import::export::ExportError;
use ctxlog_report::ReportError;
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

/// `export SESSION --format markdown [--out FILE]`: written as the session
/// is read (the file made once the transcript starts), held whole only
/// for `--json` on stdout, whose document carries it.
pub(crate) fn export_markdown(
    cli: &Cli,
    session: &str,
    out: Option<&Path>,
    redact: bool,
) -> Result<(), CliError> {
    let (store, id) = stored_session(cli, session)?;
    let failed = |e: ctxlog_app::pages::PageError| CliError::Failed(e.to_string());
    if cli.json && out.is_none() {
        // stdout is one JSON document: the transcript in it.
        let page = ctxlog_app::pages::markdown(&store, id, redact).map_err(failed)?;
        let events = page.sessions.first().map_or(0, |s| s.events);
        println!(
            "{}",
            json!({"ok": true, "session": id.to_string(), "format": "markdown", "events": events, "text": page.text, "redacted": page.redacted.as_ref().map(redaction_json), "redacted_shown": page.redacted_shown})
        );
        return Ok(());
    }
    let written = match out {
        Some(path) => {
            crate::redaction::check_page_path(path)?;
            crate::report::write_page(path, |file| {
                ctxlog_app::pages::write_markdown(&store, id, redact, file)
            })?
        }
        None => {
            let stdout = std::io::stdout();
            let mut text = std::io::BufWriter::new(stdout.lock());
            let written = ctxlog_app::pages::write_markdown(&store, id, redact, &mut text);
            match written {
                Err(ctxlog_app::pages::PageError::Report(ReportError::Write(e))) => {
                    crate::stdout_failed(&e)
                }
                written => written.map_err(failed)?,
            }
        }
    };
    if let Some(redacted) = &written.redacted {
        if !(cli.json && out.is_some()) {
            let mut line = redaction_line(redacted);
            let total: u32 = redacted.values().sum();
            if let Some(shown) = written.redacted_shown.filter(|&shown| shown < total) {
                line.push_str(&format!(
                    "; the transcript shows {shown} of them, the rest were in the parts of long tool outputs it leaves out"
                ));
            }
            eprintln!("{line}");
        }
    }
    let Some(path) = out else {
        return Ok(());
    };
    let events = written.sessions.first().map_or(0, |s| s.events);
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    if cli.json {
        println!(
            "{}",
            json!({"ok": true, "session": id.to_string(), "format": "markdown", "out": path.display().to_string(), "events": events, "bytes": bytes, "redacted": written.redacted.as_ref().map(redaction_json), "redacted_shown": written.redacted_shown})
        );
    } else {
        println!(
            "exported {id} ({events} events) to {} ({bytes} bytes)",
            path.display()
        );
    }
    Ok(())
}
