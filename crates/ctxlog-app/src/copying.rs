//! A whole store copied into another, between any two logs (sled to
//! PostgreSQL and back): every stream (sessions and their description
//! streams) with the same events, ids and seqs, in bounded batches with
//! expected versions. A copy cut short is finished by running it again:
//! what the target holds already is passed over once checked. Each stream
//! is then read back from both sides and compared.

use crate::catalog::{CHUNK_BYTES, CHUNK_EVENTS};
use ctxlog_core::{codec, Envelope, Seq, SessionId};
use ctxlog_store::{AppendError, EventLog, Expected, NewEvent, ReadError};
use serde::Serialize;
use sha2::{Digest, Sha256};
use thiserror::Error;

/// Why a copy stopped.
#[derive(Debug, Error)]
pub enum CopyError {
    /// Reading either log failed.
    #[error("{0}")]
    Read(#[from] ReadError),
    /// Appending to the target failed.
    #[error("{0}")]
    Append(#[from] AppendError),
    /// The target holds other events for a stream than the source.
    #[error("session {session}: the target holds other events than the source from seq {seq} (it is not a copy of it); nothing more of it was copied")]
    Diverged {
        /// The stream.
        session: SessionId,
        /// The first seq that differs.
        seq: Seq,
    },
    /// Read back, a stream differs between the logs.
    #[error("session {session}: read back, the copy differs from the source ({source_events} events, digest {source_digest}; copy {copy_events} events, digest {copy_digest})")]
    Differs {
        /// The stream.
        session: SessionId,
        /// Events in the source.
        source_events: u64,
        /// Digest of the source's events.
        source_digest: String,
        /// Events in the copy.
        copy_events: u64,
        /// Digest of the copy's events.
        copy_digest: String,
    },
}

/// What a copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Copied {
    /// Streams in the source (sessions and description streams).
    pub streams: u64,
    /// Events in the source.
    pub events: u64,
    /// Of those, appended now (the rest were in the target already).
    pub appended: u64,
    /// SHA-256 over every stream's id and events in stream order, the same
    /// on both sides.
    pub digest: String,
}

/// Copies every stream of `from` into `to` (see the module doc);
/// `progress(events_done)` after each batch.
pub fn copy_log(
    from: &impl EventLog,
    to: &impl EventLog,
    mut progress: impl FnMut(u64),
) -> Result<Copied, CopyError> {
    let mut copied = Copied::default();
    let mut whole = Sha256::new();
    for (session, head) in from.sessions()? {
        copied.streams += 1;
        copied.events += head;
        let mut at = to.head(session)?;
        if at > head {
            return Err(CopyError::Diverged {
                session,
                seq: head + 1,
            });
        }
        if at > 0 && !same_event(from, to, session, at)? {
            return Err(CopyError::Diverged { session, seq: at });
        }
        let mut batch: Vec<NewEvent> = Vec::new();
        let mut bytes = 0;
        for e in from
            .read(session, at + 1)?
            .take_while(|e| e.as_ref().map_or(true, |e| e.seq <= head))
        {
            let e = e?;
            bytes += codec::encoded_len(&e.event);
            batch.push(NewEvent::from(e));
            if batch.len() >= CHUNK_EVENTS || bytes >= CHUNK_BYTES {
                at = append(to, session, at, std::mem::take(&mut batch), &mut copied)?;
                bytes = 0;
                progress(copied.appended);
            }
        }
        if !batch.is_empty() {
            append(to, session, at, batch, &mut copied)?;
            progress(copied.appended);
        }
        let source = stream_digest(from, session, head)?;
        let copy = stream_digest(to, session, head)?;
        if source != copy {
            return Err(CopyError::Differs {
                session,
                source_events: source.0,
                source_digest: source.1,
                copy_events: copy.0,
                copy_digest: copy.1,
            });
        }
        whole.update(session.as_bytes());
        whole.update(source.1.as_bytes());
    }
    copied.digest = hex(&whole.finalize());
    Ok(copied)
}

/// Appends `batch` after `at`; the new head.
fn append(
    to: &impl EventLog,
    session: SessionId,
    at: Seq,
    batch: Vec<NewEvent>,
    copied: &mut Copied,
) -> Result<Seq, CopyError> {
    let n = batch.len() as u64;
    let expected = if at == 0 {
        Expected::NoStream
    } else {
        Expected::Exactly(at)
    };
    let done = to.append(session, expected, batch)?;
    copied.appended += n;
    Ok(done.last)
}

/// Whether both logs hold the same event at (`session`, `seq`).
fn same_event(
    a: &impl EventLog,
    b: &impl EventLog,
    session: SessionId,
    seq: Seq,
) -> Result<bool, ReadError> {
    let one = |log: &dyn EventLog| -> Result<Option<Envelope>, ReadError> {
        log.read(session, seq)?.next().transpose()
    };
    Ok(one(a)? == one(b)?)
}

/// How many of a stream's first `head` events a log holds, and a SHA-256
/// over their encoding.
fn stream_digest(
    log: &impl EventLog,
    session: SessionId,
    head: Seq,
) -> Result<(u64, String), ReadError> {
    let mut h = Sha256::new();
    let mut n = 0;
    for e in log
        .read(session, 1)?
        .take_while(|e| e.as_ref().map_or(true, |e| e.seq <= head))
    {
        let e = e?;
        let bytes = codec::encode(&e)
            .map_err(|err| ReadError::Damaged(format!("session {session} seq {}: {err}", e.seq)))?;
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
        n += 1;
    }
    Ok((n, hex(&h.finalize())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxlog_store::conformance::session_events;
    use ctxlog_store::MemoryLog;

    fn log_of(seeds: &[u64]) -> MemoryLog {
        let log = MemoryLog::new();
        for &seed in seeds {
            let (s, events) = session_events(seed, 1_200);
            log.append(s, Expected::NoStream, events).unwrap();
        }
        log
    }

    #[test]
    fn a_copy_holds_the_same_streams_and_a_second_run_appends_nothing() {
        let from = log_of(&[1, 2, 3]);
        let to = MemoryLog::new();
        let first = copy_log(&from, &to, |_| {}).unwrap();
        assert_eq!(first.streams, 3);
        assert_eq!(first.appended, first.events);
        assert_eq!(to.sessions().unwrap(), from.sessions().unwrap());
        let again = copy_log(&from, &to, |_| {}).unwrap();
        assert_eq!(again.appended, 0);
        assert_eq!(again.digest, first.digest);
        // And back: the same digest.
        let back = MemoryLog::new();
        assert_eq!(copy_log(&to, &back, |_| {}).unwrap().digest, first.digest);
    }

    #[test]
    fn a_copy_cut_short_is_finished_and_a_diverged_target_refused() {
        let from = log_of(&[4]);
        let (s, events) = session_events(4, 1_200);
        let to = MemoryLog::new();
        to.append(s, Expected::NoStream, events[..700].to_vec())
            .unwrap();
        let done = copy_log(&from, &to, |_| {}).unwrap();
        assert_eq!(done.appended, done.events - 700);

        // A target whose first event of the stream has another id.
        let diverged = MemoryLog::new();
        let (_, mine) = session_events(6, 10);
        let mut first = mine[0].clone();
        first.event = events[0].event.clone();
        diverged.append(s, Expected::NoStream, vec![first]).unwrap();
        let e = copy_log(&from, &diverged, |_| {}).unwrap_err();
        assert!(
            matches!(e, CopyError::Diverged { session, seq: 1 } if session == s),
            "{e}"
        );
    }
}
