//! The one binary codec: bincode 1.3.3 with one fixed options value
//! (varint integers, little endian, trailing bytes rejected, a size limit).
//! Never use bincode's top-level `serialize`/`deserialize`: their options
//! differ (fixed-width integers, trailing bytes allowed, no limit).

use bincode::Options;
use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;

/// Largest value the codec encodes or decodes (64 MiB): large enough for any
/// real tool output, small enough that a corrupt length cannot exhaust memory.
pub const MAX_ENCODED_BYTES: u64 = 64 * 1024 * 1024;

/// An encode or decode failure.
#[derive(Debug, Error)]
#[error("codec: {0}")]
pub struct CodecError(#[from] bincode::Error);

fn options() -> impl Options {
    bincode::DefaultOptions::new()
        .with_varint_encoding()
        .with_little_endian()
        .reject_trailing_bytes()
        .with_limit(MAX_ENCODED_BYTES)
}

/// The same layout without the size limit, for whole derived states (a long
/// session's state can exceed the per-record limit). Never used for records.
fn unbounded() -> impl Options {
    bincode::DefaultOptions::new()
        .with_varint_encoding()
        .with_little_endian()
        .reject_trailing_bytes()
        .with_no_limit()
}

/// Streams the encoding of a whole derived state into `sink` (a hasher or a
/// buffer); same layout as [`encode`], no size limit.
pub fn encode_state_into<W: std::io::Write, T: Serialize + ?Sized>(
    sink: W,
    value: &T,
) -> Result<(), CodecError> {
    Ok(unbounded().serialize_into(sink, value)?)
}

/// Decodes a whole derived state written by [`encode_state_into`].
pub fn decode_state<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    Ok(unbounded().deserialize(bytes)?)
}

/// Encodes `value` with the fixed options.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CodecError> {
    Ok(options().serialize(value)?)
}

/// Decodes a whole buffer with the fixed options; trailing bytes are an error.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    Ok(options().deserialize(bytes)?)
}
