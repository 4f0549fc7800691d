//! The sessions of a log as a user names them: storing an imported
//! recording (whole, or only what it grew by since the last import), and
//! resolving a session by its ctxlog id or its recording's own id.

use ctxlog_core::{
    codec, derived_uuid, description_event_id, description_stream, is_description_stream, Envelope,
    Event, EventPack, SessionId, SessionState, SourceTarget,
};
use ctxlog_store::{EventLog, Expected, LoadedState, NewEvent, ReadError, StoreError};
use std::collections::BTreeMap;
use thiserror::Error;

ctxlog_store::log_errors_into!(CatalogError, CatalogError::Store);

/// Why a catalog operation failed.
#[derive(Debug, Error)]
pub enum CatalogError {
    /// The log failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored session is not a prefix of the recording.
    #[error(
        "session {session} is already stored with different events (from event {at} on: \
         a different file with the same session id, an edited or branched file, or a \
         store an older ctxlog wrote while the agent was still writing the file); nothing \
         was written. To store this file as the session's new version, keeping the stored \
         one readable, import it with --replace"
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
    /// A version of a recording that a newer one replaced: work on it goes
    /// to the newer one.
    #[error(
        "session {session} is an older version of its recording, replaced by {by}: \
         work on {by} (the recording's own id names it)"
    )]
    Replaced {
        /// The older version.
        session: SessionId,
        /// The version that replaced it.
        by: SessionId,
    },
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
    /// The session's events from the recording (stored before or now),
    /// its descriptions aside: its head, when nothing else was appended.
    pub events: usize,
    /// Events written now (to the session and its description stream).
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
/// What happened goes to the session; its descriptions
/// ([`Event::is_description`]) to its description stream
/// ([`ctxlog_core::description_stream`]): those may change while a
/// recording grows, so they are left out of the prefix check (as is the
/// title `SessionStarted` carries in older stores), and each whose latest
/// stored version differs from the recording's is appended there (with
/// the id of its place). So the session's events and seqs are
/// the same however often the recording was imported while it grew.
///
/// The new events go in batches of at most [`CHUNK_EVENTS`] events and
/// about [`CHUNK_BYTES`] bytes, each expecting the head the one before
/// left, so memory stays bounded on a recording of any size. When that
/// takes more than one append, an [`Event::ImportStarted`] first says where
/// the import will end: a crash between two batches leaves a prefix of the
/// recording stored that [`interrupted`] reports, and the next import of it
/// extends (as for a recording that grew).
pub fn store_recording(log: &impl EventLog, events: EventPack) -> Result<Stored, CatalogError> {
    store_recording_adopting(log, events, Adopt::default())
}

/// [`store_recording`], adopting the import's limits or policy where
/// `adopt` says and they differ from the stored session's (see [`Adopt`]).
pub fn store_recording_adopting(
    log: &impl EventLog,
    events: EventPack,
    adopt: Adopt,
) -> Result<Stored, CatalogError> {
    let Some(session) = events.session() else {
        return Ok(Stored {
            events: 0,
            new_events: 0,
            grew: false,
        });
    };
    let stream = description_stream(session);
    let head = log.head(session)?;
    let stream_head = log.head(stream)?;
    let found = if head == 0 {
        StoredPrefix::default()
    } else {
        stored_prefix(log, session, &events)?
    };
    let adopted = adopted(adopt, &found.stored, &found.recorded);
    let (matched, mut stored_descriptions) = (found.matched, found.descriptions);
    for e in log.read(stream, 1)? {
        note_description(&mut stored_descriptions, e?);
    }
    // The first pass: how much is new, in how many batches, and which
    // descriptions changed.
    let mut recorded_descriptions = Descriptions::new();
    let mut happened = 0usize;
    let mut batches = Batches::default();
    for event in &adopted {
        batches.add(codec::encoded_len(event));
    }
    let mut latest = 0;
    for e in events.iter() {
        let e = e.map_err(unreadable)?;
        latest = latest.max(e.recorded_at);
        if e.event.is_description() {
            note_description(&mut recorded_descriptions, e);
        } else {
            happened += 1;
            if happened > matched {
                batches.add(codec::encoded_len(&e.event));
            }
        }
    }
    let changed: Vec<Envelope> = recorded_descriptions
        .into_iter()
        .filter(|(key, described)| {
            stored_descriptions
                .get(key)
                .is_none_or(|stored| stored.event != described.event)
        })
        .map(|(_, described)| described)
        .collect();
    drop(stored_descriptions);
    let new_content = happened - matched + adopted.len();
    if new_content == 0 && changed.is_empty() {
        return Ok(Stored {
            events: happened,
            new_events: 0,
            grew: false,
        });
    }
    let mut stream_head = stream_head;
    let mut description_batches = Batches::default();
    for d in &changed {
        description_batches.add(codec::encoded_len(&d.event));
    }
    let appends = batches.count + description_batches.count;
    if appends > 1 {
        let mark = Event::ImportStarted {
            head: head + new_content as u64,
            descriptions: stream_head + 1 + changed.len() as u64,
        };
        stream_head = append_placed(log, stream, stream_head, latest, [mark])?;
    }
    // The second pass: what follows the stored prefix is appended; a first
    // import folds the events on the way, so its snapshot needs no second
    // read of the log.
    let mut state = (head == 0).then(SessionState::new);
    let mut seen = 0usize;
    let unstored = events.into_iter().filter_map(|e| match e {
        Ok(e) if e.event.is_description() => None,
        Ok(e) => {
            seen += 1;
            if seen <= matched {
                return None;
            }
            if let Some(s) = &mut state {
                if s.evolve(&e).is_err() {
                    // Never for a recording an importer checked; the
                    // reducer refuses it on every read too.
                    state = None;
                }
            }
            Some(Ok(NewEvent::from(e)))
        }
        Err(e) => Some(Err(unreadable(e))),
    });
    let last_stored = last_time(log, session)?;
    let adopted = adopted.into_iter().enumerate().map(|(n, event)| {
        Ok(NewEvent {
            id: description_event_id(session, head + 1 + n as u64),
            recorded_at: last_stored,
            causation: None,
            correlation: None,
            event,
        })
    });
    let appended = append_chunked(log, session, head, adopted.chain(unstored))?;
    let described = changed.len();
    append_placed(
        log,
        stream,
        stream_head,
        latest,
        changed.into_iter().map(|e| e.event),
    )?;
    match state {
        Some(state) if ctxlog_engine::snapshot_due(0, state.head) => save_snapshot(log, &state),
        _ => keep_snapshot(log, session, head),
    }
    Ok(Stored {
        events: happened,
        new_events: appended + described,
        grew: head > 0,
    })
}

/// Counts the batches [`append_chunked`] makes of events of the sizes
/// added.
#[derive(Default)]
struct Batches {
    count: usize,
    events: usize,
    bytes: u64,
}

impl Batches {
    fn add(&mut self, bytes: u64) {
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
fn append_placed(
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
fn last_time(log: &impl EventLog, stream: SessionId) -> Result<u64, CatalogError> {
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
    load_listed(log, session).map(|(loaded, _)| loaded)
}

/// [`load_described`] and [`interrupted`] from one read of the
/// description stream: what a listing shows of a session.
pub fn load_listed(
    log: &impl EventLog,
    session: SessionId,
) -> Result<(LoadedState, bool), CatalogError> {
    let mut loaded = log.load_state(session)?;
    let mut announced = None;
    for e in log.read(description_stream(session), 1)? {
        let e = e?;
        if let Event::ImportStarted { head, descriptions } = e.event {
            announced = Some((head, descriptions));
        }
        // A description that no longer fits is only left out: nothing
        // that happened depends on it.
        if let Err(v) = loaded.state.describe(&e.event) {
            tracing::warn!(%session, seq = e.seq, error = %v, "a description was left out");
        }
    }
    let interrupted = reached(log, session, announced)?;
    Ok((loaded, interrupted))
}

/// Every session of the log with its head, in session-id order: the log's
/// streams but the description streams ([`ctxlog_core::description_stream`]).
pub fn sessions(log: &impl EventLog) -> Result<Vec<(SessionId, u64)>, ReadError> {
    let mut all = log.sessions()?;
    all.retain(|(s, _)| !is_description_stream(*s));
    Ok(all)
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

/// How many of `session`'s stored events (descriptions and events ctxlog
/// placed aside) match the recording's first ones (all of them, or the
/// session diverged), the stored descriptions, and the settings in force
/// at the stored head and after the recording's matched events. The stored
/// session is compared as it is read.
fn stored_prefix(
    log: &impl EventLog,
    session: SessionId,
    recording: &EventPack,
) -> Result<StoredPrefix, CatalogError> {
    let mut new = recording
        .iter()
        .filter(|e| e.as_ref().map_or(true, |e| !e.event.is_description()));
    let mut found = StoredPrefix::default();
    for old in log.read(session, 1)? {
        let old = old?;
        found.stored.follow(&old.event);
        if old.event.is_description() {
            note_description(&mut found.descriptions, old);
            continue;
        }
        if is_placed(&old) {
            continue;
        }
        let same = match new.next().transpose().map_err(unreadable)? {
            Some(e) => {
                found.recorded.follow(&e.event);
                same_event(&old, &e)
            }
            None => false,
        };
        if !same {
            return Err(CatalogError::Diverged {
                session,
                at: old.seq,
            });
        }
        found.matched += 1;
    }
    Ok(found)
}

/// What [`stored_prefix`] found.
#[derive(Default)]
struct StoredPrefix {
    matched: usize,
    descriptions: Descriptions,
    /// In force at the stored head.
    stored: Settings,
    /// In force after the recording's matched events, as this import
    /// computed them.
    recorded: Settings,
}

/// The events that adopt what `adopt` asks for of `recorded` where it
/// differs from `stored`.
fn adopted(adopt: Adopt, stored: &Settings, recorded: &Settings) -> Vec<Event> {
    let mut out = Vec::new();
    if let (true, Some(policy)) = (adopt.policy, &recorded.policy) {
        if stored.policy.as_ref() != Some(policy) {
            out.push(Event::PolicyChanged {
                policy: policy.clone(),
            });
        }
    }
    if let (true, Some(limits)) = (adopt.limits, &recorded.limits) {
        if stored.limits.as_ref() != Some(limits) {
            out.push(Event::LimitsChanged {
                limits: limits.clone(),
            });
        }
    }
    out
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
/// when [`ctxlog_engine::snapshot_due`] says so, so that listing and every view
/// load it without folding it whole. A cache: a failure is only logged.
fn keep_snapshot(log: &impl EventLog, session: SessionId, before: u64) {
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

/// The same recorded event wherever it stands: all but the seq, and but
/// `SessionStarted`'s title (a description, see [`store_recording`]) and
/// policy (a stored session keeps the policy it was stored with: a newer
/// build may label the same recording with another preset, e.g. its
/// agent's), and the limits of `SessionStarted` and `LimitsChanged`
/// (overrides such as `--context` change them, never which events a
/// recording gives: see [`Adopt`]).
fn same_event(stored: &Envelope, new: &Envelope) -> bool {
    let event_matches = match (&stored.event, &new.event) {
        (
            Event::SessionStarted { source_id: s, .. },
            Event::SessionStarted { source_id: t, .. },
        ) => s == t,
        (Event::LimitsChanged { .. }, Event::LimitsChanged { .. }) => true,
        (a, b) => a == b,
    };
    event_matches
        && stored.id == new.id
        && stored.recorded_at == new.recorded_at
        && stored.causation == new.causation
        && stored.correlation == new.correlation
}

/// Whether `e` is an event ctxlog placed in a session itself (a limit or
/// policy a later import adopted, `SessionReplaced`): its id derives from
/// its place ([`description_event_id`]), never from the recording.
fn is_placed(e: &Envelope) -> bool {
    e.id == description_event_id(e.session, e.seq)
}

/// The policy and limits in force after some of a session's events.
#[derive(Debug, Clone, Default, PartialEq)]
struct Settings {
    policy: Option<ctxlog_core::Policy>,
    limits: Option<ctxlog_core::ModelLimits>,
}

impl Settings {
    /// Follows `event`.
    fn follow(&mut self, event: &Event) {
        match event {
            Event::SessionStarted { policy, limits, .. } => {
                self.policy = Some(policy.clone());
                self.limits = Some(limits.clone());
            }
            Event::PolicyChanged { policy } => self.policy = Some(policy.clone()),
            Event::LimitsChanged { limits } => self.limits = Some(limits.clone()),
            _ => {}
        }
    }
}

/// What a later import of a stored recording adopts from its own options
/// when they differ from what the session has in force: the limits
/// (`--context`, `--input-limit`, `--output`, `--model` given) and the
/// policy (`--policy` given). Each is recorded as `LimitsChanged` or
/// `PolicyChanged` before the import's new events, with the id of its
/// place, so the next import still finds the recording's events a prefix
/// of the session. An import that gives neither keeps what is in force.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Adopt {
    /// Adopt the recording's limits as this import computed them.
    pub limits: bool,
    /// Adopt the policy this import recorded.
    pub policy: bool,
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
        Ok(_) | Err(CatalogError::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
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
                source_id: Some(name.clone()),
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
    keep_snapshot(log, copy, copied_head);
    if let Some(earlier) = earlier {
        if replaced_by(log, earlier)?.is_none() {
            mark_replaced(log, earlier, copy)?;
        }
    }
    Ok((copy, copied_head == 0))
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
fn copied_event_id(copy: SessionId, id: ctxlog_core::EventId) -> ctxlog_core::EventId {
    ctxlog_core::EventId(derived_uuid(
        b"ctxlog copied event",
        &[copy.as_bytes(), id.as_bytes()],
    ))
}

/// The recording's own id, from a session's first event.
pub fn source_of(log: &impl EventLog, session: SessionId) -> Result<Option<String>, ReadError> {
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
        if !is_description_stream(s) && log.head(s)? > 0 {
            return Ok(s);
        }
    }
    let mut best: Option<Match> = None;
    let mut found: Vec<(SessionId, Option<String>)> = Vec::new();
    for (s, _) in sessions(log)? {
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
