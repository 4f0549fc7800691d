//! What views and exports share: how many secrets were redacted, in
//! words and as JSON, and the page file a view or an export writes.

use crate::CliError;
use ctxlog_report::redacted::RedactionCounts;
use serde_json::json;
use std::path::Path;

/// `redacted 3 secrets (2 github-token, 1 private-key)`.
pub(crate) fn redaction_line(counts: &RedactionCounts) -> String {
    let total: u32 = counts.values().sum();
    let kinds: Vec<String> = counts
        .iter()
        .map(|(kind, n)| format!("{n} {}", kind.name()))
        .collect();
    match total {
        0 => "redacted no secrets: none of the known shapes was found".into(),
        1 => format!("redacted 1 secret ({})", kinds.join(", ")),
        _ => format!("redacted {total} secrets ({})", kinds.join(", ")),
    }
}

/// `{"github-token": 2, ...}`.
pub(crate) fn redaction_json(counts: &RedactionCounts) -> serde_json::Value {
    counts
        .iter()
        .map(|(kind, n)| (kind.name().to_owned(), json!(n)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `1 output`, `3 outputs`.
pub(crate) fn outputs(n: usize) -> String {
    plural(n, "output")
}

/// `1 step`, `0 steps`.
pub(crate) fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Whether `out` names standard output (`-`).
pub(crate) fn is_stdout(out: &Path) -> bool {
    out.as_os_str() == "-"
}

/// Bad input unless a page can be written at `path`: its directory exists
/// and it is not a directory itself (`-`, standard output, always can).
pub(crate) fn check_page_path(path: &Path) -> Result<(), CliError> {
    if is_stdout(path) {
        return Ok(());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(CliError::BadInput(format!(
            "{}: no such directory {}: nothing was done",
            path.display(),
            dir.display()
        )));
    }
    if path.is_dir() {
        return Err(CliError::BadInput(format!(
            "{}: a directory, not a file: nothing was done",
            path.display()
        )));
    }
    Ok(())
}

/// Writes `html` to `out` (`-`: standard output; a failure names the
/// file).
pub(crate) fn write_page(out: &Path, html: &str) -> Result<(), CliError> {
    if is_stdout(out) {
        crate::write_stdout_raw(html);
        return Ok(());
    }
    std::fs::write(out, html).map_err(|e| CliError::Failed(format!("{}: {e}", out.display())))
}
