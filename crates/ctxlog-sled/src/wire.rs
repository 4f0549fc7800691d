//! How another process talks to the process that holds a store (`serve.rs`
//! answers, `remote.rs` asks): a Unix socket named [`SOCKET`] in the store
//! directory, one request per connection, every message a frame (a
//! little-endian `u32` length, then the value in ctxlog's binary codec).
//! Reads and appends both go this way.

use ctxlog_store::{AppendError, BackendError, Expected};
use ctxlog_store::{Appended, NewEvent};

use ctxlog_core::codec::{self, MAX_ENCODED_BYTES};
use ctxlog_core::{Envelope, EventId, Seq, SessionId};
use ctxlog_store::backend::KINDS;
use ctxlog_store::{VerifyError, VerifyReport};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The socket's file name inside the store directory.
pub(crate) const SOCKET: &str = "owner.sock";

/// The protocol's version; both sides must speak the same one (2: appends).
pub(crate) const VERSION: u32 = 2;

/// Longest frame either side accepts: one record at the codec's limit, with
/// room for its framing.
const MAX_FRAME: u64 = MAX_ENCODED_BYTES + 4096;

/// What another process asks of the holder.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Request {
    /// Who serves this store, and which protocol version.
    Hello,
    /// Every session with its durable head.
    Sessions,
    /// One session's durable head.
    Head(SessionId),
    /// A session's events from a seq up to its durable head.
    Read(SessionId, Seq),
    /// A store-wide verification.
    Verify,
    /// An append, made by the holder's own writer: answered once it is
    /// durable (`Appended`), or refused (`Refused`).
    Append(WireAppend),
}

/// An append as it travels.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireAppend {
    pub(crate) session: SessionId,
    pub(crate) expected: Expected,
    pub(crate) events: Vec<NewEvent>,
}

/// Why the holder refused an append, as it travels: the refusals a caller
/// acts on keep their kind; any other failure is its message.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum WireRefusal {
    WrongExpectedVersion {
        session: SessionId,
        expected: Expected,
        actual: Seq,
    },
    IdConflict {
        id: EventId,
        session: SessionId,
        seq: Seq,
    },
    PartialDuplicate {
        id: EventId,
    },
    EmptyAppend,
    Poisoned(String),
    Other(String),
}

impl From<&AppendError> for WireRefusal {
    fn from(e: &AppendError) -> Self {
        match e {
            AppendError::WrongExpectedVersion {
                session,
                expected,
                actual,
            } => WireRefusal::WrongExpectedVersion {
                session: *session,
                expected: *expected,
                actual: *actual,
            },
            AppendError::IdConflict { id, session, seq } => WireRefusal::IdConflict {
                id: *id,
                session: *session,
                seq: *seq,
            },
            AppendError::PartialDuplicate { id } => WireRefusal::PartialDuplicate { id: *id },
            AppendError::EmptyAppend => WireRefusal::EmptyAppend,
            AppendError::Poisoned(why) => WireRefusal::Poisoned(why.clone()),
            other => WireRefusal::Other(other.to_string()),
        }
    }
}

impl From<WireRefusal> for AppendError {
    fn from(e: WireRefusal) -> Self {
        match e {
            WireRefusal::WrongExpectedVersion {
                session,
                expected,
                actual,
            } => AppendError::WrongExpectedVersion {
                session,
                expected,
                actual,
            },
            WireRefusal::IdConflict { id, session, seq } => {
                AppendError::IdConflict { id, session, seq }
            }
            WireRefusal::PartialDuplicate { id } => AppendError::PartialDuplicate { id },
            WireRefusal::EmptyAppend => AppendError::EmptyAppend,
            WireRefusal::Poisoned(why) => AppendError::Poisoned(why),
            WireRefusal::Other(why) => AppendError::Backend(BackendError::new(why)),
        }
    }
}

/// Where an append landed, as it travels.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireAppended {
    first: Seq,
    last: Seq,
    duplicate: bool,
}

impl From<&Appended> for WireAppended {
    fn from(a: &Appended) -> Self {
        WireAppended {
            first: a.first,
            last: a.last,
            duplicate: a.duplicate,
        }
    }
}

impl WireAppended {
    /// The append's place in `session`.
    pub(crate) fn of(self, session: SessionId) -> Appended {
        Appended {
            session,
            first: self.first,
            last: self.last,
            duplicate: self.duplicate,
        }
    }
}

/// The owner's answer; a `Read` is answered by `Event`s then `End`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Reply {
    /// The serving process and its protocol version.
    Hello {
        /// [`VERSION`] of the server.
        version: u32,
        /// The event schema it encodes envelopes with.
        schema: u16,
        /// Its process id.
        pid: u32,
    },
    /// Sessions with their durable heads, in session-id order.
    Sessions(Vec<(SessionId, Seq)>),
    /// A durable head.
    Head(Seq),
    /// One event of a `Read`.
    Event(Box<Envelope>),
    /// The end of a `Read`.
    End,
    /// Sent while a long request runs, so the reader knows the owner lives.
    Working,
    /// The outcome of a `Verify`.
    Verify(WireReport),
    /// The store is closing: its holder lets go of it shortly.
    Closing,
    /// The request failed; the owner's error message.
    Failed(String),
    /// The owner answers as many requests as it will at once: the request
    /// was not served, and may be sent again shortly.
    Busy(String),
    /// An append is durable, here.
    Appended(WireAppended),
    /// An append was refused or failed; nothing of it is stored unless
    /// the refusal says the outcome is unknown (a poisoned store).
    Refused(WireRefusal),
}

/// A [`VerifyReport`] as it travels.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireReport {
    sessions: u64,
    events: u64,
    heads: BTreeMap<SessionId, Seq>,
    errors: Vec<WireError>,
}

/// A [`VerifyError`] as it travels (its kind by name).
#[derive(Debug, Serialize, Deserialize)]
struct WireError {
    kind: String,
    session: Option<SessionId>,
    seq: Option<Seq>,
    file: Option<String>,
    offset: Option<u64>,
    detail: String,
}

impl From<&VerifyReport> for WireReport {
    fn from(r: &VerifyReport) -> Self {
        WireReport {
            sessions: r.sessions,
            events: r.events,
            heads: r.heads.clone(),
            errors: r
                .errors
                .iter()
                .map(|e| WireError {
                    kind: e.kind.to_string(),
                    session: e.session,
                    seq: e.seq,
                    file: e.file.clone(),
                    offset: e.offset,
                    detail: e.detail.clone(),
                })
                .collect(),
        }
    }
}

impl From<WireReport> for VerifyReport {
    fn from(r: WireReport) -> Self {
        VerifyReport {
            sessions: r.sessions,
            events: r.events,
            heads: r.heads,
            errors: r
                .errors
                .into_iter()
                .map(|e| {
                    // A kind this build does not know keeps its words in the detail.
                    let (kind, detail) = match KINDS.iter().find(|k| **k == e.kind) {
                        Some(k) => (*k, e.detail),
                        None => ("record", format!("({}) {}", e.kind, e.detail)),
                    };
                    VerifyError {
                        kind,
                        session: e.session,
                        seq: e.seq,
                        file: e.file,
                        offset: e.offset,
                        detail,
                    }
                })
                .collect(),
        }
    }
}

/// Writes one frame.
pub(crate) fn write_frame<T: Serialize>(w: &mut impl Write, value: &T) -> io::Result<()> {
    let bytes = codec::encode(value).map_err(io::Error::other)?;
    let len = u32::try_from(bytes.len()).map_err(io::Error::other)?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&bytes)
}

/// Reads one frame; a frame longer than the limit is an error.
pub(crate) fn read_frame<T: DeserializeOwned>(r: &mut impl Read) -> io::Result<T> {
    read_frame_upto(r, MAX_FRAME)
}

/// Reads one frame of at most `max` bytes. Its buffer grows with what
/// arrives, never with what the length announces.
fn read_frame_upto<T: DeserializeOwned>(r: &mut impl Read, max: u64) -> io::Result<T> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u64::from(u32::from_le_bytes(len));
    if len > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes (at most {max})"),
        ));
    }
    let mut bytes = Vec::new();
    r.take(len).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    codec::decode(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Longest request a server reads: an append of a batch of records up to
/// the codec's limit.
pub(crate) const MAX_REQUEST: u64 = MAX_FRAME;

/// Longest request but an append (a read asks in a few dozen bytes).
const MAX_SMALL_REQUEST: u64 = 4096;

/// The first byte of an append's frame: its variant's index in
/// [`Request`] (the codec writes a small index as one byte).
const APPEND_VARIANT: u8 = 5;

/// The most bytes of appends a server reads at once, all connections
/// together: a request past it is told the server is busy (and sent
/// again), so that many large appends at once never take more memory than
/// one of the largest.
const APPENDS_IN_FLIGHT: u64 = MAX_REQUEST;

/// Bytes of appends being read or answered now (see [`APPENDS_IN_FLIGHT`]).
static IN_FLIGHT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The slowest a request's bytes may come, in bytes a second, once its
/// length is known: a large append gets time in proportion.
const REQUEST_RATE: u64 = 32 << 20;

/// A request read whole, and the share of [`APPENDS_IN_FLIGHT`] it holds
/// until it is dropped (after its answer).
pub(crate) struct Incoming {
    pub(crate) request: Request,
    _held: InFlight,
}

/// A share of [`APPENDS_IN_FLIGHT`], given back when dropped.
struct InFlight(u64);

impl InFlight {
    /// `bytes` of the budget, or `None` when the server reads as many as
    /// it will.
    fn take(bytes: u64) -> Option<InFlight> {
        use std::sync::atomic::Ordering;
        let mut now = IN_FLIGHT.load(Ordering::SeqCst);
        loop {
            let next = now.checked_add(bytes).filter(|n| *n <= APPENDS_IN_FLIGHT)?;
            match IN_FLIGHT.compare_exchange(now, next, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Some(InFlight(bytes)),
                Err(seen) => now = seen,
            }
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(self.0, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Why a request was not read.
pub(crate) enum Unread {
    /// The server reads as many appends as it will: say so (the request is
    /// sent again).
    Busy(String),
    /// It did not arrive whole in time, or is not a request.
    Bad(io::Error),
}

impl From<io::Error> for Unread {
    fn from(e: io::Error) -> Self {
        Unread::Bad(e)
    }
}

/// Reads a request from `stream`: its length and kind by `deadline`, then
/// its bytes by `deadline` plus the time they take at [`REQUEST_RATE`],
/// however slowly they come (a deadline for the request, not for each
/// read). Only an append may be longer than [`MAX_SMALL_REQUEST`], and the
/// appends being read at once stay within [`APPENDS_IN_FLIGHT`].
pub(crate) fn read_request(stream: &UnixStream, deadline: Instant) -> Result<Incoming, Unread> {
    let mut reader = DeadlineReader { stream, deadline };
    let mut head = [0u8; 5];
    reader.read_exact(&mut head)?;
    let len = u64::from(u32::from_le_bytes([head[0], head[1], head[2], head[3]]));
    let limit = if head[4] == APPEND_VARIANT {
        MAX_REQUEST
    } else {
        MAX_SMALL_REQUEST
    };
    if len == 0 || len > limit {
        return Err(Unread::Bad(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a request of {len} bytes (at most {limit})"),
        )));
    }
    let held = match InFlight::take(if len > MAX_SMALL_REQUEST { len } else { 0 }) {
        Some(held) => held,
        None => {
            return Err(Unread::Busy(format!(
                "{} MiB of appends are being read",
                APPENDS_IN_FLIGHT >> 20
            )))
        }
    };
    reader.deadline += std::time::Duration::from_millis(len * 1000 / REQUEST_RATE);
    let mut bytes = vec![head[4]];
    (&mut reader).take(len - 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != len {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
    }
    let request =
        codec::decode(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok(Incoming {
        request,
        _held: held,
    })
}

/// Whether the holder takes `request` (at most [`MAX_ENCODED_BYTES`]
/// encoded): a batch too large to send is refused before it is sent.
pub(crate) fn fits(request: &Request) -> bool {
    codec::encoded_len(request) <= MAX_ENCODED_BYTES
}

/// Reads from a stream until a deadline.
struct DeadlineReader<'a> {
    stream: &'a UnixStream,
    deadline: Instant,
}

impl Read for DeadlineReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        (&mut &*self.stream).read(buf)
    }
}

/// The address of a store's socket. A Unix socket path is limited to 107
/// bytes, so a longer one goes through the process's descriptor of the
/// store directory (`/proc/self/fd/N/owner.sock`), kept open with it.
pub(crate) struct SocketPath {
    /// What to bind or connect to.
    pub(crate) path: PathBuf,
    /// The store directory when `path` goes through it.
    _dir: Option<File>,
}

impl SocketPath {
    /// The socket address of the store at `store`.
    pub(crate) fn of(store: &Path) -> io::Result<SocketPath> {
        let direct = store.join(SOCKET);
        if direct.as_os_str().len() < 100 {
            return Ok(SocketPath {
                path: direct,
                _dir: None,
            });
        }
        let dir = File::open(store)?;
        Ok(SocketPath {
            path: PathBuf::from(format!("/proc/self/fd/{}/{SOCKET}", dir.as_raw_fd())),
            _dir: Some(dir),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An append's frame starts with the byte the server reads it by.
    #[test]
    fn an_append_is_known_by_its_first_byte() {
        let append = Request::Append(WireAppend {
            session: SessionId(uuid::Uuid::nil()),
            expected: Expected::Any,
            events: Vec::new(),
        });
        assert_eq!(codec::encode(&append).unwrap()[0], APPEND_VARIANT);
        for small in [Request::Hello, Request::Sessions, Request::Verify] {
            assert_ne!(codec::encode(&small).unwrap()[0], APPEND_VARIANT);
        }
    }
}
