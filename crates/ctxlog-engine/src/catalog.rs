//! The sessions of a log as a user names them: storing an imported
//! recording (whole, or only what it grew by since the last import), and
//! resolving a session by its ctxlog id or its recording's own id.

use ctxlog_core::{Envelope, Event, SessionId};
use ctxlog_store::{EventLog, Expected, NewEvent, StoreError};
use thiserror::Error;

/// Why a catalog operation failed.
#[derive(Debug, Error)]
pub enum CatalogError {
    /// The log failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored session is not a prefix of the recording.
    #[error(
        "session {session} is already stored with different events (from event {at} on: \
         a different file with the same session id, an edited or branched file, other \
         import options, or an earlier import of the file while its agent was still \
         writing it without --live); nothing was written"
    )]
    Diverged {
        /// The session.
        session: SessionId,
        /// The first seq that differs.
        at: u64,
    },
    /// Neither a ctxlog id nor a recording's id of a stored session.
    #[error("no session {0:?} (neither a ctxlog id nor a source session id)")]
    NotFound(String),
    /// A recording's id shared by several stored sessions.
    #[error("{text:?} is the source of {} sessions ({}); use a ctxlog id", sessions.len(), list(sessions))]
    Ambiguous {
        /// What was asked for.
        text: String,
        /// The sessions it names.
        sessions: Vec<SessionId>,
    },
}

fn list(sessions: &[SessionId]) -> String {
    sessions
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What [`store_recording`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Events written now.
    pub new_events: usize,
    /// The session was stored before and the recording grew since.
    pub grew: bool,
}

/// Stores a recording's events (one session, seq 1 first) whole or not at
/// all. Their ids derive from the recording, so storing the same recording
/// again writes nothing, and a recording that grew since (the agent went
/// on) appends only its new events. A stored session that is not a prefix
/// of the recording is refused.
pub fn store_recording(log: &impl EventLog, events: &[Envelope]) -> Result<Stored, CatalogError> {
    let Some(session) = events.first().map(|e| e.session) else {
        return Ok(Stored {
            new_events: 0,
            grew: false,
        });
    };
    let skip = stored_prefix(log, session, events)?;
    let batch: Vec<NewEvent> = events[skip..].iter().cloned().map(NewEvent::from).collect();
    if batch.is_empty() {
        return Ok(Stored {
            new_events: 0,
            grew: false,
        });
    }
    let expected = match skip {
        0 => Expected::NoStream,
        n => Expected::Exactly(n as u64),
    };
    log.append(session, expected, batch)?;
    Ok(Stored {
        new_events: events.len() - skip,
        grew: skip > 0,
    })
}

/// How many of `events` are stored already, or why they cannot be extended.
fn stored_prefix(
    log: &impl EventLog,
    session: SessionId,
    events: &[Envelope],
) -> Result<usize, CatalogError> {
    if log.head(session)? == 0 {
        return Ok(0);
    }
    let mut n = 0;
    for stored in log.read(session, 1)? {
        let stored = stored?;
        if events.get(n) != Some(&stored) {
            return Err(CatalogError::Diverged {
                session,
                at: n as u64 + 1,
            });
        }
        n += 1;
    }
    Ok(n)
}

/// The recording's own id, from a session's first event.
pub fn source_of(log: &impl EventLog, session: SessionId) -> Result<Option<String>, StoreError> {
    let first = log.read(session, 1)?.next().transpose()?;
    Ok(match first.map(|e| e.event) {
        Some(Event::SessionStarted { source_id, .. }) => source_id,
        _ => None,
    })
}

/// The session `text` names: a ctxlog id, or a recording's own session id.
pub fn resolve_session(log: &impl EventLog, text: &str) -> Result<SessionId, CatalogError> {
    if let Ok(u) = uuid::Uuid::parse_str(text) {
        let s = SessionId(u);
        if log.head(s)? > 0 {
            return Ok(s);
        }
    }
    let mut found = Vec::new();
    for (s, _) in log.sessions()? {
        if source_of(log, s)?.as_deref() == Some(text) {
            found.push(s);
        }
    }
    match found.as_slice() {
        [s] => Ok(*s),
        [] => Err(CatalogError::NotFound(text.to_owned())),
        _ => Err(CatalogError::Ambiguous {
            text: text.to_owned(),
            sessions: found,
        }),
    }
}
