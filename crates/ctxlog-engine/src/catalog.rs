//! The sessions of a log as a user names them: storing an imported
//! recording (whole, or only what it grew by since the last import), and
//! resolving a session by its ctxlog id or its recording's own id.

use ctxlog_core::{
    codec, description_event_id, Envelope, Event, EventPack, SessionId, SessionState, SourceTarget,
};
use ctxlog_store::{EventLog, Expected, NewEvent, StoreError};
use std::collections::BTreeMap;
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
         writing it without --live); nothing was written. To store this file as the \
         session's new version, keeping the stored one readable, import it with --replace"
    )]
    Diverged {
        /// The session.
        session: SessionId,
        /// The first seq that differs.
        at: u64,
    },
    /// An event of the recording did not decode.
    #[error("an imported event did not decode: {0}")]
    Unreadable(String),
    /// Neither a ctxlog id nor a recording's id of a stored session.
    #[error("no session {0:?} (neither a ctxlog id nor a source session id)")]
    NotFound(String),
    /// A recording's id (or a prefix) that names several stored sessions.
    #[error("{text:?} names {} sessions ({}); use a longer prefix or a ctxlog id", sessions.len(), list(sessions))]
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
    /// The recording's events (stored before or now).
    pub events: usize,
    /// Events written now.
    pub new_events: usize,
    /// The session was stored before and the recording grew since.
    pub grew: bool,
}

/// The most events [`store_recording`] appends in one batch.
pub const CHUNK_EVENTS: usize = 512;
/// About the most encoded bytes [`store_recording`] appends in one batch
/// (a single larger event goes alone).
pub const CHUNK_BYTES: u64 = 1024 * 1024;

/// Stores a recording's events (one session, seq 1 first), held encoded
/// and taken by value: each chunk of the pack is freed once its events are
/// appended. Their ids derive from the recording, so storing the same
/// recording again writes nothing, and a recording that grew since (the
/// agent went on) appends only its new events. A stored session that is not
/// a prefix of the recording is refused, with nothing written.
///
/// The new events go in batches of at most [`CHUNK_EVENTS`] events and
/// about [`CHUNK_BYTES`] bytes, each expecting the head the one before
/// left, so memory stays bounded on a recording of any size. A crash
/// between two batches leaves a prefix of the recording stored, which the
/// next import of it extends (as for a recording that grew).
///
/// Descriptions ([`Event::is_description`], and the title `SessionStarted`
/// carries) may change while a recording grows: they are left out of the
/// prefix check, and each whose latest stored version differs from the
/// recording's is appended after the new events (with the id of its
/// place), so the log keeps every version.
pub fn store_recording(log: &impl EventLog, events: EventPack) -> Result<Stored, CatalogError> {
    let total = events.len();
    let Some(session) = events.session() else {
        return Ok(Stored {
            events: 0,
            new_events: 0,
            grew: false,
        });
    };
    let head = log.head(session)?;
    if head == 0 {
        // Each chunk is freed as its events are appended, and the events are
        // folded on the way: the snapshot needs no second read of the log.
        let mut state = Some(SessionState::new());
        let folded = events.into_iter().map(|e| {
            let e = e.map_err(unreadable)?;
            if let Some(s) = &mut state {
                if s.evolve(&e).is_err() {
                    // Never for a recording an importer checked; the log
                    // refuses it too.
                    state = None;
                }
            }
            Ok(NewEvent::from(e))
        });
        let new_events = append_chunked(log, session, 0, folded)?;
        match state {
            Some(state) if crate::snapshot_due(0, state.head) => save_snapshot(log, &state),
            Some(_) => {}
            None => keep_snapshot(log, session, 0),
        }
        return Ok(Stored {
            events: total,
            new_events,
            grew: false,
        });
    }
    let (matched, stored_descriptions) = stored_prefix(log, session, &events)?;
    // One pass over the recording: what follows the stored prefix is
    // appended, and the latest description of each key is kept.
    let mut recorded_descriptions = Descriptions::new();
    let mut happened = 0;
    let unstored = events.into_iter().filter_map(|e| match e {
        Ok(e) if e.event.is_description() => {
            note_description(&mut recorded_descriptions, e);
            None
        }
        Ok(e) => {
            happened += 1;
            (happened > matched).then(|| Ok(NewEvent::from(e)))
        }
        Err(e) => Some(Err(unreadable(e))),
    });
    let appended = append_chunked(log, session, head, unstored)?;
    let first_description = head + appended as u64 + 1;
    let descriptions = recorded_descriptions
        .into_iter()
        .filter(|(key, described)| {
            stored_descriptions
                .get(key)
                .is_none_or(|stored| stored.event != described.event)
        })
        .map(|(_, described)| described)
        .enumerate()
        .map(|(n, described)| {
            let mut e = NewEvent::from(described);
            e.id = description_event_id(session, first_description + n as u64);
            Ok(e)
        });
    let new_events = appended + append_chunked(log, session, head + appended as u64, descriptions)?;
    if new_events == 0 {
        return Ok(Stored {
            events: total,
            new_events: 0,
            grew: false,
        });
    }
    keep_snapshot(log, session, head);
    Ok(Stored {
        events: total,
        new_events,
        grew: true,
    })
}

/// How many of `session`'s stored events (descriptions aside) match the
/// recording's first ones (all of them, or the session diverged), and the
/// stored descriptions. The stored session is compared as it is read.
fn stored_prefix(
    log: &impl EventLog,
    session: SessionId,
    recording: &EventPack,
) -> Result<(usize, Descriptions), CatalogError> {
    let mut new = recording
        .iter()
        .filter(|e| e.as_ref().map_or(true, |e| !e.event.is_description()));
    let mut matched = 0;
    let mut descriptions = Descriptions::new();
    for old in log.read(session, 1)? {
        let old = old?;
        if old.event.is_description() {
            note_description(&mut descriptions, old);
            continue;
        }
        let same = match new.next().transpose().map_err(unreadable)? {
            Some(e) => same_event(&old, &e),
            None => false,
        };
        if !same {
            return Err(CatalogError::Diverged {
                session,
                at: old.seq,
            });
        }
        matched += 1;
    }
    Ok((matched, descriptions))
}

/// An event of an [`EventPack`] that does not decode (never for a pack an
/// importer built).
fn unreadable(e: codec::CodecError) -> CatalogError {
    CatalogError::Unreadable(e.to_string())
}

/// Appends `events` to `session`, whose head is `head`, in batches of at
/// most [`CHUNK_EVENTS`] events and about [`CHUNK_BYTES`] bytes; the number
/// appended.
fn append_chunked(
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
fn save_snapshot(log: &impl EventLog, state: &SessionState) {
    if let Err(e) = log.save_snapshot(state) {
        tracing::warn!(session = ?state.session, error = %e, "snapshot not saved; later reads fold the session whole");
    }
}

/// Keeps a snapshot of a session whose head just moved on from `before`,
/// when [`crate::snapshot_due`] says so, so that listing and every view
/// load it without folding it whole. A cache: a failure is only logged.
fn keep_snapshot(log: &impl EventLog, session: SessionId, before: u64) {
    let kept = log.head(session).and_then(|head| {
        if !crate::snapshot_due(before, head) {
            return Ok(());
        }
        log.load_state(session)
            .and_then(|loaded| log.save_snapshot(&loaded.state))
    });
    if let Err(e) = kept {
        tracing::warn!(%session, error = %e, "snapshot not saved; later reads fold the session whole");
    }
}

/// The same recorded event wherever it stands: all but the seq, and but
/// `SessionStarted`'s title (a description, see [`store_recording`]) and
/// policy (a stored session keeps the policy it was stored with: a newer
/// build may label the same recording with another preset, e.g. its
/// agent's).
fn same_event(stored: &Envelope, new: &Envelope) -> bool {
    let event_matches = match (&stored.event, &new.event) {
        (
            Event::SessionStarted {
                limits: l,
                source_id: s,
                ..
            },
            Event::SessionStarted {
                limits: m,
                source_id: t,
                ..
            },
        ) => l == m && s == t,
        (a, b) => a == b,
    };
    event_matches
        && stored.id == new.id
        && stored.recorded_at == new.recorded_at
        && stored.causation == new.causation
        && stored.correlation == new.correlation
}

/// The latest description of each [`Event::description_key`].
type Descriptions = BTreeMap<(u8, String, Option<SourceTarget>), Envelope>;

/// Keeps `e`, when it is a description, as the latest of its key.
fn note_description(descriptions: &mut Descriptions, e: Envelope) {
    if let Some((kind, name, target)) = e.event.description_key() {
        descriptions.insert((kind, name.to_owned(), target), e);
    }
}

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

/// The recording's own id, from a session's first event.
pub fn source_of(log: &impl EventLog, session: SessionId) -> Result<Option<String>, StoreError> {
    let first = log.read(session, 1)?.next().transpose()?;
    Ok(match first.map(|e| e.event) {
        Some(Event::SessionStarted { source_id, .. }) => source_id,
        _ => None,
    })
}

/// How a session's names match a text: exactly (its source id), by a
/// prefix of its source id, or by a prefix of its ctxlog id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Match {
    Exact,
    SourcePrefix,
    IdPrefix,
}

/// How `text` names a session with ctxlog id `id` and source id `source`,
/// if it does. A prefix is at least [`MIN_PREFIX`] characters; `<prefix>@<policy>`
/// names a kept simulation by a prefix of its recording's id, and a prefix
/// without `@` never names a simulation (whose ctxlog id starts like its
/// recording's: both are UUID v7 of the recording's first time), which its
/// whole ctxlog id still does.
fn matches(text: &str, id: &str, source: Option<&str>) -> Option<Match> {
    if source == Some(text) {
        return Some(Match::Exact);
    }
    let (base, policy) = split_policy(text);
    if base.chars().count() < MIN_PREFIX {
        return None;
    }
    if let Some(source) = source {
        let (source_base, source_policy) = split_policy(source);
        if source_base.starts_with(base) && source_policy == policy {
            return Some(Match::SourcePrefix);
        }
    }
    let simulation = source.is_some_and(|s| s.contains('@'));
    (policy.is_none() && !simulation && id.starts_with(base)).then_some(Match::IdPrefix)
}

/// `<id>@<policy>` → (id, policy).
fn split_policy(name: &str) -> (&str, Option<&str>) {
    match name.split_once('@') {
        Some((base, policy)) => (base, Some(policy)),
        None => (name, None),
    }
}

/// The shortest prefix [`resolve_session`] accepts.
pub const MIN_PREFIX: usize = 4;

/// The session `text` names: a ctxlog id, or a recording's own session id
/// (`<id>@<policy>` for a simulation kept beside it), or a unique prefix of
/// either of at least [`MIN_PREFIX`] characters (`0199812e`,
/// `0199812e@codex`). An exact name wins over a source-id prefix, which
/// wins over a ctxlog-id prefix. Of the versions of one recording, the
/// newest. A kept simulation is found by its preset's alias too
/// (`…@claude-code` for `…@claude-code-2.1`, its name).
pub fn resolve_session(log: &impl EventLog, text: &str) -> Result<SessionId, CatalogError> {
    let not_found = match resolve_named(log, text) {
        Err(CatalogError::NotFound(_)) => CatalogError::NotFound(text.to_owned()),
        found => return found,
    };
    let (base, policy) = split_policy(text);
    let preset = policy.and_then(|p| {
        ctxlog_core::Policy::preset_aliases()
            .iter()
            .find(|(alias, _)| *alias == p)
            .map(|(_, preset)| *preset)
    });
    match preset {
        Some(preset) => match resolve_named(log, &format!("{base}@{preset}")) {
            Err(CatalogError::NotFound(_)) => Err(not_found),
            found => found,
        },
        None => Err(not_found),
    }
}

/// [`resolve_session`] of `text` as it is written.
fn resolve_named(log: &impl EventLog, text: &str) -> Result<SessionId, CatalogError> {
    if let Ok(u) = uuid::Uuid::parse_str(text) {
        let s = SessionId(u);
        if log.head(s)? > 0 {
            return Ok(s);
        }
    }
    let mut best: Option<Match> = None;
    let mut found: Vec<(SessionId, Option<String>)> = Vec::new();
    for (s, _) in log.sessions()? {
        let source = source_of(log, s)?;
        let Some(m) = matches(text, &s.to_string(), source.as_deref()) else {
            continue;
        };
        if best.is_some_and(|b| m > b) {
            continue;
        }
        if best.is_some_and(|b| m < b) {
            found.clear();
        }
        best = Some(m);
        found.push((s, source));
    }
    // Of the versions of one recording (all found share its source id),
    // the newest: the others were replaced by it and stay readable by
    // their ctxlog ids.
    let one_recording = found.windows(2).all(|w| w[0].1 == w[1].1);
    let mut found: Vec<SessionId> = found.into_iter().map(|(s, _)| s).collect();
    if found.len() > 1 && one_recording {
        let mut current = Vec::new();
        for s in &found {
            if replaced_by(log, *s)?.is_none() {
                current.push(*s);
            }
        }
        if !current.is_empty() {
            found = current;
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
