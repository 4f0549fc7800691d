//! What an agent's hook sends (`ctxlog hook` with `CTXLOG_OTEL_EXPORT=1`):
//! the spans of its session that the events stored since the session's
//! previous capture made final (a turn once the next begins, each call and
//! tool call once it ends), and at the session's end the rest. A hook
//! cannot wait for a turn to go quiet, so the turn in progress waits for
//! the next call. Spans sent by an earlier call are not sent again; one
//! that could not be sent is sent by `otel export`, with the same ids.

use crate::content::Content;
use crate::export::{speaker_of, Batcher, ExportError};
use crate::fold::TraceFold;
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::EventLog;

/// Sends through `batcher` the spans of `session` that its events after
/// `since` up to `until` made final (all that remain when `ends`).
pub fn send_new(
    log: &impl EventLog,
    session: SessionId,
    since: Seq,
    until: Seq,
    ends: bool,
    content: Content,
    batcher: &mut Batcher,
) -> Result<(), ExportError> {
    let mut fold = TraceFold::new(session, speaker_of(log, session)?, content);
    for e in log.read(session, 1)? {
        let e = e?;
        if e.seq > until {
            break;
        }
        fold.push(&e);
        let made = fold.drain();
        if e.seq > since {
            batcher.add(made)?;
        }
    }
    if ends {
        batcher.add(fold.finish())?;
    }
    batcher.exported.sessions += 1;
    batcher.flush()
}
