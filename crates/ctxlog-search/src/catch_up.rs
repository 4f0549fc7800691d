//! Bringing the index up to the log: every session's events past its
//! watermark go through the projection, committed with the new watermarks
//! every [`COMMIT_EVERY`] events and at the end. A process killed midway
//! leaves the last commit, and the next catch-up goes on from it; a session
//! whose head is below its watermark (the store was replaced) is indexed
//! again from its start.

use crate::error::SearchError;
use crate::lookup::{Engine, Watermarks, Writer};
use crate::project::{changes, Change};
use ctxlog_core::{is_description_stream, Envelope, MessageId, PartId, Seq, SessionId};
use ctxlog_store::EventLog;
use std::collections::HashMap;
use std::time::Duration;

/// Events indexed between two commits: what a kill can cost.
pub const COMMIT_EVERY: u64 = 100_000;

/// What a catch-up did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaughtUp {
    /// Sessions that had new events.
    pub sessions: usize,
    /// Events read.
    pub events: u64,
}

/// Whether a session is indexed, told by its first event (a kept
/// simulation repeats its recording and is not).
pub type Keep<'a> = &'a dyn Fn(&Envelope) -> bool;

/// Brings `index` up to `log`, waiting up to `wait` for another process
/// that is doing it; `progress` is told the events read so far.
pub fn catch_up<E: Engine + ?Sized, L: EventLog + ?Sized>(
    index: &E,
    log: &L,
    keep: Keep<'_>,
    wait: Duration,
    progress: &mut dyn FnMut(u64),
) -> Result<CaughtUp, SearchError> {
    let mut sessions = log.sessions()?;
    sessions.retain(|(s, _)| !is_description_stream(*s));
    let before = index.watermarks()?;
    if sessions.iter().all(|(s, head)| before.of(*s) == *head) {
        return Ok(CaughtUp::default());
    }
    let writer = index.writer(wait)?;
    // Another process may have committed while this one waited.
    index.reload()?;
    let mut run = Run {
        marks: index.watermarks()?,
        writer,
        origins: HashMap::new(),
        since_commit: 0,
        done: CaughtUp::default(),
    };
    for (session, head) in sessions {
        let mark = run.marks.of(session);
        if mark == head {
            continue;
        }
        run.done.sessions += 1;
        run.session(log, session, mark, head, keep, progress)?;
    }
    let Run {
        mut writer,
        marks,
        done,
        ..
    } = run;
    writer.commit(&marks)?;
    writer.finish()?;
    Ok(done)
}

/// One catch-up under way.
struct Run<W> {
    marks: Watermarks,
    writer: W,
    /// The message of each part indexed since the last commit (a
    /// [`ctxlog_core::Event::PartUpdated`] does not name it).
    origins: HashMap<PartId, MessageId>,
    since_commit: u64,
    done: CaughtUp,
}

impl<W: Writer> Run<W> {
    fn session<L: EventLog + ?Sized>(
        &mut self,
        log: &L,
        session: SessionId,
        mut mark: Seq,
        head: Seq,
        keep: Keep<'_>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), SearchError> {
        if mark > head {
            // The store holds another history now: index it again.
            self.writer.forget(session)?;
            mark = 0;
        }
        if self.marks.skipped.contains(&session.to_string()) {
            self.set_mark(session, head);
            return Ok(());
        }
        for e in log.read(session, mark + 1)? {
            let e = e?;
            if e.seq > head {
                break;
            }
            if e.seq == 1 && !keep(&e) {
                self.marks.skipped.insert(session.to_string());
                self.set_mark(session, head);
                return Ok(());
            }
            self.apply(&e)?;
            self.set_mark(session, e.seq);
            self.done.events += 1;
            self.since_commit += 1;
            if self.since_commit >= COMMIT_EVERY {
                self.writer.commit(&self.marks)?;
                self.origins.clear();
                self.since_commit = 0;
                progress(self.done.events);
            }
        }
        Ok(())
    }

    fn set_mark(&mut self, session: SessionId, seq: Seq) {
        self.marks.sessions.insert(session.to_string(), seq);
    }

    /// Writes what event `e` changes.
    fn apply(&mut self, e: &Envelope) -> Result<(), SearchError> {
        for change in changes(e) {
            match change {
                // A message is appended once: nothing to replace.
                Change::Message(m) => self.writer.message(e, &m)?,
                Change::Part(p) => {
                    let message = match p.message {
                        Some(m) => Some(m),
                        None => self.message_of(e.session, p.part)?,
                    };
                    let Some(message) = message else {
                        tracing::warn!(session = %e.session, seq = e.seq, part = %p.part,
                            "an update of a part the index never saw; left out of the index");
                        continue;
                    };
                    self.origins.insert(p.part, message);
                    // An update replaces the part's document; its first
                    // version has none to replace.
                    self.writer.part(e, &p, message, p.message.is_none())?;
                }
                Change::Mark(m) => self.writer.mark(e, &m)?,
            }
        }
        Ok(())
    }

    /// The message of a part indexed before, in this run or committed.
    fn message_of(
        &mut self,
        session: SessionId,
        part: PartId,
    ) -> Result<Option<MessageId>, SearchError> {
        if let Some(m) = self.origins.get(&part) {
            return Ok(Some(*m));
        }
        self.writer.message_of(session, part)
    }
}
