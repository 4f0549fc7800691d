//! Opening the store a command works on (a sled directory or a PostgreSQL
//! URL): a sled store worked on through the process that holds it (reads
//! and writes), read through a private copy when it cannot be written; and
//! naming a session in it.

use crate::damaged;
use crate::{Cli, CliError};
use ctxlog_app::catalog::{self, CatalogError};
use ctxlog_app::logs::{AnyLog, Location};
use ctxlog_core::SessionId;
use ctxlog_postgres::{PgLog, PgOptions, Target};
use ctxlog_sled::{SharedStore, SledStore};
use ctxlog_store::{EventLog, OpenError};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Copies of read-only stores made by [`open_existing`], removed when the
/// command ends.
static READ_COPIES: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Opens the store at `db` for a command that only reads (see
/// [`open_existing_dir`] for a sled store).
pub(crate) fn open_existing(db: &Location) -> Result<AnyLog, CliError> {
    match db {
        Location::Dir(dir) => open_existing_dir(dir).map(AnyLog::Shared),
        Location::Postgres(target) => open_postgres(target),
    }
}

/// Opens the store at `db` for a command that writes: a sled store (made
/// when missing, never a copy) is written through the process that holds
/// it when one does, else opened here (and this process serves the
/// others).
pub(crate) fn open_store(db: &Location) -> Result<AnyLog, CliError> {
    match db {
        Location::Dir(dir) => open_shared_dir(dir).map(AnyLog::Shared),
        Location::Postgres(target) => open_postgres(target),
    }
}

/// [`open_store`] of a sled store.
fn open_shared_dir(db: &Path) -> Result<SharedStore, CliError> {
    // A store whose log is gone is never quietly replaced by an empty one.
    if let Some(gone) = damaged::log_gone(db) {
        return Err(gone);
    }
    let store = SharedStore::open(db).map_err(|e| cannot_open(db, e))?;
    tell_widened(db, store.widened());
    if let Some(pid) = store.served_by() {
        eprintln!(
            "ctxlog: {} is held by process {pid}: writing through it",
            db.display()
        );
    }
    Ok(store)
}

/// What a command says of a sled store it could not open: the store's
/// own words when it is busy, another user's or out of reach (nothing is
/// damaged then), and what the witness says was acknowledged only when
/// sled could not read it.
fn cannot_open(db: &Path, e: OpenError) -> CliError {
    match e {
        e @ (OpenError::InUse { .. }
        | OpenError::Unanswered { .. }
        | OpenError::NotOwner { .. }
        | OpenError::Io { .. }
        | OpenError::InvalidConfig(_)) => CliError::Failed(e.to_string()),
        e => CliError::Failed(damaged::unopened(db, &e)),
    }
}

/// Bad input (exit 2) unless `db` is a store (a PostgreSQL log always is:
/// opening it makes its tables when missing).
pub(crate) fn require_store(db: &Location) -> Result<(), CliError> {
    match db {
        Location::Dir(dir) => require_store_dir(dir),
        Location::Postgres(_) => Ok(()),
    }
}

/// Opens the PostgreSQL log at `target` (its tables made or migrated).
pub(crate) fn open_postgres(target: &Target) -> Result<AnyLog, CliError> {
    PgLog::open_at(target.clone(), PgOptions::default())
        .map(AnyLog::Postgres)
        .map_err(|e| CliError::Failed(e.to_string()))
}

/// Opens the sled store at `db` for a command that only reads: a path that is not
/// a store is bad input (exit 2) and nothing is created; a store another
/// process holds is read through that process; a store that cannot be
/// written (a read-only file system or copy) is read through a copy in the
/// temp directory, since sled opens its files for writing.
pub(crate) fn open_existing_dir(db: &Path) -> Result<SharedStore, CliError> {
    open_existing_dir_with(db, ctxlog_sled::DEFAULT_CACHE_BYTES)
}

/// The page cache of a store opened by a command that reads its sessions
/// in order, once or twice (`report`).
pub(crate) const SCAN_CACHE_BYTES: u64 = 8 << 20;

/// [`open_existing`] for a command that reads its sessions in order
/// ([`SCAN_CACHE_BYTES`] of page cache).
pub(crate) fn open_existing_scanning(db: &Location) -> Result<AnyLog, CliError> {
    match db {
        Location::Dir(dir) => open_existing_dir_with(dir, SCAN_CACHE_BYTES).map(AnyLog::Shared),
        Location::Postgres(target) => open_postgres(target),
    }
}

/// [`open_existing_dir`] with `cache_bytes` of sled page cache.
fn open_existing_dir_with(db: &Path, cache_bytes: u64) -> Result<SharedStore, CliError> {
    require_store_dir(db)?;
    match std::fs::OpenOptions::new().append(true).open(db.join("db")) {
        Ok(_) => {
            let reader = match SharedStore::open_scanning(db, cache_bytes) {
                Ok(reader) => reader,
                // Root reads another user's store that none of the
                // owner's processes serves from a copy: opening it would
                // leave files of root's in it, which lock its owner out.
                Err(OpenError::NotOwner {
                    owner, root: true, ..
                }) => return read_copy(db, &format!("belongs to {owner}")),
                Err(e) => return Err(cannot_open(db, e)),
            };
            tell_widened(db, reader.widened());
            if let Some(pid) = reader.served_by() {
                // A process writes this store: what this one does with what
                // it reads must not take the cores from it.
                ctxlog_sled::yield_to_writer();
                eprintln!(
                    "ctxlog: {} is held by process {pid}: reading what it has made durable, through it",
                    db.display()
                );
            }
            Ok(reader)
        }
        Err(e)
            if e.kind() == std::io::ErrorKind::PermissionDenied
                || e.kind() == std::io::ErrorKind::ReadOnlyFilesystem =>
        {
            // Only its owner (or root) reads a store, whatever its modes.
            ctxlog_sled::private::check_owner(db).map_err(|e| cannot_open(db, e))?;
            read_copy(db, "cannot be written")
        }
        Err(e) => Err(CliError::Failed(format!(
            "{}: {e}",
            db.join("db").display()
        ))),
    }
}

/// Reads the store at `db` through a private copy in the temp directory,
/// removed when the command ends; `why` says why on stderr.
fn read_copy(db: &Path, why: &str) -> Result<SharedStore, CliError> {
    let copy = std::env::temp_dir().join(format!("ctxlog-read-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&copy);
    // The copy holds what the store holds: private before a byte of it is
    // written.
    ctxlog_sled::private::create_dir(&copy)
        .map_err(|e| CliError::Failed(format!("{}: {e}", copy.display())))?;
    READ_COPIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(copy.clone());
    copy_store(db, &copy, true).map_err(|e| {
        CliError::Failed(format!(
            "{}: cannot copy the store to read it: {e}",
            db.display()
        ))
    })?;
    eprintln!("ctxlog: {} {why}: reading a copy of it", db.display());
    Ok(SharedStore::from(open_store_dir(&copy)?))
}

/// Bad input (exit 2) unless `db` is a store; a store this user may not
/// read says so.
fn require_store_dir(db: &Path) -> Result<(), CliError> {
    if let Err(e) = std::fs::read_dir(db) {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            // Whose it is, when it is another user's.
            ctxlog_sled::private::check_owner(db).map_err(|e| cannot_open(db, e))?;
            return Err(CliError::Failed(
                OpenError::Io {
                    path: db.to_owned(),
                    error: e,
                }
                .to_string(),
            ));
        }
    }
    if let Some(gone) = damaged::log_gone(db) {
        return Err(gone);
    }
    if !db.exists() {
        return Err(CliError::BadInput(no_store_yet(db)));
    }
    if db.join("db").is_file() {
        Ok(())
    } else {
        Err(CliError::BadInput(format!(
            "{}: not a ctxlog store (no such directory, or no sled `db` file in it)",
            db.display()
        )))
    }
}

/// What a command on a store that does not exist yet says: nothing was
/// imported into it, and how to.
pub(crate) fn no_store_yet(db: &Path) -> String {
    format!(
        "{}: no store yet (nothing has been imported into it): `ctxlog import --discover` imports every Claude Code, Codex, pi and OpenCode session on this machine, `ctxlog import FILE` one recording",
        db.display()
    )
}

/// Copies the files of a store (the witness first: it never claims more
/// than the log copied after it holds), writable.
fn copy_store(from: &Path, to: &Path, witness_first: bool) -> std::io::Result<()> {
    ctxlog_sled::private::create_dir(to)?;
    let mut entries: Vec<_> = std::fs::read_dir(from)?.flatten().collect();
    entries.sort_by_key(|e| {
        (
            !(witness_first && e.file_name() == "witness"),
            e.file_name(),
        )
    });
    for e in entries {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_socket() {
            // The socket a serving process listens on is not data.
            continue;
        }
        if src.is_dir() {
            copy_store(&src, &dst, false)?;
        } else {
            std::fs::copy(&src, &dst)?;
            // Writable (sled opens for writing) and private.
            std::fs::set_permissions(
                &dst,
                std::fs::Permissions::from_mode(ctxlog_sled::private::FILE_MODE),
            )?;
        }
    }
    Ok(())
}

/// Removes the copies [`open_existing`] made.
pub(crate) fn remove_read_copies() {
    for c in READ_COPIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .drain(..)
    {
        let _ = std::fs::remove_dir_all(c);
    }
}

/// Opens the sled store at `db` in this process (made when missing), for
/// a command that needs it to itself (`salvage`'s new store).
pub(crate) fn open_store_dir(db: &Path) -> Result<SledStore, CliError> {
    // A store whose log is gone is never quietly replaced by an empty one.
    if let Some(gone) = damaged::log_gone(db) {
        return Err(gone);
    }
    let store = SledStore::open(db).map_err(|e| cannot_open(db, e))?;
    tell_widened(db, store.widened());
    Ok(store)
}

/// Says which files of the store at `db` other users could read before
/// opening made them private.
fn tell_widened(db: &Path, widened: &[String]) {
    if let Some(first) = widened.first() {
        eprintln!(
            "ctxlog: {} could be read by other users: made private to its owner (0700/0600; {} files and directories, such as {first})",
            db.display(),
            widened.len()
        );
    }
}

/// Opens the store for reading (see [`open_existing`]) and finds `text` in
/// it (a ctxlog id or a source id).
pub(crate) fn stored_session(cli: &Cli, text: &str) -> Result<(AnyLog, SessionId), CliError> {
    stored_session_in(&cli.db, text)
}

/// [`stored_session`] in the store at `db`.
pub(crate) fn stored_session_in(
    db: &Location,
    text: &str,
) -> Result<(AnyLog, SessionId), CliError> {
    let store = open_existing(db)?;
    let session = resolve_session(&store, db, text)?;
    Ok((store, session))
}

/// Opens the store itself, never a copy, for a command that writes, and
/// finds `text` in it.
pub(crate) fn stored_session_to_write(
    cli: &Cli,
    text: &str,
) -> Result<(AnyLog, SessionId), CliError> {
    require_store(&cli.db)?;
    let store = open_store(&cli.db)?;
    let session = resolve_session(&store, &cli.db, text)?;
    Ok((store, session))
}

/// Resolves SESSION: a ctxlog id, or a recording's own session id.
pub fn resolve_session(
    store: &impl EventLog,
    db: &Location,
    text: &str,
) -> Result<SessionId, CliError> {
    catalog::resolve_session(store, text).map_err(|e| match e {
        CatalogError::NotFound(_) => {
            let near = catalog::closest(store, text).unwrap_or_default();
            let hint = match near.as_slice() {
                [] => String::new(),
                [one] => format!("; did you mean {one}?"),
                many => format!("; did you mean one of {}?", many.join(", ")),
            };
            CliError::BadInput(format!("{e} in {db}{hint}"))
        }
        e @ (CatalogError::Ambiguous { .. } | CatalogError::TooShort { .. }) => {
            CliError::BadInput(e.to_string())
        }
        e => CliError::Failed(e.to_string()),
    })
}
