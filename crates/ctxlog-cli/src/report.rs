//! `report`: the HTML page of one or more stored sessions.

use crate::redaction::redaction_json;
use crate::redaction::redaction_line;
use crate::redaction::write_page;
use crate::{Cli, CliError};
use serde_json::json;
use std::path::Path;

/// `report SESSION [--with SESSION]... --out FILE`.
pub(crate) fn write_report(
    cli: &Cli,
    session: &str,
    with: &[String],
    out: &Path,
    redact: bool,
) -> Result<(), CliError> {
    let store = crate::store::open_existing(&cli.db)?;
    let ids = std::iter::once(session)
        .chain(with.iter().map(String::as_str))
        .map(|text| crate::store::resolve_session(&store, &cli.db, text))
        .collect::<Result<Vec<_>, _>>()?;
    let page = ctxlog_app::pages::report(&store, &ids, redact)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let html = &page.text;
    write_page(out, html)?;
    if cli.json {
        println!(
            "{}",
            json!({"ok": true, "out": out.display().to_string(), "bytes": html.len(), "sessions": page.sessions, "redacted": page.redacted.as_ref().map(redaction_json)})
        );
    } else {
        if let Some(redacted) = &page.redacted {
            eprintln!("{}", redaction_line(redacted));
        }
        println!(
            "wrote {} ({} bytes): {}",
            out.display(),
            html.len(),
            page.sessions
                .iter()
                .map(|s| format!("{} ({})", s.label, s.session))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}
