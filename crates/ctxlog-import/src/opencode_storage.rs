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

/// The export `{info, messages: [{info, parts}]}` of the session whose
/// info file is `session_file`, as JSON bytes. Every file read is at most
/// `max_bytes` long.
pub fn assemble(session_file: &Path, max_bytes: u64) -> Result<Vec<u8>, ImportError> {
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
    for message_file in json_files(&storage.join("message").join(&id), session_file)? {
        let message = read_object(&message_file, max_bytes)?;
        let message_id = message
            .get("id")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| at(&message_file, "field `id` missing, empty or not a string"))?
            .to_owned();
        let mut parts = Vec::new();
        for part_file in json_files(&storage.join("part").join(&message_id), session_file)? {
            parts.push(read_object(&part_file, max_bytes)?);
        }
        messages.push(json!({"info": message, "parts": parts}));
    }
    serde_json::to_vec(&json!({"info": info, "messages": messages}))
        .map_err(|e| at(session_file, &format!("cannot assemble the export: {e}")))
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
