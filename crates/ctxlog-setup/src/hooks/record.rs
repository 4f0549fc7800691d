//! What an install wrote to a file, remembered so that an uninstall puts
//! back the very bytes that were there: one small JSON file per
//! configuration file in the records directory, named by a hash of its
//! path.

use crate::files::{io, read_optional, write_replacing, InstallError, Written};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// One configuration file as an install found and left it.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    file: PathBuf,
    /// Its text before the first install (`None`: there was no file).
    before: Option<String>,
    /// Its text as the last install left it.
    after: String,
    /// Directories the install made for it, outermost first.
    made: Vec<PathBuf>,
}

fn record_file(records: &Path, file: &Path) -> PathBuf {
    let digest = Sha256::digest(file.as_os_str().as_encoded_bytes());
    let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    records.join(format!("{name}.json"))
}

fn load(records: &Path, file: &Path) -> Option<Record> {
    let text = std::fs::read_to_string(record_file(records, file)).ok()?;
    serde_json::from_str::<Record>(&text)
        .ok()
        .filter(|r| r.file == file)
}

/// Writes `after` to `file` (whose text is `before`), remembering what was
/// there before the first install.
pub(crate) fn write_installed(
    records: &Path,
    file: &Path,
    before: Option<&str>,
    after: &str,
) -> Result<Written, InstallError> {
    if before == Some(after) {
        return Ok(Written {
            file: file.to_owned(),
            changed: false,
        });
    }
    let (original, made) = match load(records, file) {
        // Installed before and untouched since: the first install's record
        // still says what was there.
        Some(r) if before == Some(r.after.as_str()) => (r.before, r.made),
        _ => (before.map(str::to_owned), missing_dirs(file)),
    };
    write_replacing(file, after).map_err(io(file))?;
    let record = Record {
        file: file.to_owned(),
        before: original,
        after: after.to_owned(),
        made,
    };
    let text = serde_json::to_string(&record).map_err(|e| InstallError::Io {
        file: file.to_owned(),
        source: std::io::Error::other(e),
    })?;
    {
        use std::os::unix::fs::DirBuilderExt;
        // What a configuration held may be a token: the records are the
        // user's only.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(records)
            .map_err(io(records))?;
    }
    write_replacing(&record_file(records, file), &text).map_err(io(records))?;
    Ok(Written {
        file: file.to_owned(),
        changed: true,
    })
}

/// Undoes the install in `file`: the bytes from before the first install
/// when nobody changed the file since (the file and the directories made
/// for it removed when there was none), else `remove(text)`: the text
/// without ctxlog's entries (`None`: remove the file).
pub(crate) fn undo(
    records: &Path,
    file: &Path,
    remove: impl FnOnce(&str) -> Result<Option<String>, InstallError>,
) -> Result<Written, InstallError> {
    let unchanged = Written {
        file: file.to_owned(),
        changed: false,
    };
    let Some(current) = read_optional(file).map_err(io(file))? else {
        forget(records, file);
        return Ok(unchanged);
    };
    let (target, made) = match load(records, file) {
        Some(r) if r.after == current => (r.before, r.made),
        _ => (remove(&current)?, Vec::new()),
    };
    match target {
        Some(text) if text == current => {}
        Some(text) => write_replacing(file, &text).map_err(io(file))?,
        None => {
            std::fs::remove_file(file).map_err(io(file))?;
            for dir in made.iter().rev() {
                // Only when empty: anything else put there stays.
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
    forget(records, file);
    Ok(Written {
        file: file.to_owned(),
        changed: true,
    })
}

fn forget(records: &Path, file: &Path) {
    let _ = std::fs::remove_file(record_file(records, file));
}

/// The directories above `file` that do not exist yet, outermost first.
fn missing_dirs(file: &Path) -> Vec<PathBuf> {
    let mut made: Vec<PathBuf> = file
        .ancestors()
        .skip(1)
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    made.reverse();
    made
}
