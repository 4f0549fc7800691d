//! What the server keeps current: every session's line of the list, read
//! again only when its head moves, and the pages open in browsers, told of
//! each move over server-sent events.
//!
//! One thread watches the log ([`Live::watch`]): woken by the log's
//! subscription (an append this process serves, or PostgreSQL's
//! notification), else every [`POLL`], it compares the heads (each
//! session's and its description stream's: a hook's capture, a new
//! title), reads the lines of the sessions that moved, brings the search index up to the
//! log, and sends one `heads` event to every open page. Each page's
//! stream has a thread of its own and a short queue: a page that stops
//! reading loses its stream, never slows the others.

use crate::Shared;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use ctxlog_app::logs::AnyLog;
use ctxlog_app::sessions::{self, Listed};
use ctxlog_core::{description_stream, is_description_stream, SessionId};
use ctxlog_store::EventLog;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

/// How often the heads are looked at when the log does not ring (another
/// process holds the store): a step appears on an open page well within a
/// second.
pub(crate) const POLL: Duration = Duration::from_millis(250);

/// How long the watcher waits on a log that rings before it looks anyway.
const RING_WAIT: Duration = Duration::from_secs(1);

/// How often a live session's line is read again though its head did not
/// move (its agent may have ended).
const LIVE_RECHECK: Duration = Duration::from_secs(5);

/// A comment sent on a quiet stream, so a page that went away is noticed.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The most pages open at once; more are answered 503.
pub(crate) const MAX_STREAMS: usize = 32;

/// Events a page's stream holds unsent before it is dropped.
const STREAM_QUEUE: usize = 16;

/// Lines read before the pages are told, while the list is first read.
const LOAD_BATCH: usize = 256;

/// The sessions named one by one in a `heads` event; past that, the event
/// says `many`.
const NAMED_CHANGES: usize = 100;

/// Every session's line, as the watcher last read it.
#[derive(Debug, Default)]
pub(crate) struct Rows {
    /// Every session has been read at least once.
    pub complete: bool,
    /// Moves on every change the pages are told of.
    pub version: u64,
    /// Each session's line, and the heads it was read at.
    pub lines: BTreeMap<SessionId, Line>,
    /// Why the last look at the log failed, while it fails.
    pub trouble: Option<String>,
}

/// A session's line of the list, and the heads it was read at.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    /// The session's head.
    pub head: u64,
    /// Its description stream's head (a new title, a capture by a hook).
    pub described: u64,
    /// The line.
    pub listed: Listed,
}

/// Where a session is: its head and its description stream's.
type Heads = (u64, u64);

/// The kept lines and the open streams.
#[derive(Debug, Default)]
pub(crate) struct Live {
    rows: RwLock<Rows>,
    streams: Mutex<Vec<Sender<Arc<str>>>>,
}

impl Live {
    /// Reads the kept lines.
    pub fn rows<T>(&self, read: impl FnOnce(&Rows) -> T) -> T {
        read(&self.rows.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn rows_mut(&self) -> std::sync::RwLockWriteGuard<'_, Rows> {
        self.rows.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Watches `shared`'s log for ever (the watcher thread's body).
    pub fn watch(shared: &Shared) {
        let live = &shared.live;
        let mut ring = shared.log.subscribe();
        let mut rechecked = Instant::now();
        loop {
            match live.look(&shared.log) {
                Ok(changed) => {
                    let recheck = rechecked.elapsed() >= LIVE_RECHECK;
                    if recheck {
                        rechecked = Instant::now();
                    }
                    let mut changed = changed;
                    if recheck {
                        changed.extend(live.recheck_live(&shared.log));
                    }
                    if !changed.is_empty() {
                        for (s, _) in &changed {
                            crate::pages::remake_if_open(shared, *s);
                        }
                        live.tell(&changed);
                        shared.bring_index_up();
                    }
                }
                Err(why) => {
                    tracing::warn!("ctxlog serve: the log could not be read: {why}");
                    let first = live.rows_mut().trouble.replace(why).is_none();
                    if first {
                        live.tell(&[]);
                    }
                    std::thread::sleep(RING_WAIT);
                }
            }
            if ring.is_none() {
                ring = shared.log.subscribe();
            }
            match &ring {
                Some(sub) => {
                    let _ = sub.recv_timeout(RING_WAIT);
                }
                None => std::thread::sleep(POLL),
            }
        }
    }

    /// Compares the log's heads with the kept ones and reads the lines of
    /// the sessions that moved (in batches while the list is first read,
    /// telling the pages after each); what moved, with its head.
    fn look(&self, log: &AnyLog) -> Result<Vec<(SessionId, u64)>, String> {
        let heads = heads(log)?;
        let moved: Vec<(SessionId, Heads)> = self.rows(|rows| {
            heads
                .iter()
                .filter(|(s, at)| {
                    rows.lines
                        .get(s)
                        .is_none_or(|l| (l.head, l.described) != **at)
                })
                .map(|(s, at)| (*s, *at))
                .collect()
        });
        let first = !self.rows(|r| r.complete);
        let moved: Vec<(SessionId, u64)> = moved
            .chunks(LOAD_BATCH)
            .flat_map(|batch| {
                let read: Vec<(SessionId, Line)> = batch
                    .iter()
                    .map(|&(s, (head, described))| {
                        let listed = sessions::row(log, s, head);
                        (
                            s,
                            Line {
                                head,
                                described,
                                listed,
                            },
                        )
                    })
                    .collect();
                let told: Vec<(SessionId, u64)> = read.iter().map(|(s, l)| (*s, l.head)).collect();
                self.rows_mut().lines.extend(read);
                if first && heads.len() > LOAD_BATCH {
                    self.tell(&told);
                }
                told
            })
            .collect();
        let mut rows = self.rows_mut();
        let before = rows.lines.len();
        rows.lines.retain(|s, _| heads.contains_key(s));
        let trouble_over = rows.trouble.take().is_some();
        let gone = before != rows.lines.len();
        let now_complete = !rows.complete;
        rows.complete = true;
        drop(rows);
        if (gone || trouble_over || now_complete) && moved.is_empty() {
            self.tell(&[]);
        }
        Ok(moved)
    }

    /// Reads again the lines of live sessions (their agent may have ended
    /// since); those whose line changed.
    fn recheck_live(&self, log: &AnyLog) -> Vec<(SessionId, u64)> {
        let live: Vec<(SessionId, u64)> = self.rows(|rows| {
            rows.lines
                .iter()
                .filter(|(_, l)| matches!(&l.listed, Listed::Row(r) if r.live))
                .map(|(s, l)| (*s, l.head))
                .collect()
        });
        let mut changed = Vec::new();
        for (s, head) in live {
            let listed = sessions::row(log, s, head);
            let mut rows = self.rows_mut();
            if let Some(line) = rows.lines.get_mut(&s).filter(|l| l.listed != listed) {
                line.listed = listed;
                changed.push((s, head));
            }
        }
        changed
    }

    /// Tells every open page that `changed` moved (one `heads` event).
    fn tell(&self, changed: &[(SessionId, u64)]) {
        let version = {
            let mut rows = self.rows_mut();
            rows.version += 1;
            rows.version
        };
        let named: Vec<serde_json::Value> = changed
            .iter()
            .take(NAMED_CHANGES)
            .map(|(s, head)| serde_json::json!({ "session": s.to_string(), "head": head }))
            .collect();
        let data = serde_json::json!({
            "version": version,
            "changed": named,
            "many": changed.len() > NAMED_CHANGES,
        });
        let message: Arc<str> = Arc::from(format!("event: heads\ndata: {data}\n\n"));
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        streams.retain(|tx| match tx.try_send(message.clone()) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => false,
        });
    }

    /// Takes a page's stream, writing to `writer` on a thread of its own;
    /// gives the writer back when [`MAX_STREAMS`] are open.
    pub fn open_stream(&self, writer: Box<dyn Write + Send>) -> Result<(), Box<dyn Write + Send>> {
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        if streams.len() >= MAX_STREAMS {
            return Err(writer);
        }
        let (tx, rx) = crossbeam_channel::bounded(STREAM_QUEUE);
        let version = self.rows(|r| r.version);
        let spawned = std::thread::Builder::new()
            .name("ctxlog-serve-stream".into())
            .spawn(move || stream(writer, &rx, version));
        if spawned.is_ok() {
            streams.push(tx);
        }
        Ok(())
    }
}

/// Every session of `log` with its head and its description stream's
/// (0 when it has none).
fn heads(log: &AnyLog) -> Result<BTreeMap<SessionId, Heads>, String> {
    let all: BTreeMap<SessionId, u64> = log
        .sessions()
        .map_err(|e| e.to_string())?
        .into_iter()
        .collect();
    Ok(all
        .iter()
        .filter(|(s, _)| !is_description_stream(**s))
        .map(|(s, head)| {
            let described = all.get(&description_stream(*s)).copied().unwrap_or(0);
            (*s, (*head, described))
        })
        .collect())
}

/// Writes a page's stream: the head, the version the page may have missed,
/// then each event as it comes and a comment when quiet; ends when the
/// page goes away or the stream is dropped.
fn stream(mut writer: Box<dyn Write + Send>, events: &Receiver<Arc<str>>, version: u64) {
    let opening = format!(
        "{}retry: 1000\n\nevent: hello\ndata: {{\"version\":{version}}}\n\n",
        crate::reply::event_stream_head()
    );
    let mut send = |text: &str| {
        writer
            .write_all(text.as_bytes())
            .and_then(|()| writer.flush())
    };
    if send(&opening).is_err() {
        return;
    }
    loop {
        let sent = match events.recv_timeout(KEEPALIVE) {
            Ok(message) => send(&message),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => send(": quiet\n\n"),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
        };
        if sent.is_err() {
            return;
        }
    }
}
