//! What a user would pick instead of ctxlog, measured on the same generated
//! workload in the same run ([`bench_baselines`]):
//!
//! - **OpenCode's storage shape**: messages and parts as JSON rows in SQLite
//!   (rusqlite, WAL), the tables of OpenCode ≥ 1.2. At each step its loop
//!   writes the step's rows, then reads every message and part of the
//!   session back and parses each row's JSON before it builds the model
//!   input from the last compaction on. Its step cost, against ctxlog's
//!   (record the step, build the window), at three history sizes.
//! - **Durable appends**: one SQLite transaction per row with
//!   `synchronous=FULL`, and a plain append-only JSONL file with an
//!   `fdatasync` per line (what Codex and Claude Code write): the floor a
//!   durable append cannot beat on this disk.
//! - **Bytes on disk** of the same session in OpenCode's shape.

use crate::appends::durable_rate;
use crate::measure::{median, median_ratio, side_by_side, Scratch};
use crate::report::Report;
use crate::sizes::{generated, Sizes};
use crate::steps::{one_step, step_session};
use crate::{failed, BenchError};
use ctxlog_core::Envelope;
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// OpenCode ≥ 1.2's `message` and `part` tables (the columns its loop
/// reads; `session` holds only the session's own row).
const TABLES: &str = "
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_idx ON message (session_id);
CREATE INDEX part_session_idx ON part (session_id);
";

/// The session id every baseline row belongs to.
const SESSION: &str = "ses_bench";

/// Runs the step and size baselines; records ratios against ctxlog's
/// figures of the same run (`disk_bytes_per_event` must be measured
/// before).
pub fn bench_baselines(z: &Sizes, r: &mut Report) -> Result<(), BenchError> {
    for &history in z.baseline_histories {
        let (sqlite, ours) = step_costs(history, z.baseline_steps)?;
        r.set_ratio(
            &format!("opencode_sqlite_step_vs_ctxlog_{}", short(history)),
            sqlite / ours,
        );
        r.set_figure(
            format!("opencode_sqlite_step_seconds_{}", short(history)),
            json!(sqlite),
        );
        r.set_figure(
            format!("ctxlog_step_seconds_{}", short(history)),
            json!(ours),
        );
    }
    let (bytes, n) = sqlite_bytes(z.baseline_bytes)?;
    r.set_figure(
        "opencode_sqlite_bytes_per_event",
        json!(bytes as f64 / n as f64),
    );
    if let Some(ours) = r
        .figures
        .get("disk_bytes_per_event")
        .and_then(Value::as_f64)
    {
        r.set_ratio(
            "opencode_sqlite_bytes_vs_ctxlog",
            (bytes as f64 / n as f64) / ours,
        );
    }
    Ok(())
}

/// Durable appends against what a user would pick instead, on the same
/// events, one event per durable write: ctxlog's engine, SQLite (OpenCode's
/// shape) and a JSONL file with `fdatasync`. The three are measured in turn
/// within each round, so that the disk's sync rate, which drifts over a
/// run on this machine, is the same for all three; the medians of the
/// rounds are compared.
pub fn bench_durable_baselines(z: &Sizes, r: &mut Report) -> Result<(), BenchError> {
    let events = generated(31, z.baseline_durable)?;
    let [ours, sqlite, jsonl] = side_by_side(
        z.runs,
        [
            &mut || durable_rate(&events),
            &mut || sqlite_durable(&events),
            &mut || jsonl_durable(&events),
        ],
    )?;
    r.set_ratio(
        "durable_append_vs_opencode_sqlite",
        median_ratio(&ours, &sqlite)?,
    );
    r.set_ratio(
        "durable_append_vs_jsonl_fdatasync",
        median_ratio(&ours, &jsonl)?,
    );
    let (ours, sqlite, jsonl) = (
        median(ours.clone())?,
        median(sqlite.clone())?,
        median(jsonl.clone())?,
    );
    r.set_figure("ctxlog_durable_appends_per_s_beside_baselines", json!(ours));
    r.set_figure("opencode_sqlite_durable_rows_per_s", json!(sqlite));
    r.set_figure("jsonl_fdatasync_lines_per_s", json!(jsonl));
    Ok(())
}

/// `1k`, `10k`, `100k`.
fn short(n: u64) -> String {
    if n.is_multiple_of(1_000) {
        format!("{}k", n / 1_000)
    } else {
        n.to_string()
    }
}

/// Median seconds of one step at `history` events: (OpenCode's shape,
/// ctxlog), each measured on its own (ctxlog first): interleaved, each of
/// OpenCode's steps (hundreds of MB of JSON parsed and freed at 100k)
/// slowed the ctxlog step after it by 3 to 40 times.
fn step_costs(history: u64, steps: usize) -> Result<(f64, f64), BenchError> {
    let events = generated(21, history)?;
    let sqlite_dir = Scratch::new("baseline-sqlite");
    let mut conn = open(&sqlite_dir.path().join("opencode.db"), "NORMAL")?;
    insert_session(&mut conn, &events)?;
    let ours_dir = Scratch::new("baseline-ctxlog");
    let (engine, session, parent) = step_session(ours_dir.path(), &events)?;
    drop(events);
    const WARM_UP: usize = 3;
    let ours = (0..WARM_UP + steps)
        .map(|i| one_step(&engine, session, parent, i))
        .collect::<Result<Vec<_>, _>>()?;
    drop(engine);
    let sqlite = (0..WARM_UP + steps)
        .map(|i| sqlite_step(&mut conn, i))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((
        median(sqlite[WARM_UP..].to_vec())?,
        median(ours[WARM_UP..].to_vec())?,
    ))
}

/// A database at `path` (its directory created) in WAL mode with
/// OpenCode's tables.
fn open(path: &Path, synchronous: &str) -> Result<Connection, BenchError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| failed("sqlite dir")(&e))?;
    }
    let conn = Connection::open(path).map_err(|e| failed("sqlite open")(&e))?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(|e| failed("sqlite wal")(&e))?;
    conn.pragma_update(None, "synchronous", synchronous)
        .map_err(|e| failed("sqlite synchronous")(&e))?;
    conn.execute_batch(TABLES)
        .map_err(|e| failed("sqlite tables")(&e))?;
    Ok(conn)
}

/// One message as OpenCode's rows: its id, its `info`, its parts (id, JSON).
type MessageRows = (String, Value, Vec<(String, Value)>);

/// The session's messages and parts as OpenCode's rows: its export (what
/// `opencode export` prints), each `info` and part one row.
fn rows(events: &[Envelope]) -> Result<Vec<MessageRows>, BenchError> {
    let mut bytes = Vec::new();
    ctxlog_import::export::opencode(events, &mut bytes).map_err(|e| failed("export")(&e))?;
    let export: Value = serde_json::from_slice(&bytes).map_err(|e| failed("export")(&e))?;
    let messages = export["messages"]
        .as_array()
        .ok_or_else(|| BenchError::Failed("bench: an export without messages".into()))?;
    Ok(messages
        .iter()
        .map(|m| {
            let id = m["info"]["id"].as_str().unwrap_or_default().to_owned();
            let parts = m["parts"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .map(|p| (p["id"].as_str().unwrap_or_default().to_owned(), p.clone()))
                        .collect()
                })
                .unwrap_or_default();
            (id, m["info"].clone(), parts)
        })
        .collect())
}

/// Writes `events` as OpenCode's rows in one transaction.
fn insert_session(conn: &mut Connection, events: &[Envelope]) -> Result<(), BenchError> {
    let tx = conn.transaction().map_err(|e| failed("sqlite")(&e))?;
    for (id, info, parts) in rows(events)? {
        insert_message(&tx, &id, &info, &parts)?;
    }
    tx.commit().map_err(|e| failed("sqlite commit")(&e))
}

fn insert_message(
    conn: &Connection,
    id: &str,
    info: &Value,
    parts: &[(String, Value)],
) -> Result<(), BenchError> {
    let now = 1_800_000_000_000i64;
    conn.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
        params![id, SESSION, now, info.to_string()],
    )
    .map_err(|e| failed("sqlite insert")(&e))?;
    for (pid, p) in parts {
        conn.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            params![pid, id, SESSION, now, p.to_string()],
        )
        .map_err(|e| failed("sqlite insert")(&e))?;
    }
    Ok(())
}

/// One step as OpenCode's loop takes it: write the assistant message and
/// its parts (a text and a tool output of the same size as ctxlog's step),
/// then read the whole session back, parse every row, and keep what
/// follows the last compaction as the model input. Seconds.
fn sqlite_step(conn: &mut Connection, i: usize) -> Result<f64, BenchError> {
    let id = format!("msg_bench_{i:08}");
    let info = json!({"role": "assistant", "time": {"created": i}, "tokens": {"input": 1000, "output": 100}});
    let parts = vec![
        (
            format!("prt_bench_{i:08}_0"),
            json!({"type": "text", "text": format!("step {i}: checking the next file")}),
        ),
        (
            format!("prt_bench_{i:08}_1"),
            json!({"type": "tool", "tool": "read", "callID": format!("bench_{i}"),
                   "state": {"status": "completed", "input": {}, "output": format!("line {i}: ok\n").repeat(150)}}),
        ),
    ];
    let t = Instant::now();
    let tx = conn.transaction().map_err(|e| failed("sqlite")(&e))?;
    insert_message(&tx, &id, &info, &parts)?;
    tx.commit().map_err(|e| failed("sqlite commit")(&e))?;
    let input = read_back(conn)?;
    let secs = t.elapsed().as_secs_f64();
    if input == 0 {
        return Err(BenchError::Failed("bench: an empty model input".into()));
    }
    Ok(secs)
}

/// Every message and part of the session read and parsed; the number of
/// messages from the last compaction on (the model input).
fn read_back(conn: &Connection) -> Result<usize, BenchError> {
    let parse = |text: String| -> Result<Value, BenchError> {
        serde_json::from_str(&text).map_err(|e| failed("row json")(&e))
    };
    let mut messages: Vec<(String, Value, Vec<Value>)> = Vec::new();
    let mut stmt = conn
        .prepare_cached("SELECT id, data FROM message WHERE session_id = ?1 ORDER BY id")
        .map_err(|e| failed("sqlite")(&e))?;
    let mut q = stmt.query([SESSION]).map_err(|e| failed("sqlite")(&e))?;
    while let Some(row) = q.next().map_err(|e| failed("sqlite")(&e))? {
        let id: String = row.get(0).map_err(|e| failed("sqlite")(&e))?;
        let data: String = row.get(1).map_err(|e| failed("sqlite")(&e))?;
        messages.push((id, parse(data)?, Vec::new()));
    }
    let mut stmt = conn
        .prepare_cached(
            "SELECT message_id, data FROM part WHERE session_id = ?1 ORDER BY message_id, id",
        )
        .map_err(|e| failed("sqlite")(&e))?;
    let mut q = stmt.query([SESSION]).map_err(|e| failed("sqlite")(&e))?;
    while let Some(row) = q.next().map_err(|e| failed("sqlite")(&e))? {
        let message: String = row.get(0).map_err(|e| failed("sqlite")(&e))?;
        let data: String = row.get(1).map_err(|e| failed("sqlite")(&e))?;
        let part = parse(data)?;
        if let Ok(i) = messages.binary_search_by(|(m, _, _)| m.as_str().cmp(&message)) {
            messages[i].2.push(part);
        }
    }
    // OpenCode's filterCompacted: the input starts at the last compaction.
    let start = messages
        .iter()
        .rposition(|(_, _, parts)| parts.iter().any(|p| p["type"] == "compaction"))
        .unwrap_or(0);
    Ok(messages.len() - start)
}

/// Durable rows per second: one transaction per event's row with
/// `synchronous=FULL` (every commit reaches the disk).
fn sqlite_durable(events: &[Envelope]) -> Result<f64, BenchError> {
    let dir = Scratch::new("baseline-sqlite-durable");
    let conn = open(&dir.path().join("opencode.db"), "FULL")?;
    let rows: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_string(e).map_err(|e| failed("json")(&e)))
        .collect::<Result<_, _>>()?;
    let t = Instant::now();
    for (i, data) in rows.iter().enumerate() {
        conn.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, 'msg', ?2, 0, 0, ?3)",
            params![format!("prt_{i:08}"), SESSION, data],
        )
        .map_err(|e| failed("sqlite insert")(&e))?;
    }
    Ok(rows.len() as f64 / t.elapsed().as_secs_f64())
}

/// Durable lines per second: each event's JSON appended to a file and
/// `fdatasync`ed before the next.
fn jsonl_durable(events: &[Envelope]) -> Result<f64, BenchError> {
    let dir = Scratch::new("baseline-jsonl");
    std::fs::create_dir_all(dir.path()).map_err(|e| failed("jsonl dir")(&e))?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("session.jsonl"))
        .map_err(|e| failed("jsonl open")(&e))?;
    let lines: Vec<Vec<u8>> = events
        .iter()
        .map(|e| {
            let mut line = serde_json::to_vec(e).map_err(|e| failed("json")(&e))?;
            line.push(b'\n');
            Ok(line)
        })
        .collect::<Result<_, BenchError>>()?;
    let t = Instant::now();
    for line in &lines {
        file.write_all(line)
            .map_err(|e| failed("jsonl write")(&e))?;
        file.sync_data()
            .map_err(|e| failed("jsonl fdatasync")(&e))?;
    }
    Ok(lines.len() as f64 / t.elapsed().as_secs_f64())
}

/// The bytes on disk of a generated session of `n` events as OpenCode's
/// rows (database and write-ahead log, checkpointed); (bytes, events).
fn sqlite_bytes(n: u64) -> Result<(u64, u64), BenchError> {
    let events = generated(11, n)?;
    let dir = Scratch::new("baseline-sqlite-bytes");
    let path = dir.path().join("opencode.db");
    let mut conn = open(&path, "NORMAL")?;
    insert_session(&mut conn, &events)?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .map_err(|e| failed("sqlite checkpoint")(&e))?;
    drop(conn);
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let bytes = size(&path) + size(&dir.path().join("opencode.db-wal"));
    Ok((bytes, events.len() as u64))
}
