//! [`salvage`]: copies every verifiable event of a damaged store into a new
//! one, and says what it could not save.
//!
//! A session is copied from seq 1 up to the first record that does not
//! read, does not chain, is missing, or lies past a loss the witness names;
//! what follows is not copied (a log with a hole would not replay), and is
//! reported with the reason. The new store has its own witness.

use crate::shared_store::SharedStore;
use crate::store::SledStore;
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::Expected;
use ctxlog_store::{EventLog, NewEvent};
use ctxlog_store::{OpenError, StoreError};
use std::collections::BTreeMap;

/// Events appended to the new store at once.
const BATCH: usize = 1_000;

/// What could not be saved of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsaved {
    /// The session.
    pub session: SessionId,
    /// The first seq not saved.
    pub seq: Seq,
    /// Why it, and everything after it, was not saved.
    pub detail: String,
}

/// What [`salvage`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SalvageReport {
    /// Every session with the number of events saved (seq 1 to that number).
    pub saved: BTreeMap<SessionId, Seq>,
    /// What could not be saved, in session order.
    pub unsaved: Vec<Unsaved>,
}

impl SalvageReport {
    /// Everything was saved.
    pub fn complete(&self) -> bool {
        self.unsaved.is_empty()
    }
}

/// Copies every event of `from` that reads, chains and precedes any damage
/// into `to` (a store with no session yet), session by session.
pub fn salvage(from: &SharedStore, to: &SledStore) -> Result<SalvageReport, StoreError> {
    if !to.sessions()?.is_empty() {
        return Err(StoreError::Open(OpenError::InvalidConfig(format!(
            "salvage writes into a new store; {} already holds sessions",
            to.path().display()
        ))));
    }
    let checked = from.verify()?;
    let mut report = SalvageReport::default();
    // Every session the heads or the records name (a session whose records
    // sled cannot reach still has its head).
    let mut sessions = checked.heads.clone();
    if let Ok(heads) = from.sessions() {
        for (s, head) in heads {
            sessions.entry(s).or_insert(head);
        }
    }
    for (session, last) in &sessions {
        let (saved, mut stopped) = copy_session(from, to, *session)?;
        if stopped.is_none() && saved < *last {
            // The records past a gap in a session without a head.
            let why: Vec<String> = checked
                .errors
                .iter()
                .filter(|e| e.session == Some(*session))
                .map(|e| e.to_string())
                .collect();
            stopped = Some(format!(
                "records {} to {last} do not follow in order: {}",
                saved + 1,
                why.join("; ")
            ));
        }
        report.saved.insert(*session, saved);
        if let Some(detail) = stopped {
            report.unsaved.push(Unsaved {
                session: *session,
                seq: saved + 1,
                detail,
            });
        }
    }
    // Sessions the witness vouches for that the log has nothing of.
    for e in checked.errors.iter().filter(|e| e.kind == "lost") {
        if let Some(s) = e.session.filter(|s| !report.saved.contains_key(s)) {
            report.saved.insert(s, 0);
            report.unsaved.push(Unsaved {
                session: s,
                seq: 1,
                detail: e.detail.clone(),
            });
        }
    }
    report.unsaved.sort_by_key(|u| u.session);
    Ok(report)
}

/// Copies one session up to its first unreadable event; (events copied,
/// why it stopped early).
fn copy_session(
    from: &SharedStore,
    to: &SledStore,
    session: SessionId,
) -> Result<(Seq, Option<String>), StoreError> {
    let mut copied: Seq = 0;
    let mut batch: Vec<NewEvent> = Vec::with_capacity(BATCH);
    let mut stopped = None;
    for e in from.read(session, 1)? {
        match e {
            Ok(envelope) => batch.push(NewEvent::from(envelope)),
            Err(e) => {
                stopped = Some(e.to_string());
                break;
            }
        }
        if batch.len() == BATCH {
            copied = append(to, session, copied, std::mem::take(&mut batch))?;
        }
    }
    if !batch.is_empty() {
        copied = append(to, session, copied, batch)?;
    }
    Ok((copied, stopped))
}

fn append(
    to: &SledStore,
    session: SessionId,
    head: Seq,
    batch: Vec<NewEvent>,
) -> Result<Seq, StoreError> {
    let expected = if head == 0 {
        Expected::NoStream
    } else {
        Expected::Exactly(head)
    };
    Ok(to.append(session, expected, batch)?.last)
}
