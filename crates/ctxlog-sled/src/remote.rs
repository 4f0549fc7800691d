//! Working on a store another process holds: [`RemoteLog`] asks that
//! process (`serve.rs`) over the store's socket.

use crate::trees::holder_of;
use ctxlog_store::StoreError;
use ctxlog_store::{AppendError, Expected, OpenError, ReadError};
use ctxlog_store::{Appended, EventLog, NewEvent};

use crate::wire::{fits, read_frame, write_frame, Reply, Request, SocketPath, WireAppend, VERSION};
use ctxlog_core::{Envelope, Seq, SessionId, EVENT_SCHEMA_VERSION};
use ctxlog_store::VerifyReport;
use std::io::{self, BufReader};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the holder of a store has to say who it is.
const HELLO_TIMEOUT: Duration = Duration::from_secs(1);

/// Longest silence within a reply (a long request sends `Working` twice a
/// second).
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// A store worked on through the process that holds it: sessions, heads
/// and events up to each session's durable head (at most one commit behind
/// the writer), verification, and appends made by the holder's writer
/// (answered once durable). Every call is one connection.
#[derive(Debug, Clone)]
pub struct RemoteLog {
    store: PathBuf,
    pid: u32,
}

/// What greeting a store's holder gave.
enum Greeting {
    /// It serves the store (`Some`), or nobody does (`None`: no one
    /// listens, or it lets go of the store shortly).
    Answered(Option<RemoteLog>),
    /// It answers as many requests as it will: why, as the error to give
    /// when it stays so.
    Busy(StoreError),
}

impl RemoteLog {
    /// Asks the process that holds the store at `store` to serve reads.
    /// `Ok(None)` when no process listens (no socket, or nobody behind it);
    /// [`OpenError::Unanswered`] naming the holder when one listens but does
    /// not say who it is within a second, speaks another protocol, or stays
    /// busy answering as many requests as it will through every retry
    /// (about ten seconds).
    pub fn connect(store: &Path) -> Result<Option<RemoteLog>, OpenError> {
        RemoteLog::connect_now(store).map_err(StoreError::into_open)
    }

    /// [`RemoteLog::connect`], failing with any log error (a [`StoreError`]). A
    /// holder answering as many requests as it will is greeted again, as
    /// any request is ([`RemoteLog::answered`]): its slots come free as
    /// the answers it is writing end.
    pub(super) fn connect_now(store: &Path) -> Result<Option<RemoteLog>, StoreError> {
        let greeting = until_not_busy(
            || RemoteLog::greet(store),
            |g| matches!(g, Ok(Greeting::Busy(_))),
        );
        match greeting? {
            Greeting::Answered(log) => Ok(log),
            Greeting::Busy(failure) => Err(failure),
        }
    }

    /// One greeting of the holder of the store at `store`.
    fn greet(store: &Path) -> Result<Greeting, StoreError> {
        let mut stream = match dial(store, HELLO_TIMEOUT) {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!(store = %store.display(), "no process serves the store: {e}");
                return Ok(Greeting::Answered(None));
            }
        };
        let unanswered = |why: String| {
            StoreError::Read(ReadError::Unanswered {
                path: store.display().to_string(),
                holder: holder_of(store),
                why,
            })
        };
        // A holder answering as many requests as it will says so and hangs
        // up without reading the request: writing it may fail while the
        // answer waits to be read, so the answer is read either way.
        if let Err(e) = write_frame(&mut stream, &Request::Hello) {
            tracing::debug!(store = %store.display(), "the greeting was not taken: {e}");
        }
        let hello = read_frame::<Reply>(&mut stream);
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
                return Ok(Greeting::Answered(None));
            }
            Err(e) => return Err(unanswered(format!("its answer did not read: {e}"))),
        };
        match hello {
            Reply::Hello {
                version: VERSION,
                schema: EVENT_SCHEMA_VERSION,
                pid,
            } => Ok(Greeting::Answered(Some(RemoteLog {
                store: store.to_path_buf(),
                pid,
            }))),
            Reply::Hello {
                version, schema, ..
            } => Err(unanswered(format!(
                "it speaks protocol {version} with event schema {schema}; this ctxlog speaks {VERSION} with {EVENT_SCHEMA_VERSION}"
            ))),
            // Its holder lets go of the store shortly: open it then.
            Reply::Closing => Ok(Greeting::Answered(None)),
            Reply::Failed(why) => Err(unanswered(why)),
            Reply::Busy(why) => Ok(Greeting::Busy(unanswered(format!("{why}: try again")))),
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
    /// commits); see [`SledStore::verify`](crate::SledStore::verify).
    pub fn verify(&self) -> Result<VerifyReport, ReadError> {
        self.ask_verify()
            .map_err(|e| self.failure(e))
            .map_err(StoreError::into_read)
    }

    pub(super) fn ask_verify(&self) -> Result<VerifyReport, Asked> {
        match self.answered(&Request::Verify)?.1 {
            Reply::Verify(report) => Ok(report.into()),
            other => Err(Asked::Failed(self.unexpected(other))),
        }
    }

    pub(super) fn ask_head(&self, session: SessionId) -> Result<Seq, Asked> {
        match self.answered(&Request::Head(session))?.1 {
            Reply::Head(seq) => Ok(seq),
            other => Err(Asked::Failed(self.unexpected(other))),
        }
    }

    pub(super) fn ask_sessions(&self) -> Result<Vec<(SessionId, Seq)>, Asked> {
        match self.answered(&Request::Sessions)?.1 {
            Reply::Sessions(sessions) => Ok(sessions),
            other => Err(Asked::Failed(self.unexpected(other))),
        }
    }

    pub(super) fn ask_read(&self, session: SessionId, from: Seq) -> Result<RemoteRead, Asked> {
        // The first reply tells whether the holder still answers; events
        // that follow arrive as they are read.
        let (reply, first) = self.answered(&Request::Read(session, from))?;
        Ok(RemoteRead {
            log: self.clone(),
            reply,
            first: Some(first),
            done: false,
        })
    }

    /// Has the holder append `events` to `session` if its head is
    /// `expected`: its answer (where they landed, or why not), or why
    /// there was none. [`Asked::Gone`] when the connection dropped before
    /// an answer: the append may or may not have been made.
    pub(super) fn ask_append(
        &self,
        session: SessionId,
        expected: Expected,
        events: &[NewEvent],
    ) -> Result<Result<Appended, AppendError>, Asked> {
        let request = Request::Append(WireAppend {
            session,
            expected,
            events: events.to_vec(),
        });
        if !fits(&request) {
            return Ok(Err(AppendError::Backend(ctxlog_store::BackendError::new(format!(
                "a batch of {} events is larger than the {} MiB the holder of {} takes at once: append it in smaller batches",
                events.len(),
                ctxlog_core::codec::MAX_ENCODED_BYTES >> 20,
                self.store.display()
            )))));
        }
        match self.answered(&request)?.1 {
            Reply::Appended(at) => Ok(Ok(at.of(session))),
            Reply::Refused(why) => Ok(Err(why.into())),
            other => Err(Asked::Failed(self.unexpected(other))),
        }
    }

    /// Sends `request` until the holder takes it (a holder answering as
    /// many requests as it will is asked again, after a pause that grows,
    /// up to [`BUSY_RETRIES`] times); the connection and its first reply.
    fn answered(&self, request: &Request) -> Result<(BufReader<UnixStream>, Reply), Asked> {
        let answered = until_not_busy(
            || {
                let mut reply = self.request(request)?;
                let first = self.first_reply(&mut reply)?;
                Ok((reply, first))
            },
            |a| matches!(a, Err(Asked::Busy(_))),
        );
        answered.map_err(|e| match e {
            Asked::Busy(why) => Asked::Failed(StoreError::Read(ReadError::Served(format!(
                "{why}: try again"
            )))),
            e => e,
        })
    }

    /// Sends `request` on a new connection; the connection to read the
    /// reply from. A holder that no longer listens is [`Asked::Gone`].
    fn request(&self, request: &Request) -> Result<BufReader<UnixStream>, Asked> {
        let mut stream =
            dial(&self.store, REPLY_TIMEOUT).map_err(|e| Asked::Gone(e.to_string()))?;
        // A busy holder may hang up before it reads the request (see
        // `greet`): its answer is read either way, and a holder that is
        // gone fails the first read.
        if let Err(e) = write_frame(&mut stream, request) {
            tracing::debug!(store = %self.store.display(), "the request was not taken: {e}");
        }
        Ok(BufReader::new(stream))
    }

    /// The next reply that is not `Working`; `Failed` is the owner's error,
    /// `Closing` a holder that is letting go of the store, a connection it
    /// dropped one that ended ([`Asked::Gone`]: what was answered before
    /// stands, and the rest may be asked of the next holder).
    fn next(&self, reply: &mut BufReader<UnixStream>) -> Result<Reply, Asked> {
        self.reply(reply, false)
    }

    /// The first reply to a request, as [`RemoteLog::next`], but a holder
    /// answering as many requests as it will is [`Asked::Busy`].
    fn first_reply(&self, reply: &mut BufReader<UnixStream>) -> Result<Reply, Asked> {
        self.reply(reply, true)
    }

    /// [`RemoteLog::next`]; `first`: see [`RemoteLog::first_reply`].
    fn reply(&self, reply: &mut BufReader<UnixStream>, first: bool) -> Result<Reply, Asked> {
        loop {
            match read_frame::<Reply>(reply) {
                Ok(Reply::Working) => continue,
                Ok(Reply::Failed(message)) => {
                    return Err(Asked::Failed(StoreError::Read(ReadError::Served(message))))
                }
                Ok(Reply::Busy(message)) if first => return Err(Asked::Busy(message)),
                Ok(Reply::Busy(message)) => {
                    return Err(Asked::Failed(StoreError::Read(ReadError::Served(format!(
                        "{message}: try again"
                    )))))
                }
                Ok(Reply::Closing) => return Err(Asked::Gone("it is closing the store".into())),
                Ok(other) => return Ok(other),
                Err(e) if dropped(&e) => return Err(Asked::Gone(e.to_string())),
                Err(e) => return Err(Asked::Failed(self.gone(&e))),
            }
        }
    }

    /// A failed request as the caller sees it.
    pub(super) fn failure(&self, e: Asked) -> StoreError {
        match e {
            Asked::Gone(why) => self.gone(&io::Error::other(why)),
            Asked::Busy(why) => StoreError::Read(ReadError::Served(format!("{why}: try again"))),
            Asked::Failed(e) => e,
        }
    }

    pub(super) fn gone(&self, e: &io::Error) -> StoreError {
        StoreError::Read(ReadError::Unanswered {
            path: self.store.display().to_string(),
            holder: Some(format!("process {}", self.pid)),
            why: format!("it stopped answering: {e}"),
        })
    }

    fn unexpected(&self, reply: Reply) -> StoreError {
        StoreError::Read(ReadError::Unanswered {
            path: self.store.display().to_string(),
            holder: Some(format!("process {}", self.pid)),
            why: format!("an unexpected answer: {reply:?}"),
        })
    }
}

/// Why a request to the holder got no answer.
pub(super) enum Asked {
    /// The holder no longer listens, is closing the store, or dropped the
    /// connection (it ended): whoever asked may go on with the next holder,
    /// or open the store.
    Gone(String),
    /// The request failed (the holder's error, or it stopped mid-answer).
    Failed(StoreError),
    /// The holder answers as many requests as it will: ask again shortly.
    Busy(String),
}

/// `attempt`'s outcome once it is not `busy`: after each busy one, a
/// pause that doubles from [`BUSY_PAUSE`] up to [`BUSY_PAUSE_MAX`], at most
/// [`BUSY_RETRIES`] times; then the last attempt's, busy or not.
fn until_not_busy<R>(mut attempt: impl FnMut() -> R, busy: impl Fn(&R) -> bool) -> R {
    let mut pause = BUSY_PAUSE;
    for _ in 0..BUSY_RETRIES {
        let outcome = attempt();
        if !busy(&outcome) {
            return outcome;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(BUSY_PAUSE_MAX);
    }
    attempt()
}

/// How often a request the holder is too busy to take is sent again.
const BUSY_RETRIES: u32 = 40;
/// The first pause before sending it again; each later one doubles.
const BUSY_PAUSE: Duration = Duration::from_millis(5);
/// The longest pause (40 tries: about 9 s in all).
const BUSY_PAUSE_MAX: Duration = Duration::from_millis(250);

/// Whether `e` is a connection the other side dropped (rather than one
/// that timed out or carried a bad frame).
fn dropped(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
    )
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
    /// Made by the holder's writer; an error naming the holder when it is
    /// gone (a [`SharedStore`](crate::SharedStore) goes on with the next
    /// one instead).
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, AppendError> {
        match self.ask_append(session, expected, &events) {
            Ok(answer) => answer,
            Err(Asked::Gone(why)) => Err(self.gone(&io::Error::other(why)).into_append()),
            Err(e) => Err(self.failure(e).into_append()),
        }
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, ReadError>> + '_>, ReadError> {
        let events = self
            .ask_read(session, from)
            .map_err(|e| self.failure(e))
            .map_err(StoreError::into_read)?;
        Ok(Box::new(
            events.map(|e| e.map_err(|e| self.failure(e).into_read())),
        ))
    }

    fn head(&self, session: SessionId) -> Result<Seq, ReadError> {
        self.ask_head(session)
            .map_err(|e| self.failure(e))
            .map_err(StoreError::into_read)
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, ReadError> {
        self.ask_sessions()
            .map_err(|e| self.failure(e))
            .map_err(StoreError::into_read)
    }
}

/// The events of one `Read`, as they arrive; ends at `End` or the first error.
pub(super) struct RemoteRead {
    pub(super) log: RemoteLog,
    reply: BufReader<UnixStream>,
    /// The first reply, read when the request was made.
    first: Option<Reply>,
    done: bool,
}

impl Iterator for RemoteRead {
    type Item = Result<Envelope, Asked>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let reply = match self.first.take() {
            Some(first) => Ok(first),
            None => self.log.next(&mut self.reply),
        };
        let item = match reply {
            Ok(Reply::Event(e)) => return Some(Ok(*e)),
            Ok(Reply::End) => None,
            Ok(other) => Some(Err(Asked::Failed(self.log.unexpected(other)))),
            Err(e) => Some(Err(e)),
        };
        self.done = true;
        item
    }
}
