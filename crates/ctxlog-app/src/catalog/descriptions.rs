//! A session's descriptions (title, directory, agent, model, cost, source
//! fields), kept in its description stream: reading them back with the
//! session, and whether its last import was cut short.

use super::error::CatalogError;
use ctxlog_core::{
    description_stream, Capture, Envelope, Event, SessionId, SourceTarget, TimestampMs,
};
use ctxlog_store::{EventLog, LoadedState, SessionStates};
use std::collections::BTreeMap;

/// Whether the last import of `session` did not finish: its
/// [`Event::ImportStarted`] announced a head the session (or its
/// description stream) has not reached. The next import that completes
/// the recording clears it.
pub fn interrupted(log: &impl EventLog, session: SessionId) -> Result<bool, CatalogError> {
    let mut announced = None;
    for e in log.read(description_stream(session), 1)? {
        if let Event::ImportStarted { head, descriptions } = e?.event {
            announced = Some((head, descriptions));
        }
    }
    reached(log, session, announced)
}

/// Whether an import announced as (`head`, `descriptions`) did not reach
/// them (see [`interrupted`]).
fn reached(
    log: &impl EventLog,
    session: SessionId,
    announced: Option<(u64, u64)>,
) -> Result<bool, CatalogError> {
    Ok(match announced {
        Some((head, descriptions)) => {
            log.head(session)? < head || log.head(description_stream(session))? < descriptions
        }
        None => false,
    })
}

/// `session`'s state with its descriptions applied (the latest title,
/// directory, agent, model and cost: what a listing, an export or a report
/// shows), read from its description stream after the session's own
/// events; the digest and the head are those of the session's events.
pub fn load_described(
    log: &impl EventLog,
    session: SessionId,
) -> Result<LoadedState, CatalogError> {
    load_listed(log, session).map(|l| l.loaded)
}

/// What a listing shows of a session, from one read of its description
/// stream ([`load_listed`]).
#[derive(Debug)]
pub struct ListedSession {
    /// Its state with its descriptions applied ([`load_described`]).
    pub loaded: LoadedState,
    /// Its last import was cut short ([`interrupted`]).
    pub interrupted: bool,
    /// The last time an agent's hook brought it in, and at which moment.
    pub last_capture: Option<(TimestampMs, Capture)>,
}

/// [`load_described`], [`interrupted`] and the last capture from one read
/// of the description stream: what a listing shows of a session.
pub fn load_listed(log: &impl EventLog, session: SessionId) -> Result<ListedSession, CatalogError> {
    let mut loaded = log.load_state(session)?;
    let mut announced = None;
    let mut last_capture = None;
    for e in log.read(description_stream(session), 1)? {
        let e = e?;
        match &e.event {
            Event::ImportStarted { head, descriptions } => {
                announced = Some((*head, *descriptions));
            }
            Event::Captured { capture } => last_capture = Some((e.recorded_at, capture.clone())),
            _ => {}
        }
        // A description that no longer fits is only left out: nothing
        // that happened depends on it.
        if let Err(v) = loaded.state.describe(&e.event) {
            tracing::warn!(%session, seq = e.seq, error = %v, "a description was left out");
        }
    }
    let interrupted = reached(log, session, announced)?;
    Ok(ListedSession {
        loaded,
        interrupted,
        last_capture,
    })
}

/// `session`'s descriptions, placed after its events as if they were its
/// own from seq `head + 1` on (`head`: the session's head when its events
/// were read), as stores before the description stream kept them: what a
/// fold over the session's events (an export, a report, a transcript)
/// appends to see the latest title, directory, agent, model, cost and
/// source fields.
pub fn descriptions_after(
    log: &impl EventLog,
    session: SessionId,
    head: u64,
) -> Result<Vec<Envelope>, CatalogError> {
    log.read(description_stream(session), 1)?
        .enumerate()
        .map(|(n, e)| {
            let mut e = e?;
            e.session = session;
            e.seq = head + 1 + n as u64;
            Ok(e)
        })
        .collect()
}

/// The latest description of each [`Event::description_key`].
pub(super) type Descriptions = BTreeMap<(u8, String, Option<SourceTarget>), Envelope>;

/// Keeps `e`, when it is a description, as the latest of its key.
pub(super) fn note_description(descriptions: &mut Descriptions, e: Envelope) {
    if let Some((kind, name, target)) = e.event.description_key() {
        descriptions.insert((kind, name.to_owned(), target), e);
    }
}
