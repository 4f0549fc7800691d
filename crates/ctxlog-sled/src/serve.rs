//! Serves an open store to other processes. sled lets one process open a
//! store, so the process that holds it answers for it: a thread accepts
//! connections on the store's socket (`wire.rs`) and answers each on a
//! thread of its own. Reads get what is durable — every session up to its
//! durable head, so a reader is at most one commit behind the writer and
//! never sees an event a crash could still take back. Appends go to the
//! holder's own writer, with its guarantees (checked against the expected
//! head, idempotent on retry, acknowledged once durable), so every process
//! writes the store and one process holds it.
//!
//! A request in progress holds the store open: a process that drops its last
//! handle while a reader streams a session closes the store when that
//! stream ends.

use crate::pace::{self, Pace};
use ctxlog_store::EventLog;
use ctxlog_store::StoreError;

use crate::wire::{
    read_request, write_frame, Reply, Request, SocketPath, Unread, WireAppend, WireAppended,
    WireRefusal, WireReport, VERSION,
};
use crate::{os, private};
use crossbeam_channel::{bounded, RecvTimeoutError};
use ctxlog_core::{Seq, SessionId, EVENT_SCHEMA_VERSION};
use ctxlog_store::VerifyReport;
use std::collections::BTreeMap;
use std::fs::Permissions;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the server needs of the store it answers for (the sled store's
/// handle; a trait so that this module does not depend on it).
pub(crate) trait Holder: EventLog + 'static {
    /// The last seq of `session` known to be on disk.
    fn durable_head(&self, session: SessionId) -> Seq;
    /// Every session with its durable head.
    fn durable_heads(&self) -> BTreeMap<SessionId, Seq>;
    /// A store-wide verification whose scan calls `pace` between chunks.
    fn verify_paced(&self, pace: &mut dyn FnMut()) -> Result<VerifyReport, StoreError>;
    /// Events the writer has committed so far.
    fn writer_progress(&self) -> u64;
}

/// Gives the store a request is answered from, or `None` once it is closing.
type Open<S> = Arc<dyn Fn() -> Option<S> + Send + Sync>;

/// Most requests a process answers at once; more are told it is busy.
const MAX_CONNECTIONS: usize = 64;

/// Most requests answered at once for one process: a client that opens
/// many connections (or stalls them) cannot take every slot.
const MAX_PER_PEER: usize = 8;

/// The nice value of the threads that answer readers (the writer keeps 0):
/// under contention for the cores the scheduler weighs the writer about
/// 28 times a reader (CFS weights 1024 and 36).
pub(crate) const READER_NICE: i32 = 15;

/// How long a connection may take to send its whole request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a reader may leave a reply unread before the owner gives up on
/// it (a paused reader must not hold the store open for ever).
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// How often a long request tells the reader it is still being worked on.
const WORKING_EVERY: Duration = Duration::from_millis(500);

/// The serving thread of one open store; dropping it stops serving and
/// removes the socket.
pub(crate) struct Server {
    addr: SocketPath,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on the socket of the store at `store` (replacing a socket a
    /// killed owner left: this process holds sled's lock, so no other
    /// process serves it).
    pub(crate) fn start<S: Holder>(
        store: &Path,
        open: impl Fn() -> Option<S> + Send + Sync + 'static,
    ) -> io::Result<Server> {
        let open: Open<S> = Arc::new(open);
        let addr = SocketPath::of(store)?;
        if std::fs::symlink_metadata(&addr.path).is_ok_and(|m| m.file_type().is_socket()) {
            std::fs::remove_file(&addr.path)?;
        }
        let listener = UnixListener::bind(&addr.path)?;
        // Private whatever the umask; only the owner and root are answered.
        std::fs::set_permissions(&addr.path, Permissions::from_mode(private::FILE_MODE))?;
        let owner = private::owner(store)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let acceptor = std::thread::Builder::new()
            .name("ctxlog-serve".into())
            .spawn(move || accept(&listener, &stopping, owner, &open))?;
        Ok(Server {
            addr,
            stop,
            acceptor: Some(acceptor),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // A connection wakes the acceptor to see the flag; when none can be
        // made the thread is left to end at its next connection.
        let woke = UnixStream::connect(&self.addr.path).is_ok();
        if let Some(acceptor) = self.acceptor.take().filter(|_| woke) {
            let _ = acceptor.join();
        }
        let _ = std::fs::remove_file(&self.addr.path);
    }
}

/// Requests being answered by the stores of this process.
static ANSWERING: AtomicUsize = AtomicUsize::new(0);

/// Requests being answered per peer process.
static PER_PEER: Mutex<BTreeMap<u32, usize>> = Mutex::new(BTreeMap::new());

/// Holds a slot (one of [`MAX_CONNECTIONS`], one of its peer's
/// [`MAX_PER_PEER`]) while a request is answered.
struct Answering {
    pid: u32,
}

impl Answering {
    /// A slot for a request from process `pid`, or why there is none.
    fn take(pid: u32) -> Result<Answering, String> {
        let mut per_peer = PER_PEER.lock().unwrap_or_else(PoisonError::into_inner);
        let mine = per_peer.get(&pid).copied().unwrap_or(0);
        if mine >= MAX_PER_PEER {
            return Err(format!(
                "process {pid} already has {MAX_PER_PEER} requests being answered"
            ));
        }
        if ANSWERING.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            ANSWERING.fetch_sub(1, Ordering::SeqCst);
            return Err(format!("{MAX_CONNECTIONS} readers are being served"));
        }
        per_peer.insert(pid, mine + 1);
        Ok(Answering { pid })
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        let mut per_peer = PER_PEER.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = per_peer.get_mut(&self.pid) {
            *n -= 1;
            if *n == 0 {
                per_peer.remove(&self.pid);
            }
        }
        ANSWERING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Lowers the CPU priority of the calling thread to that of the threads
/// that answer readers: for a process that reads a store another process
/// writes (through [`SharedStore`](crate::SharedStore) when it is served), so that its
/// work on what it reads never takes the cores from the writer. Best
/// effort: a failure is only logged.
pub fn yield_to_writer() {
    if let Err(e) = os::lower_thread_priority(READER_NICE) {
        tracing::debug!("cannot lower this thread's priority: {e}");
    }
}

/// Waits until the stores of this process answer no other process's
/// request, for at most `timeout`; whether they do not. A short-lived
/// process that opened a store (a read command) calls it before it exits,
/// so that a reader it serves is not cut off mid-answer; a store whose last
/// handle is gone closes once its answers end, and takes no new ones.
pub fn wait_for_readers(timeout: Duration) -> bool {
    let started = std::time::Instant::now();
    while ANSWERING.load(Ordering::SeqCst) > 0 {
        if started.elapsed() >= timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

fn accept<S: Holder>(listener: &UnixListener, stop: &AtomicBool, owner: u32, open: &Open<S>) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut stream) = conn else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        // Only the store's owner and root are answered: a store holds
        // people's prompts and secrets.
        let peer = match os::peer(&stream) {
            Ok(p) if private::may_read(p.uid, owner) => p,
            Ok(p) => {
                tracing::warn!(
                    uid = p.uid,
                    pid = p.pid,
                    "refused a reader that is not the store's owner"
                );
                continue;
            }
            Err(e) => {
                tracing::warn!("refused a reader whose credentials cannot be read: {e}");
                continue;
            }
        };
        let slot = match Answering::take(peer.pid) {
            Ok(slot) => slot,
            Err(busy) => {
                let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
                let _ = write_frame(&mut stream, &Reply::Busy(busy));
                continue;
            }
        };
        let open = open.clone();
        let spawned = std::thread::Builder::new()
            .name("ctxlog-serve-reader".into())
            .spawn(move || {
                let _slot = slot;
                answer(&stream, &open);
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start a thread to answer a reader: {e}");
        }
    }
}

/// Reads one request from `stream` and answers it.
fn answer<S: Holder>(stream: &UnixStream, open: &Open<S>) {
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let incoming = match read_request(stream, Instant::now() + REQUEST_TIMEOUT) {
        Ok(incoming) => incoming,
        Err(Unread::Busy(why)) => {
            let _ = write_frame(&mut &*stream, &Reply::Busy(why));
            return;
        }
        Err(Unread::Bad(e)) => {
            tracing::debug!("a request that does not read: {e}");
            return;
        }
    };
    let request = incoming.request;
    // A reader never takes the cores from the writer; an append is the
    // writer's own work.
    if !matches!(request, Request::Append(_)) {
        if let Err(e) = os::lower_thread_priority(READER_NICE) {
            tracing::debug!("cannot lower a reader thread's priority: {e}");
        }
    }
    let mut out = BufWriter::new(stream);
    let answered = match open() {
        Some(store) => reply(&store, request, &mut out),
        None => write_frame(&mut out, &Reply::Closing),
    };
    if let Err(e) = answered.and_then(|()| out.flush()) {
        tracing::debug!("a reader went away: {e}");
    }
}

fn reply(store: &impl Holder, request: Request, out: &mut impl Write) -> io::Result<()> {
    let or_failed =
        |r: Result<Reply, StoreError>| r.unwrap_or_else(|e| Reply::Failed(e.to_string()));
    match request {
        Request::Hello => write_frame(
            out,
            &Reply::Hello {
                version: VERSION,
                schema: EVENT_SCHEMA_VERSION,
                pid: std::process::id(),
            },
        ),
        Request::Sessions => write_frame(
            out,
            &or_failed(durable_sessions(store).map(Reply::Sessions)),
        ),
        Request::Head(session) => {
            let head = store
                .head(session)
                .map(|head| Reply::Head(head.min(store.durable_head(session))))
                .map_err(StoreError::from);
            write_frame(out, &or_failed(head))
        }
        Request::Read(session, from) => read(store, session, from, out),
        Request::Verify => verify(store, out),
        Request::Append(append) => {
            let WireAppend {
                session,
                expected,
                events,
            } = append;
            let reply = match store.append(session, expected, events) {
                Ok(appended) => Reply::Appended(WireAppended::from(&appended)),
                Err(e) => Reply::Refused(WireRefusal::from(&e)),
            };
            write_frame(out, &reply)
        }
    }
}

/// Every session with its durable head; a session not durable yet is left
/// out, one the witness vouches for but sled lost whole is listed at 0.
fn durable_sessions(store: &impl Holder) -> Result<Vec<(SessionId, Seq)>, StoreError> {
    let durable = store.durable_heads();
    let listed = store.sessions()?;
    Ok(listed
        .into_iter()
        .filter_map(|(s, head)| match durable.get(&s) {
            Some(d) => Some((s, head.min(*d))),
            None => (head == 0).then_some((s, 0)),
        })
        .collect())
}

/// Streams a session's events up to its durable head, then `End`; an error
/// ends the stream. Events are read a chunk per turn ([`Pace`]); frames
/// are written between turns.
fn read(
    store: &impl Holder,
    session: SessionId,
    from: Seq,
    out: &mut impl Write,
) -> io::Result<()> {
    let last = store.durable_head(session);
    let progress = || store.writer_progress();
    let mut pace = Pace::new(&progress);
    let mut events = match store.read(session, from) {
        Ok(events) => events,
        Err(e) => return write_frame(out, &Reply::Failed(e.to_string())),
    };
    let mut chunk = Vec::with_capacity(pace::CHUNK);
    loop {
        chunk.extend(events.by_ref().take(pace::CHUNK));
        pace.pause();
        let done = chunk.len() < pace::CHUNK;
        for item in chunk.drain(..) {
            match item {
                Ok(e) if e.seq > last => return write_frame(out, &Reply::End),
                Ok(e) => write_frame(out, &Reply::Event(Box::new(e)))?,
                Err(e) => return write_frame(out, &Reply::Failed(e.to_string())),
            }
        }
        if done {
            return write_frame(out, &Reply::End);
        }
        pace.next_turn();
    }
}

/// Verifies (its end in the committer), telling the reader every
/// [`WORKING_EVERY`] that the owner is at it.
fn verify(store: &impl Holder, out: &mut impl Write) -> io::Result<()> {
    let (tx, rx) = bounded(1);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let progress = || store.writer_progress();
            let mut pace = Pace::new(&progress);
            let report = store.verify_paced(&mut || pace.next_turn());
            pace.pause();
            let _ = tx.send(report);
        });
        loop {
            match rx.recv_timeout(WORKING_EVERY) {
                Ok(Ok(report)) => {
                    return write_frame(out, &Reply::Verify(WireReport::from(&report)))
                }
                Ok(Err(e)) => return write_frame(out, &Reply::Failed(e.to_string())),
                Err(RecvTimeoutError::Timeout) => {
                    write_frame(out, &Reply::Working)?;
                    out.flush()?;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let stopped = "the verification stopped without a result".to_string();
                    return write_frame(out, &Reply::Failed(stopped));
                }
            }
        }
    })
}
