//! What every handle of one log shares: its connections, the doorbell of
//! its subscribers, its `NOTIFY` channel and its listening thread.

use crate::append::seq_of;
use crate::error::backend;
use crate::pool::Pool;
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::backend::Hub;
use ctxlog_store::record::Chain;
use ctxlog_store::ReadError;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub(crate) struct Inner {
    pub(crate) pool: Pool,
    pub(crate) hub: Hub,
    /// The `NOTIFY` channel appends ring (one per schema).
    pub(crate) channel: String,
    /// The listening thread, once a subscriber asked for one.
    pub(crate) listener: Mutex<Option<Listening>>,
    /// The head (and its chain) this process last saw of each session it
    /// appended to: what the next append is encoded from. A guess the
    /// database checks; at most [`KNOWN_HEADS`].
    pub(crate) known: Mutex<BTreeMap<SessionId, (Seq, Chain)>>,
    /// Where new heads go to be rung (`notify.rs`), once one was.
    pub(crate) ringer: Mutex<Option<crossbeam_channel::Sender<(SessionId, Seq)>>>,
}

/// The most heads [`Inner::known`] keeps (it starts again past that).
pub(crate) const KNOWN_HEADS: usize = 4_096;

/// A listening thread: whether it has ended.
pub(crate) struct Listening {
    pub(crate) stopped: Arc<AtomicBool>,
}

impl Listening {
    pub(crate) fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
}

impl Inner {
    /// Every session with its head, in session-id order.
    pub(crate) fn heads(&self) -> Result<Vec<(SessionId, Seq)>, ReadError> {
        let rows = self.pool.with(|c| {
            c.query("SELECT session, seq FROM ctxlog_heads WHERE seq > 0", &[])
                .map_err(|e| {
                    ReadError::Backend(backend(self.pool.target(), "cannot list sessions", e))
                })
        })?;
        let mut out = rows
            .into_iter()
            .map(|r| Ok((SessionId(r.get(0)), seq_of(r.get(1))?)))
            .collect::<Result<Vec<_>, ReadError>>()?;
        out.sort();
        Ok(out)
    }
}
