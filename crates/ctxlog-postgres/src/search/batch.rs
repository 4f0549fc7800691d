//! Rows waiting to be written, sent a few thousand at a time in one
//! statement per table (`unnest` of column arrays) instead of a round trip
//! each. Nothing pending is seen by a query: the writer flushes before it
//! reads, deletes or commits.

use postgres::Client;
use uuid::Uuid;

/// Rows pending before a flush is due.
pub(super) const FLUSH_ROWS: usize = 2_000;

/// An item's row.
pub(super) struct ItemRow {
    pub session: Uuid,
    pub key: String,
    pub doc: &'static str,
    pub seq: i64,
    pub time: i64,
    pub message: Uuid,
    pub part: Option<Uuid>,
    pub role: Option<&'static str>,
    pub flavor: Option<&'static str>,
    pub kind: Option<&'static str>,
    pub tool: Option<String>,
    pub call: Option<String>,
    pub source: Option<String>,
    pub ids: Vec<String>,
}

/// A mark's row: session, seq, its number within the event, kind, the
/// mark as text, the ids it names.
pub(super) type MarkRow = (Uuid, i64, i32, &'static str, String, Vec<Uuid>);

/// What waits to be written.
#[derive(Default)]
pub(super) struct Pending {
    items: Vec<ItemRow>,
    /// (session, key, chunk, tsvector literal).
    words: Vec<(Uuid, String, i32, String)>,
    marks: Vec<MarkRow>,
}

impl Pending {
    pub fn item(&mut self, row: ItemRow) {
        self.items.push(row);
    }

    pub fn words(&mut self, session: Uuid, key: &str, chunk: i32, words: String) {
        self.words.push((session, key.to_owned(), chunk, words));
    }

    pub fn mark(&mut self, row: MarkRow) {
        self.marks.push(row);
    }

    /// Drops the pending rows of an item (replaced before it was written).
    pub fn drop_item(&mut self, session: Uuid, key: &str) {
        self.items
            .retain(|r| !(r.session == session && r.key == key));
        self.words.retain(|w| !(w.0 == session && w.1 == key));
    }

    /// Forgets everything pending.
    pub fn clear(&mut self) {
        *self = Pending::default();
    }

    /// Rows pending.
    pub fn len(&self) -> usize {
        self.items.len() + self.words.len() + self.marks.len()
    }

    /// Writes every pending row, in three statements.
    pub fn flush(&mut self, client: &mut Client) -> Result<(), postgres::Error> {
        if !self.items.is_empty() {
            let i = &self.items;
            let col = |f: fn(&ItemRow) -> Option<String>| i.iter().map(f).collect::<Vec<_>>();
            let ids: Vec<String> = i
                .iter()
                .map(|r| serde_json::to_string(&r.ids).unwrap_or_else(|_| "[]".into()))
                .collect();
            client.execute(
                "INSERT INTO ctxlog_search_items
                 (session, key, doc, seq, time, message, part, role, flavor, kind, tool, call, source, ids)
                 SELECT s, k, d, q, t, m, p, r, f, kd, tl, c, src,
                        ARRAY(SELECT jsonb_array_elements_text(i::jsonb))
                 FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int8[], $5::int8[],
                             $6::uuid[], $7::uuid[], $8::text[], $9::text[], $10::text[],
                             $11::text[], $12::text[], $13::text[], $14::text[])
                      AS u(s, k, d, q, t, m, p, r, f, kd, tl, c, src, i)",
                &[
                    &i.iter().map(|r| r.session).collect::<Vec<_>>(),
                    &i.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
                    &i.iter().map(|r| r.doc).collect::<Vec<_>>(),
                    &i.iter().map(|r| r.seq).collect::<Vec<_>>(),
                    &i.iter().map(|r| r.time).collect::<Vec<_>>(),
                    &i.iter().map(|r| r.message).collect::<Vec<_>>(),
                    &i.iter().map(|r| r.part).collect::<Vec<_>>(),
                    &i.iter().map(|r| r.role).collect::<Vec<_>>(),
                    &i.iter().map(|r| r.flavor).collect::<Vec<_>>(),
                    &i.iter().map(|r| r.kind).collect::<Vec<_>>(),
                    &col(|r| r.tool.clone()),
                    &col(|r| r.call.clone()),
                    &col(|r| r.source.clone()),
                    &ids,
                ],
            )?;
        }
        if !self.words.is_empty() {
            let w = &self.words;
            client.execute(
                "INSERT INTO ctxlog_search_words (session, key, chunk, words)
                 SELECT s, k, c, v::tsvector
                 FROM unnest($1::uuid[], $2::text[], $3::int4[], $4::text[]) AS u(s, k, c, v)",
                &[
                    &w.iter().map(|r| r.0).collect::<Vec<_>>(),
                    &w.iter().map(|r| r.1.as_str()).collect::<Vec<_>>(),
                    &w.iter().map(|r| r.2).collect::<Vec<_>>(),
                    &w.iter().map(|r| r.3.as_str()).collect::<Vec<_>>(),
                ],
            )?;
        }
        if !self.marks.is_empty() {
            let m = &self.marks;
            let names: Vec<String> = m
                .iter()
                .map(|r| serde_json::to_string(&r.5).unwrap_or_else(|_| "[]".into()))
                .collect();
            client.execute(
                "INSERT INTO ctxlog_search_marks (session, seq, n, kind, mark, names)
                 SELECT s, q, n, k, t, ARRAY(SELECT jsonb_array_elements_text(x::jsonb))::uuid[]
                 FROM unnest($1::uuid[], $2::int8[], $3::int4[], $4::text[], $5::text[], $6::text[])
                      AS u(s, q, n, k, t, x)",
                &[
                    &m.iter().map(|r| r.0).collect::<Vec<_>>(),
                    &m.iter().map(|r| r.1).collect::<Vec<_>>(),
                    &m.iter().map(|r| r.2).collect::<Vec<_>>(),
                    &m.iter().map(|r| r.3).collect::<Vec<_>>(),
                    &m.iter().map(|r| r.4.as_str()).collect::<Vec<_>>(),
                    &names,
                ],
            )?;
        }
        self.clear();
        Ok(())
    }
}
