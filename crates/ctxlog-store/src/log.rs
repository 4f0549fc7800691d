//! The storage trait [`EventLog`] and the values it takes and returns.
//!
//! The engine works over this trait only; `ctxlog_sled::SledStore` and
//! `ctxlog_postgres::PgLog` are the durable implementations, [`MemoryLog`](crate::MemoryLog) the in-memory
//! one.

use crate::error::{AppendError, Expected, ReadError};
use ctxlog_core::{ContentError, Contents, Envelope, Event, EventId, Seq, SessionId, TimestampMs};
use std::borrow::Cow;
use uuid::Uuid;

/// An event to append; the store stamps the session and the seq. It
/// travels as it is to a store's holder (`ctxlog_sled`'s `wire.rs`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NewEvent {
    /// Unique id (UUID v7); the idempotency key.
    pub id: EventId,
    /// When it was recorded, ms.
    pub recorded_at: TimestampMs,
    /// The event that caused it.
    pub causation: Option<EventId>,
    /// Correlation id.
    pub correlation: Option<Uuid>,
    /// The event.
    pub event: Event,
}

impl NewEvent {
    /// The envelope this event becomes at (`session`, `seq`).
    pub fn at(&self, session: SessionId, seq: Seq) -> Envelope {
        self.clone().into_at(session, seq)
    }

    /// [`at`](Self::at) without copying the event.
    pub fn into_at(self, session: SessionId, seq: Seq) -> Envelope {
        Envelope {
            session,
            seq,
            id: self.id,
            recorded_at: self.recorded_at,
            causation: self.causation,
            correlation: self.correlation,
            event: self.event,
        }
    }

    /// Whether `stored` is this event (at any position): the idempotency
    /// check of a retried append.
    pub fn is_stored_as(&self, stored: &Envelope) -> bool {
        self.id == stored.id
            && self.recorded_at == stored.recorded_at
            && self.causation == stored.causation
            && self.correlation == stored.correlation
            && self.event == stored.event
    }
}

impl From<Envelope> for NewEvent {
    fn from(e: Envelope) -> Self {
        NewEvent {
            id: e.id,
            recorded_at: e.recorded_at,
            causation: e.causation,
            correlation: e.correlation,
            event: e.event,
        }
    }
}

/// Where an append landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The session.
    pub session: SessionId,
    /// Seq of the first event of the batch.
    pub first: Seq,
    /// Seq of the last event of the batch.
    pub last: Seq,
    /// True when the batch was already stored (an idempotent retry).
    pub duplicate: bool,
}

/// A snapshot of a session's derived state as a log keeps it: bytes it
/// stores and gives back without reading them (what they hold is
/// [`SessionStates`](crate::SessionStates)' business), tied to the record
/// at `head`, so a log can tell when the snapshot no longer matches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The session.
    pub session: SessionId,
    /// The seq of the last event folded into it.
    pub head: Seq,
    /// The version of the reducer that made it; another version's
    /// snapshot is never given back.
    pub version: u32,
    /// The state, encoded.
    pub state: Vec<u8>,
}

/// The storage trait: what the engine needs from a log. Every implementation
/// keeps the same promises:
///
/// - an append is atomic and checked against [`Expected`] (a head of 0 means
///   no stream); an empty batch is [`AppendError::EmptyAppend`];
/// - seqs are contiguous from 1 per session;
/// - appending event ids that are already stored, with the same content, at
///   the same contiguous positions of the same session, returns the original
///   position with `duplicate: true` (whatever `expected` says); the same ids
///   with other content or elsewhere are [`AppendError::IdConflict`]; a batch
///   mixing stored and new ids, or repeating an id, is
///   [`AppendError::PartialDuplicate`];
/// - an acknowledged event is readable at once.
pub trait EventLog: Send + Sync {
    /// Appends `events` to `session` if its head is `expected`; see [`Expected`].
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, AppendError>;

    /// The session's events from seq `from` on, in order (`from` 0 reads
    /// from 1; past the head, nothing).
    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, ReadError>> + '_>, ReadError>;

    /// The session's head (0 = no stream).
    fn head(&self, session: SessionId) -> Result<Seq, ReadError>;

    /// Every session with its head, in session-id order.
    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, ReadError>;

    /// Makes everything appended so far durable (default: nothing to do).
    fn flush(&self) -> Result<(), AppendError> {
        Ok(())
    }

    /// Whether this log keeps snapshots at all (default: no); a log that
    /// does not is never handed one to throw away.
    fn keeps_snapshots(&self) -> bool {
        false
    }

    /// Keeps `snapshot` (older ones of its session may be dropped), when
    /// the record at its head is stored and sound; a cache a log may
    /// ignore (default: nothing kept).
    fn keep_snapshot(&self, snapshot: Snapshot) -> Result<(), AppendError> {
        let _ = snapshot;
        Ok(())
    }

    /// The newest kept snapshot of `session` of reducer `version`, at or
    /// below the session's head, whose record at its head is still the one
    /// it was taken at; `None` when there is none (default).
    fn newest_snapshot(
        &self,
        session: SessionId,
        version: u32,
    ) -> Result<Option<Snapshot>, ReadError> {
        let _ = (session, version);
        Ok(None)
    }
}

/// The retry rule both logs apply once some of a batch's ids are found
/// stored (`stored`: each such event with its stored position, in batch
/// order): the batch is a retry only when every id is stored, at contiguous
/// seqs of `session`, and `same` says each is stored unchanged; then the
/// original position is returned. Anything else is refused. `abort` turns a
/// refusal into the caller's error type (the sled writer aborts its
/// transaction with it).
pub fn retried_position<E>(
    session: SessionId,
    events: &[NewEvent],
    stored: &[(&NewEvent, SessionId, Seq)],
    abort: impl Fn(AppendError) -> E,
    mut same: impl FnMut(&NewEvent, SessionId, Seq) -> Result<bool, E>,
) -> Result<Option<Appended>, E> {
    let Some((first, _, _)) = stored.first() else {
        return Ok(None);
    };
    if stored.len() != events.len() {
        return Err(abort(AppendError::PartialDuplicate { id: first.id }));
    }
    let mut range: Option<(Seq, Seq)> = None;
    for &(e, s, seq) in stored {
        let conflict = || AppendError::IdConflict {
            id: e.id,
            session: s,
            seq,
        };
        let follows = range.is_none_or(|(_, last)| last.checked_add(1) == Some(seq));
        if s != session || !follows {
            return Err(abort(conflict()));
        }
        range = Some((range.map_or(seq, |(first, _)| first), seq));
        if !same(e, s, seq)? {
            return Err(abort(conflict()));
        }
    }
    Ok(range.map(|(first, last)| Appended {
        session,
        first,
        last,
        duplicate: true,
    }))
}

/// The first id repeated inside one batch (such a batch can never be stored).
pub fn repeated_id(events: &[NewEvent]) -> Option<EventId> {
    if events.len() < 2 {
        return None;
    }
    let mut seen = std::collections::BTreeSet::new();
    events.iter().find(|e| !seen.insert(e.id)).map(|e| e.id)
}

/// Whether a head satisfies `expected`; the error names the actual head.
pub fn check_expected(
    session: SessionId,
    expected: Expected,
    head: Seq,
) -> Result<(), AppendError> {
    let ok = match expected {
        Expected::Any => true,
        Expected::NoStream => head == 0,
        Expected::Exactly(n) => head == n,
    };
    if ok {
        Ok(())
    } else {
        Err(AppendError::WrongExpectedVersion {
            session,
            expected,
            actual: head,
        })
    }
}

/// One session of a log as [`Contents`]: where a sealed part's content is
/// read back, one event at a time, so a view of a long session (an export)
/// never holds all of its events.
pub struct SessionContents<'a, L: EventLog + ?Sized> {
    log: &'a L,
    session: SessionId,
}

impl<'a, L: EventLog + ?Sized> SessionContents<'a, L> {
    /// The contents of `session` in `log`.
    pub fn new(log: &'a L, session: SessionId) -> Self {
        SessionContents { log, session }
    }
}

impl<L: EventLog + ?Sized> Contents for SessionContents<'_, L> {
    fn event_at(&self, seq: Seq) -> Result<Cow<'_, Envelope>, ContentError> {
        let read = |e: ReadError| ContentError::Read {
            seq,
            detail: e.to_string(),
        };
        match self.log.read(self.session, seq).map_err(read)?.next() {
            Some(Ok(e)) if e.seq == seq => Ok(Cow::Owned(e)),
            Some(Err(e)) => Err(read(e)),
            _ => Err(ContentError::Missing { seq }),
        }
    }
}
