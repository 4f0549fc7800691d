//! Reading the index ([`Lookup`] on PostgreSQL).

use super::words::clause_query;
use super::{big, PgSearch, ITEM_COLUMNS};
use crate::append::seq_of;
use ctxlog_core::{MessageId, PartId, Seq, SessionId};
use ctxlog_search::lookup::{Lookup, Stored, DOC_MESSAGE, DOC_PART};
use ctxlog_search::marks::decode;
use ctxlog_search::project::{Mark, MessageFlavor};
use ctxlog_search::query::Parsed;
use ctxlog_search::{SearchError, SearchRequest};
use postgres::types::ToSql;
use postgres::Row;
use uuid::Uuid;

/// An item's row, read.
pub(super) fn stored(r: &Row) -> Result<Stored, SearchError> {
    let number = |i: usize| -> Result<u64, SearchError> { Ok(seq_of(r.get(i))?) };
    Ok(Stored {
        doc: r.get(0),
        session: r.get(1),
        seq: number(2)?,
        time: number(3)?,
        message: r.get(4),
        part: r.get(5),
        role: r.get(6),
        flavor: r
            .get::<_, Option<String>>(7)
            .map(|f| MessageFlavor::parse(&f)),
        kind: r.get(8),
        tool: r.get(9),
        call: r.get(10),
        source: r.get(11),
    })
}

impl PgSearch {
    /// The items `sql` (selecting [`ITEM_COLUMNS`]) returns.
    fn items(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Stored>, SearchError> {
        let rows = self.inner.pool.with(|c| {
            c.query(sql, params)
                .map_err(self.failed("cannot read the search index"))
        })?;
        rows.iter().map(stored).collect()
    }

    /// The marks `sql` (selecting `session, seq, mark`) returns, in order.
    fn marks(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<(Seq, Mark)>, SearchError> {
        let rows = self.inner.pool.with(|c| {
            c.query(sql, params)
                .map_err(self.failed("cannot read the search index's marks"))
        })?;
        rows.iter()
            .map(|r| {
                let seq = seq_of(r.get(1))?;
                let text: String = r.get(2);
                let mark = decode(&text).ok_or_else(|| SearchError::Stale {
                    session: r.get::<_, Uuid>(0).to_string(),
                    seq,
                    what: "a mark".to_owned(),
                })?;
                Ok((seq, mark))
            })
            .collect()
    }
}

impl Lookup for PgSearch {
    fn ranked(
        &self,
        query: &Parsed,
        request: &SearchRequest,
        limit: usize,
    ) -> Result<Vec<(f32, Stored)>, SearchError> {
        let mut params: Vec<Box<dyn ToSql + Sync>> = Vec::new();
        let mut param = |v: Box<dyn ToSql + Sync>| {
            params.push(v);
            format!("${}", params.len())
        };
        // An item matches a group when every clause it looks for is met
        // in one of its chunks and no chunk has an excluded one: so two
        // words far apart in a long output are found together.
        let mut groups = Vec::new();
        for group in &query.groups {
            let mut sql = String::new();
            for c in group.iter().filter(|c| !c.not) {
                let p = param(Box::new(clause_query(c)));
                let select = format!(
                    "(SELECT DISTINCT session, key FROM ctxlog_search_words WHERE words @@ {p}::text::tsquery)"
                );
                sql = if sql.is_empty() {
                    select
                } else {
                    format!("({sql} INTERSECT {select})")
                };
            }
            for c in group.iter().filter(|c| c.not) {
                let p = param(Box::new(clause_query(&ctxlog_search::query::Clause {
                    not: false,
                    ..c.clone()
                })));
                sql = format!(
                    "({sql} EXCEPT (SELECT session, key FROM ctxlog_search_words WHERE words @@ {p}::text::tsquery))"
                );
            }
            groups.push(sql);
        }
        let any: Vec<String> = query.wanted().map(clause_query).collect();
        let rank = param(Box::new(format!("({})", any.join(") | ("))));
        let sessions = param(Box::new(
            request
                .sessions
                .as_ref()
                .map(|ss| ss.iter().map(|s| s.0).collect::<Vec<Uuid>>()),
        ));
        let since = param(Box::new(request.since.map(big)));
        let until = param(Box::new(request.until.map(big)));
        let limit = param(Box::new(big(limit as u64)));
        let sql = format!(
            "WITH matched AS ({matched})
             SELECT {ITEM_COLUMNS},
                    (SELECT max(ts_rank(w.words, {rank}::text::tsquery)) FROM ctxlog_search_words w
                      WHERE w.session = i.session AND w.key = i.key) AS score
             FROM matched JOIN ctxlog_search_items i USING (session, key)
             WHERE ({sessions}::uuid[] IS NULL OR i.session = ANY({sessions}::uuid[]))
               AND ({since}::bigint IS NULL OR i.time >= {since}::bigint)
               AND ({until}::bigint IS NULL OR i.time < {until}::bigint)
             ORDER BY score DESC, i.session, i.seq, i.part
             LIMIT {limit}",
            matched = groups.join(" UNION "),
        );
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let rows = self
            .inner
            .pool
            .with(|c| c.query(&sql, &refs).map_err(self.failed("cannot search")))?;
        rows.iter()
            .map(|r| Ok((r.get::<_, f32>(12), stored(r)?)))
            .collect()
    }

    fn compaction_marks(&self, session: SessionId) -> Result<Vec<(Seq, Mark)>, SearchError> {
        self.marks(
            "SELECT session, seq, mark FROM ctxlog_search_marks
             WHERE session = $1 AND kind IN ('started', 'pivot') ORDER BY seq, n",
            &[&session.0],
        )
    }

    fn marks_naming(
        &self,
        message: MessageId,
        part: Option<PartId>,
    ) -> Result<Vec<(Seq, Mark)>, SearchError> {
        let mut names = vec![message.0];
        names.extend(part.map(|p| p.0));
        self.marks(
            "SELECT session, seq, mark FROM ctxlog_search_marks
             WHERE names && $1 ORDER BY seq, n",
            &[&names],
        )
    }

    fn message(&self, message: MessageId) -> Result<Option<Stored>, SearchError> {
        let sql = format!(
            "SELECT {ITEM_COLUMNS} FROM ctxlog_search_items
             WHERE message = $1 AND doc = $2 ORDER BY session LIMIT 1"
        );
        Ok(self.items(&sql, &[&message.0, &DOC_MESSAGE])?.pop())
    }

    fn named(&self, id: &str, sessions: Option<&[SessionId]>) -> Result<Vec<Stored>, SearchError> {
        let sessions: Option<Vec<Uuid>> = sessions.map(|ss| ss.iter().map(|s| s.0).collect());
        let sql = format!(
            "SELECT {ITEM_COLUMNS} FROM ctxlog_search_items
             WHERE ids @> ARRAY[$1::text] AND ($2::uuid[] IS NULL OR session = ANY($2))"
        );
        self.items(&sql, &[&id, &sessions])
    }

    fn messages_between(
        &self,
        session: SessionId,
        from: Seq,
        to: Seq,
    ) -> Result<Vec<Stored>, SearchError> {
        let sql = format!(
            "SELECT {ITEM_COLUMNS} FROM ctxlog_search_items
             WHERE session = $1 AND doc = $2 AND seq >= $3 AND seq < $4 ORDER BY seq"
        );
        self.items(&sql, &[&session.0, &DOC_MESSAGE, &big(from), &big(to)])
    }

    fn parts_of(&self, message: MessageId) -> Result<Vec<Stored>, SearchError> {
        let sql = format!(
            "SELECT {ITEM_COLUMNS} FROM ctxlog_search_items
             WHERE message = $1 AND doc = $2 ORDER BY seq"
        );
        self.items(&sql, &[&message.0, &DOC_PART])
    }
}
