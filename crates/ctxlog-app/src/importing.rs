//! Storing an imported recording as the newest version of the session it
//! names. A version `--replace` replaced is passed over (the recording is
//! read again as the next version, whose ids are its own); a stored version
//! the recording does not extend is refused, or, when replacing, the
//! recording is stored as the next version and the stored one marked
//! replaced by it (readable, never deleted).

use crate::catalog::{self, Adopt, CatalogError, Stored};
use ctxlog_core::SessionId;
use ctxlog_import::Imported;
use ctxlog_store::EventLog;
use thiserror::Error;

/// The most versions of one recording that are stored.
pub const MAX_VERSIONS: u32 = 1_000;

/// How a recording is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versioning {
    /// What the stored session adopts of the import's settings (limits or
    /// a policy given by hand).
    pub adopt: Adopt,
    /// A recording the stored version does not extend is stored as a new
    /// version (else refused).
    pub replace: bool,
    /// The version the recording was read as.
    pub version: u32,
}

/// What [`store_newest`] stored.
#[derive(Debug)]
pub struct Versioned {
    /// The recording as stored (read again when it became a new version).
    pub imported: Imported,
    /// What was stored of it.
    pub stored: Stored,
    /// The version it replaced, if it replaced one.
    pub replaced: Option<SessionId>,
}

/// Why a recording was not stored.
#[derive(Debug, Error)]
pub enum VersionError<E> {
    /// The stored version holds other events and no new version was asked
    /// for.
    #[error(transparent)]
    Diverged(CatalogError),
    /// As many versions as [`MAX_VERSIONS`] are stored already.
    #[error("more than {MAX_VERSIONS} versions of the recording are stored")]
    TooMany,
    /// The recording could not be read again as the next version.
    #[error("{0}")]
    Reread(E),
    /// Read again, the recording holds no session any more.
    #[error("the recording holds no session any more")]
    Gone,
    /// The log failed.
    #[error("not stored: {0}")]
    Catalog(CatalogError),
}

/// Stores `imported` as the newest version of its recording (see the
/// module doc); `reread(version)` reads the recording again as `version`
/// when a newer version is needed.
pub fn store_newest<E>(
    log: &impl EventLog,
    imported: Imported,
    how: Versioning,
    mut reread: impl FnMut(u32) -> Result<Option<Imported>, E>,
) -> Result<Versioned, VersionError<E>> {
    let mut imported = imported;
    let mut version = how.version;
    let mut diverged: Option<SessionId> = None;
    loop {
        let session = imported.session;
        let replaced = catalog::replaced_by(log, session).map_err(VersionError::Catalog)?;
        if replaced.is_none() {
            let events = std::mem::take(&mut imported.events);
            match catalog::store_recording_adopting(log, events, how.adopt) {
                Ok(stored) => {
                    if let Some(old) = diverged {
                        catalog::mark_replaced(log, old, session).map_err(VersionError::Catalog)?;
                    }
                    return Ok(Versioned {
                        imported,
                        stored,
                        replaced: diverged,
                    });
                }
                Err(e @ CatalogError::Diverged { .. }) if !how.replace => {
                    return Err(VersionError::Diverged(e))
                }
                Err(CatalogError::Diverged { .. }) => {
                    // An earlier replacement stored this version and was
                    // cut short before marking the one before.
                    if let Some(old) = diverged {
                        catalog::mark_replaced(log, old, session).map_err(VersionError::Catalog)?;
                    }
                    diverged = Some(session);
                }
                Err(e) => return Err(VersionError::Catalog(e)),
            }
        }
        version += 1;
        if version > MAX_VERSIONS {
            return Err(VersionError::TooMany);
        }
        imported = reread(version)
            .map_err(VersionError::Reread)?
            .ok_or(VersionError::Gone)?;
    }
}
