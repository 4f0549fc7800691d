//! What a log's verification reports: [`VerifyReport`], every record and
//! head it read and each problem found, named by (session, seq) or by a
//! file and offset ([`VerifyError`]). Each durable log walks its own
//! storage (`ctxlog_sled`, `ctxlog_postgres`); the report is the same.

use ctxlog_core::{Seq, SessionId};
use std::collections::BTreeMap;

/// One problem a log's verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyError {
    /// What is wrong, in one word: `record` (a record that does not read or
    /// does not chain), `missing` (seqs absent between records), `head` (a
    /// head that disagrees with its records), `index` (the id index),
    /// `lost` (acknowledged events, vouched for by the witness, missing or
    /// different), `witness` (the witness file damaged or missing), `sled`
    /// (sled cannot read its own files there).
    pub kind: &'static str,
    /// The session, when the damaged key names one.
    pub session: Option<SessionId>,
    /// The seq, when known (the first of a range).
    pub seq: Option<Seq>,
    /// The file, when the problem is placed in one rather than a session.
    pub file: Option<String>,
    /// The offset in that file.
    pub offset: Option<u64>,
    /// What is wrong, and what is lost.
    pub detail: String,
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.session, self.seq) {
            (Some(s), Some(q)) => write!(f, "session {s} seq {q}: ")?,
            (Some(s), None) => write!(f, "session {s}: ")?,
            _ => {}
        }
        match (&self.file, self.offset) {
            (Some(file), Some(o)) => write!(f, "{file} at byte {o}: ")?,
            (Some(file), None) => write!(f, "{file}: ")?,
            _ => {}
        }
        f.write_str(&self.detail)
    }
}

/// Every [`VerifyError::kind`] a log reports.
pub const KINDS: [&str; 7] = [
    "record", "missing", "head", "index", "lost", "witness", "sled",
];

/// The outcome of a store-wide verification.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VerifyReport {
    /// Sessions seen (in the heads or in the records), description streams
    /// aside ([`ctxlog_core::description_stream`]; their records are
    /// verified and counted in `events` as every other).
    pub sessions: u64,
    /// Records read.
    pub events: u64,
    /// Last seq stored per session.
    pub heads: BTreeMap<SessionId, Seq>,
    /// Problems, in key order: the first is the first bad (session, seq).
    pub errors: Vec<VerifyError>,
}

impl VerifyReport {
    /// No problem found.
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// A problem that names no (session, seq).
    pub fn unplaced(&mut self, kind: &'static str, detail: String) {
        self.errors.push(VerifyError {
            kind,
            session: None,
            seq: None,
            file: None,
            offset: None,
            detail,
        });
    }

    /// A problem at (`session`, `seq`).
    pub fn at(&mut self, session: SessionId, seq: Seq, kind: &'static str, detail: String) {
        self.errors.push(VerifyError {
            kind,
            session: Some(session),
            seq: Some(seq),
            file: None,
            offset: None,
            detail,
        });
    }

    /// A problem found elsewhere (a file beside the records).
    pub fn push(&mut self, e: VerifyError) {
        self.errors.push(e);
    }
}
