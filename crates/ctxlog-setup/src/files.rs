//! Where the agents keep their configuration, and writing a file of it:
//! replaced at once (never half written), its permissions kept.

use std::path::{Path, PathBuf};

/// What an install or uninstall did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The configuration file.
    pub file: PathBuf,
    /// Whether it changed (false: it already said so).
    pub changed: bool,
}

/// Why a configuration could not be written.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The file could not be read or written.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file does not read as the agent's configuration; nothing was
    /// written.
    #[error("{file} does not read as {what} ({why}); nothing was written: fix it, or add the server by hand")]
    Unreadable {
        /// The file.
        file: PathBuf,
        /// What it should be.
        what: &'static str,
        /// Why not.
        why: String,
    },
}

/// Where the configurations are.
#[derive(Debug, Clone, Default)]
pub struct Homes {
    /// `$HOME`.
    pub home: PathBuf,
    /// The project directory.
    pub project: PathBuf,
    /// `$CLAUDE_CONFIG_DIR`.
    pub claude_config_dir: Option<PathBuf>,
    /// `$CODEX_HOME`.
    pub codex_home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `$PI_CODING_AGENT_DIR`.
    pub pi_agent_dir: Option<PathBuf>,
}

impl Homes {
    /// The places the environment names, for project `project`.
    pub fn from_env(project: PathBuf) -> Homes {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Homes {
            home: var("HOME").unwrap_or_default(),
            project,
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            codex_home: var("CODEX_HOME"),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            pi_agent_dir: var("PI_CODING_AGENT_DIR"),
        }
    }
}

/// Writes `text` to `file` through a file beside it renamed over it
/// (made new, never one found there, synced first), keeping `file`'s
/// permissions (0600 for a new file: it may hold tokens); a link is
/// followed to the file it names, which is replaced.
pub fn write_replacing(file: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned());
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mode = std::fs::metadata(&file).map_or(0o600, |m| m.permissions().mode() & 0o7777);
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = file.with_file_name(format!(".{name}.ctxlog-{}", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &file)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The error of an I/O on `file`.
pub(crate) fn io(file: &Path) -> impl Fn(std::io::Error) -> InstallError + '_ {
    move |source| InstallError::Io {
        file: file.to_owned(),
        source,
    }
}

/// `file`'s text; `None` when there is no such file.
pub fn read_optional(file: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl Homes {
    /// Claude Code's configuration directory (`$CLAUDE_CONFIG_DIR`, else
    /// `~/.claude`).
    pub fn claude_dir(&self) -> PathBuf {
        self.claude_config_dir
            .clone()
            .unwrap_or_else(|| self.home.join(".claude"))
    }

    /// Codex's home (`$CODEX_HOME`, else `~/.codex`).
    pub fn codex_dir(&self) -> PathBuf {
        self.codex_home
            .clone()
            .unwrap_or_else(|| self.home.join(".codex"))
    }

    /// The user's configuration directory (`$XDG_CONFIG_HOME`, else
    /// `~/.config`).
    pub fn config_dir(&self) -> PathBuf {
        self.xdg_config_home
            .clone()
            .unwrap_or_else(|| self.home.join(".config"))
    }

    /// pi's agent directory (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`).
    pub fn pi_dir(&self) -> PathBuf {
        self.pi_agent_dir
            .clone()
            .unwrap_or_else(|| self.home.join(".pi/agent"))
    }
}
