//! A store is private to its owner: its directory is 0700, every file and
//! directory in it 0600/0700 whatever the umask, and its socket answers
//! only the store's owner and root (the peer's uid from `SO_PEERCRED`).
//!
//! The directory's mode is what keeps other users out (a file inside a 0700
//! directory cannot be opened by them, whatever its own mode); the files are
//! tightened too, so that a copy made with `cp -r` or a directory widened by
//! hand does not expose them. An existing store with wider modes is
//! tightened when it is opened, with a warning naming what changed.

use ctxlog_store::OpenError;
use std::fs::{self, DirBuilder, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The mode of a store's directories.
pub const DIR_MODE: u32 = 0o700;
/// The mode of a store's files and socket.
pub const FILE_MODE: u32 = 0o600;

/// Creates the store directory `path` (0700; its parents as usual) when it
/// does not exist. An existing directory is left to [`tighten`], which
/// only touches a store's own files.
pub fn create_dir(path: &Path) -> io::Result<()> {
    if path.exists() {
        return Ok(());
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }?;
    fs::set_permissions(path, Permissions::from_mode(DIR_MODE))
}

/// Whether a directory entry named `name` belongs to a store: sled's files
/// (`conf`, `db`, `blobs`, `snap.*`), the witness, the owner's socket and
/// what recovery set aside.
fn own_entry(name: &str) -> bool {
    matches!(
        name,
        "conf" | "db" | "blobs" | "search" | crate::witness::FILE_NAME | crate::wire::SOCKET
    ) || name.starts_with("snap.")
        || name.starts_with(crate::witness::FILE_NAME)
        || name == crate::trees::SET_ASIDE
}

/// Tightens the store at `path`: everything of the store in it to 0600
/// (files, the socket) or 0700 (directories), and the directory itself to
/// 0700 when it holds nothing else (a store opened in a shared directory
/// is never allowed to close that directory to its other users: it stays
/// as it is, with a warning). Returns what other users could reach, as
/// `path (mode)`: nothing when the directory was private already.
pub fn tighten(path: &Path) -> io::Result<Vec<String>> {
    let mut widened = Vec::new();
    let mut entries: Vec<(PathBuf, bool)> = fs::read_dir(path)?
        .filter_map(|e| {
            let e = e.ok()?;
            let own = e.file_name().to_str().is_some_and(own_entry);
            Some((e.path(), own))
        })
        .collect();
    entries.sort();
    // Behind a private directory nothing was exposed: files sled made later
    // under the umask are tightened without a word.
    let was_private = fs::metadata(path)?.mode() & 0o077 == 0;
    if entries.iter().all(|(_, own)| *own) {
        tighten_one(path, DIR_MODE, &mut widened)?;
    } else {
        tracing::warn!(
            store = %path.display(),
            "the store shares its directory with other files: other users may reach it; move it into a directory of its own"
        );
    }
    for (entry, own) in entries {
        if own {
            tighten_entry(&entry, &mut widened)?;
        }
    }
    if was_private {
        widened.clear();
    }
    Ok(widened)
}

/// Tightens one entry of a store (a directory with everything in it).
fn tighten_entry(entry: &Path, widened: &mut Vec<String>) -> io::Result<()> {
    let Ok(meta) = fs::symlink_metadata(entry) else {
        return Ok(()); // removed meanwhile (sled's temporary files)
    };
    if meta.file_type().is_symlink() {
        return Ok(()); // never follow a link out of the store
    }
    if !meta.is_dir() {
        return tighten_one(entry, FILE_MODE, widened);
    }
    tighten_one(entry, DIR_MODE, widened)?;
    let mut inner: Vec<PathBuf> = fs::read_dir(entry)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    inner.sort();
    for e in inner {
        tighten_entry(&e, widened)?;
    }
    Ok(())
}

fn tighten_one(path: &Path, mode: u32, widened: &mut Vec<String>) -> io::Result<()> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let current = meta.mode() & 0o7777;
    if current & !mode != 0 {
        match fs::set_permissions(path, Permissions::from_mode(mode)) {
            Ok(()) => widened.push(format!("{} ({current:o})", path.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The uid that owns the store at `path`.
pub(crate) fn owner(path: &Path) -> io::Result<u32> {
    Ok(fs::metadata(path)?.uid())
}

/// `name (uid N)` for `uid`, from `/etc/passwd` when it names it.
pub(crate) fn user(uid: u32) -> String {
    let name = fs::read_to_string("/etc/passwd").ok().and_then(|passwd| {
        passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            (fields.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_owned())
        })
    });
    match name {
        Some(name) => format!("{name} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

/// Refuses to open the existing store at `path` when it belongs to
/// another user: a store is private to its owner, and a root process
/// would leave files of its own in it that lock the owner out (sled makes
/// snapshots as it goes); root reaches it through a process of its owner
/// instead.
pub fn check_owner(path: &Path) -> Result<(), OpenError> {
    let Ok(owner) = owner(path) else {
        return Ok(()); // a new store, made by this process
    };
    let me = crate::os::euid();
    if owner == me {
        return Ok(());
    }
    Err(OpenError::NotOwner {
        path: path.display().to_string(),
        owner: user(owner),
        root: me == 0,
    })
}

/// Whether a process running as `uid` may read a store `owner` owns: it is
/// the owner, or root.
pub(crate) fn may_read(uid: u32, owner: u32) -> bool {
    uid == owner || uid == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_store_is_tightened_and_said() {
        let dir = std::env::temp_dir().join(format!("ctxlog-private-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let store = dir.join("a/b/store");
        create_dir(&store).unwrap();
        assert_eq!(fs::metadata(&store).unwrap().mode() & 0o777, 0o700);
        fs::create_dir(store.join("blobs")).unwrap();
        fs::write(store.join("db"), b"x").unwrap();
        fs::set_permissions(store.join("db"), Permissions::from_mode(0o644)).unwrap();
        fs::set_permissions(store.join("blobs"), Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(&store, Permissions::from_mode(0o755)).unwrap();
        let widened = tighten(&store).unwrap();
        assert_eq!(widened.len(), 3, "{widened:?}");
        assert_eq!(
            fs::metadata(store.join("db")).unwrap().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::metadata(store.join("blobs")).unwrap().mode() & 0o777,
            0o700
        );
        assert!(tighten(&store).unwrap().is_empty());
        // A file made later under the umask, behind the private directory.
        fs::set_permissions(store.join("db"), Permissions::from_mode(0o644)).unwrap();
        assert!(tighten(&store).unwrap().is_empty());
        assert_eq!(
            fs::metadata(store.join("db")).unwrap().mode() & 0o777,
            0o600
        );
        // A directory shared with other files keeps its mode.
        fs::write(store.join("notes.txt"), b"x").unwrap();
        fs::set_permissions(&store, Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(store.join("db"), Permissions::from_mode(0o644)).unwrap();
        assert_eq!(tighten(&store).unwrap().len(), 1);
        assert_eq!(fs::metadata(&store).unwrap().mode() & 0o777, 0o755);
        let _ = fs::remove_dir_all(&dir);
    }
}
