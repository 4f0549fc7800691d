//! Waking the log's listeners in other processes: after an append
//! commits, its new head is handed to a thread of the log's own, which
//! sends `NOTIFY`s on a connection of its own, a burst of heads in one
//! (lines of `<session> <seq>`). The writer does not wait for it, and no
//! append's transaction takes the database's notification lock, which
//! would queue every concurrent writer behind its commit. Only a wake-up:
//! a lost one costs a subscriber latency, never an event (listeners read
//! the tables, and again after every reconnection).

use crate::inner::Inner;
use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use ctxlog_core::{Seq, SessionId};
use std::collections::BTreeMap;
use std::sync::Weak;
use std::time::Duration;

/// How long the thread waits for a head before it checks that the log is
/// still open.
const WAIT: Duration = Duration::from_millis(250);

/// The longest payload sent in one `NOTIFY` (the server takes 8000 bytes).
const MAX_PAYLOAD: usize = 7_000;

/// Starts the thread that rings for `log`; heads sent to the returned
/// channel are rung. It ends when the log is dropped.
pub(crate) fn start(log: Weak<Inner>) -> Option<Sender<(SessionId, Seq)>> {
    let (tx, rx) = unbounded();
    let spawned = std::thread::Builder::new()
        .name("ctxlog-pg-notify".into())
        .spawn(move || ring(&log, &rx));
    match spawned {
        Ok(_) => Some(tx),
        Err(e) => {
            tracing::warn!("cannot start the notifying thread: {e}; other processes' subscribers wake on their own");
            None
        }
    }
}

fn ring(log: &Weak<Inner>, heads: &Receiver<(SessionId, Seq)>) {
    let mut client = None;
    loop {
        let first = match heads.recv_timeout(WAIT) {
            Ok(head) => head,
            Err(RecvTimeoutError::Timeout) if log.strong_count() > 0 => continue,
            Err(_) => return,
        };
        let mut burst = BTreeMap::from([first]);
        for (session, seq) in heads.try_iter() {
            let e = burst.entry(session).or_insert(seq);
            *e = seq.max(*e);
        }
        let Some(inner) = log.upgrade() else { return };
        if client.as_ref().is_none_or(postgres::Client::is_closed) {
            client = inner
                .pool
                .connect()
                .map_err(|e| tracing::debug!("no wake-up sent: {e}"))
                .ok();
        }
        let Some(c) = client.as_mut() else { continue };
        for payload in payloads(&burst) {
            if let Err(e) = c.execute("SELECT pg_notify($1, $2)", &[&inner.channel, &payload]) {
                tracing::debug!("a wake-up was not sent: {e}");
                break;
            }
        }
    }
}

/// The lines `<session> <seq>` of `heads`, in payloads of at most
/// [`MAX_PAYLOAD`] bytes.
fn payloads(heads: &BTreeMap<SessionId, Seq>) -> Vec<String> {
    let mut out = vec![String::new()];
    for (session, seq) in heads {
        let line = format!("{session} {seq}");
        let last = out.last_mut().expect("never empty");
        if !last.is_empty() && last.len() + 1 + line.len() > MAX_PAYLOAD {
            out.push(line);
        } else {
            if !last.is_empty() {
                last.push('\n');
            }
            last.push_str(&line);
        }
    }
    out
}
