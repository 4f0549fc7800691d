//! Waking subscribers when other processes append: a thread `LISTEN`s on
//! the log's channel and rings the log's doorbell for each notification.
//! A notification is only a wake-up: after every (re)connection, and every
//! [`SWEEP_EVERY`] in any case, the thread rings for every session's head,
//! because notifications sent while it was disconnected (or never sent, by
//! a writer that exited first) are not delivered again; what is new is
//! always read from the tables.

use crate::inner::{Inner, Listening};
use postgres::fallible_iterator::FallibleIterator;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// How long the thread waits for a notification before it checks that the
/// log is still open.
const WAIT: Duration = Duration::from_millis(250);

/// How often it rings for every head whatever it was told.
const SWEEP_EVERY: Duration = Duration::from_secs(2);

/// How long it waits before connecting again after a failure.
const RECONNECT_AFTER: Duration = Duration::from_millis(500);

/// Starts the listening thread of one log; it ends when the log is
/// dropped.
pub(crate) fn start(log: Weak<Inner>) -> Listening {
    let stopped = Arc::new(AtomicBool::new(false));
    let flag = stopped.clone();
    let spawned = std::thread::Builder::new()
        .name("ctxlog-pg-listen".into())
        .spawn(move || {
            listen(&log);
            flag.store(true, Ordering::Release);
        });
    if let Err(e) = spawned {
        tracing::warn!(
            "cannot start the listening thread: {e}; subscribers wake only on this process's appends"
        );
        stopped.store(true, Ordering::Release);
    }
    Listening { stopped }
}

/// Listens until the log is dropped, reconnecting as needed.
fn listen(log: &Weak<Inner>) {
    loop {
        let Some(inner) = log.upgrade() else { return };
        let connected = inner.pool.connect().and_then(|mut client| {
            let quoted = format!("\"{}\"", inner.channel.replace('"', "\"\""));
            client
                .batch_execute(&format!("LISTEN {quoted}"))
                .map_err(|e| crate::error::backend(inner.pool.target(), "cannot listen", e))?;
            Ok(client)
        });
        let mut client = match connected {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("{e}; listening again shortly");
                drop(inner);
                std::thread::sleep(RECONNECT_AFTER);
                continue;
            }
        };
        // Whatever was appended while nobody listened.
        ring_for_every_head(&inner);
        drop(inner);
        let mut swept = Instant::now();
        loop {
            let mut woken: BTreeMap<_, _> = BTreeMap::new();
            let waited = wait(&mut client, &mut woken);
            let Some(inner) = log.upgrade() else { return };
            inner.hub.notify(&woken);
            if swept.elapsed() >= SWEEP_EVERY {
                // A wake-up lost on the way (its writer exited before
                // sending it) costs a subscriber at most this long.
                ring_for_every_head(&inner);
                swept = Instant::now();
            }
            if waited.is_err() || client.is_closed() {
                tracing::warn!("the listening connection was lost; listening again");
                break;
            }
        }
    }
}

/// Waits up to [`WAIT`] for a notification, then takes those already
/// received; their heads into `woken`.
fn wait(
    client: &mut postgres::Client,
    woken: &mut BTreeMap<ctxlog_core::SessionId, ctxlog_core::Seq>,
) -> Result<(), postgres::Error> {
    let mut notifications = client.notifications();
    let mut add = |payload: &str| {
        for (session, seq) in payload.lines().filter_map(parse) {
            let e = woken.entry(session).or_insert(0);
            *e = seq.max(*e);
        }
    };
    let first = notifications.timeout_iter(WAIT).next()?;
    if let Some(n) = first {
        add(n.payload());
        let mut pending = notifications.iter();
        while let Some(n) = pending.next()? {
            add(n.payload());
        }
    }
    Ok(())
}

fn ring_for_every_head(inner: &Inner) {
    match inner.heads() {
        Ok(heads) => inner.hub.notify(&heads.into_iter().collect()),
        Err(e) => tracing::warn!("cannot read the heads after connecting: {e}"),
    }
}

/// A line of a notification's payload: `<session> <seq>`.
fn parse(payload: &str) -> Option<(ctxlog_core::SessionId, ctxlog_core::Seq)> {
    let (session, seq) = payload.split_once(' ')?;
    Some((
        ctxlog_core::SessionId(uuid::Uuid::parse_str(session).ok()?),
        seq.parse().ok()?,
    ))
}
