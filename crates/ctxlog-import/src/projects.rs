//! Which of the sessions found were recorded in one project directory, as
//! each agent tells it: Claude Code and pi by the folder they keep the
//! session in (the directory's path, spelled their way), Codex by its
//! first line (`session_meta`'s `cwd`), OpenCode by the session's
//! `directory` (its info file, or its row in the database).

use crate::discover::{Found, Layout};
use crate::Format;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// The longest first line of a Codex recording read to find its `cwd`.
const FIRST_LINE_BYTES: u64 = 1 << 20;

/// The sessions of `found` recorded in `dir`.
pub fn of_project(found: Vec<Found>, dir: &Path) -> Vec<Found> {
    let dir_text = dir.to_string_lossy();
    let claude: String = dir_text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let pi = format!(
        "--{}--",
        dir_text
            .trim_start_matches('/')
            .replace(['/', '\\', ':'], "-")
    );
    let mut databases: BTreeMap<std::path::PathBuf, Vec<(String, String)>> = BTreeMap::new();
    found
        .into_iter()
        .filter(|f| {
            let folder = || {
                f.path
                    .parent()
                    .and_then(|p| p.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
            };
            match (f.format, f.layout) {
                (Format::ClaudeCode, _) => folder().is_some_and(|n| n == claude),
                (Format::Pi, _) => folder().is_some_and(|n| n == pi),
                (Format::Codex, _) => codex_cwd(&f.path).is_some_and(|c| Path::new(&c) == dir),
                (Format::OpenCode, Layout::OpenCodeDatabase) => {
                    let rows = databases.entry(f.path.clone()).or_insert_with(|| {
                        crate::opencode_db::session_directories(&f.path).unwrap_or_default()
                    });
                    rows.iter()
                        .any(|(id, d)| Some(id) == f.session.as_ref() && Path::new(d) == dir)
                }
                (Format::OpenCode, _) => {
                    json_field(&f.path, "directory").is_some_and(|d| Path::new(&d) == dir)
                }
            }
        })
        .collect()
}

/// The `cwd` of a Codex recording's first line.
fn codex_cwd(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    BufReader::new(std::io::Read::take(file, FIRST_LINE_BYTES))
        .read_line(&mut line)
        .ok()?;
    let v: serde_json::Value = serde_json::from_str(&line).ok()?;
    v["payload"]["cwd"].as_str().map(str::to_owned)
}

/// A top-level string field of a small JSON file.
fn json_field(path: &Path, field: &str) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v[field].as_str().map(str::to_owned)
}
