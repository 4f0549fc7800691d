//! Storing an imported recording as the newest version of the session it
//! names. A version `--replace` replaced is passed over (the recording is
//! read again as the next version, whose ids are its own); a stored version
//! the recording does not extend is refused, or, when replacing, the
//! recording is stored as the next version and the stored one marked
//! replaced by it (readable, never deleted).

use crate::catalog::{self, Adopt, CatalogError, Stored};
use crate::inputs::{self, Input, InputError};
use ctxlog_core::SessionId;
use ctxlog_import::{Format, ImportOptions, Imported, LimitOverrides};
use ctxlog_store::EventLog;
use serde::Serialize;
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

/// How an import reads and stores each input.
#[derive(Debug, Clone)]
pub struct Request {
    /// The format named (`None`: sniffed, or the found session's own).
    pub format: Option<Format>,
    /// How the recording is read.
    pub options: ImportOptions,
    /// A recording the stored version does not extend is stored as a new
    /// version (else refused).
    pub replace: bool,
}

impl Request {
    /// How a recording read under this request is stored: limits or a
    /// policy given by hand are adopted by a session stored before with
    /// others (recorded as `LimitsChanged` or `PolicyChanged`); without
    /// them, what the session has in force stays.
    pub fn versioning(&self) -> Versioning {
        Versioning {
            adopt: Adopt {
                limits: self.options.limits != LimitOverrides::default(),
                policy: !self.options.detect_policy,
            },
            replace: self.replace,
            version: self.options.version,
        }
    }
}

/// How often [`store_input`] reads and stores an input again after
/// another process stored part of the same recording meanwhile.
pub const MAX_RACES: u32 = 16;

/// Stores `imported`, read from `input` under `request`, as the newest
/// version of its recording ([`store_newest`]): the input is read again
/// as the next version when one is needed, which standard input cannot be.
///
/// Another process may store the same recording at the same time (two
/// imports, an agent's hook and `import --follow`): an append that finds
/// the session moved on meanwhile ([`CatalogError::is_race`]) starts over
/// from what is stored now, up to [`MAX_RACES`] times. The recording's
/// events have the ids of their places, so both converge on one copy.
pub fn store_input(
    log: &impl EventLog,
    input: &Input,
    imported: Imported,
    request: &Request,
) -> Result<Versioned, VersionError<InputError>> {
    let read_as = |version| {
        if matches!(input, Input::Stdin) {
            return Err(InputError::StdinAgain);
        }
        let options = ImportOptions {
            version,
            ..request.options.clone()
        };
        inputs::read(input, request.format, &options, &())
    };
    let mut imported = imported;
    let mut races = 0;
    loop {
        match store_newest(log, imported, request.versioning(), read_as) {
            Err(VersionError::Catalog(e)) if e.is_race() && races < MAX_RACES => {
                races += 1;
                tracing::debug!(input = %input.name(), "another process stored part of the recording meanwhile ({e}): storing it again");
                std::thread::sleep(std::time::Duration::from_millis(u64::from(races) * 5));
                imported = read_as(request.options.version)
                    .map_err(VersionError::Reread)?
                    .ok_or(VersionError::Gone)?;
            }
            other => return other,
        }
    }
}

impl<E> VersionError<E> {
    /// Whether the input is refused (bad input, or a stored session it does
    /// not extend), not the log failing.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, VersionError::Catalog(_))
    }
}

/// What became of one input of an import.
#[derive(Debug)]
pub enum Outcome {
    /// Stored (see [`Versioned`]).
    Imported(Box<Versioned>),
    /// A recording still being written holds no session yet.
    NothingYet,
    /// Refused: why, naming the input.
    Refused(String),
}

impl Outcome {
    /// One word for what became of the input: imported, extended,
    /// unchanged, replaced, waiting, refused.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Imported(v) if v.replaced.is_some() => "replaced",
            Outcome::Imported(v) if v.stored.new_events == 0 => "unchanged",
            Outcome::Imported(v) if v.stored.grew => "extended",
            Outcome::Imported(_) => "imported",
            Outcome::NothingYet => "waiting",
            Outcome::Refused(_) => "refused",
        }
    }
}

/// What became of one input, as the front doors report it.
#[derive(Debug, Clone, Serialize)]
pub struct InputReport {
    /// The input's name.
    pub file: String,
    /// [`Outcome::word`].
    pub result: &'static str,
    /// The recording's format, when stored.
    pub format: Option<&'static str>,
    /// The session it is stored as.
    pub session: Option<String>,
    /// The recording's own session id.
    pub source_session: Option<String>,
    /// The stored session's events.
    pub events: Option<usize>,
    /// Of those, appended by this import.
    pub new_events: Option<usize>,
    /// The version it replaced.
    pub replaced: Option<String>,
    /// What was read leniently.
    pub warnings: Vec<String>,
    /// Why it was refused.
    pub error: Option<String>,
}

impl InputReport {
    /// The report of `outcome` of the input named `file`.
    pub fn new(file: String, outcome: &Outcome) -> InputReport {
        let stored = match outcome {
            Outcome::Imported(v) => Some(v.as_ref()),
            _ => None,
        };
        InputReport {
            file,
            result: outcome.word(),
            format: stored.map(|v| v.imported.format.name()),
            session: stored.map(|v| v.imported.session.to_string()),
            source_session: stored.and_then(|v| v.imported.source_session.clone()),
            events: stored.map(|v| v.stored.events),
            new_events: stored.map(|v| v.stored.new_events),
            replaced: stored.and_then(|v| v.replaced).map(|s| s.to_string()),
            warnings: stored
                .map(|v| v.imported.warnings.clone())
                .unwrap_or_default(),
            error: match outcome {
                Outcome::Refused(why) => Some(why.clone()),
                _ => None,
            },
        }
    }
}
