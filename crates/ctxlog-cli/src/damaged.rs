//! What the CLI says of a store it cannot read at all: whose log (`db`) is
//! gone, or that sled refuses to open. Each names the file, and lists from
//! the witness (`<store>/witness`, a file sled never touches) the sessions
//! and seqs that were acknowledged and cannot be read now.

use crate::CliError;
use ctxlog_core::is_description_stream;
use ctxlog_sled::witness;
use std::path::Path;

/// The most sessions an error lists (the rest are counted).
const MAX_LISTED: usize = 20;

/// When `db` is a store whose log file is gone (its directory holds the
/// witness or sled's config, but no `db`), the error that says so. Nothing
/// is created or changed.
pub(crate) fn log_gone(db: &Path) -> Option<CliError> {
    let log = db.join("db");
    if !db.is_dir() || log.exists() {
        return None;
    }
    if !witness::path(db).exists() && !db.join("conf").exists() {
        return None;
    }
    Some(CliError::Failed(format!(
        "{}: the store's log is missing (nothing was changed); {}; restore {} from a backup, or move the store aside to start a new one",
        log.display(),
        acknowledged(db),
        log.display()
    )))
}

/// Why sled did not open the store at `db`, with the files it reads and
/// what was acknowledged.
pub(crate) fn unopened(db: &Path, error: &dyn std::fmt::Display) -> String {
    format!(
        "cannot open the store at {}: {error}; sled reads {}; {}; `ctxlog salvage` needs a store sled opens: restore the damaged file from a backup",
        db.display(),
        sled_files(db),
        acknowledged(db)
    )
}

/// sled's files in the store at `db`, with their sizes, and the ones a
/// store always has that are missing.
fn sled_files(db: &Path) -> String {
    let mut out = Vec::new();
    for name in ["db", "conf"] {
        let p = db.join(name);
        match std::fs::metadata(&p) {
            Ok(m) => out.push(format!("{} ({} bytes)", p.display(), m.len())),
            Err(_) => out.push(format!("{} (MISSING)", p.display())),
        }
    }
    if let Ok(entries) = std::fs::read_dir(db) {
        let mut snaps: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("snap."))
            .map(|e| {
                let len = e.metadata().map(|m| m.len()).unwrap_or(0);
                format!("{} ({len} bytes)", e.path().display())
            })
            .collect();
        snaps.sort();
        out.extend(snaps);
    }
    let blobs = db.join("blobs");
    let count = std::fs::read_dir(&blobs).map(|d| d.count()).unwrap_or(0);
    out.push(format!(
        "{} ({count} blob files, one per large value; sled does not say which one it could not read)",
        blobs.display()
    ));
    out.join(", ")
}

/// What the witness of the store at `db` says was acknowledged: each
/// session with its seq range, and every witness record that does not read,
/// by its offset.
pub(crate) fn acknowledged(db: &Path) -> String {
    let path = witness::path(db);
    let w = match witness::read(db) {
        Ok(w) => w,
        Err(e) => return format!("its witness {} does not read either: {e}", path.display()),
    };
    if !w.exists {
        return format!(
            "there is no witness ({}) to say what was acknowledged",
            path.display()
        );
    }
    let sessions: Vec<String> = w
        .heads
        .iter()
        .filter(|(s, _)| !is_description_stream(**s))
        .map(|(s, h)| {
            format!(
                "session {s} seqs 1–{} (witness record at byte {})",
                h.seq, h.offset
            )
        })
        .collect();
    let mut said = if sessions.is_empty() {
        format!(
            "the witness ({}) holds no acknowledged event",
            path.display()
        )
    } else {
        let more = sessions.len().saturating_sub(MAX_LISTED);
        let mut listed = sessions
            .into_iter()
            .take(MAX_LISTED)
            .collect::<Vec<_>>()
            .join(", ");
        if more > 0 {
            listed.push_str(&format!(" and {more} more sessions"));
        }
        format!(
            "the witness ({}) says these events were acknowledged and cannot be read now: {listed}",
            path.display()
        )
    };
    for (offset, what) in &w.damaged {
        said.push_str(&format!("; {} at byte {offset}: {what}", path.display()));
    }
    said
}
