//! The on-disk record layout and keys.
//!
//! Key: session id (16 bytes) ‖ seq (u64 big endian), so one range scan reads
//! a session in order.
//!
//! Value:
//! ```text
//! format u8 (=1) ‖ codec u8 (=1: bincode varint LE) ‖ event kind u8 ‖ schema u16 LE
//! ‖ payload (the envelope, ctxlog_core::codec)
//! ‖ chain [32] = SHA-256("ctxlog/chain\0" ‖ previous chain ‖ header ‖ payload)
//! ‖ crc32c u32 LE over everything before it
//! ```
//! The chain of seq 1 starts from [`genesis`] of the session, so a record
//! moved to another session or position breaks the chain. Every future
//! format must keep the trailing CRC32C over the rest of the record, so that
//! damage is told apart from a newer format.

use ctxlog_core::{codec, Envelope, Seq, SessionId, EVENT_SCHEMA_VERSION};
use sha2::{Digest, Sha256};

/// Current record format.
pub const FORMAT: u8 = 1;
/// Codec id of `ctxlog_core::codec` (bincode 1.3.3, varint, little endian).
pub const CODEC: u8 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 5;
/// Chain digest length.
pub const CHAIN_LEN: usize = 32;
/// Smallest possible record.
pub const MIN_RECORD_LEN: usize = HEADER_LEN + CHAIN_LEN + 4;

/// A chain digest.
pub type Chain = [u8; CHAIN_LEN];

/// The chain value before a session's first record.
pub fn genesis(session: SessionId) -> Chain {
    let mut h = Sha256::new();
    h.update(b"ctxlog/genesis\0");
    h.update(session.as_bytes());
    h.finalize().into()
}

/// Key of (session, seq).
pub fn key(session: SessionId, seq: Seq) -> [u8; 24] {
    let mut k = [0u8; 24];
    k[..16].copy_from_slice(session.as_bytes());
    k[16..].copy_from_slice(&seq.to_be_bytes());
    k
}

/// Splits a key into (session, seq); `None` if it is not 24 bytes.
pub fn parse_key(k: &[u8]) -> Option<(SessionId, Seq)> {
    if k.len() != 24 {
        return None;
    }
    let session = SessionId(uuid::Uuid::from_slice(&k[..16]).ok()?);
    let seq = Seq::from_be_bytes(k[16..].try_into().ok()?);
    Some((session, seq))
}

fn chain_next(prev: &Chain, header_and_payload: &[u8]) -> Chain {
    let mut h = Sha256::new();
    h.update(b"ctxlog/chain\0");
    h.update(prev);
    h.update(header_and_payload);
    h.finalize().into()
}

/// Encodes `env` as a record chained to `prev`; returns the bytes and the new chain.
pub fn encode(env: &Envelope, prev: &Chain) -> Result<(Vec<u8>, Chain), codec::CodecError> {
    let payload = codec::encode(env)?;
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len() + CHAIN_LEN + 4);
    out.push(FORMAT);
    out.push(CODEC);
    out.push(env.event.kind_index());
    out.extend_from_slice(&EVENT_SCHEMA_VERSION.to_le_bytes());
    out.extend_from_slice(&payload);
    let chain = chain_next(prev, &out);
    out.extend_from_slice(&chain);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok((out, chain))
}

/// What is wrong with a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordProblem {
    /// Shorter than any record can be.
    #[error("truncated record ({0} bytes)")]
    Truncated(usize),
    /// The CRC does not match: the bytes changed.
    #[error("CRC32C mismatch (stored {stored:08x}, computed {computed:08x})")]
    Crc {
        /// Stored value.
        stored: u32,
        /// Computed value.
        computed: u32,
    },
    /// Written by a newer (or unknown) format, codec or schema.
    #[error("unsupported record: format {format}, codec {codec}, schema {schema} (this build reads format {FORMAT}, codec {CODEC}, schema ≤ {EVENT_SCHEMA_VERSION})")]
    Unsupported {
        /// Format byte.
        format: u8,
        /// Codec byte.
        codec: u8,
        /// Schema version.
        schema: u16,
    },
    /// The payload does not decode.
    #[error("payload does not decode: {0}")]
    Undecodable(String),
    /// The header's event kind differs from the payload's.
    #[error("header says event kind {header}, payload is {payload}")]
    KindMismatch {
        /// Header byte.
        header: u8,
        /// Payload's kind index.
        payload: u8,
    },
    /// The payload belongs to another key (a moved or swapped record).
    #[error("record for session {session} seq {seq} stored under this key")]
    Misplaced {
        /// Payload's session.
        session: SessionId,
        /// Payload's seq.
        seq: Seq,
    },
    /// The chain does not follow from the previous record.
    #[error("chain digest does not follow from the previous record")]
    Chain,
    /// The record is not stored although the head says it exists.
    #[error("record missing (head is {head}{})", .next.map(|n| format!(", next stored is seq {n}")).unwrap_or_default())]
    Missing {
        /// The session's head.
        head: Seq,
        /// The next seq actually stored, if any.
        next: Option<Seq>,
    },
    /// The event-id index does not point at this record.
    #[error("event id index does not point at this record")]
    Index,
}

/// A decoded, CRC-checked record.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// The envelope.
    pub envelope: Envelope,
    /// The stored chain value.
    pub chain: Chain,
    /// Header ‖ payload (what the chain covers).
    header_and_payload_len: usize,
}

impl Decoded {
    /// Whether the stored chain follows from `prev` (given the record bytes
    /// it was decoded from; other bytes, too short, never follow).
    pub fn chain_follows(&self, prev: &Chain, bytes: &[u8]) -> bool {
        bytes
            .get(..self.header_and_payload_len)
            .is_some_and(|covered| chain_next(prev, covered) == self.chain)
    }
}

/// Decodes a record stored under (`session`, `seq`): CRC, header, payload,
/// and that the payload belongs to that key. The chain is checked separately.
pub fn decode(bytes: &[u8], session: SessionId, seq: Seq) -> Result<Decoded, RecordProblem> {
    if bytes.len() < MIN_RECORD_LEN {
        return Err(RecordProblem::Truncated(bytes.len()));
    }
    let Some((body, crc)) = bytes.split_last_chunk::<4>() else {
        return Err(RecordProblem::Truncated(bytes.len()));
    };
    let stored = u32::from_le_bytes(*crc);
    let computed = crc32c::crc32c(body);
    if stored != computed {
        // A damaged record, whatever its format byte says (every format
        // keeps a trailing CRC32C over the rest).
        return Err(RecordProblem::Crc { stored, computed });
    }
    let Some((header, rest)) = body.split_first_chunk::<HEADER_LEN>() else {
        return Err(RecordProblem::Truncated(bytes.len()));
    };
    let [format, codec_id, kind, s0, s1] = *header;
    let schema = u16::from_le_bytes([s0, s1]);
    if format != FORMAT || codec_id != CODEC || schema > EVENT_SCHEMA_VERSION || schema == 0 {
        return Err(RecordProblem::Unsupported {
            format,
            codec: codec_id,
            schema,
        });
    }
    let Some((payload, chain)) = rest.split_last_chunk::<CHAIN_LEN>() else {
        return Err(RecordProblem::Truncated(bytes.len()));
    };
    let envelope: Envelope = codec::decode_envelope(payload, schema)
        .map_err(|e| RecordProblem::Undecodable(e.to_string()))?;
    if envelope.event.kind_index() != kind {
        return Err(RecordProblem::KindMismatch {
            header: kind,
            payload: envelope.event.kind_index(),
        });
    }
    if envelope.session != session || envelope.seq != seq {
        return Err(RecordProblem::Misplaced {
            session: envelope.session,
            seq: envelope.seq,
        });
    }
    Ok(Decoded {
        envelope,
        chain: *chain,
        header_and_payload_len: HEADER_LEN + payload.len(),
    })
}

/// A snapshot as every durable log keeps it: the chain of the record at the
/// state's head (which ties the snapshot to the log it was derived from) ‖
/// the state's bytes ([`Snapshot::state`](crate::Snapshot)) ‖ CRC32C (LE) of
/// the rest.
pub fn snapshot_value(chain: &Chain, state: &[u8]) -> Vec<u8> {
    let mut bytes = chain.to_vec();
    bytes.extend_from_slice(state);
    let crc = crc32c::crc32c(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

/// The chain and state bytes of a [`snapshot_value`]; `None` when it is
/// damaged (the state is then replayed instead).
pub fn parse_snapshot_value(v: &[u8]) -> Option<(Chain, &[u8])> {
    let (body, crc) = v.split_last_chunk::<4>()?;
    if crc32c::crc32c(body) != u32::from_le_bytes(*crc) {
        return None;
    }
    let (chain, state) = body.split_first_chunk::<CHAIN_LEN>()?;
    Some((*chain, state))
}
