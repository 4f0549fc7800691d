//! Where agents keep their sessions, and the files found there:
//! - Claude Code: `$CLAUDE_CONFIG_DIR/projects/*/*.jsonl`, else
//!   `~/.claude/projects/*/*.jsonl`;
//! - Codex: `$CODEX_HOME/sessions/**/rollout-*.jsonl`, else
//!   `~/.codex/sessions/**/rollout-*.jsonl`;
//! - pi: `~/.pi/agent/sessions/**/*.jsonl`;
//! - OpenCode ≤ 1.1: `$XDG_DATA_HOME/opencode/storage/session/*/*.json`
//!   (else `~/.local/share/…`), one session per file (see
//!   [`crate::opencode_storage`]).
//!
//! - OpenCode ≥ 1.2: every session of its SQLite database,
//!   `$OPENCODE_DB`, else `$XDG_DATA_HOME/opencode/opencode.db` (else
//!   `~/.local/share/…`), read read-only (see [`crate::opencode_db`]).
//!
//! Listing reads directories and the database's `session` table; the order
//! is by path (and session id), so the same tree always lists the same way.

use crate::Format;
use std::path::{Path, PathBuf};

/// Where to look: the home directory and the variables that move the
/// agents' directories (taken from the environment by the caller).
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// `$HOME`.
    pub home: PathBuf,
    /// `$CLAUDE_CONFIG_DIR`.
    pub claude_config_dir: Option<PathBuf>,
    /// `$CODEX_HOME`.
    pub codex_home: Option<PathBuf>,
    /// `$XDG_DATA_HOME`.
    pub xdg_data_home: Option<PathBuf>,
    /// `$OPENCODE_DB`.
    pub opencode_db: Option<PathBuf>,
}

impl Places {
    /// The places named by the process environment.
    pub fn from_env() -> Places {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Places {
            home: var("HOME").unwrap_or_default(),
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            codex_home: var("CODEX_HOME"),
            xdg_data_home: var("XDG_DATA_HOME"),
            opencode_db: var("OPENCODE_DB"),
        }
    }

    fn opencode_data(&self) -> PathBuf {
        self.xdg_data_home
            .clone()
            .unwrap_or_else(|| self.home.join(".local/share"))
            .join("opencode")
    }

    /// Claude Code's projects folder.
    fn claude_projects(&self) -> PathBuf {
        self.claude_config_dir
            .clone()
            .unwrap_or_else(|| self.home.join(".claude"))
            .join("projects")
    }

    /// Codex's sessions folder.
    fn codex_sessions(&self) -> PathBuf {
        self.codex_home
            .clone()
            .unwrap_or_else(|| self.home.join(".codex"))
            .join("sessions")
    }

    /// pi's sessions folder.
    fn pi_sessions(&self) -> PathBuf {
        self.home.join(".pi/agent/sessions")
    }

    /// OpenCode ≤ 1.1's session folder.
    fn opencode_storage(&self) -> PathBuf {
        self.opencode_data().join("storage/session")
    }

    /// OpenCode ≥ 1.2's database.
    pub fn opencode_database(&self) -> PathBuf {
        self.opencode_db
            .clone()
            .unwrap_or_else(|| self.opencode_data().join("opencode.db"))
    }

    /// Where [`discover`] looks, by agent: to say so when it finds nothing.
    pub fn searched(&self) -> Vec<(Format, PathBuf)> {
        vec![
            (Format::ClaudeCode, self.claude_projects()),
            (Format::Codex, self.codex_sessions()),
            (Format::Pi, self.pi_sessions()),
            (Format::OpenCode, self.opencode_storage()),
            (Format::OpenCode, self.opencode_database()),
        ]
    }
}

/// A session file found where an agent keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// The agent's storage layout it comes from.
    pub layout: Layout,
    /// The session's id inside a database that holds many
    /// ([`Layout::OpenCodeDatabase`]); `None` when the database's sessions
    /// could not be listed (importing it then says why).
    pub session: Option<String>,
}

impl Found {
    /// How the session is named in messages: its file, and for a database
    /// `file#session`.
    pub fn name(&self) -> String {
        match &self.session {
            Some(id) => format!("{}#{id}", self.path.display()),
            None => self.path.display().to_string(),
        }
    }
}

/// How an agent stores a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One file holds the whole session in the format's own shape.
    File,
    /// OpenCode ≤ 1.1's storage tree: the session's info file, with its
    /// messages and parts in sibling directories.
    OpenCodeStorage,
    /// OpenCode ≥ 1.2's SQLite database: one of its sessions.
    OpenCodeDatabase,
}

/// Every session file under `places`, by agent then path.
pub fn discover(places: &Places) -> Vec<Found> {
    let mut found = Vec::new();
    for dir in sorted_dirs(&places.claude_projects()) {
        push_files(
            &mut found,
            &dir,
            Format::ClaudeCode,
            |n| n.ends_with(".jsonl"),
            false,
        );
    }
    push_files(
        &mut found,
        &places.codex_sessions(),
        Format::Codex,
        |n| n.starts_with("rollout-") && n.ends_with(".jsonl"),
        true,
    );
    let pi = places.pi_sessions();
    push_files(&mut found, &pi, Format::Pi, |n| n.ends_with(".jsonl"), true);
    for dir in sorted_dirs(&places.opencode_storage()) {
        let before = found.len();
        push_files(
            &mut found,
            &dir,
            Format::OpenCode,
            |n| n.ends_with(".json"),
            false,
        );
        for f in &mut found[before..] {
            f.layout = Layout::OpenCodeStorage;
        }
    }
    let db = places.opencode_database();
    if db.is_file() {
        found.extend(database_sessions(&db));
    }
    found
}

/// Every session of the OpenCode database `db`, by id; when its sessions
/// cannot be listed, the database itself (importing it says why).
pub fn database_sessions(db: &Path) -> Vec<Found> {
    let found = |session| Found {
        path: db.to_path_buf(),
        format: Format::OpenCode,
        layout: Layout::OpenCodeDatabase,
        session,
    };
    match crate::opencode_db::sessions(db) {
        Ok(sessions) => sessions.into_iter().map(|s| found(Some(s.id))).collect(),
        Err(_) => vec![found(None)],
    }
}

/// The subdirectories of `dir`, sorted (none when it does not exist).
fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// The `.json` and `.jsonl` files under `dir`, at any depth, sorted: the
/// recordings a directory named to `import` holds. A directory that does
/// not read is an error.
pub fn recordings_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    walk(
        dir,
        |n| n.ends_with(".json") || n.ends_with(".jsonl"),
        true,
        true,
        &mut files,
    )?;
    files.sort();
    Ok(files)
}

/// Pushes the files of `dir` whose name `wanted` accepts, sorted;
/// `deep`: in its subdirectories too. What does not read is left out.
fn push_files(
    found: &mut Vec<Found>,
    dir: &Path,
    format: Format,
    wanted: fn(&str) -> bool,
    deep: bool,
) {
    let mut files = Vec::new();
    // Not strict: walking never fails.
    let _ = walk(dir, wanted, deep, false, &mut files);
    files.sort();
    found.extend(files.into_iter().map(|path| Found {
        path,
        format,
        layout: Layout::File,
        session: None,
    }));
}

/// Collects the files under `dir` whose name `wanted` accepts (in its
/// subdirectories too when `deep`). `strict`: a directory or entry that does
/// not read is an error; otherwise it is skipped.
fn walk(
    dir: &Path,
    wanted: fn(&str) -> bool,
    deep: bool,
    strict: bool,
    out: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if strict => return Err(e),
        Err(_) => return Ok(()),
    };
    for e in entries {
        let (e, kind) = match e.and_then(|e| e.file_type().map(|k| (e, k))) {
            Ok(found) => found,
            Err(err) if strict => return Err(err),
            Err(_) => continue,
        };
        if kind.is_dir() && deep {
            walk(&e.path(), wanted, deep, strict, out)?;
        } else if kind.is_file() && e.file_name().to_str().is_some_and(wanted) {
            out.push(e.path());
        }
    }
    Ok(())
}
