//! Captures ([`Event::Captured`]): the moments an agent's hook brought a
//! session in, kept in its description stream.

use super::appending::append_placed;
use super::error::CatalogError;
use ctxlog_core::{description_stream, Capture, Event, SessionId, TimestampMs};
use ctxlog_store::EventLog;

/// How often [`record_capture`] appends again after another process
/// appended to the description stream meanwhile.
const MAX_RACES: u32 = 16;

/// Records `capture` of `session` at `at` (the time the hook was called).
/// Another process appending to the same description stream at once (a
/// second hook, an import) moves the capture after its events.
pub fn record_capture(
    log: &impl EventLog,
    session: SessionId,
    capture: Capture,
    at: TimestampMs,
) -> Result<(), CatalogError> {
    let stream = description_stream(session);
    let mut races = 0;
    loop {
        let head = log.head(stream)?;
        let event = Event::Captured {
            capture: capture.clone(),
        };
        match append_placed(log, stream, head, at, [event]) {
            Err(e) if e.is_race() && races < MAX_RACES => races += 1,
            other => return other.map(|_| ()),
        }
    }
}

/// Every capture of `session`, oldest first, each with its time.
pub fn captures(
    log: &impl EventLog,
    session: SessionId,
) -> Result<Vec<(TimestampMs, Capture)>, CatalogError> {
    let mut out = Vec::new();
    for e in log.read(description_stream(session), 1)? {
        let e = e?;
        if let Event::Captured { capture } = e.event {
            out.push((e.recorded_at, capture));
        }
    }
    Ok(out)
}
