//! A session's derived state from any log: [`SessionStates`] folds the
//! events ([`SessionStates::replay`]), starts from the newest usable
//! snapshot ([`SessionStates::load_state`]) and keeps one
//! ([`SessionStates::save_snapshot`]). The log itself only stores events
//! and opaque snapshot bytes ([`EventLog`]); what a state is, and which
//! reducer version made it, is decided here.

use crate::error::{AppendError, ReadError};
use crate::log::{EventLog, Snapshot};
use ctxlog_core::{Seq, SessionId, SessionState, REDUCER_VERSION};

/// A state loaded from a log, and how.
#[derive(Debug, Clone)]
pub struct LoadedState {
    /// The state at the session's head.
    pub state: SessionState,
    /// The snapshot it started from, if one was usable.
    pub snapshot: Option<Seq>,
    /// Events replayed on top.
    pub replayed: u64,
}

/// A session's derived state, from any [`EventLog`] (implemented for
/// every one).
pub trait SessionStates: EventLog {
    /// The state at the head, folded from the newest usable snapshot of
    /// this reducer version (a full replay when there is none, or it does
    /// not decode to this session at its seq).
    fn load_state(&self, session: SessionId) -> Result<LoadedState, ReadError> {
        let start = self
            .newest_snapshot(session, REDUCER_VERSION)?
            .and_then(|snapshot| decoded(session, &snapshot));
        let snapshot = start.as_ref().map(|s| s.head);
        let mut state = start.unwrap_or_default();
        let replayed = evolve_to_head(self, session, &mut state)?;
        Ok(LoadedState {
            state,
            snapshot,
            replayed,
        })
    }

    /// The state at the head, folded from the first event.
    fn replay(&self, session: SessionId) -> Result<SessionState, ReadError> {
        let mut state = SessionState::new();
        evolve_to_head(self, session, &mut state)?;
        Ok(state)
    }

    /// Keeps a snapshot of `state` (a session's state at its head) so that
    /// a later [`SessionStates::load_state`] folds only what came after
    /// it; nothing for a state of no session, nor on a log that keeps no
    /// snapshots (the state is not even encoded).
    fn save_snapshot(&self, state: &SessionState) -> Result<(), AppendError> {
        let Some(session) = state.session.filter(|_| self.keeps_snapshots()) else {
            return Ok(());
        };
        self.keep_snapshot(Snapshot {
            session,
            head: state.head,
            version: REDUCER_VERSION,
            state: state.to_snapshot(),
        })
    }
}

impl<L: EventLog + ?Sized> SessionStates for L {}

/// The state `snapshot` holds, when it decodes to `session` at the
/// snapshot's seq.
fn decoded(session: SessionId, snapshot: &Snapshot) -> Option<SessionState> {
    match SessionState::from_snapshot(&snapshot.state) {
        Ok(state) if state.session == Some(session) && state.head == snapshot.head => Some(state),
        _ => {
            let seq = snapshot.head;
            tracing::warn!(%session, seq, "snapshot unusable; falling back to replay");
            None
        }
    }
}

/// Evolves `state` with the session's events after `state.head`; returns how
/// many were applied.
pub fn evolve_to_head<L: EventLog + ?Sized>(
    log: &L,
    session: SessionId,
    state: &mut SessionState,
) -> Result<u64, ReadError> {
    let Some(from) = state.head.checked_add(1) else {
        return Ok(0);
    };
    let mut applied = 0;
    for e in log.read(session, from)? {
        state.evolve(&e?)?;
        applied += 1;
    }
    Ok(applied)
}
