//! Live export: every selected session's new events, folded as they are
//! stored, their spans sent as soon as a pass over the log ends. A turn is
//! sent when the next one begins, or once its session has been quiet for
//! `idle` (what comes after it then goes in a turn span of its own: a span
//! once sent is never sent again with other content).
//!
//! Delivery is at least once and never holds up an import: the log is the
//! buffer. Requests wait in a bounded queue for the sending thread, which
//! retries with backoff for as long as the endpoint is away; when the
//! queue is full, reading the log pauses (and says so) until the endpoint
//! takes spans again. A request the endpoint refuses for good is dropped
//! and said, with its span count. Restarted, a follow exports its
//! sessions again from their start: the same ids, kept once by a receiver
//! that de-duplicates.

use crate::content::Content;
use crate::export::{speaker_of, Batcher, ExportError, Sink};
use crate::fold::TraceFold;
use crate::send::{Patience, Sender};
use crossbeam_channel::{bounded, Receiver, Sender as Tx, TrySendError};
use ctxlog_app::logs::AnyLog;
use ctxlog_core::{is_description_stream, SessionId};
use ctxlog_store::EventLog;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a follow runs.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    /// Whether texts go out.
    pub content: Content,
    /// A session quiet this long has its turn sent.
    pub idle: Duration,
    /// The longest wait between two looks at the log.
    pub poll: Duration,
    /// Requests waiting for the endpoint, at most.
    pub queue: usize,
    /// Only these sessions (`None`: every exportable one, new ones too).
    pub sessions: Option<Vec<SessionId>>,
    /// Only sessions with events at or after this time, ms.
    pub since: Option<u64>,
}

/// A session being followed.
struct Followed {
    fold: TraceFold,
    /// The next seq to read.
    next: u64,
    /// When its last new event was read.
    last_new: Instant,
}

/// Requests handed to the sending thread.
struct QueueSink {
    tx: Tx<(ExportTraceServiceRequest, usize)>,
    note: Arc<dyn Fn(&str) + Send + Sync>,
}

impl Sink for QueueSink {
    fn put(
        &mut self,
        request: &ExportTraceServiceRequest,
        spans: usize,
    ) -> Result<(), ExportError> {
        match self.tx.try_send((request.clone(), spans)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(item)) => {
                (self.note)(&format!(
                    "{} requests wait for the endpoint (the queue is full): reading the log pauses until it takes spans again; nothing is dropped",
                    self.tx.len()
                ));
                let _ = self.tx.send(item);
                Ok(())
            }
            Err(TrySendError::Disconnected(_)) => Err(ExportError::SenderGone),
        }
    }
}

/// The sending thread: each request until taken; one refused for good is
/// dropped and said.
fn send_loop(
    rx: Receiver<(ExportTraceServiceRequest, usize)>,
    sender: Sender,
    note: Arc<dyn Fn(&str) + Send + Sync>,
) {
    let patience = Patience {
        give_up_ms: None,
        ..Patience::default()
    };
    for (request, spans) in rx {
        let mut say = |m: &str| note(m);
        match sender.send(&request, patience, &mut say) {
            Ok(d) if d.rejected > 0 => note(&format!(
                "{}: {} of {spans} spans rejected: {}",
                sender.url(),
                d.rejected,
                d.message
            )),
            Ok(d) if d.attempts > 1 => note(&format!("{}: taken again", sender.url())),
            Ok(_) => {}
            Err(e) => note(&format!("dropped {spans} spans: {e}")),
        }
    }
}

/// Follows `log` until it closes, sending to `sender`; `note` hears what
/// happens (retries, pauses, drops).
pub fn follow(
    log: &AnyLog,
    options: &FollowOptions,
    sender: Sender,
    resource: Vec<(String, String)>,
    note: Arc<dyn Fn(&str) + Send + Sync>,
) -> Result<(), ExportError> {
    let (tx, rx) = bounded(options.queue.max(1));
    let sending = {
        let note = note.clone();
        std::thread::spawn(move || send_loop(rx, sender, note))
    };
    let mut sink = QueueSink {
        tx,
        note: note.clone(),
    };
    let mut batcher = Batcher::new(resource, &mut sink);
    let mut followed: BTreeMap<SessionId, Followed> = BTreeMap::new();
    // The sessions left out, at the head they were judged at.
    let mut passed: BTreeMap<SessionId, u64> = BTreeMap::new();
    let subscription = log.subscribe();
    let result = loop {
        if let Err(e) = pass(log, options, &mut followed, &mut passed, &mut batcher) {
            break Err(e);
        }
        let woken = match &subscription {
            Some(s) => s.recv_timeout(options.poll).is_some(),
            None => {
                std::thread::sleep(options.poll);
                true
            }
        };
        if !woken {
            break Ok(());
        }
    };
    drop(batcher);
    drop(sink);
    // The log closed: what waits is sent before returning. On an error,
    // not: the endpoint may be away for good, and a restart sends it.
    if result.is_ok() {
        let _ = sending.join();
    }
    result
}

/// One look at the log: new sessions taken up, new events folded, quiet
/// turns ended, and what was made sent.
fn pass(
    log: &AnyLog,
    options: &FollowOptions,
    followed: &mut BTreeMap<SessionId, Followed>,
    passed: &mut BTreeMap<SessionId, u64>,
    batcher: &mut Batcher,
) -> Result<(), ExportError> {
    for (session, head) in log.sessions()? {
        if is_description_stream(session) {
            continue;
        }
        if let Entry::Vacant(vacant) = followed.entry(session) {
            // A session left out is judged again only once it moves.
            if passed.get(&session) == Some(&head) {
                continue;
            }
            if !wanted(log, options, session)? {
                passed.insert(session, head);
                continue;
            }
            passed.remove(&session);
            let fold = TraceFold::new(session, speaker_of(log, session)?, options.content);
            vacant.insert(Followed {
                fold,
                next: 1,
                last_new: Instant::now(),
            });
        }
        let Some(f) = followed.get_mut(&session) else {
            continue;
        };
        if head >= f.next {
            for e in log.read(session, f.next)? {
                let e = e?;
                f.next = e.seq + 1;
                f.fold.push(&e);
                batcher.add(f.fold.drain())?;
            }
            f.last_new = Instant::now();
        } else if f.fold.turn_open() && f.last_new.elapsed() >= options.idle {
            f.fold.end_turn();
            batcher.add(f.fold.drain())?;
        }
    }
    batcher.flush()
}

/// Whether a session newly seen is one the follow takes.
fn wanted(log: &AnyLog, options: &FollowOptions, session: SessionId) -> Result<bool, ExportError> {
    if let Some(list) = &options.sessions {
        return Ok(list.contains(&session));
    }
    let head = log.head(session)?;
    crate::export::exportable_one(log, session, head, options.since)
}
