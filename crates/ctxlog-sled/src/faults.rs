//! The fault-injecting log of the contract (`ctxlog_store::faults`) over a
//! sled store (feature `testing`).

use crate::SledStore;
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::faults::Faultable;

impl Faultable for SledStore {
    /// A sled store's writes are durable once made: a failed sync's write
    /// survives, so nothing is dropped.
    fn drop_unsynced(&self, _session: SessionId, _first: Seq) -> bool {
        false
    }
}
