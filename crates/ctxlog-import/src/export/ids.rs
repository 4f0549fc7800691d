//! OpenCode-shaped ids for the session, its messages and its parts: kept
//! from an OpenCode session, generated from the times otherwise.

use super::fold::Source;
use ctxlog_core::{MessageId, PartId, SessionId, SessionState, TimestampMs};
use std::collections::BTreeMap;

/// OpenCode-shaped ids, ascending in the order they are asked for.
struct Ids {
    salt: String,
    keep: bool,
    last: u64,
}

const MASK48: u64 = 0xFFFF_FFFF_FFFF;

impl Ids {
    fn suffix(&self, v: u64) -> String {
        use sha2::{Digest, Sha256};
        const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let h = Sha256::digest(format!("{}/{v}", self.salt).as_bytes());
        h.iter()
            .take(14)
            .map(|b| B62[*b as usize % 62] as char)
            .collect()
    }

    /// The 12 hex digits of an OpenCode id, when `id` is one.
    fn parse(id: &str, prefix: &str) -> Option<u64> {
        let rest = id.strip_prefix(prefix)?;
        let hex = rest.get(..12)?;
        u64::from_str_radix(hex, 16).ok()
    }

    /// `source` when kept, else a new id at time `ms`.
    fn id(&mut self, prefix: &str, source: Option<&str>, ms: TimestampMs) -> String {
        if let Some(s) = source.filter(|_| self.keep) {
            if let Some(v) = Self::parse(s, prefix) {
                self.last = self.last.max(v);
                return s.to_owned();
            }
        }
        let v = (ms.saturating_mul(4096) & MASK48).max(self.last + 1) & MASK48;
        self.last = v;
        format!("{prefix}{v:012x}{}", self.suffix(v))
    }

    fn session(&self, started: TimestampMs) -> String {
        let v = !(started.saturating_mul(4096)) & MASK48;
        format!("ses_{v:012x}{}", self.suffix(v))
    }
}

/// The export's session id, then every message id and every part id.
pub(super) fn assign_ids(
    state: &SessionState,
    session: SessionId,
    source: &Source,
) -> (
    String,
    BTreeMap<MessageId, String>,
    BTreeMap<PartId, String>,
) {
    let from_opencode = state
        .source_id
        .as_deref()
        .is_some_and(|s| s.starts_with("ses_"));
    let mut ids = Ids {
        salt: state
            .source_id
            .clone()
            .unwrap_or_else(|| session.to_string()),
        keep: from_opencode,
        last: 0,
    };
    let sid = match &state.source_id {
        Some(s) if from_opencode => s.clone(),
        _ => ids.session(state.started_at),
    };
    // Every other id's suffix derives from the exported session id, which a
    // re-import keeps: exporting the re-imported session gives the same ids.
    ids.salt = sid.clone();
    // Message ids first (parents and tails refer to them), then part ids in
    // the same order, so both ascend in export order.
    let msg_ids: BTreeMap<MessageId, String> = state
        .messages
        .iter()
        .map(|m| (m.id, ids.id("msg_", m.source_id.as_deref(), m.created_at)))
        .collect();
    let mut part_ids: BTreeMap<PartId, String> = BTreeMap::new();
    for m in &state.messages {
        for p in &m.parts {
            let kept = p.source_id.as_deref().or_else(|| source.part_id(p.id));
            part_ids.insert(p.id, ids.id("prt_", kept, m.created_at));
        }
    }
    (sid, msg_ids, part_ids)
}
