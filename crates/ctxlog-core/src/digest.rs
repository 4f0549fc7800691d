//! The state digest: SHA-256 over a domain tag, the reducer version and the
//! canonical encoding of the derived state. Every collection in the state is
//! a `Vec` in log order (lookup tables are not encoded), so the same events
//! give the same digest in any process.

use crate::codec;
use crate::state::{SessionState, REDUCER_VERSION};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// A SHA-256 digest, shown as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StateDigest(pub [u8; 32]);

impl fmt::Display for StateDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for StateDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StateDigest({self})")
    }
}

/// SHA-256 of `bytes`, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    StateDigest(Sha256::digest(bytes).into()).to_string()
}

impl SessionState {
    /// The canonical digest of this state: of what it holds but the
    /// messages it dropped, so a state keeping its history has the digest
    /// of one that does not.
    pub fn digest(&self) -> StateDigest {
        let mut h = Sha256::new();
        h.update(b"ctxlog/state\0");
        h.update(REDUCER_VERSION.to_le_bytes());
        codec::encode_state_into(&mut h, &*self.held()).expect("writing to a hasher cannot fail");
        StateDigest(h.finalize().into())
    }

    /// Encodes the state for a snapshot (lookup tables and dropped messages
    /// excluded: a snapshot decodes to a state that does not keep its
    /// history).
    pub fn to_snapshot(&self) -> Vec<u8> {
        let mut out = Vec::new();
        codec::encode_state_into(&mut out, &*self.held()).expect("writing to a Vec cannot fail");
        out
    }

    /// Decodes a snapshot and rebuilds its lookup tables.
    pub fn from_snapshot(bytes: &[u8]) -> Result<Self, codec::CodecError> {
        let mut s: SessionState = codec::decode_state(bytes)?;
        s.rebuild_index();
        Ok(s)
    }
}
