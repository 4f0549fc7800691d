//! [`MemoryLog`]: an in-memory [`EventLog`] for tests, simulations and
//! what-if runs, with the same promises as `ctxlog_sled::SledStore`
//! (nothing is durable beyond the process; every append is "durable" at once).

use crate::error::{AppendError, Expected, ReadError};
use crate::follower::Followable;
use crate::log::{check_expected, repeated_id, retried_position, Appended, EventLog, NewEvent};
use crate::subscribe::{Hub, Subscription};
use ctxlog_core::{codec, Envelope, EventId, Seq, SessionId};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// An in-memory event log. Cheap to clone: clones share one log.
///
/// Appends cost O(batch); a read copies the requested range. Events are
/// encoded once on append (and the bytes dropped) so that an event the
/// durable store would refuse ([`AppendError::Encode`]) is refused here too.
#[derive(Clone, Default)]
pub struct MemoryLog {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    logs: Mutex<Logs>,
    hub: Hub,
}

/// Every session's events, and where each event id is.
#[derive(Default)]
struct Logs {
    sessions: BTreeMap<SessionId, Vec<Envelope>>,
    ids: BTreeMap<EventId, (SessionId, Seq)>,
}

impl std::fmt::Debug for MemoryLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let logs = self.lock();
        f.debug_struct("MemoryLog")
            .field("sessions", &logs.sessions.len())
            .field("events", &logs.ids.len())
            .finish()
    }
}

impl MemoryLog {
    /// An empty log.
    pub fn new() -> Self {
        MemoryLog::default()
    }

    /// Subscribes to notifications of appended heads (sent after each append).
    pub fn subscribe(&self) -> Subscription {
        self.inner.hub.subscribe()
    }

    /// Drops `session`'s events from seq `first` on, as a disk that lost
    /// an unsynced write would (for [`FaultyLog`](crate::faults::FaultyLog)).
    #[cfg(feature = "testing")]
    pub(crate) fn drop_tail(&self, session: SessionId, first: Seq) {
        let mut logs = self.lock();
        let keep = usize::try_from(first.saturating_sub(1)).unwrap_or(usize::MAX);
        let dropped: Vec<EventId> = match logs.sessions.get_mut(&session) {
            Some(events) if keep < events.len() => events.drain(keep..).map(|e| e.id).collect(),
            _ => return,
        };
        for id in dropped {
            logs.ids.remove(&id);
        }
        if logs.sessions.get(&session).is_some_and(Vec::is_empty) {
            logs.sessions.remove(&session);
        }
    }

    /// The log, recovered if a holder panicked: an append changes it only
    /// after every check passed, with operations that do not panic.
    fn lock(&self) -> MutexGuard<'_, Logs> {
        self.inner
            .logs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Logs {
    fn head(&self, session: SessionId) -> Seq {
        self.sessions
            .get(&session)
            .map_or(0, |events| events.len() as Seq)
    }

    /// The stored event at (`session`, `seq`).
    fn get(&self, session: SessionId, seq: Seq) -> Option<&Envelope> {
        let index = usize::try_from(seq.checked_sub(1)?).ok()?;
        self.sessions.get(&session)?.get(index)
    }

    /// If any event's id is stored: the original position when the whole
    /// batch is stored unchanged at contiguous seqs of `session`, else the
    /// refusal (the same rules as the durable store's writer). `None` when
    /// no id is stored.
    fn stored_position(
        &self,
        session: SessionId,
        events: &[NewEvent],
    ) -> Result<Option<Appended>, AppendError> {
        let stored: Vec<(&NewEvent, SessionId, Seq)> = events
            .iter()
            .filter_map(|e| self.ids.get(&e.id).map(|&(s, seq)| (e, s, seq)))
            .collect();
        retried_position(
            session,
            events,
            &stored,
            |e| e,
            |e, s, seq| {
                let env = self.get(s, seq).ok_or_else(|| {
                    AppendError::Read(ReadError::Damaged(format!(
                        "event {} indexed at session {s} seq {seq} but not stored",
                        e.id
                    )))
                })?;
                Ok(e.is_stored_as(env))
            },
        )
    }

    /// Checks, encodes and stores a batch that is not a retry.
    fn append_new(
        &mut self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, AppendError> {
        let head = self.head(session);
        check_expected(session, expected, head)?;
        // Everything is checked before anything is stored.
        let mut batch = Vec::with_capacity(events.len());
        for (seq, e) in (head + 1..).zip(events) {
            let env = e.into_at(session, seq);
            if let Err(source) = codec::encode(&env) {
                return Err(AppendError::Encode { id: env.id, source });
            }
            batch.push(env);
        }
        let last = head + batch.len() as Seq;
        for env in &batch {
            self.ids.insert(env.id, (session, env.seq));
        }
        self.sessions.entry(session).or_default().extend(batch);
        Ok(Appended {
            session,
            first: head + 1,
            last,
            duplicate: false,
        })
    }
}

impl EventLog for MemoryLog {
    fn append(
        &self,
        session: SessionId,
        expected: Expected,
        events: Vec<NewEvent>,
    ) -> Result<Appended, AppendError> {
        if events.is_empty() {
            return Err(AppendError::EmptyAppend);
        }
        // Repeated ids inside a batch can never be stored.
        if let Some(id) = repeated_id(&events) {
            return Err(AppendError::PartialDuplicate { id });
        }
        let appended = {
            let mut logs = self.lock();
            // Idempotency first (a retry must not fail the version check).
            match logs.stored_position(session, &events)? {
                Some(original) => return Ok(original),
                None => logs.append_new(session, expected, events)?,
            }
        };
        self.inner
            .hub
            .notify(&BTreeMap::from([(session, appended.last)]));
        Ok(appended)
    }

    fn read(
        &self,
        session: SessionId,
        from: Seq,
    ) -> Result<Box<dyn Iterator<Item = Result<Envelope, ReadError>> + '_>, ReadError> {
        let skip = usize::try_from(from.saturating_sub(1)).unwrap_or(usize::MAX);
        let events: Vec<Envelope> = self
            .lock()
            .sessions
            .get(&session)
            .and_then(|events| events.get(skip..))
            .map(<[Envelope]>::to_vec)
            .unwrap_or_default();
        Ok(Box::new(events.into_iter().map(Ok)))
    }

    fn head(&self, session: SessionId) -> Result<Seq, ReadError> {
        Ok(self.lock().head(session))
    }

    fn sessions(&self) -> Result<Vec<(SessionId, Seq)>, ReadError> {
        Ok(self
            .lock()
            .sessions
            .iter()
            .map(|(s, events)| (*s, events.len() as Seq))
            .collect())
    }
}

impl Followable for MemoryLog {
    fn subscribe(&self) -> Subscription {
        self.inner.hub.subscribe()
    }

    fn durable_heads(&self) -> Result<BTreeMap<SessionId, Seq>, ReadError> {
        Ok(self.sessions()?.into_iter().collect())
    }
}
