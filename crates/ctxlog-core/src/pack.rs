//! [`EventPack`]: a session's events held encoded in memory, in chunks of
//! about [`PACK_CHUNK_BYTES`], with the store's codec. An importer holds a
//! whole recording this way until it has read its file to the end (bad
//! input must write nothing), at about the size of its encoding instead of
//! three to four times that as decoded envelopes; consuming the pack frees
//! each chunk once its events are handed over.

use crate::codec::{self, CodecError};
use crate::event::Envelope;
use crate::ids::SessionId;

/// About the most bytes a chunk holds before the next one starts (a larger
/// event gets a chunk of its own size).
pub const PACK_CHUNK_BYTES: usize = 1024 * 1024;

/// Each event is its encoding's length (4 bytes, little endian), then the
/// encoding.
const LENGTH_BYTES: usize = 4;

/// Events in order, held encoded. Two packs are equal when they hold the
/// same events (the encoding is deterministic).
#[derive(Default, Clone, PartialEq, Eq)]
pub struct EventPack {
    chunks: Vec<Vec<u8>>,
    len: usize,
    session: Option<SessionId>,
}

impl std::fmt::Debug for EventPack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventPack")
            .field("events", &self.len)
            .field("bytes", &self.encoded_bytes())
            .field("session", &self.session)
            .finish()
    }
}

impl EventPack {
    /// An empty pack.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `event`'s encoding. A refused event (larger than
    /// [`codec::MAX_ENCODED_BYTES`]) leaves the pack as it was.
    pub fn push(&mut self, event: &Envelope) -> Result<(), CodecError> {
        let mut chunk = match self.chunks.pop() {
            Some(open) if open.len() < PACK_CHUNK_BYTES => open,
            Some(mut full) => {
                full.shrink_to_fit();
                self.chunks.push(full);
                Vec::with_capacity(PACK_CHUNK_BYTES)
            }
            None => Vec::with_capacity(PACK_CHUNK_BYTES),
        };
        let start = chunk.len();
        chunk.extend_from_slice(&[0; LENGTH_BYTES]);
        let written = codec::encode_into(&mut chunk, event).and_then(|()| {
            // At most MAX_ENCODED_BYTES (64 MiB): encode_into refuses more.
            let len = u32::try_from(chunk.len() - start - LENGTH_BYTES)
                .map_err(|_| malformed("an event longer than 4 GiB"))?;
            chunk[start..start + LENGTH_BYTES].copy_from_slice(&len.to_le_bytes());
            Ok(())
        });
        if written.is_err() {
            chunk.truncate(start);
        }
        if !chunk.is_empty() {
            self.chunks.push(chunk);
        }
        written?;
        self.len += 1;
        self.session.get_or_insert(event.session);
        Ok(())
    }

    /// The number of events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No events.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The session of the first event.
    pub fn session(&self) -> Option<SessionId> {
        self.session
    }

    /// The bytes held (encodings and their lengths).
    pub fn encoded_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    /// The events in order, each decoded as it is reached.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            chunks: self.chunks.iter(),
            current: &[],
        }
    }

    /// Every event decoded, in order.
    pub fn to_vec(&self) -> Result<Vec<Envelope>, CodecError> {
        self.iter().collect()
    }
}

fn malformed(what: &str) -> CodecError {
    CodecError::from(Box::new(bincode::ErrorKind::Custom(what.to_owned())))
}

/// Decodes the first event of `bytes` and returns it with the rest.
fn next_event(bytes: &[u8]) -> Result<(Envelope, &[u8]), CodecError> {
    let truncated = || malformed("a packed event is cut short");
    let (len, rest) = bytes
        .split_first_chunk::<LENGTH_BYTES>()
        .ok_or_else(truncated)?;
    let len = u32::from_le_bytes(*len) as usize;
    let (encoded, rest) = rest.split_at_checked(len).ok_or_else(truncated)?;
    Ok((codec::decode(encoded)?, rest))
}

/// The events of an [`EventPack`], borrowed.
pub struct Iter<'a> {
    chunks: std::slice::Iter<'a, Vec<u8>>,
    current: &'a [u8],
}

impl Iterator for Iter<'_> {
    type Item = Result<Envelope, CodecError>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.current.is_empty() {
            self.current = self.chunks.next()?;
        }
        match next_event(self.current) {
            Ok((event, rest)) => {
                self.current = rest;
                Some(Ok(event))
            }
            Err(e) => {
                // Nothing after a bad encoding can be trusted.
                self.current = &[];
                self.chunks = [].iter();
                Some(Err(e))
            }
        }
    }
}

/// The events of an [`EventPack`], consumed: each chunk is freed once its
/// last event is handed over.
pub struct IntoIter {
    chunks: std::vec::IntoIter<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
}

impl Iterator for IntoIter {
    type Item = Result<Envelope, CodecError>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.at >= self.current.len() {
            self.current = self.chunks.next()?;
            self.at = 0;
        }
        let bytes = self.current.get(self.at..).unwrap_or_default();
        match next_event(bytes) {
            Ok((event, rest)) => {
                self.at = self.current.len() - rest.len();
                Some(Ok(event))
            }
            Err(e) => {
                self.current = Vec::new();
                self.at = 0;
                self.chunks = Vec::new().into_iter();
                Some(Err(e))
            }
        }
    }
}

impl IntoIterator for EventPack {
    type Item = Result<Envelope, CodecError>;
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        IntoIter {
            chunks: self.chunks.into_iter(),
            current: Vec::new(),
            at: 0,
        }
    }
}

impl<'a> IntoIterator for &'a EventPack {
    type Item = Result<Envelope, CodecError>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl TryFrom<&[Envelope]> for EventPack {
    type Error = CodecError;

    fn try_from(events: &[Envelope]) -> Result<Self, CodecError> {
        let mut pack = EventPack::new();
        for e in events {
            pack.push(e)?;
        }
        Ok(pack)
    }
}
