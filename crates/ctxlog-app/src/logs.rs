//! Which log a store's name means, and one type for any of them: a
//! directory is a sled store (the embedded default), a `postgresql://`
//! URL the PostgreSQL log shared by processes and hosts. The only place in
//! this crate that names the backends; every use case takes any
//! [`EventLog`].

use ctxlog_core::{Envelope, Seq, SessionId};
use ctxlog_postgres::{PgLog, Target};
use ctxlog_sled::{SharedStore, SledStore};
use ctxlog_store::{
    AppendError, Appended, EventLog, Expected, Followable, NewEvent, ReadError, Snapshot,
    Subscription, VerifyReport,
};
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

/// Where a store is: what `--db`, `CTXLOG_DB` or Python's `Store(...)`
/// name. Shown (`Display`) without any password.
#[derive(Debug, Clone)]
pub enum Location {
    /// A sled store in this directory.
    Dir(PathBuf),
    /// A PostgreSQL log.
    Postgres(Box<Target>),
}

impl Location {
    /// The location `name` means: a `postgresql://` or `postgres://` URL,
    /// else a directory.
    pub fn parse(name: impl Into<OsString>) -> Result<Location, String> {
        let name: OsString = name.into();
        match name.to_str() {
            Some(text) if ctxlog_postgres::is_postgres_target(text) => {
                Target::parse(text).map(|t| Location::Postgres(Box::new(t)))
            }
            _ => Ok(Location::Dir(PathBuf::from(name))),
        }
    }

    /// The directory, when it is a sled store.
    pub fn dir(&self) -> Option<&std::path::Path> {
        match self {
            Location::Dir(d) => Some(d),
            Location::Postgres(_) => None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Dir(d) => write!(f, "{}", d.display()),
            Location::Postgres(t) => write!(f, "{t}"),
        }
    }
}

/// The location as a command line would name it (a PostgreSQL URL without
/// its password: for showing a default, never for connecting).
impl From<Location> for OsString {
    fn from(l: Location) -> OsString {
        match l {
            Location::Dir(d) => d.into_os_string(),
            Location::Postgres(t) => t.to_string().into(),
        }
    }
}

/// Any of ctxlog's durable logs, opened.
#[derive(Debug)]
pub enum AnyLog {
    /// A sled store this process opened.
    Sled(SledStore),
    /// A sled store worked on through its holder when another process
    /// has it, else opened here.
    Shared(SharedStore),
    /// The PostgreSQL log.
    Postgres(PgLog),
}

macro_rules! each {
    ($log:expr, $l:ident => $body:expr) => {
        match $log {
            AnyLog::Sled($l) => $body,
            AnyLog::Shared($l) => $body,
            AnyLog::Postgres($l) => $body,
        }
    };
}

impl AnyLog {
    /// Checks the whole log (see each backend's `verify`).
    pub fn verify(&self) -> Result<VerifyReport, ReadError> {
        each!(self, l => l.verify())
    }

    /// Notifications of new durable heads, when this process is told of
    /// them: always on PostgreSQL and on a store opened here; not while
    /// another process holds a shared store (ask again later, and look at
    /// the heads meanwhile).
    pub fn subscribe(&self) -> Option<Subscription> {
        match self {
            AnyLog::Sled(l) => Some(l.subscribe()),
            AnyLog::Shared(l) => l.subscribe(),
            AnyLog::Postgres(l) => Some(l.subscribe()),
        }
    }
}

impl EventLog for AnyLog {
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, AppendError> {
        each!(self, l => l.append(session, expected, events))
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, ReadError>> + '_>, ReadError> {
        each!(self, l => l.read(session, from))
    }

    fn head(&self, session: SessionId) -> Result<Seq, ReadError> {
        each!(self, l => l.head(session))
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, ReadError> {
        each!(self, l => l.sessions())
    }

    fn newest_snapshot(
        &self,
        session: SessionId,
        version: u32,
    ) -> Result<Option<Snapshot>, ReadError> {
        each!(self, l => l.newest_snapshot(session, version))
    }

    fn flush(&self) -> Result<(), AppendError> {
        each!(self, l => l.flush())
    }

    fn keeps_snapshots(&self) -> bool {
        each!(self, l => l.keeps_snapshots())
    }

    fn keep_snapshot(&self, snapshot: Snapshot) -> Result<(), AppendError> {
        each!(self, l => l.keep_snapshot(snapshot))
    }
}
