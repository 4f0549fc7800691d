//! OpenCode ≤ 1.1's storage tree, read as the export it stands for:
//! `storage/session/<projectID>/<sessionID>.json` (the session),
//! `storage/message/<sessionID>/<messageID>.json` (its messages) and
//! `storage/part/<messageID>/<partID>.json` (their parts), one JSON object
//! per file. Ids are time-ordered, so files sort into the session's order.
//! The assembled export goes through the OpenCode importer, with all its
//! checks; an error in a file names that file.

use crate::ImportError;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A session's export put together from its files, and which file each of
/// its messages and parts came from.
#[derive(Debug, Clone)]
pub struct Assembled {
    /// The export `{info, messages: [{info, parts}]}`, as JSON bytes.
    pub bytes: Vec<u8>,
    /// Each message's file and its parts' files, in export order.
    files: Vec<(PathBuf, Vec<PathBuf>)>,
}

impl Assembled {
    /// `e`, an error of the import of [`Assembled::bytes`], named by the
    /// file it is about: `messages[3].parts[1].state` becomes that part's
    /// file with the path `state`.
    pub fn locate(&self, mut e: ImportError) -> ImportError {
        let Some(path) = e.path.clone() else {
            return e;
        };
        let index = |text: &str| -> Option<(usize, String)> {
            let rest = text.strip_prefix('[')?;
            let (n, rest) = rest.split_once(']')?;
            Some((n.parse().ok()?, rest.trim_start_matches('.').to_owned()))
        };
        let Some((m, rest)) = path.strip_prefix("messages").and_then(index) else {
            return e;
        };
        let Some((message_file, part_files)) = self.files.get(m) else {
            return e;
        };
        let (file, inner) = match rest.strip_prefix("parts").and_then(index) {
            Some((p, inner)) => match part_files.get(p) {
                Some(f) => (f, inner),
                None => return e,
            },
            None => (
                message_file,
                rest.strip_prefix("info")
                    .unwrap_or(&rest)
                    .trim_start_matches('.')
                    .to_owned(),
            ),
        };
        e.file = file.display().to_string();
        e.path = (!inner.is_empty()).then_some(inner);
        e
    }
}

/// The export of the session whose info file is `session_file` (see
/// [`Assembled`]). Every file read is at most `max_bytes` long.
pub fn assemble(session_file: &Path, max_bytes: u64) -> Result<Assembled, ImportError> {
    let info = read_object(session_file, max_bytes)?;
    let id = info
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| at(session_file, "field `id` missing, empty or not a string"))?
        .to_owned();
    let storage = session_file
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .ok_or_else(|| at(session_file, "not inside an OpenCode storage tree"))?;
    let mut messages = Vec::new();
    let mut files = Vec::new();
    for message_file in json_files(&storage.join("message").join(&id), session_file)? {
        let message = read_object(&message_file, max_bytes)?;
        let message_id = message
            .get("id")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| at(&message_file, "field `id` missing, empty or not a string"))?
            .to_owned();
        let mut parts = Vec::new();
        let part_files = json_files(&storage.join("part").join(&message_id), session_file)?;
        for part_file in &part_files {
            parts.push(read_object(part_file, max_bytes)?);
        }
        messages.push(json!({"info": message, "parts": parts}));
        files.push((message_file, part_files));
    }
    let bytes = serde_json::to_vec(&json!({"info": info, "messages": messages}))
        .map_err(|e| at(session_file, &format!("cannot assemble the export: {e}")))?;
    Ok(Assembled { bytes, files })
}

/// The `*.json` files of `dir`, sorted by name (none when it is absent).
fn json_files(dir: &Path, session_file: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(at(
                session_file,
                &format!("cannot list {}: {e}", dir.display()),
            ))
        }
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// One file's JSON object.
fn read_object(file: &Path, max_bytes: u64) -> Result<Value, ImportError> {
    let len = std::fs::metadata(file)
        .map_err(|e| at(file, &format!("cannot read: {e}")))?
        .len();
    if len > max_bytes {
        return Err(at(
            file,
            &format!("longer than {max_bytes} bytes (the limit; see --max-line-bytes)"),
        ));
    }
    let bytes = std::fs::read(file).map_err(|e| at(file, &format!("cannot read: {e}")))?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(at(file, "not a JSON object")),
        Err(e) => Err(ImportError {
            file: file.display().to_string(),
            line: e.line() as u64,
            path: None,
            message: format!("not JSON: {e}"),
        }),
    }
}

fn at(file: &Path, message: &str) -> ImportError {
    ImportError {
        file: file.display().to_string(),
        line: 0,
        path: None,
        message: message.to_owned(),
    }
}
