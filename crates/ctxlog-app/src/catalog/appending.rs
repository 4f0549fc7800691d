//! Appending to a log in bounded batches (events copied, or placed with
//! the ids of their places), and keeping the snapshot a write leaves due.

use super::error::CatalogError;
use ctxlog_core::{codec, description_event_id, Event, SessionId, SessionState};
use ctxlog_store::{EventLog, Expected, NewEvent, SessionStates, StoreError};

/// The most events [`store_recording`](super::store_recording) appends in
/// one batch.
pub const CHUNK_EVENTS: usize = 512;
/// About the most encoded bytes [`store_recording`](super::store_recording)
/// appends in one batch (a single larger event goes alone).
pub const CHUNK_BYTES: u64 = 1024 * 1024;

/// Counts the batches [`append_chunked`] makes of events of the sizes
/// added.
#[derive(Default)]
pub(super) struct Batches {
    pub(super) count: usize,
    events: usize,
    bytes: u64,
}

impl Batches {
    /// Counts one more event of `bytes` encoded bytes.
    pub(super) fn add(&mut self, bytes: u64) {
        if self.count == 0
            || self.events >= CHUNK_EVENTS
            || self.bytes.saturating_add(bytes) > CHUNK_BYTES
        {
            self.count += 1;
            self.events = 0;
            self.bytes = 0;
        }
        self.events += 1;
        self.bytes = self.bytes.saturating_add(bytes);
    }
}

/// Appends `events` to `stream`, whose head is `head`, with the ids of
/// their places ([`description_event_id`]) and the time `at` (no earlier
/// than the stream's last); the new head.
pub(super) fn append_placed(
    log: &impl EventLog,
    stream: SessionId,
    head: u64,
    at: u64,
    events: impl IntoIterator<Item = Event>,
) -> Result<u64, CatalogError> {
    let at = at.max(last_time(log, stream)?);
    let placed = events.into_iter().enumerate().map(|(n, event)| {
        Ok(NewEvent {
            id: description_event_id(stream, head + 1 + n as u64),
            recorded_at: at,
            causation: None,
            correlation: None,
            event,
        })
    });
    Ok(head + append_chunked(log, stream, head, placed)? as u64)
}

/// The time of a stream's last event (0 when it has none).
pub(super) fn last_time(log: &impl EventLog, stream: SessionId) -> Result<u64, CatalogError> {
    let head = log.head(stream)?;
    Ok(match head {
        0 => 0,
        _ => log
            .read(stream, head)?
            .next()
            .transpose()?
            .map_or(0, |e| e.recorded_at),
    })
}

/// Appends `events` to `session`, whose head is `head`, in batches of at
/// most [`CHUNK_EVENTS`] events and about [`CHUNK_BYTES`] bytes; the number
/// appended.
pub(super) fn append_chunked(
    log: &impl EventLog,
    session: SessionId,
    head: u64,
    events: impl Iterator<Item = Result<NewEvent, CatalogError>>,
) -> Result<usize, CatalogError> {
    let mut head = head;
    let mut appended = 0;
    let mut chunk: Vec<NewEvent> = Vec::new();
    let mut chunk_bytes = 0u64;
    let flush = |chunk: &mut Vec<NewEvent>, head: &mut u64| -> Result<(), CatalogError> {
        if chunk.is_empty() {
            return Ok(());
        }
        let expected = if *head == 0 {
            Expected::NoStream
        } else {
            Expected::Exactly(*head)
        };
        let n = chunk.len();
        log.append(session, expected, std::mem::take(chunk))?;
        *head += n as u64;
        Ok(())
    };
    for event in events {
        let event = event?;
        let bytes = codec::encoded_len(&event.event);
        if !chunk.is_empty()
            && (chunk.len() >= CHUNK_EVENTS || chunk_bytes.saturating_add(bytes) > CHUNK_BYTES)
        {
            flush(&mut chunk, &mut head)?;
            chunk_bytes = 0;
        }
        chunk_bytes = chunk_bytes.saturating_add(bytes);
        chunk.push(event);
        appended += 1;
    }
    flush(&mut chunk, &mut head)?;
    Ok(appended)
}

/// Keeps `state` as its session's snapshot. A cache: a failure is only
/// logged.
pub(super) fn save_snapshot(log: &impl EventLog, state: &SessionState) {
    if let Err(e) = log.save_snapshot(state) {
        tracing::warn!(session = ?state.session, error = %e, "snapshot not saved; later reads fold the session whole");
    }
}

/// Keeps a snapshot of a session whose head just moved on from `before`,
/// when [`ctxlog_engine::snapshot_due`] says so, so that listing and every view
/// load it without folding it whole. A cache: a failure is only logged.
pub(super) fn keep_snapshot(log: &impl EventLog, session: SessionId, before: u64) {
    let kept = (|| -> Result<(), StoreError> {
        let head = log.head(session)?;
        if ctxlog_engine::snapshot_due(before, head) {
            let loaded = log.load_state(session)?;
            log.save_snapshot(&loaded.state)?;
        }
        Ok(())
    })();
    if let Err(e) = kept {
        tracing::warn!(%session, error = %e, "snapshot not saved; later reads fold the session whole");
    }
}
