//! What an import reads: the files named (a directory stands for the
//! recordings in and below it, an OpenCode database for its sessions, `-`
//! for standard input) and the sessions discovery finds where the agents
//! keep them; each read into an [`Imported`] recording.

use ctxlog_import::discover::{database_sessions, discover, recordings_in, Found, Layout, Places};
use ctxlog_import::{opencode_db, opencode_storage, Format, ImportError, ImportOptions, Imported};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use thiserror::Error;

/// One thing an import reads.
#[derive(Debug, Clone)]
pub enum Input {
    /// A file, in the format named or sniffed.
    File(PathBuf),
    /// Standard input (`-`).
    Stdin,
    /// A session found where its agent keeps it (discovery, a database).
    Found(Found),
}

/// Why an input could not be read; every one names the input.
#[derive(Debug, Error)]
pub enum InputError {
    /// The file could not be opened.
    #[error("{name}: cannot open: {source}")]
    Open {
        /// The input.
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// The first bytes could not be read.
    #[error("{name}: cannot read: {source}")]
    Read {
        /// The input.
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// No format was named and none could be told from the first bytes.
    #[error("{name}: unknown format (use --format opencode|claude-code|codex|pi)")]
    UnknownFormat {
        /// The input.
        name: String,
    },
    /// The recording is malformed (the error names its file and line).
    #[error(transparent)]
    Import(#[from] ImportError),
    /// A directory was named that holds no recording.
    #[error(
        "{}: a directory with no recording in it (no .json or .jsonl file in it or below it): \
         nothing was imported",
        .0.display()
    )]
    EmptyDirectory(PathBuf),
    /// A directory named could not be listed.
    #[error("{}: cannot list: {source}", path.display())]
    CannotList {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Standard input was to be read again, as a newer version.
    #[error(
        "stdin: a newer version of this recording is stored (or --replace stores one), and \
         standard input cannot be read again as it: save it to a file and import that"
    )]
    StdinAgain,
}

/// Told how far the reading of an input has got (a progress bar).
pub trait Progress {
    /// The input is `len` bytes long (0 when unknown).
    fn begin(&self, len: u64);
    /// `bytes` more were read.
    fn advance(&self, bytes: u64);
    /// The reading is over.
    fn end(&self);
}

/// No progress is shown.
impl Progress for () {
    fn begin(&self, _: u64) {}
    fn advance(&self, _: u64) {}
    fn end(&self) {}
}

/// What the files an input is read from looked like: each one's length
/// and modification time (`None`: not there). An input whose stamp has
/// not changed has nothing new to import.
pub type Stamp = Vec<Option<(u64, SystemTime)>>;

impl Input {
    /// How it is named in messages.
    pub fn name(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Stdin => "stdin".into(),
            Input::Found(f) => f.name(),
        }
    }

    /// The stamp of the files it is read from (see [`Stamp`]); OpenCode's
    /// storage keeps messages in a directory by session, its database
    /// writes ahead to a `-wal` file.
    pub fn stamp(&self) -> Stamp {
        let of = |p: &Path| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| Some((m.len(), m.modified().ok()?)))
        };
        match self {
            Input::File(p) => vec![of(p)],
            Input::Stdin => vec![None],
            Input::Found(f) => match f.layout {
                Layout::File => vec![of(&f.path)],
                Layout::OpenCodeStorage => {
                    let storage = f
                        .path
                        .parent()
                        .and_then(Path::parent)
                        .and_then(Path::parent);
                    let session = f.path.file_stem().map(|s| s.to_owned());
                    let dir = storage
                        .zip(session)
                        .map(|(storage, s)| storage.join("message").join(s));
                    vec![of(&f.path), dir.as_deref().and_then(of)]
                }
                Layout::OpenCodeDatabase => {
                    let mut wal = f.path.clone().into_os_string();
                    wal.push("-wal");
                    vec![of(&f.path), of(Path::new(&wal))]
                }
            },
        }
    }
}

/// The inputs `files` name (`-` standard input, a directory the
/// recordings in and below it, an OpenCode database its sessions), then,
/// with `discover`, the sessions found at `places`.
pub fn named(files: &[PathBuf], discover_at: Option<&Places>) -> Result<Vec<Input>, InputError> {
    let mut out = Vec::new();
    for p in files {
        if p.as_os_str() == "-" {
            out.push(Input::Stdin);
        } else if p.is_dir() {
            let found = recordings_in(p).map_err(|source| InputError::CannotList {
                path: p.clone(),
                source,
            })?;
            if found.is_empty() {
                return Err(InputError::EmptyDirectory(p.clone()));
            }
            out.extend(found.into_iter().map(Input::File));
        } else if opencode_db::is_database_file(p) {
            out.extend(database_sessions(p).into_iter().map(Input::Found));
        } else {
            out.push(Input::File(p.clone()));
        }
    }
    if let Some(places) = discover_at {
        out.extend(discover(places).into_iter().map(Input::Found));
    }
    Ok(out)
}

/// Reads and imports `input` in `format` (`None`: the found session's
/// own, else sniffed from the first bytes buffered, so a stream is read
/// once). `Ok(None)`: a recording still being written
/// ([`ImportOptions::live`]) holds no session yet.
pub fn read(
    input: &Input,
    format: Option<Format>,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<Option<Imported>, InputError> {
    let name = input.name();
    let open = |path: &Path| -> Result<(Box<dyn Read>, u64), InputError> {
        let f = File::open(path).map_err(|source| InputError::Open {
            name: name.clone(),
            source,
        })?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        Ok((Box::new(f), len))
    };
    // An OpenCode storage tree, to name the file an error is about.
    let mut tree: Option<opencode_storage::Assembled> = None;
    let in_memory = |bytes: Vec<u8>| -> (Box<dyn Read>, u64) {
        let len = bytes.len() as u64;
        (Box::new(std::io::Cursor::new(bytes)), len)
    };
    let ((source, len), format) = match input {
        Input::File(path) => (open(path)?, format),
        Input::Stdin => ((Box::new(std::io::stdin()) as Box<dyn Read>, 0), format),
        Input::Found(found) => match found.layout {
            Layout::File => (open(&found.path)?, Some(found.format)),
            Layout::OpenCodeStorage => {
                let assembled = opencode_storage::assemble(&found.path, options.max_line_bytes)?;
                let bytes = std::mem::take(&mut tree.insert(assembled).bytes);
                (in_memory(bytes), Some(Format::OpenCode))
            }
            Layout::OpenCodeDatabase => {
                let bytes = match &found.session {
                    Some(id) => opencode_db::assemble(&found.path, id, options.max_line_bytes)?,
                    None => opencode_db::sessions(&found.path).map(|_| Vec::new())?,
                };
                (in_memory(bytes), Some(Format::OpenCode))
            }
        },
    };
    progress.begin(len);
    let imported = import_from(source, &name, format, options, progress);
    progress.end();
    match imported {
        Ok(imported) => Ok(Some(imported)),
        Err(InputError::Import(e)) if e.holds_no_session() => Ok(None),
        Err(InputError::Import(e)) => Err(InputError::Import(match &tree {
            Some(t) => t.locate(e),
            None => e,
        })),
        Err(e) => Err(e),
    }
}

/// Imports what `source` holds, its format sniffed when not given.
fn import_from(
    source: Box<dyn Read + '_>,
    name: &str,
    format: Option<Format>,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<Imported, InputError> {
    let counting = Counting {
        inner: source,
        progress,
    };
    let mut reader = BufReader::with_capacity(256 << 10, counting);
    let format = match format {
        Some(f) => f,
        None => {
            let head = reader.fill_buf().map_err(|source| InputError::Read {
                name: name.to_owned(),
                source,
            })?;
            Format::sniff(head).ok_or_else(|| InputError::UnknownFormat {
                name: name.to_owned(),
            })?
        }
    };
    Ok(ctxlog_import::import(reader, name, format, options)?)
}

/// A reader that tells [`Progress`] of the bytes read.
struct Counting<'a, R> {
    inner: R,
    progress: &'a dyn Progress,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.advance(n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxlog_testkit::TempDir;

    #[test]
    fn a_directory_with_no_recording_is_named_in_the_error() {
        let dir = TempDir::created("inputs-empty");
        let e = named(&[dir.path().to_path_buf()], None).unwrap_err();
        assert!(matches!(e, InputError::EmptyDirectory(_)), "{e}");
        assert!(
            e.to_string().starts_with(&dir.path().display().to_string()),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_format_names_the_file() {
        let dir = TempDir::created("inputs-unknown");
        let file = dir.join("notes.txt");
        std::fs::write(&file, "hello\n").unwrap();
        let e = read(
            &Input::File(file.clone()),
            None,
            &ImportOptions::default(),
            &(),
        )
        .unwrap_err();
        assert!(matches!(e, InputError::UnknownFormat { .. }), "{e}");
        assert!(e.to_string().contains("notes.txt"), "{e}");
    }
}
