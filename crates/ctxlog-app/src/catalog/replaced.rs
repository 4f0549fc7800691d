//! The versions of a recording: marking a session replaced by the one
//! that holds a newer version, and finding by which.

use super::error::CatalogError;
use ctxlog_core::{description_event_id, Event, SessionId};
use ctxlog_store::{EventLog, Expected, NewEvent};

/// The session that holds a newer version of `session`'s recording, when
/// `import --replace` stored one ([`Event::SessionReplaced`]).
pub fn replaced_by(
    log: &impl EventLog,
    session: SessionId,
) -> Result<Option<SessionId>, CatalogError> {
    let mut by = None;
    for e in log.read(session, 1)? {
        if let Event::SessionReplaced { by: newer } = e?.event {
            by = Some(newer);
        }
    }
    Ok(by)
}

/// Records that `newer` holds the new version of `old`'s recording: `old`
/// stays readable as it was, and resolving the recording's id names
/// `newer`. The event's id derives from its place, its time is the later
/// of both sessions' last.
pub fn mark_replaced(
    log: &impl EventLog,
    old: SessionId,
    newer: SessionId,
) -> Result<(), CatalogError> {
    let last_time = |s: SessionId| -> Result<u64, CatalogError> {
        let mut t = 0;
        for e in log.read(s, 1)? {
            t = e?.recorded_at;
        }
        Ok(t)
    };
    let head = log.head(old)?;
    let event = NewEvent {
        id: description_event_id(old, head + 1),
        recorded_at: last_time(old)?.max(last_time(newer)?),
        causation: None,
        correlation: None,
        event: Event::SessionReplaced { by: newer },
    };
    log.append(old, Expected::Exactly(head), vec![event])?;
    Ok(())
}
