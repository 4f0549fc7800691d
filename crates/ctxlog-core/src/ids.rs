//! Identifiers. Every id is supplied by the caller (an [`IdSource`]), never drawn
//! inside a reducer, so a replay sees exactly the ids that were recorded.

use serde::{Deserialize, Serialize};
use std::fmt;
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub struct $name(pub Uuid);

        impl $name {
            /// The raw 16 bytes, big-endian as the UUID is written.
            pub fn as_bytes(&self) -> &[u8; 16] {
                self.0.as_bytes()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl From<Uuid> for $name {
            fn from(u: Uuid) -> Self {
                Self(u)
            }
        }
    };
}

uuid_id!(
    /// One agent session: one ordered event stream.
    SessionId
);
uuid_id!(
    /// One event, unique across the store (a UUID v7 in practice).
    EventId
);
uuid_id!(
    /// One message of a session (user or assistant).
    MessageId
);
uuid_id!(
    /// One part of a message (text, tool call, step marker, ...).
    PartId
);

/// Per-session sequence number. The first event of a session has seq 1;
/// a head of 0 means the session has no events.
pub type Seq = u64;

/// Milliseconds since the Unix epoch, always supplied with the event.
pub type TimestampMs = u64;

/// Where ids come from. Injected so that tests and replays are deterministic.
pub trait IdSource {
    /// A fresh, unique id; `now_ms` is the caller's clock reading, used for
    /// the time-ordered prefix of a UUID v7.
    fn next_uuid(&mut self, now_ms: TimestampMs) -> Uuid;
}

/// A deterministic [`IdSource`] producing UUID v7 values from the caller's
/// timestamp, a seed and a counter. Two sources with the same seed produce the
/// same ids for the same timestamps.
#[derive(Debug, Clone)]
pub struct SeededIds {
    seed: u64,
    counter: u64,
}

/// splitmix64's increment (the golden ratio in 64 bits).
pub(crate) const SPLITMIX64_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's output function: 64 well-mixed bits of `z`.
pub(crate) fn splitmix64_mix(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SeededIds {
    /// A source whose ids are a pure function of `seed` and the call order.
    pub fn new(seed: u64) -> Self {
        Self { seed, counter: 0 }
    }
}

impl IdSource for SeededIds {
    fn next_uuid(&mut self, now_ms: TimestampMs) -> Uuid {
        self.counter += 1;
        // splitmix64 of (seed, counter): 10 bytes of "random" tail, deterministic.
        let z = splitmix64_mix(
            self.seed
                .wrapping_add(self.counter.wrapping_mul(SPLITMIX64_GAMMA)),
        );
        let mut tail = [0u8; 10];
        tail[..8].copy_from_slice(&z.to_be_bytes());
        tail[8..].copy_from_slice(&(self.counter as u16).to_be_bytes());
        uuid::Builder::from_unix_timestamp_millis(now_ms, &tail).into_uuid()
    }
}

/// The id of an event that describes the session as a whole
/// ([`crate::Event::is_description`]) at (`session`, `seq`): derived from
/// its place, not drawn, so that it never takes an id an import draws in
/// sequence (a growing recording's next import draws those for its new
/// events), and the same place always gets the same id. A UUID v8.
pub fn description_event_id(session: SessionId, seq: Seq) -> EventId {
    EventId(derived_uuid(
        b"ctxlog session description",
        &[session.as_bytes(), &seq.to_le_bytes()],
    ))
}

/// A UUID v8 derived from `parts` under `tag` (SHA-256 of the tag, a NUL
/// and the parts): the same inputs always give the same id, and ids
/// derived under different tags never meet.
pub fn derived_uuid(tag: &[u8], parts: &[&[u8]]) -> Uuid {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(tag);
    h.update([0u8]);
    for part in parts {
        h.update(part);
    }
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}

/// The first bytes of every description stream's id.
const DESCRIPTION_STREAM_TAG: [u8; 6] = *b"ctxdsc";

/// The stream that holds what describes `session` (its title, directory,
/// agent, model and cost, the source fields of its objects, how far its
/// last import got: [`crate::Event::is_description`]), beside the events of
/// what happened, so that a description that changes while a recording
/// grows never shifts their seqs. A UUID v8 derived from `session`, whose
/// first six bytes are `ctxdsc` (as a UUID v7 time, the year 5400), so
/// [`is_description_stream`] tells one from a session.
pub fn description_stream(session: SessionId) -> SessionId {
    let derived = derived_uuid(b"ctxlog description stream", &[session.as_bytes()]);
    let mut bytes = *derived.as_bytes();
    bytes[..6].copy_from_slice(&DESCRIPTION_STREAM_TAG);
    SessionId(uuid::Builder::from_custom_bytes(bytes).into_uuid())
}

/// Whether `id` names a description stream ([`description_stream`]) rather
/// than a session.
pub fn is_description_stream(id: SessionId) -> bool {
    id.as_bytes()[..6] == DESCRIPTION_STREAM_TAG && id.0.get_version_num() == 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_ids_are_v7_unique_and_reproducible() {
        let mut a = SeededIds::new(7);
        let mut b = SeededIds::new(7);
        let xs: Vec<Uuid> = (0..100)
            .map(|i| a.next_uuid(1_700_000_000_000 + i))
            .collect();
        let ys: Vec<Uuid> = (0..100)
            .map(|i| b.next_uuid(1_700_000_000_000 + i))
            .collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|u| u.get_version_num() == 7));
        let mut sorted = xs.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 100);
        let mut c = SeededIds::new(8);
        assert_ne!(c.next_uuid(1_700_000_000_000), xs[0]);
    }

    #[test]
    fn a_description_stream_is_told_from_its_session() {
        let session = SessionId(Uuid::from_u128(0x0199_812e_64f0_7f73_91fc_095d_da01_c36e));
        let stream = description_stream(session);
        assert!(is_description_stream(stream));
        assert!(!is_description_stream(session));
        assert_eq!(stream, description_stream(session), "derived, not drawn");
        assert_ne!(stream, description_stream(SessionId(Uuid::nil())));
    }
}
