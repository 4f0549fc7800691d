//! The copy of a session that mirrors a recording, which a user's own work
//! in ctxlog goes to (`<source id>@manual`), so the recording's session
//! stays as the recording made it.

use super::appending::{append_chunked, append_placed, keep_snapshot, last_time};
use super::descriptions::load_described;
use super::error::CatalogError;
use super::replaced::{mark_replaced, replaced_by};
use super::resolve::{resolve_named, source_of};
use ctxlog_core::{derived_uuid, description_stream, Envelope, Event, EventId, SessionId};
use ctxlog_store::{EventLog, NewEvent};

/// What names the session that keeps what a user did by hand in ctxlog to
/// a session that mirrors a recording: `<source id>@manual`.
pub const MANUAL: &str = "manual";

/// Whether `session` mirrors something written elsewhere, that later
/// imports extend: a recording (it has a source id, and is neither a kept
/// simulation nor a copy named `<source>@<what>`), not a session an agent
/// writes through ctxlog itself (the Agents SDK's, described as
/// `openai-agents`). ctxlog appends none of its own decisions to such a
/// session (see [`manual_copy`]).
pub fn mirrors_recording(log: &impl EventLog, session: SessionId) -> Result<bool, CatalogError> {
    let state = load_described(log, session)?.state;
    let agent = state.about.as_ref().and_then(|a| a.agent.as_deref());
    Ok(state.source_id.as_deref().is_some_and(|s| !s.contains('@'))
        && agent != Some("openai-agents"))
}

/// The session to which a user's own work on `session`, a session that
/// mirrors a recording ([`mirrors_recording`]), is appended: a copy of its
/// events up to its head, named `<source id>@manual` ([`MANUAL`]), with its
/// descriptions. The recording's session stays as the recording made it,
/// so every later import still extends it. The copy of the same head is
/// reused; once the recording grew, a copy of the new head is made and the
/// older copy marked replaced by it (it stays readable by its ctxlog id).
/// Returns the copy and whether it was made now.
pub fn manual_copy(
    log: &impl EventLog,
    session: SessionId,
) -> Result<(SessionId, bool), CatalogError> {
    if let Some(by) = replaced_by(log, session)? {
        return Err(CatalogError::Replaced { session, by });
    }
    let head = log.head(session)?;
    let source =
        source_of(log, session)?.ok_or_else(|| CatalogError::NotFound(session.to_string()))?;
    let name = ctxlog_engine::simulate::kept_name(&source, MANUAL);
    let copy = copy_id(session, head);
    // A copy cut short (a kill between two of its batches) is completed.
    let copied_head = log.head(copy)?;
    if copied_head >= head && log.head(description_stream(copy))? > 0 {
        return Ok((copy, false));
    }
    let earlier = match resolve_named(log, &name) {
        Ok(s) if s != copy => Some(s),
        Ok(_) | Err(CatalogError::NotFound(_) | CatalogError::TooShort { .. }) => None,
        Err(e) => return Err(e),
    };
    copy_events(log, session, copy, copied_head, head, &name)?;
    copy_descriptions(log, session, copy)?;
    keep_snapshot(log, copy, copied_head);
    if let Some(earlier) = earlier {
        if replaced_by(log, earlier)?.is_none() {
            mark_replaced(log, earlier, copy)?;
        }
    }
    Ok((copy, copied_head == 0))
}

/// Appends to `copy`, whose head is `copied_head`, the events of `session`
/// that follow up to `head`: `SessionStarted` named `name`, every id its
/// own ([`copied_event_id`]).
fn copy_events(
    log: &impl EventLog,
    session: SessionId,
    copy: SessionId,
    copied_head: u64,
    head: u64,
    name: &str,
) -> Result<(), CatalogError> {
    let to_copy = head.saturating_sub(copied_head) as usize;
    let copied = log.read(session, copied_head + 1)?.take(to_copy).map(|e| {
        let e = e?;
        let event = match e.event {
            Event::SessionStarted {
                policy,
                limits,
                title,
                ..
            } => Event::SessionStarted {
                policy,
                limits,
                title,
                source_id: Some(name.to_owned()),
            },
            other => other,
        };
        Ok(NewEvent {
            id: copied_event_id(copy, e.id),
            recorded_at: e.recorded_at,
            causation: e.causation.map(|c| copied_event_id(copy, c)),
            correlation: e.correlation,
            event,
        })
    });
    append_chunked(log, copy, copied_head, copied)?;
    Ok(())
}

/// Copies `session`'s descriptions (not its import marks) to the
/// description stream of `copy`, when that has none yet.
fn copy_descriptions(
    log: &impl EventLog,
    session: SessionId,
    copy: SessionId,
) -> Result<(), CatalogError> {
    let described: Vec<Event> = log
        .read(description_stream(session), 1)?
        .filter_map(|e| match e {
            Ok(Envelope {
                event: Event::ImportStarted { .. },
                ..
            }) => None,
            Ok(e) => Some(Ok(e.event)),
            Err(e) => Some(Err(e)),
        })
        .collect::<Result<_, _>>()?;
    if log.head(description_stream(copy))? == 0 && !described.is_empty() {
        let at = last_time(log, copy)?;
        append_placed(log, description_stream(copy), 0, at, described)?;
    }
    Ok(())
}

/// The id of the [`manual_copy`] of `session` at `head`: a UUID v8 derived
/// from both.
fn copy_id(session: SessionId, head: u64) -> SessionId {
    SessionId(derived_uuid(
        b"ctxlog manual copy",
        &[session.as_bytes(), &head.to_le_bytes()],
    ))
}

/// The id in `copy` of the event `id` of the session it copies: derived,
/// so the ids of every copy are its own.
fn copied_event_id(copy: SessionId, id: EventId) -> EventId {
    EventId(derived_uuid(
        b"ctxlog copied event",
        &[copy.as_bytes(), id.as_bytes()],
    ))
}
