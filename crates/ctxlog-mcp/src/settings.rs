//! What the server is told when it starts: the store, the project it
//! serves, the session its agent named, and each call's budget.

use ctxlog_app::logs::Location;
use ctxlog_import::discover::Places;
use std::path::PathBuf;

/// The most bytes of text one call answers with, unless told otherwise.
pub const MAX_BYTES: usize = 24_000;

/// The most hits one search answers with.
pub const MAX_ITEMS: usize = 20;

/// The server's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The store.
    pub db: Location,
    /// The project directory the agent works in.
    pub project: PathBuf,
    /// The agent's own id of its current session, when it gives one
    /// (Claude Code: `CLAUDE_CODE_SESSION_ID`).
    pub session_hint: Option<String>,
    /// Secrets replaced by markers in every answer.
    pub redact: bool,
    /// The most bytes of text one call answers with.
    pub max_bytes: usize,
    /// The most hits one search answers with.
    pub max_items: usize,
    /// Where the agents keep their recordings.
    pub places: Places,
    /// Whether each call first imports what the agents recorded in the
    /// project directory.
    pub import_project: bool,
}

impl Settings {
    /// The settings of a server on store `db` started by an agent: its
    /// project is `CLAUDE_PROJECT_DIR` when set, else the working
    /// directory.
    pub fn from_env(db: Location) -> Settings {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let project = var("CLAUDE_PROJECT_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        Settings {
            db,
            project,
            session_hint: var("CLAUDE_CODE_SESSION_ID").map(|v| v.to_string_lossy().into_owned()),
            redact: true,
            max_bytes: MAX_BYTES,
            max_items: MAX_ITEMS,
            places: Places::from_env(),
            import_project: true,
        }
    }
}
