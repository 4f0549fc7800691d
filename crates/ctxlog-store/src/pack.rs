//! Several records of one session in one stored value (the sled log's
//! layout, beside [`record`]'s).
//!
//! sled keeps bookkeeping for every node of its trees (at most 16 keys a
//! leaf), also for the nodes it evicted from its cache: a key per event
//! made that grow with the history (about 80 bytes an event). So an append
//! of several events stores its records packed, up to [`PACK_BYTES`] a
//! value, under the key of the first; a lone record stays a value of its
//! own, exactly as [`record`] lays it out.
//!
//! Value of a pack:
//! ```text
//! PACK_FORMAT u8 (=2) ‖ count u16 LE ‖ length u32 LE × count
//! ‖ the records (each a whole record, its own CRC32C and chain)
//! ‖ crc32c u32 LE over everything before it
//! ```
//! The trailing CRC32C keeps the rule of `record.rs` (damage is told apart
//! from a newer format), so a build that reads only lone records names a
//! pack "unsupported record: format 2" instead of calling it damaged. The
//! records' own CRCs place damage inside a pack at one seq.

use crate::record::{self, RecordProblem};
use ctxlog_core::Seq;
use std::ops::Range;

/// The format byte of a pack.
pub const PACK_FORMAT: u8 = 2;

/// A pack is closed before it grows past this many bytes. sled writes a
/// node whose serialized size passes 128 KiB (a quarter of its 512 KiB
/// segment) as a file of its own; 16 values of 4 KiB stay under that.
pub const PACK_BYTES: usize = 4096;

/// The most records a pack holds (its count is a `u16`).
const PACK_MAX: usize = u16::MAX as usize;

/// Bytes of a pack besides its records and lengths: format, count, CRC.
const PACK_FIXED: usize = 1 + 2 + 4;

/// Groups encoded `records` (consecutive seqs of one session) into values:
/// consecutive records packed while they fit in [`PACK_BYTES`], a record
/// that does not fit with another stored alone (moved, not copied). Each
/// value with the index of its first record.
pub fn values(records: Vec<Vec<u8>>) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest = records.into_iter().enumerate().peekable();
    while let Some((start, first)) = rest.next() {
        let mut size = PACK_FIXED + 4 + first.len();
        let mut group = vec![first];
        while group.len() < PACK_MAX {
            let Some((_, next)) = rest.next_if(|(_, r)| size + 4 + r.len() <= PACK_BYTES) else {
                break;
            };
            size += 4 + next.len();
            group.push(next);
        }
        let value = match group.len() {
            1 => group.swap_remove(0),
            _ => pack(&group),
        };
        out.push((start, value));
    }
    out
}

/// Packs `records` (at least two, at most [`PACK_MAX`]).
fn pack(records: &[Vec<u8>]) -> Vec<u8> {
    debug_assert!(records.len() >= 2 && records.len() <= PACK_MAX);
    let body: usize = records.iter().map(|r| 4 + r.len()).sum();
    let mut out = Vec::with_capacity(PACK_FIXED + body);
    out.push(PACK_FORMAT);
    out.extend_from_slice(&(records.len() as u16).to_le_bytes());
    for r in records {
        out.extend_from_slice(&(r.len() as u32).to_le_bytes());
    }
    for r in records {
        out.extend_from_slice(r);
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Where the records of one value lie in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpacked {
    /// Byte ranges of the records that can be told apart, in seq order.
    pub records: Vec<std::ops::Range<usize>>,
    /// Why the value's records cannot be told apart from its record at
    /// index `records.len()` on (then nothing of it reads from there).
    pub damage: Option<RecordProblem>,
}

impl Unpacked {
    /// The records with their seqs, the first at `first`. A record whose
    /// seq would pass `Seq::MAX` (only a damaged key says so) is not given.
    pub fn numbered(&self, first: Seq) -> impl Iterator<Item = (Seq, Range<usize>)> + '_ {
        let seq = move |i: usize| first.checked_add(Seq::try_from(i).ok()?);
        self.records
            .iter()
            .enumerate()
            .map_while(move |(i, r)| Some((seq(i)?, r.clone())))
    }
}

/// The records of a stored value: itself when it is a lone record (its
/// problems are then found by [`record::decode`]), else the records of the
/// pack, as far as its framing reads.
pub fn unpack(v: &[u8]) -> Unpacked {
    if v.first() != Some(&PACK_FORMAT) {
        let whole = 0..v.len();
        return Unpacked {
            records: std::iter::once(whole).collect(),
            damage: None,
        };
    }
    let whole = crc_holds(v);
    match framing(v) {
        Some(records) => Unpacked {
            records,
            // A pack whose CRC fails but whose framing reads: the damaged
            // record fails its own CRC, the others read.
            damage: None,
        },
        None => Unpacked {
            records: Vec::new(),
            damage: Some(match whole {
                Err(p) => p,
                Ok(()) => RecordProblem::Undecodable(format!(
                    "a pack of {} bytes whose lengths do not add up",
                    v.len()
                )),
            }),
        },
    }
}

/// Whether the pack's trailing CRC32C holds.
fn crc_holds(v: &[u8]) -> Result<(), RecordProblem> {
    let Some((body, crc)) = v.split_last_chunk::<4>() else {
        return Err(RecordProblem::Truncated(v.len()));
    };
    let (stored, computed) = (u32::from_le_bytes(*crc), crc32c::crc32c(body));
    if stored == computed {
        Ok(())
    } else {
        Err(RecordProblem::Crc { stored, computed })
    }
}

/// The byte ranges of a pack's records, if its count and lengths fill it
/// exactly (at least two records, each at least a minimal record).
fn framing(v: &[u8]) -> Option<Vec<std::ops::Range<usize>>> {
    let count = usize::from(u16::from_le_bytes(v.get(1..3)?.try_into().ok()?));
    if count < 2 {
        return None;
    }
    let lengths = v.get(3..3 + 4 * count)?;
    let mut at = 3 + 4 * count;
    let mut out = Vec::with_capacity(count);
    for l in lengths.chunks_exact(4) {
        let len = u32::from_le_bytes(l.try_into().ok()?) as usize;
        if len < record::MIN_RECORD_LEN {
            return None;
        }
        let end = at.checked_add(len)?;
        out.push(at..end);
        at = end;
    }
    (at.checked_add(4)? == v.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::MIN_RECORD_LEN;

    /// A stand-in record of `len` bytes (only lengths matter to packing).
    fn rec(len: usize, fill: u8) -> Vec<u8> {
        vec![fill; len]
    }

    #[test]
    fn records_are_packed_while_they_fit_and_a_large_one_stays_alone() {
        let records = vec![
            rec(1000, 1),
            rec(1000, 2),
            rec(1000, 3),
            rec(PACK_BYTES, 4),
            rec(100, 5),
        ];
        let values = values(records.clone());
        let firsts: Vec<usize> = values.iter().map(|(i, _)| *i).collect();
        assert_eq!(firsts, [0, 3, 4]);
        // The lone large record and the last one are stored as they are.
        assert_eq!(values[1].1, records[3]);
        assert_eq!(values[2].1, records[4]);
        let pack = &values[0].1;
        assert!(pack.len() <= PACK_BYTES);
        let unpacked = unpack(pack);
        assert_eq!(unpacked.damage, None);
        let back: Vec<&[u8]> = unpacked.records.iter().map(|r| &pack[r.clone()]).collect();
        assert_eq!(back, [&records[0][..], &records[1][..], &records[2][..]]);
    }

    /// Seqs never wrap: a pack under a (damaged) key at `Seq::MAX` gives
    /// its first record only.
    #[test]
    fn numbering_stops_at_the_last_seq() {
        let records = vec![rec(MIN_RECORD_LEN, 1), rec(MIN_RECORD_LEN, 2)];
        let pack = values(records.clone()).remove(0).1;
        let unpacked = unpack(&pack);
        let seqs: Vec<Seq> = unpacked.numbered(7).map(|(s, _)| s).collect();
        assert_eq!(seqs, [7, 8]);
        let seqs: Vec<Seq> = unpacked.numbered(Seq::MAX).map(|(s, _)| s).collect();
        assert_eq!(seqs, [Seq::MAX]);
    }

    #[test]
    fn a_lone_record_unpacks_to_itself() {
        let lone = rec(MIN_RECORD_LEN + 5, 1);
        assert_eq!(
            unpack(&lone),
            Unpacked {
                records: std::iter::once(0..lone.len()).collect(),
                damage: None
            }
        );
    }

    /// A pack whose count or lengths do not fill it is damage from its
    /// first record (nothing in it can be told apart), named by its CRC;
    /// with a sound CRC (a writer's mistake), by its lengths.
    #[test]
    fn a_pack_whose_lengths_do_not_read_is_damaged_from_its_first_record() {
        let records = vec![rec(MIN_RECORD_LEN, 1), rec(MIN_RECORD_LEN, 2)];
        let pack = values(records.clone()).remove(0).1;
        let mut count_flipped = pack.clone();
        count_flipped[1] ^= 0x01;
        let hurt = unpack(&count_flipped);
        assert!(hurt.records.is_empty());
        assert!(matches!(hurt.damage, Some(RecordProblem::Crc { .. })));
        let mut resealed = count_flipped.clone();
        let n = resealed.len();
        let crc = crc32c::crc32c(&resealed[..n - 4]);
        resealed[n - 4..].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            unpack(&resealed).damage,
            Some(RecordProblem::Undecodable(_))
        ));
        // A flipped byte inside a record leaves the framing readable: the
        // record's own CRC names it.
        let mut inside = pack.clone();
        let at = unpack(&pack).records[1].start + 3;
        inside[at] ^= 0x01;
        assert_eq!(unpack(&inside).records, unpack(&pack).records);
        assert_eq!(unpack(&inside).damage, None);
        assert!(unpack(&pack[..5]).damage.is_some());
    }
}
