//! Pinned npm packages (the agents, and commonmark.js for the CLI's
//! injection test), installed once into a cache
//! outside git: `$CTXLOG_OPENCODE_CACHE`, else `$XDG_CACHE_HOME/ctxlog`,
//! else `~/.cache/ctxlog` (the variable's name is older than the other
//! agents; it holds them all), one folder per package and version.

use crate::drive::DriveError;
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The cache folder every pinned agent is installed under.
pub fn cache_root() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    var("CTXLOG_OPENCODE_CACHE")
        .map(PathBuf::from)
        .or_else(|| var("XDG_CACHE_HOME").map(|c| PathBuf::from(c).join("ctxlog")))
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache/ctxlog")))
        .unwrap_or_else(|| std::env::temp_dir().join("ctxlog-cache"))
}

/// The folder `package@version` is installed into (`@scope/name` becomes
/// `scope-name`).
pub fn install_dir(package: &str, version: &str) -> PathBuf {
    let flat = package.trim_start_matches('@').replace('/', "-");
    cache_root().join(format!("{flat}-{version}"))
}

/// Whether the npm registry answers; `Unreachable` (the caller may skip)
/// when it does not.
pub fn ping() -> Result<(), DriveError> {
    let ping = Command::new("npm")
        .args(["ping", "--loglevel=error"])
        .stdin(Stdio::null())
        .output();
    match ping {
        Err(e) => Err(DriveError::Unreachable(format!("npm not runnable: {e}"))),
        Ok(o) if !o.status.success() => Err(DriveError::Unreachable(
            String::from_utf8_lossy(&o.stderr).trim().to_owned(),
        )),
        Ok(_) => Ok(()),
    }
}

/// Installs `package@version` into [`install_dir`] (npm's own files only:
/// no save, audit or fund); the folder.
pub fn install(package: &str, version: &str) -> Result<PathBuf, DriveError> {
    let dir = install_dir(package, version);
    fs::create_dir_all(&dir)?;
    ping()?;
    let out = Command::new("npm")
        .args([
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&dir)
        .arg(format!("{package}@{version}"))
        .stdin(Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(DriveError::Install(format!(
            "{package}@{version}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(dir)
}

/// The `version` field of an installed package's `package.json`.
pub fn installed_version(dir: &std::path::Path, package: &str) -> Option<String> {
    let text =
        fs::read_to_string(dir.join("node_modules").join(package).join("package.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("version")?.as_str().map(str::to_owned)
}
