//! OpenCode ≥ 1.2's SQLite database (`opencode.db`), read as the exports it
//! holds. Tables (OpenCode 1.18, `packages/core/src/session/sql.ts`):
//! `session` (one row per session, its info in columns), `message`
//! (`id, session_id, data`: the message info without `id`/`sessionID`) and
//! `part` (`id, message_id, session_id, data`: the part without its ids).
//! [`assemble`] puts a session back together exactly as `opencode export`
//! prints it (messages and parts in id order, the ids appended to each
//! row's `data`), and the OpenCode importer reads that, with all its checks.
//!
//! The database is opened read-only and `query_only`, and each session is
//! read in one short read transaction: OpenCode keeps it in WAL mode, where
//! a reader never blocks its writer, and the transaction gives one
//! consistent snapshot of a session that is still being written.

use crate::ImportError;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::Duration;

/// The first 16 bytes of every SQLite database file.
const MAGIC: &[u8] = b"SQLite format 3\0";

/// How long a read waits for a lock OpenCode holds (only a rollback-journal
/// database, or WAL recovery, makes a reader wait at all).
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// Whether `head` (a file's first bytes) starts a SQLite database.
pub fn is_database(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// Whether the file at `path` is a SQLite database (false when it does not
/// read).
pub fn is_database_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| is_database(&head))
}

/// A session of the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbSession {
    /// OpenCode's session id (`ses_…`).
    pub id: String,
    /// Its title.
    pub title: String,
}

/// The sessions of the database at `db`, by id (ids are time-ordered).
pub fn sessions(db: &Path) -> Result<Vec<DbSession>, ImportError> {
    let conn = open(db)?;
    let mut stmt = conn
        .prepare("SELECT id, title FROM session ORDER BY id")
        .map_err(|e| at(db, "", format!("not an OpenCode database: {e}")))?;
    let rows = stmt
        .query_map([], |r| {
            Ok(DbSession {
                id: r.get(0)?,
                title: r.get(1)?,
            })
        })
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(|e| at(db, "table session", format!("does not read: {e}")))?;
    Ok(rows)
}

/// The directory each session of the database at `db` ran in, by id
/// (sessions without one are left out).
pub fn session_directories(db: &Path) -> Result<Vec<(String, String)>, ImportError> {
    let conn = open(db)?;
    let mut stmt = conn
        .prepare("SELECT id, directory FROM session WHERE directory IS NOT NULL ORDER BY id")
        .map_err(|e| at(db, "", format!("its sessions have no directory: {e}")))?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(|e| at(db, "table session", format!("does not read: {e}")))?;
    Ok(rows)
}

/// The export `{info, messages: [{info, parts}]}` of `session`, as JSON
/// bytes; no row's `data` may be longer than `max_bytes`.
pub fn assemble(db: &Path, session: &str, max_bytes: u64) -> Result<Vec<u8>, ImportError> {
    let mut conn = open(db)?;
    let snapshot = conn
        .transaction()
        .map_err(|e| at(db, "", format!("cannot begin a read: {e}")))?;
    let here = format!("session {session}");
    let info = snapshot
        .query_row(
            "SELECT * FROM session WHERE id = ?1",
            [session],
            session_info,
        )
        .optional()
        .map_err(|e| at(db, &here, format!("does not read: {e}")))?
        .ok_or_else(|| at(db, &here, "no such session in the database".into()))?;
    let mut messages: Vec<(String, Value)> = Vec::new();
    {
        let mut stmt = snapshot
            .prepare("SELECT id, data FROM message WHERE session_id = ?1 ORDER BY id")
            .map_err(|e| at(db, &here, format!("table message does not read: {e}")))?;
        let mut rows = stmt
            .query([session])
            .map_err(|e| at(db, &here, format!("table message does not read: {e}")))?;
        while let Some(row) = rows
            .next()
            .map_err(|e| at(db, &here, format!("table message does not read: {e}")))?
        {
            let (id, mut data) = row_data(db, &here, "message", row, max_bytes)?;
            data.insert("id".into(), Value::String(id.clone()));
            data.insert("sessionID".into(), Value::String(session.to_owned()));
            messages.push((id, json!({"info": Value::Object(data), "parts": []})));
        }
    }
    {
        let mut stmt = snapshot
            .prepare(
                "SELECT id, data, message_id FROM part WHERE session_id = ?1 \
                 ORDER BY message_id, id",
            )
            .map_err(|e| at(db, &here, format!("table part does not read: {e}")))?;
        let mut rows = stmt
            .query([session])
            .map_err(|e| at(db, &here, format!("table part does not read: {e}")))?;
        while let Some(row) = rows
            .next()
            .map_err(|e| at(db, &here, format!("table part does not read: {e}")))?
        {
            let (id, mut data) = row_data(db, &here, "part", row, max_bytes)?;
            let message: String = row
                .get(2)
                .map_err(|e| at(db, &format!("{here}, part {id}"), e.to_string()))?;
            data.insert("id".into(), Value::String(id.clone()));
            data.insert("sessionID".into(), Value::String(session.to_owned()));
            data.insert("messageID".into(), Value::String(message.clone()));
            let Ok(i) = messages.binary_search_by(|(m, _)| m.as_str().cmp(&message)) else {
                return Err(at(
                    db,
                    &format!("{here}, part {id}"),
                    format!("its message {message} is not in the session"),
                ));
            };
            if let Some(Value::Array(parts)) = messages[i].1.get_mut("parts") {
                parts.push(Value::Object(data));
            }
        }
    }
    // Reading only: ending the transaction releases the snapshot.
    drop(snapshot);
    let messages: Vec<Value> = messages.into_iter().map(|(_, m)| m).collect();
    serde_json::to_vec(&json!({"info": info, "messages": messages}))
        .map_err(|e| at(db, &here, format!("cannot assemble the export: {e}")))
}

/// Opens `db` read-only, never creating or changing it.
fn open(db: &Path) -> Result<Connection, ImportError> {
    if !db.is_file() {
        return Err(at(db, "", "no such database file".into()));
    }
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| at(db, "", format!("cannot open the database: {e}")))?;
    conn.busy_timeout(BUSY_WAIT)
        .and_then(|()| conn.pragma_update(None, "query_only", true))
        .map_err(|e| at(db, "", format!("cannot open the database: {e}")))?;
    Ok(conn)
}

/// A `message` or `part` row's id and its `data` object.
fn row_data(
    db: &Path,
    here: &str,
    table: &str,
    row: &Row<'_>,
    max_bytes: u64,
) -> Result<(String, Map<String, Value>), ImportError> {
    let id: String = row
        .get(0)
        .map_err(|e| at(db, here, format!("a {table} id does not read: {e}")))?;
    let here = format!("{here}, {table} {id}");
    let data: String = row
        .get(1)
        .map_err(|e| at(db, &here, format!("`data` does not read: {e}")))?;
    if data.len() as u64 > max_bytes {
        return Err(at(
            db,
            &here,
            format!("`data` is longer than {max_bytes} bytes (the limit; see --max-line-bytes)"),
        ));
    }
    match serde_json::from_str::<Value>(&data) {
        Ok(Value::Object(o)) => Ok((id, o)),
        Ok(_) => Err(at(db, &here, "`data` is not a JSON object".into())),
        Err(e) => Err(at(db, &here, format!("`data` is not JSON: {e}"))),
    }
}

/// A `session` row as the `info` of OpenCode's export (`Session.fromRow`):
/// absent optional columns are left out, JSON columns are parsed.
fn session_info(r: &Row<'_>) -> rusqlite::Result<Value> {
    let text = |name: &str| column::<String>(r, name);
    let int = |name: &str| column::<i64>(r, name);
    let json_col = |name: &str| -> rusqlite::Result<Option<Value>> {
        Ok(text(name)?.map(|t| serde_json::from_str(&t).unwrap_or(Value::String(t))))
    };
    let mut info = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            info.insert(k.to_owned(), v);
        }
    };
    put("id", text("id")?.map(Value::from));
    put("slug", text("slug")?.map(Value::from));
    put("projectID", text("project_id")?.map(Value::from));
    put("workspaceID", text("workspace_id")?.map(Value::from));
    put("directory", text("directory")?.map(Value::from));
    put("path", text("path")?.map(Value::from));
    put("parentID", text("parent_id")?.map(Value::from));
    put("title", text("title")?.map(Value::from));
    put("agent", text("agent")?.map(Value::from));
    put("model", json_col("model")?);
    put("version", text("version")?.map(Value::from));
    let (additions, deletions, files) = (
        int("summary_additions")?,
        int("summary_deletions")?,
        int("summary_files")?,
    );
    if additions.is_some() || deletions.is_some() || files.is_some() {
        let mut summary = json!({
            "additions": additions.unwrap_or(0),
            "deletions": deletions.unwrap_or(0),
            "files": files.unwrap_or(0),
        });
        if let Some(diffs) = json_col("summary_diffs")? {
            summary["diffs"] = diffs;
        }
        put("summary", Some(summary));
    }
    put("share", text("share_url")?.map(|url| json!({ "url": url })));
    put("metadata", json_col("metadata")?);
    // JavaScript prints a whole number without a fraction.
    put(
        "cost",
        column::<f64>(r, "cost")?.map(|c| match c.fract() == 0.0 && c.abs() < 9e15 {
            true => Value::from(c as i64),
            false => Value::from(c),
        }),
    );
    put(
        "tokens",
        Some(json!({
            "input": int("tokens_input")?.unwrap_or(0),
            "output": int("tokens_output")?.unwrap_or(0),
            "reasoning": int("tokens_reasoning")?.unwrap_or(0),
            "cache": {
                "read": int("tokens_cache_read")?.unwrap_or(0),
                "write": int("tokens_cache_write")?.unwrap_or(0),
            },
        })),
    );
    put("revert", json_col("revert")?);
    put("permission", json_col("permission")?);
    let mut time = Map::new();
    for (key, column) in [
        ("created", "time_created"),
        ("updated", "time_updated"),
        ("compacting", "time_compacting"),
        ("archived", "time_archived"),
    ] {
        if let Some(t) = int(column)? {
            time.insert(key.to_owned(), Value::from(t));
        }
    }
    put("time", Some(Value::Object(time)));
    Ok(Value::Object(info))
}

/// The column `name` of `r`; `None` when it is NULL or the table has no
/// such column (older OpenCode versions have fewer).
fn column<T: rusqlite::types::FromSql>(r: &Row<'_>, name: &str) -> rusqlite::Result<Option<T>> {
    match r.as_ref().column_index(name) {
        Ok(i) => r.get(i),
        Err(_) => Ok(None),
    }
}

fn at(db: &Path, here: &str, message: String) -> ImportError {
    ImportError {
        file: db.display().to_string(),
        line: 0,
        path: (!here.is_empty()).then(|| here.to_owned()),
        message,
    }
}
