//! Storing an imported recording: whole, or only what it grew by since the
//! last import, in bounded batches, adopting the import's limits or policy
//! when asked.

use super::appending::{
    append_chunked, append_placed, keep_snapshot, last_time, save_snapshot, Batches,
};
use super::descriptions::{note_description, Descriptions};
use super::error::CatalogError;
use ctxlog_core::{
    codec, description_event_id, description_stream, Envelope, Event, EventPack, SessionId,
    SessionState,
};
use ctxlog_store::{EventLog, NewEvent};

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
/// The new events go in batches of at most
/// [`CHUNK_EVENTS`](super::CHUNK_EVENTS) events and about
/// [`CHUNK_BYTES`](super::CHUNK_BYTES) bytes, each expecting the head the
/// one before left, so memory stays bounded on a recording of any size.
/// When that takes more than one append, an [`Event::ImportStarted`] first
/// says where the import will end: a crash between two batches leaves a
/// prefix of the recording stored that [`interrupted`](super::interrupted)
/// reports, and the next import of it extends (as for a recording that
/// grew).
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
    let Plan {
        happened,
        latest,
        appends,
        changed,
    } = plan(&events, &adopted, matched, stored_descriptions)?;
    let new_content = happened - matched + adopted.len();
    if new_content == 0 && changed.is_empty() {
        return Ok(Stored {
            events: happened,
            new_events: 0,
            grew: false,
        });
    }
    let mut stream_head = stream_head;
    if appends > 1 {
        let mark = Event::ImportStarted {
            head: head + new_content as u64,
            descriptions: stream_head + 1 + changed.len() as u64,
        };
        stream_head = append_placed(log, stream, stream_head, latest, [mark])?;
    }
    let (appended, state) = append_new(log, session, head, matched, events, adopted)?;
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

/// What the first pass over a recording found.
struct Plan {
    /// The recording's events but its descriptions.
    happened: usize,
    /// The time of its latest event.
    latest: u64,
    /// How many appends storing what is new takes (to the session and to
    /// its description stream).
    appends: usize,
    /// Its descriptions that differ from the stored ones.
    changed: Vec<Envelope>,
}

/// The first pass: how much of `events` is new (after the `matched` stored
/// prefix, with the `adopted` settings before it), in how many batches,
/// and which descriptions changed from `stored_descriptions`.
fn plan(
    events: &EventPack,
    adopted: &[Event],
    matched: usize,
    stored_descriptions: Descriptions,
) -> Result<Plan, CatalogError> {
    let mut recorded_descriptions = Descriptions::new();
    let mut happened = 0usize;
    let mut batches = Batches::default();
    for event in adopted {
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
    let mut description_batches = Batches::default();
    for d in &changed {
        description_batches.add(codec::encoded_len(&d.event));
    }
    Ok(Plan {
        happened,
        latest,
        appends: batches.count + description_batches.count,
        changed,
    })
}

/// The second pass: appends to `session` (head `head`) the `adopted`
/// settings, then what follows the `matched` stored prefix of `events`.
/// Returns the number appended and, on a first import, the session's
/// state: folded on the way, so its snapshot needs no second read of the
/// log.
fn append_new(
    log: &impl EventLog,
    session: SessionId,
    head: u64,
    matched: usize,
    events: EventPack,
    adopted: Vec<Event>,
) -> Result<(usize, Option<SessionState>), CatalogError> {
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
    Ok((appended, state))
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

/// The same recorded event wherever it stands: all but the seq, and but
/// `SessionStarted`'s title (a description, see [`store_recording`]) and
/// policy (a stored session keeps the policy it was stored with: a newer
/// build may label the same recording with another preset, e.g. its
/// agent's), and the limits of `SessionStarted` and `LimitsChanged`
/// (overrides such as `--context` change them, never which events a
/// recording gives: see [`Adopt`]), and a step's cost where the stored step
/// has none (builds before issue 33 did not read pi's recorded cost).
fn same_event(stored: &Envelope, new: &Envelope) -> bool {
    let event_matches = match (&stored.event, &new.event) {
        (
            Event::SessionStarted { source_id: s, .. },
            Event::SessionStarted { source_id: t, .. },
        ) => s == t,
        (Event::LimitsChanged { .. }, Event::LimitsChanged { .. }) => true,
        (
            Event::StepFinished {
                message,
                part,
                reason,
                tokens,
                cost_micros: None,
            },
            Event::StepFinished {
                message: m,
                part: p,
                reason: r,
                tokens: t,
                ..
            },
        ) => message == m && part == p && reason == r && tokens == t,
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
