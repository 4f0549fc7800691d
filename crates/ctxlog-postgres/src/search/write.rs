//! Writing the index ([`Engine`] on PostgreSQL): one writer per schema at
//! a time (a session-level advisory lock, held by the writer's own
//! connection), one transaction between two commits, the watermarks
//! (`ctxlog_search_heads`) written in it.

use super::batch::{ItemRow, Pending, FLUSH_ROWS};
use super::words::vectors;
use super::{big, PgSearch};
use crate::append::seq_of;
use crate::error::backend;
use ctxlog_core::{Envelope, MessageId, PartId, SessionId};
use ctxlog_search::lookup::{Engine, Watermarks, Writer, DOC_MESSAGE, DOC_PART};
use ctxlog_search::marks::encode;
use ctxlog_search::project::{Mark, MessageItem, PartItem};
use ctxlog_search::{SearchError, SCHEMA_VERSION};
use ctxlog_store::ReadError;
use postgres::Client;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The advisory lock class of the search index's writer ("ctxs" in
/// ASCII); the second key is the schema's name, hashed.
const WRITER_LOCK: i32 = 0x6374_7873;

/// The index's one writer.
pub struct PgWriter<'a> {
    search: &'a PgSearch,
    client: Client,
    /// What was committed of each session (what a commit must change).
    committed: BTreeMap<String, (u64, bool)>,
    /// Rows not written yet.
    pending: Pending,
    /// The event whose marks are being added, and how many it has so far.
    marks_of: Option<(Uuid, i64, i32)>,
}

impl Engine for PgSearch {
    type Writer<'a> = PgWriter<'a>;

    fn watermarks(&self) -> Result<Watermarks, SearchError> {
        let rows = self.inner.pool.with(|c| {
            c.query("SELECT session, seq, skipped FROM ctxlog_search_heads", &[])
                .map_err(self.failed("cannot read what the search index holds"))
        })?;
        let mut marks = Watermarks {
            schema: SCHEMA_VERSION,
            ..Watermarks::default()
        };
        for r in rows {
            let session = r.get::<_, Uuid>(0).to_string();
            if r.get::<_, bool>(2) {
                marks.skipped.insert(session.clone());
            }
            marks.sessions.insert(session, seq_of(r.get(1))?);
        }
        Ok(marks)
    }

    fn writer(&self, wait: Duration) -> Result<PgWriter<'_>, SearchError> {
        let mut client = self.inner.pool.connect().map_err(ReadError::Backend)?;
        let deadline = Instant::now() + wait;
        loop {
            let locked: bool = client
                .query_one(
                    "SELECT pg_try_advisory_lock($1, hashtext(current_schema()))",
                    &[&WRITER_LOCK],
                )
                .map(|r| r.get(0))
                .map_err(self.failed("cannot take the search index's lock"))?;
            if locked {
                break;
            }
            if Instant::now() >= deadline {
                return Err(SearchError::Busy {
                    index: format!("of {}", self.inner.pool.target()),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        client
            .batch_execute("BEGIN")
            .map_err(self.failed("cannot write the search index"))?;
        let before = self.watermarks()?;
        let committed = before
            .sessions
            .iter()
            .map(|(s, &seq)| (s.clone(), (seq, before.skipped.contains(s))))
            .collect();
        Ok(PgWriter {
            search: self,
            client,
            committed,
            pending: Pending::default(),
            marks_of: None,
        })
    }

    fn reload(&self) -> Result<(), SearchError> {
        // Every query reads the last commit.
        Ok(())
    }
}

impl PgWriter<'_> {
    /// Removes every row of the index, in this writer's transaction.
    pub(super) fn clear_all(&mut self) -> Result<(), SearchError> {
        self.client
            .batch_execute(
                "DELETE FROM ctxlog_search_words; DELETE FROM ctxlog_search_items;
                 DELETE FROM ctxlog_search_marks; DELETE FROM ctxlog_search_heads",
            )
            .map_err(self.failed("cannot clear the search index"))?;
        self.committed.clear();
        self.pending.clear();
        Ok(())
    }

    /// Writes the pending rows.
    fn flush(&mut self) -> Result<(), SearchError> {
        let target = self.search.inner.pool.target();
        self.pending
            .flush(&mut self.client)
            .map_err(|e| SearchError::Read(ReadError::Backend(backend(target, "cannot index", e))))
    }

    fn failed(&self, what: &'static str) -> impl Fn(postgres::Error) -> SearchError + '_ {
        move |e| {
            SearchError::Read(ReadError::Backend(backend(
                self.search.inner.pool.target(),
                what,
                e,
            )))
        }
    }

    /// Adds an item with its words (written at the next flush).
    fn item(&mut self, row: ItemRow, text: Option<&str>) -> Result<(), SearchError> {
        for (chunk, words) in text
            .map(vectors)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            let chunk = i32::try_from(chunk).unwrap_or(i32::MAX);
            self.pending.words(row.session, &row.key, chunk, words);
        }
        self.pending.item(row);
        if self.pending.len() >= FLUSH_ROWS {
            self.flush()?;
        }
        Ok(())
    }
}

/// The row of an item of event `e`, its optional columns empty.
fn row_at(e: &Envelope, key: String, doc: &'static str, message: MessageId) -> ItemRow {
    ItemRow {
        session: e.session.0,
        key,
        doc,
        seq: big(e.seq),
        time: big(e.recorded_at),
        message: message.0,
        part: None,
        role: None,
        flavor: None,
        kind: None,
        tool: None,
        call: None,
        source: None,
        ids: Vec::new(),
    }
}

fn part_key(p: PartId) -> String {
    format!("p:{p}")
}

impl Writer for PgWriter<'_> {
    fn message(&mut self, e: &Envelope, m: &MessageItem) -> Result<(), SearchError> {
        let mut ids = vec![m.message.to_string()];
        ids.extend(m.source_id.clone());
        let row = ItemRow {
            role: Some(m.role.as_str()),
            flavor: Some(m.flavor.as_str()),
            source: m.source_id.clone(),
            ids,
            ..row_at(e, format!("m:{}", m.message), DOC_MESSAGE, m.message)
        };
        self.item(row, None)
    }

    fn part(
        &mut self,
        e: &Envelope,
        p: &PartItem,
        message: MessageId,
        replaces: bool,
    ) -> Result<(), SearchError> {
        if replaces {
            let key = part_key(p.part);
            self.pending.drop_item(e.session.0, &key);
            self.client
                .execute(
                    "DELETE FROM ctxlog_search_words WHERE session = $1 AND key = $2",
                    &[&e.session.0, &key],
                )
                .and_then(|_| {
                    self.client.execute(
                        "DELETE FROM ctxlog_search_items WHERE session = $1 AND key = $2",
                        &[&e.session.0, &key],
                    )
                })
                .map_err(self.failed("cannot replace an item"))?;
        }
        let mut ids = vec![p.part.to_string()];
        ids.extend(p.call_id.clone());
        ids.extend(p.source_id.clone());
        let row = ItemRow {
            part: Some(p.part.0),
            kind: Some(p.kind),
            tool: p.tool.clone(),
            call: p.call_id.clone(),
            source: p.source_id.clone(),
            ids,
            ..row_at(e, part_key(p.part), DOC_PART, message)
        };
        self.item(row, Some(&p.text))
    }

    fn mark(&mut self, e: &Envelope, m: &Mark) -> Result<(), SearchError> {
        let (session, seq) = (e.session.0, big(e.seq));
        // The marks of one event are numbered from 0, in order.
        let n = match self.marks_of {
            Some((s, q, n)) if s == session && q == seq => n + 1,
            _ => 0,
        };
        self.marks_of = Some((session, seq, n));
        self.pending
            .mark((session, seq, n, m.kind(), encode(m), m.names()));
        if self.pending.len() >= FLUSH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn message_of(
        &mut self,
        session: SessionId,
        part: PartId,
    ) -> Result<Option<MessageId>, SearchError> {
        self.flush()?;
        let row = self
            .client
            .query_opt(
                "SELECT message FROM ctxlog_search_items WHERE session = $1 AND key = $2",
                &[&session.0, &part_key(part)],
            )
            .map_err(self.failed("cannot read the search index"))?;
        Ok(row.map(|r| MessageId(r.get(0))))
    }

    fn forget(&mut self, session: SessionId) -> Result<(), SearchError> {
        self.flush()?;
        for table in [
            "ctxlog_search_words",
            "ctxlog_search_items",
            "ctxlog_search_marks",
            "ctxlog_search_heads",
        ] {
            self.client
                .execute(
                    &format!("DELETE FROM {table} WHERE session = $1"),
                    &[&session.0],
                )
                .map_err(self.failed("cannot remove a session from the search index"))?;
        }
        self.committed.remove(&session.to_string());
        Ok(())
    }

    fn commit(&mut self, marks: &Watermarks) -> Result<(), SearchError> {
        self.flush()?;
        for (session, &seq) in &marks.sessions {
            let skipped = marks.skipped.contains(session);
            if self.committed.get(session) == Some(&(seq, skipped)) {
                continue;
            }
            let id = Uuid::parse_str(session).map_err(|_| SearchError::Stale {
                session: session.clone(),
                seq,
                what: "a session id".to_owned(),
            })?;
            self.client
                .execute(
                    "INSERT INTO ctxlog_search_heads (session, seq, skipped) VALUES ($1, $2, $3)
                     ON CONFLICT (session) DO UPDATE SET seq = EXCLUDED.seq, skipped = EXCLUDED.skipped",
                    &[&id, &big(seq), &skipped],
                )
                .map_err(self.failed("cannot write what the search index holds"))?;
            self.committed.insert(session.clone(), (seq, skipped));
        }
        self.client
            .batch_execute("COMMIT; BEGIN")
            .map_err(self.failed("cannot commit the search index"))
    }

    fn finish(mut self) -> Result<(), SearchError> {
        self.flush()?;
        self.client
            .batch_execute("COMMIT; SELECT pg_advisory_unlock_all()")
            .map_err(self.failed("cannot finish writing the search index"))
    }
}
