//! [`SharedStore`]: a store worked on whoever holds it. Opened here when
//! no other process holds it (this process then serves the others), else
//! through the process that does ([`RemoteLog`]); when that process lets
//! go, on with the next holder.

use crate::config::StoreConfig;
use crate::remote::{Asked, RemoteLog, RemoteRead};
use crate::store::SledStore;
use ctxlog_store::StoreError;
use ctxlog_store::{AppendError, Expected, OpenError, ReadError};
use ctxlog_store::{Appended, EventLog, NewEvent, Snapshot};

use ctxlog_core::{Envelope, Seq, SessionId};
use ctxlog_store::VerifyReport;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long a store is waited for when the process that holds it is
/// opening or letting go of it (sled's lock held, nobody answering yet),
/// or has stopped serving it mid-command, before that process is named:
/// long enough for a holder to open a large store, or for another to take
/// it over from one that was killed.
const TAKE_OVER_WAIT: Duration = Duration::from_secs(10);

/// A store this process works on whoever holds it: opened here when no
/// other process holds it (this process then serves the others), else
/// reached through the process that does ([`RemoteLog`]), which reads for
/// it and makes its appends with its own writer (durable when
/// acknowledged, checked against the expected head, idempotent on retry).
/// When that process lets go of the store (it ended, or was killed), the
/// next call goes to the process that took it over, or opens the store
/// here; an append whose answer was lost with the holder is sent again,
/// which its event ids make safe.
#[derive(Debug)]
pub struct SharedStore {
    path: PathBuf,
    source: Source,
}

#[derive(Debug)]
enum Source {
    /// This process opened the store (and serves it to other processes).
    Opened(SledStore),
    /// Another process held the store when it was opened: the one that
    /// answers now, until this process opened it itself.
    Served {
        remote: Mutex<RemoteLog>,
        took_over: OnceLock<SledStore>,
    },
}

/// Who answers a call now.
enum Answerer<'a> {
    Opened(&'a SledStore),
    Remote(RemoteLog),
}

impl SharedStore {
    /// Opens the store at `path`: through the process that holds it when
    /// one answers, else directly. Like [`SledStore::open`], a missing
    /// store is created; check first when that is not wanted.
    /// [`OpenError::InUse`] or [`OpenError::Unanswered`] name the holder
    /// that neither lets go nor answers (after about ten seconds for one
    /// that holds sled's lock and has no socket: an embedder that does not
    /// serve, or a holder still opening a large store).
    pub fn open(path: impl AsRef<Path>) -> Result<SharedStore, OpenError> {
        SharedStore::open_scanning(path, super::config::DEFAULT_CACHE_BYTES)
    }

    /// [`SharedStore::open`], sled's page cache (when the store is opened
    /// here) holding at most `cache_bytes`: a command that reads each event
    /// once or twice, in order, gains nothing from a larger one.
    pub fn open_scanning(
        path: impl AsRef<Path>,
        cache_bytes: u64,
    ) -> Result<SharedStore, OpenError> {
        let path = path.as_ref();
        let started = Instant::now();
        loop {
            if let Some(remote) = RemoteLog::connect(path)? {
                return Ok(SharedStore {
                    path: path.to_path_buf(),
                    source: Source::Served {
                        remote: Mutex::new(remote),
                        took_over: OnceLock::new(),
                    },
                });
            }
            // The holder may be opening the store, or closing it.
            match open_here(path, cache_bytes) {
                Ok(store) => return Ok(SharedStore::from(store)),
                Err(e @ OpenError::InUse { .. }) if started.elapsed() >= TAKE_OVER_WAIT => {
                    return Err(e)
                }
                Err(OpenError::InUse { .. }) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(e),
            }
        }
    }

    /// The store directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What opening the store found readable by other users and made
    /// private ([`SledStore::widened`]); empty when it was served.
    pub fn widened(&self) -> &[String] {
        match &self.source {
            Source::Opened(s) => s.widened(),
            Source::Served { .. } => &[],
        }
    }

    /// The process that served the store when it was opened, when it is
    /// not this one.
    pub fn served_by(&self) -> Option<u32> {
        match &self.source {
            Source::Opened(_) => None,
            Source::Served { remote, .. } => Some(lock(remote).pid()),
        }
    }

    /// Notifications of new durable heads while this process holds the
    /// store (it opened it, or took it over); `None` while another process
    /// does, whose appends this one is not told of: ask again later.
    pub fn subscribe(&self) -> Option<ctxlog_store::Subscription> {
        use ctxlog_store::Followable;
        match &self.source {
            Source::Opened(s) => Some(s.subscribe()),
            Source::Served { took_over, .. } => took_over.get().map(Followable::subscribe),
        }
    }

    /// Checks every record and head; see [`SledStore::verify`].
    pub fn verify(&self) -> Result<VerifyReport, ReadError> {
        self.ask(|s| Ok(s.verify()?), RemoteLog::ask_verify)
            .map_err(StoreError::into_read)
    }

    /// Who answers a call now.
    fn answerer(&self) -> Answerer<'_> {
        match &self.source {
            Source::Opened(s) => Answerer::Opened(s),
            Source::Served { remote, took_over } => match took_over.get() {
                Some(s) => Answerer::Opened(s),
                None => Answerer::Remote(lock(remote).clone()),
            },
        }
    }

    /// Answers a call from the store this process opened, or from the
    /// holder; when the holder is gone, from the next one.
    fn ask<T>(
        &self,
        opened: impl Fn(&SledStore) -> Result<T, StoreError>,
        served: impl Fn(&RemoteLog) -> Result<T, Asked>,
    ) -> Result<T, StoreError> {
        let started = Instant::now();
        loop {
            match self.answerer() {
                Answerer::Opened(s) => return opened(s),
                Answerer::Remote(remote) => match served(&remote) {
                    Ok(t) => return Ok(t),
                    Err(Asked::Gone(why)) => self.next_holder(&remote, &why, started)?,
                    Err(e) => return Err(remote.failure(e)),
                },
            }
        }
    }

    /// After `gone` stopped serving the store (`why`): the process that
    /// took it over answers from now on, or this one opens it. Waits
    /// while another process holds sled's lock without answering yet, up
    /// to [`TAKE_OVER_WAIT`] from `started`.
    fn next_holder(&self, gone: &RemoteLog, why: &str, started: Instant) -> Result<(), StoreError> {
        let Source::Served { remote, took_over } = &self.source else {
            return Ok(());
        };
        // One thread finds the next holder; the others wait for it.
        let mut current = lock(remote);
        if took_over.get().is_some() || current.pid() != gone.pid() {
            return Ok(());
        }
        tracing::debug!(store = %self.path.display(), "process {} stopped serving the store ({why})", gone.pid());
        loop {
            match RemoteLog::connect_now(&self.path)? {
                // A holder that answers again (the same one, whose
                // connection dropped, or another that took over).
                Some(next) if next.pid() != gone.pid() || started.elapsed() < TAKE_OVER_WAIT => {
                    *current = next;
                    return Ok(());
                }
                Some(_) => {}
                None => match open_here(&self.path, super::config::DEFAULT_CACHE_BYTES) {
                    Ok(store) => {
                        let _ = took_over.set(store);
                        return Ok(());
                    }
                    Err(OpenError::InUse { .. }) if started.elapsed() < TAKE_OVER_WAIT => {}
                    Err(OpenError::InUse { path, holder }) => {
                        return Err(StoreError::Read(ReadError::Unanswered {
                            path,
                            holder,
                            why: format!(
                                "process {} stopped serving it ({why}) and no other took it over within {TAKE_OVER_WAIT:?}",
                                gone.pid()
                            ),
                        }))
                    }
                    Err(e) => return Err(e.into()),
                },
            }
            if started.elapsed() >= TAKE_OVER_WAIT {
                return Err(gone.gone(&io::Error::other(why.to_string())));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A session's events read through the holders of a store, in order: when
/// the holder goes away mid-read, the rest is read from the next one (or
/// the store opened here), from the event after the last one read. Every
/// event a holder served was durable, so the next one has it too.
struct SharedRead<'a> {
    store: &'a SharedStore,
    session: SessionId,
    /// The seq to read from when the holder goes away.
    next: Seq,
    events: RemoteRead,
    /// The rest, once the holder went away.
    then: Option<Box<dyn Iterator<Item = Result<Envelope, ReadError>> + 'a>>,
}

impl Iterator for SharedRead<'_> {
    type Item = Result<Envelope, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(rest) = &mut self.then {
            return rest.next();
        }
        match self.events.next()? {
            Ok(e) => {
                self.next = e.seq + 1;
                Some(Ok(e))
            }
            Err(Asked::Gone(why)) => {
                let gone = self.events.log.clone();
                if let Err(e) = self.store.next_holder(&gone, &why, Instant::now()) {
                    return Some(Err(e.into_read()));
                }
                match self.store.read(self.session, self.next) {
                    Ok(rest) => self.then.insert(rest).next(),
                    Err(e) => Some(Err(e)),
                }
            }
            Err(e) => Some(Err(self.events.log.failure(e).into_read())),
        }
    }
}

/// Opens the store at `path` here, not waiting for another process that
/// holds it.
fn open_here(path: &Path, cache_bytes: u64) -> Result<SledStore, OpenError> {
    let mut config = StoreConfig::new(path);
    config.in_use_wait = Duration::ZERO;
    config.cache_bytes = cache_bytes;
    SledStore::open_with(config)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl From<SledStore> for SharedStore {
    fn from(store: SledStore) -> Self {
        SharedStore {
            path: store.path().to_path_buf(),
            source: Source::Opened(store),
        }
    }
}

impl EventLog for SharedStore {
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, AppendError> {
        let started = Instant::now();
        loop {
            match self.answerer() {
                Answerer::Opened(s) => return s.append(session, expected, events),
                Answerer::Remote(remote) => match remote.ask_append(session, expected, &events) {
                    Ok(answer) => return answer,
                    // Made or not before the holder went: sent again, its
                    // ids make it safe (a made append answers `duplicate`).
                    Err(Asked::Gone(why)) => self
                        .next_holder(&remote, &why, started)
                        .map_err(StoreError::into_append)?,
                    Err(e) => return Err(remote.failure(e).into_append()),
                },
            }
        }
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, ReadError>> + '_>, ReadError> {
        let started = Instant::now();
        loop {
            match self.answerer() {
                Answerer::Opened(s) => return s.read(session, from),
                Answerer::Remote(remote) => match remote.ask_read(session, from) {
                    Ok(events) => {
                        return Ok(Box::new(SharedRead {
                            store: self,
                            session,
                            next: from,
                            events,
                            then: None,
                        }))
                    }
                    Err(Asked::Gone(why)) => self
                        .next_holder(&remote, &why, started)
                        .map_err(StoreError::into_read)?,
                    Err(e) => return Err(remote.failure(e).into_read()),
                },
            }
        }
    }

    fn head(&self, session: SessionId) -> Result<Seq, ReadError> {
        self.ask(|s| s.head_now(session), |r| r.ask_head(session))
            .map_err(StoreError::into_read)
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, ReadError> {
        self.ask(SledStore::sessions_now, RemoteLog::ask_sessions)
            .map_err(StoreError::into_read)
    }

    fn newest_snapshot(
        &self,
        session: SessionId,
        version: u32,
    ) -> Result<Option<Snapshot>, ReadError> {
        match self.answerer() {
            Answerer::Opened(s) => s.newest_snapshot(session, version),
            // No snapshots over the socket: the events are folded.
            Answerer::Remote(_) => Ok(None),
        }
    }

    fn flush(&self) -> Result<(), AppendError> {
        match self.answerer() {
            Answerer::Opened(s) => s.flush(),
            // The holder acknowledges an append once it is durable.
            Answerer::Remote(_) => Ok(()),
        }
    }

    fn keeps_snapshots(&self) -> bool {
        matches!(self.answerer(), Answerer::Opened(_))
    }

    /// Kept where the store is open here; the holder keeps its own.
    fn keep_snapshot(&self, snapshot: Snapshot) -> Result<(), AppendError> {
        match self.answerer() {
            Answerer::Opened(s) => s.keep_snapshot(snapshot),
            Answerer::Remote(_) => Ok(()),
        }
    }
}
