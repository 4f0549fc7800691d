//! Log-wide verification, as `ctxlog verify` means it on sled: every
//! record (CRC, header, decode, place, chain, contiguity), its id and kind
//! columns, and every head, each problem named by (session, seq).

use crate::append::{chain_of, seq_of, sql_seq};
use crate::error::backend;
use crate::log::PgLog;
use ctxlog_core::{Seq, SessionId};
use ctxlog_store::record::{self, Chain};
use ctxlog_store::{ReadError, VerifyError, VerifyReport};
use std::collections::BTreeMap;

/// Records checked per query.
const PAGE: i64 = 1024;

impl PgLog {
    /// Checks the whole log; the problems found are in the report, a
    /// failure to read it is the error.
    pub fn verify(&self) -> Result<VerifyReport, ReadError> {
        let read = |what: &'static str| {
            move |e: postgres::Error| {
                ReadError::Backend(backend(self.inner().pool.target(), what, e))
            }
        };
        let (heads, orphans) = self.inner().pool.with(|c| {
            let heads = c
                .query(
                    "SELECT session, seq, chain FROM ctxlog_heads WHERE seq > 0 ORDER BY session",
                    &[],
                )
                .map_err(read("cannot read the heads"))?;
            let orphans = c
                .query(
                    "SELECT DISTINCT session FROM ctxlog_events e WHERE NOT EXISTS \
                     (SELECT 1 FROM ctxlog_heads h WHERE h.session = e.session AND h.seq > 0)",
                    &[],
                )
                .map_err(read("cannot read the sessions"))?;
            Ok::<_, ReadError>((heads, orphans))
        })?;
        let mut report = VerifyReport {
            sessions: 0,
            events: 0,
            heads: BTreeMap::new(),
            errors: Vec::new(),
        };
        // Sessions are counted as the sled log counts them: description
        // streams aside (their records are verified and counted all the
        // same).
        let counted = |s: SessionId| u64::from(!ctxlog_core::is_description_stream(s));
        for row in orphans {
            let session = SessionId(row.get(0));
            report.sessions += counted(session);
            report.errors.push(problem(
                "head",
                session,
                None,
                "records are stored but the session has no head".into(),
            ));
        }
        for row in heads {
            let session = SessionId(row.get(0));
            let head = seq_of(row.get(1))?;
            let chain = chain_of(session, row.get(2))?;
            report.sessions += counted(session);
            let last = self.verify_session(session, &mut report)?;
            report.heads.insert(session, last.map_or(0, |(seq, _)| seq));
            if last != Some((head, chain)) {
                let found = last.map_or(0, |(seq, _)| seq);
                report.errors.push(problem(
                    "head",
                    session,
                    Some(head),
                    format!("the head says seq {head}, the records end at {found} (or their chains differ)"),
                ));
            }
        }
        Ok(report)
    }

    /// Checks one session's records; the seq and chain of the last sound
    /// one in an unbroken run from seq 1.
    fn verify_session(
        &self,
        session: SessionId,
        report: &mut VerifyReport,
    ) -> Result<Option<(Seq, Chain)>, ReadError> {
        let mut prev = record::genesis(session);
        let mut want: Seq = 1;
        let mut last = None;
        let mut broken = false;
        loop {
            let rows = self.inner().pool.with(|c| {
                c.query(
                    "SELECT seq, id, kind, record FROM ctxlog_events \
                     WHERE session = $1 AND seq >= $2 ORDER BY seq LIMIT $3",
                    &[&session.0, &sql_seq(want)?, &PAGE],
                )
                .map_err(|e| {
                    ReadError::Backend(backend(self.inner().pool.target(), "cannot read events", e))
                })
            })?;
            let n = rows.len() as i64;
            for row in rows {
                report.events += 1;
                let seq = seq_of(row.get(0))?;
                if seq != want {
                    report.errors.push(problem(
                        "missing",
                        session,
                        Some(want),
                        format!("seqs {want}..{} are missing", seq - 1),
                    ));
                    broken = true;
                }
                want = seq + 1;
                let bytes: &[u8] = row.get(3);
                match record::decode(bytes, session, seq) {
                    Err(p) => {
                        report
                            .errors
                            .push(problem("record", session, Some(seq), p.to_string()));
                        broken = true;
                    }
                    Ok(d) => {
                        let id: uuid::Uuid = row.get(1);
                        let kind: i16 = row.get(2);
                        if d.envelope.id.0 != id || i16::from(d.envelope.event.kind_index()) != kind
                        {
                            report.errors.push(problem(
                                "index",
                                session,
                                Some(seq),
                                "the id or kind column disagrees with the record".into(),
                            ));
                        }
                        if !d.chain_follows(&prev, bytes) {
                            report.errors.push(problem(
                                "record",
                                session,
                                Some(seq),
                                "does not chain from the record before it".into(),
                            ));
                            broken = true;
                        }
                        prev = d.chain;
                        if !broken {
                            last = Some((seq, d.chain));
                        }
                    }
                }
            }
            if n < PAGE {
                return Ok(last);
            }
        }
    }
}

fn problem(
    kind: &'static str,
    session: SessionId,
    seq: Option<Seq>,
    detail: String,
) -> VerifyError {
    VerifyError {
        kind,
        session: Some(session),
        seq,
        file: None,
        offset: None,
        detail,
    }
}
