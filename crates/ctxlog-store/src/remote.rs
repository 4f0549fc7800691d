//! Reading a store another process holds: [`RemoteLog`] asks that process
//! (`serve.rs`) over the store's socket, [`Reader`] picks between it and
//! opening the store directly.

use crate::config::StoreConfig;
use crate::error::{Expected, StoreError};
use crate::log::{Appended, EventLog, LoadedState, NewEvent};
use crate::sled_store::SledStore;
use crate::trees::holder_of;
use crate::verify::VerifyReport;
use crate::wire::{read_frame, write_frame, Reply, Request, SocketPath, VERSION};
use ctxlog_core::{Envelope, Seq, SessionId, EVENT_SCHEMA_VERSION};
use std::io::{self, BufReader};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long [`Reader::open`] tries a store another process holds, to be
/// served by it or to open it, before naming that process.
const IN_USE_WAIT: Duration = Duration::from_secs(1);

/// How long the holder of a store has to say who it is.
const HELLO_TIMEOUT: Duration = Duration::from_secs(1);

/// Longest silence within a reply (a long request sends `Working` twice a
/// second).
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// A store read through the process that holds it: sessions, heads and
/// events up to each session's durable head (at most one commit behind the
/// writer), and verification. Appends are refused with
/// [`StoreError::InUse`]. Every call is one connection.
#[derive(Debug, Clone)]
pub struct RemoteLog {
    store: PathBuf,
    pid: u32,
}

impl RemoteLog {
    /// Asks the process that holds the store at `store` to serve reads.
    /// `Ok(None)` when no process listens (no socket, or nobody behind it);
    /// [`StoreError::Unanswered`] naming the holder when one listens but does
    /// not say who it is within a second, or speaks another protocol.
    pub fn connect(store: &Path) -> Result<Option<RemoteLog>, StoreError> {
        let mut stream = match dial(store, HELLO_TIMEOUT) {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!(store = %store.display(), "no process serves the store: {e}");
                return Ok(None);
            }
        };
        let unanswered = |why: String| StoreError::Unanswered {
            path: store.display().to_string(),
            holder: holder_of(store),
            why,
        };
        let hello = write_frame(&mut stream, &Request::Hello)
            .and_then(|()| read_frame::<Reply>(&mut stream));
        let hello = match hello {
            Ok(hello) => hello,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(unanswered(format!(
                    "no answer within {HELLO_TIMEOUT:?}: it is stopped or too busy"
                )))
            }
            // The holder closed the connection: it is exiting, so opening
            // the store waits for its lock.
            Err(e) if e.kind() != io::ErrorKind::InvalidData => {
                tracing::debug!(store = %store.display(), "the holder hung up: {e}");
                return Ok(None);
            }
            Err(e) => return Err(unanswered(format!("its answer did not read: {e}"))),
        };
        match hello {
            Reply::Hello {
                version: VERSION,
                schema: EVENT_SCHEMA_VERSION,
                pid,
            } => Ok(Some(RemoteLog {
                store: store.to_path_buf(),
                pid,
            })),
            Reply::Hello {
                version, schema, ..
            } => Err(unanswered(format!(
                "it speaks protocol {version} with event schema {schema}; this ctxlog speaks {VERSION} with {EVENT_SCHEMA_VERSION}"
            ))),
            // Its holder lets go of the store shortly: open it then.
            Reply::Closing => Ok(None),
            Reply::Failed(why) => Err(unanswered(why)),
            other => Err(unanswered(format!("an unexpected answer: {other:?}"))),
        }
    }

    /// The id of the process that serves the store.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The store directory.
    pub fn path(&self) -> &Path {
        &self.store
    }

    /// Verifies the store in the process that holds it (between its
    /// commits); see [`SledStore::verify`].
    pub fn verify(&self) -> Result<VerifyReport, StoreError> {
        let mut reply = self.request(&Request::Verify)?;
        match self.next(&mut reply)? {
            Reply::Verify(report) => Ok(report.into()),
            other => Err(self.unexpected(other)),
        }
    }

    /// Sends `request` on a new connection; the connection to read the
    /// reply from.
    fn request(&self, request: &Request) -> Result<BufReader<UnixStream>, StoreError> {
        let mut stream = dial(&self.store, REPLY_TIMEOUT).map_err(|e| self.gone(&e))?;
        write_frame(&mut stream, request).map_err(|e| self.gone(&e))?;
        Ok(BufReader::new(stream))
    }

    /// The next reply that is not `Working`; `Failed` is the owner's error.
    fn next(&self, reply: &mut BufReader<UnixStream>) -> Result<Reply, StoreError> {
        loop {
            match read_frame::<Reply>(reply).map_err(|e| self.gone(&e))? {
                Reply::Working => continue,
                Reply::Failed(message) => return Err(StoreError::Served(message)),
                Reply::Closing => {
                    return Err(self.gone(&io::Error::other("it is closing the store")))
                }
                other => return Ok(other),
            }
        }
    }

    fn gone(&self, e: &io::Error) -> StoreError {
        StoreError::Unanswered {
            path: self.store.display().to_string(),
            holder: Some(format!("process {}", self.pid)),
            why: format!("it stopped answering: {e}"),
        }
    }

    fn unexpected(&self, reply: Reply) -> StoreError {
        StoreError::Unanswered {
            path: self.store.display().to_string(),
            holder: Some(format!("process {}", self.pid)),
            why: format!("an unexpected answer: {reply:?}"),
        }
    }
}

/// A connection to the socket of the store at `store`.
fn dial(store: &Path, timeout: Duration) -> io::Result<UnixStream> {
    let addr = SocketPath::of(store)?;
    let stream = UnixStream::connect(&addr.path)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    Ok(stream)
}

impl EventLog for RemoteLog {
    fn append(
        &self,
        _session: SessionId,
        _expected: Expected,
        _events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        Err(StoreError::InUse {
            path: self.store.display().to_string(),
            holder: holder_of(&self.store).or(Some(format!("process {}", self.pid))),
        })
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, StoreError>> + '_>, StoreError> {
        let reply = self.request(&Request::Read(session, from))?;
        Ok(Box::new(RemoteRead {
            log: self,
            reply,
            done: false,
        }))
    }

    fn head(&self, session: SessionId) -> Result<Seq, StoreError> {
        let mut reply = self.request(&Request::Head(session))?;
        match self.next(&mut reply)? {
            Reply::Head(seq) => Ok(seq),
            other => Err(self.unexpected(other)),
        }
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, StoreError> {
        let mut reply = self.request(&Request::Sessions)?;
        match self.next(&mut reply)? {
            Reply::Sessions(sessions) => Ok(sessions),
            other => Err(self.unexpected(other)),
        }
    }
}

/// The events of one `Read`, as they arrive; ends at `End` or the first error.
struct RemoteRead<'a> {
    log: &'a RemoteLog,
    reply: BufReader<UnixStream>,
    done: bool,
}

impl Iterator for RemoteRead<'_> {
    type Item = Result<Envelope, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = match self.log.next(&mut self.reply) {
            Ok(Reply::Event(e)) => return Some(Ok(*e)),
            Ok(Reply::End) => None,
            Ok(other) => Some(Err(self.log.unexpected(other))),
            Err(e) => Some(Err(e)),
        };
        self.done = true;
        item
    }
}

/// A store opened for reading: directly when no other process holds it, or
/// through the process that does ([`RemoteLog`]).
#[derive(Debug, Clone)]
pub enum Reader {
    /// This process opened the store (and serves it to other readers).
    Opened(SledStore),
    /// Another process holds the store and answers for it.
    Served(RemoteLog),
}

impl Reader {
    /// Opens the store at `path` for reading: through the process that
    /// holds it when one answers, else directly. Like [`SledStore::open`],
    /// a missing store is created; check first when that is not wanted.
    /// [`StoreError::InUse`] or [`StoreError::Unanswered`] name the holder
    /// that neither lets go nor answers, about a second after the call.
    pub fn open(path: impl AsRef<Path>) -> Result<Reader, StoreError> {
        let path = path.as_ref();
        let mut config = StoreConfig::new(path);
        config.in_use_wait = Duration::ZERO;
        let started = Instant::now();
        loop {
            if let Some(remote) = RemoteLog::connect(path)? {
                return Ok(Reader::Served(remote));
            }
            // The holder may be opening the store, or closing it.
            match SledStore::open_with(config.clone()) {
                Ok(store) => return Ok(Reader::Opened(store)),
                Err(e @ StoreError::InUse { .. }) if started.elapsed() >= IN_USE_WAIT => {
                    return Err(e)
                }
                Err(StoreError::InUse { .. }) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(e),
            }
        }
    }

    /// The store directory.
    pub fn path(&self) -> &Path {
        match self {
            Reader::Opened(s) => s.path(),
            Reader::Served(r) => r.path(),
        }
    }

    /// The process serving the store, when it is not this one.
    pub fn served_by(&self) -> Option<u32> {
        match self {
            Reader::Opened(_) => None,
            Reader::Served(r) => Some(r.pid()),
        }
    }

    /// Checks every record and head; see [`SledStore::verify`].
    pub fn verify(&self) -> Result<VerifyReport, StoreError> {
        match self {
            Reader::Opened(s) => s.verify(),
            Reader::Served(r) => r.verify(),
        }
    }
}

impl From<SledStore> for Reader {
    fn from(store: SledStore) -> Self {
        Reader::Opened(store)
    }
}

impl EventLog for Reader {
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        match self {
            Reader::Opened(s) => s.append(session, expected, events),
            Reader::Served(r) => r.append(session, expected, events),
        }
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, StoreError>> + '_>, StoreError> {
        match self {
            Reader::Opened(s) => s.read(session, from),
            Reader::Served(r) => r.read(session, from),
        }
    }

    fn head(&self, session: SessionId) -> Result<Seq, StoreError> {
        match self {
            Reader::Opened(s) => s.head(session),
            Reader::Served(r) => r.head(session),
        }
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, StoreError> {
        match self {
            Reader::Opened(s) => s.sessions(),
            Reader::Served(r) => r.sessions(),
        }
    }

    fn load_state(&self, session: SessionId) -> Result<LoadedState, StoreError> {
        match self {
            Reader::Opened(s) => s.load_state(session),
            Reader::Served(r) => r.load_state(session),
        }
    }

    fn flush(&self) -> Result<(), StoreError> {
        match self {
            Reader::Opened(s) => s.flush(),
            Reader::Served(r) => r.flush(),
        }
    }
}
