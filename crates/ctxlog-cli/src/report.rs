//! `report`: the HTML page of one or more stored sessions.

use crate::redaction::is_stdout;
use crate::redaction::redaction_json;
use crate::redaction::redaction_line;
use crate::{Cli, CliError};
use serde_json::json;
use std::path::Path;

/// Writes the page `write` makes to `out` (`-`: standard output): the
/// file is made only once the page is ready to be written, and a partial
/// one removed when writing it fails.
pub(crate) fn write_page<T>(
    out: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> Result<T, ctxlog_app::pages::PageError>,
) -> Result<T, CliError> {
    if is_stdout(out) {
        let stdout = std::io::stdout();
        let mut page = std::io::BufWriter::new(stdout.lock());
        let done = write(&mut page).map_err(|e| CliError::Failed(e.to_string()))?;
        if let Err(e) = std::io::Write::flush(&mut page) {
            crate::stdout_failed(&e);
        }
        return Ok(done);
    }
    // Nothing is written before every session is folded: an error before
    // then leaves no file; the file is made at the first piece.
    let mut file = LazyFile {
        path: out,
        file: None,
    };
    match write(&mut file) {
        Ok(done) => Ok(done),
        Err(e) => {
            // A partial page is removed when it is a file of its own (not
            // a device, a pipe or a link such as `/dev/stdout`).
            let own_file = std::fs::symlink_metadata(out).is_ok_and(|m| m.file_type().is_file());
            if file.file.is_some() && own_file {
                let _ = std::fs::remove_file(out);
            }
            Err(CliError::Failed(e.to_string()))
        }
    }
}

/// A file created at the first write (buffered).
struct LazyFile<'a> {
    path: &'a Path,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl std::io::Write for LazyFile<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.file.is_none() {
            let file = std::fs::File::create(self.path).map_err(|e| {
                std::io::Error::new(e.kind(), format!("{}: {e}", self.path.display()))
            })?;
            self.file = Some(std::io::BufWriter::new(file));
        }
        match &mut self.file {
            Some(f) => f.write(buf),
            None => Ok(0),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

/// `report SESSION [--with SESSION]... --out FILE`.
pub(crate) fn write_report(
    cli: &Cli,
    session: &str,
    with: &[String],
    out: &Path,
    redact: bool,
) -> Result<(), CliError> {
    // A path the page cannot go to is refused before anything is read.
    if !is_stdout(out) {
        crate::redaction::check_page_path(out)?;
    }
    let store = crate::store::open_existing_scanning(&cli.db)?;
    let ids = std::iter::once(session)
        .chain(with.iter().map(String::as_str))
        .map(|text| crate::store::resolve_session(&store, &cli.db, text))
        .collect::<Result<Vec<_>, _>>()?;
    let page = write_page(out, |file| {
        ctxlog_app::pages::write_report(&store, &ids, redact, file)
    })?;
    if is_stdout(out) {
        // The page is standard output: what was written goes to stderr.
        if let Some(redacted) = &page.redacted {
            eprintln!("{}", redaction_line(redacted));
        }
        eprintln!(
            "ctxlog: wrote the page of {} to standard output",
            labels(&page.sessions)
        );
        return Ok(());
    }
    let bytes = std::fs::metadata(out).map_or(0, |m| m.len());
    if cli.json {
        println!(
            "{}",
            json!({"ok": true, "out": out.display().to_string(), "bytes": bytes, "sessions": page.sessions, "redacted": page.redacted.as_ref().map(redaction_json)})
        );
    } else {
        if let Some(redacted) = &page.redacted {
            eprintln!("{}", redaction_line(redacted));
        }
        println!(
            "wrote {} ({} bytes): {}",
            out.display(),
            bytes,
            labels(&page.sessions)
        );
    }
    Ok(())
}

/// The sessions of a page, as `label (id), …`.
fn labels(sessions: &[ctxlog_app::pages::PageSession]) -> String {
    sessions
        .iter()
        .map(|s| format!("{} ({})", s.label, s.session))
        .collect::<Vec<_>>()
        .join(", ")
}
