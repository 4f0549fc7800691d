//! `import --discover` under a temporary HOME laid out as the agents keep
//! their sessions: Claude Code projects, Codex's dated rollouts, pi's
//! sessions (from `../shared/sessions` when present), OpenCode ≤ 1.1's
//! storage tree (split from the repo's OpenCode fixture) and an OpenCode
//! ≥ 1.2 SQLite database (the fixture's rows in OpenCode 1.18's tables, as
//! `../shared/spec/opencode-behavior.md` §1.13 documents them; the
//! differential test reads databases the real OpenCode wrote). Also several
//! files, a directory and standard input in one `import`.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sessions/opencode/compacted-and-pruned.json")
}

/// OpenCode 1.18's `session`, `message` and `part` tables.
const OPENCODE_TABLES: &str = "
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, workspace_id text,
  parent_id text, slug text NOT NULL, directory text NOT NULL, path text, title text NOT NULL,
  version text NOT NULL, share_url text, summary_additions integer, summary_deletions integer,
  summary_files integer, summary_diffs text, metadata text, cost real DEFAULT 0 NOT NULL,
  tokens_input integer DEFAULT 0 NOT NULL, tokens_output integer DEFAULT 0 NOT NULL,
  tokens_reasoning integer DEFAULT 0 NOT NULL, tokens_cache_read integer DEFAULT 0 NOT NULL,
  tokens_cache_write integer DEFAULT 0 NOT NULL, revert text, permission text, agent text,
  model text, time_created integer NOT NULL, time_updated integer NOT NULL,
  time_compacting integer, time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
";

/// Writes `export` as OpenCode ≥ 1.2 keeps it: rows of its database at
/// `path` (in WAL mode, as OpenCode keeps it). Returns the connection.
fn write_database(path: &Path, export: &Value) -> rusqlite::Connection {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute_batch(OPENCODE_TABLES).unwrap();
    let info = &export["info"];
    let session = info["id"].as_str().unwrap();
    let time = |k: &str| info["time"][k].as_i64().unwrap();
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, \
         time_updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        rusqlite::params![
            session,
            info["projectID"].as_str().unwrap_or("global"),
            info["slug"].as_str().unwrap_or("slug"),
            info["directory"].as_str().unwrap_or("/"),
            info["title"].as_str().unwrap_or(""),
            info["version"].as_str().unwrap_or("1.18.33"),
            time("created"),
            time("updated"),
        ],
    )
    .unwrap();
    let without = |v: &Value, keys: &[&str]| {
        let mut v = v.clone();
        for k in keys {
            v.as_object_mut().unwrap().remove(*k);
        }
        v.to_string()
    };
    for m in export["messages"].as_array().unwrap() {
        let id = m["info"]["id"].as_str().unwrap();
        let created = m["info"]["time"]["created"].as_i64().unwrap();
        conn.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![
                id,
                session,
                created,
                without(&m["info"], &["id", "sessionID"])
            ],
        )
        .unwrap();
        for p in m["parts"].as_array().unwrap() {
            conn.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![
                    p["id"].as_str().unwrap(),
                    id,
                    session,
                    created,
                    without(p, &["id", "sessionID", "messageID"])
                ],
            )
            .unwrap();
        }
    }
    conn
}

fn shared(dir: &str) -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/sessions");
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        eprintln!("skipped: {} is absent", root.join(dir).display());
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    files
}

#[test]
fn discover_finds_and_imports_every_agents_sessions_once() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("discover");
    let _ = std::fs::remove_dir_all(&work);
    let home = work.join("home");
    let copy = |files: Vec<PathBuf>, to: &Path| -> usize {
        std::fs::create_dir_all(to).unwrap();
        for f in &files {
            std::fs::copy(f, to.join(f.file_name().unwrap())).unwrap();
        }
        files.len()
    };
    let mut expected = 0;
    expected += copy(
        shared("claude-code"),
        &home.join(".claude/projects/-home-dev-proj"),
    );
    expected += copy(shared("codex"), &home.join(".codex/sessions/2025/09/25"));
    expected += copy(
        shared("pi"),
        &home.join(".pi/agent/sessions/--home-dev-proj--"),
    );
    let export: Value = serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    common::write_storage(&home.join(".local/share/opencode/storage"), &export);
    expected += 1;
    // OpenCode ≥ 1.2: the same recording under another session id, in a
    // database OpenCode is writing: it holds a write transaction throughout.
    let (old_id, new_id) = (
        export["info"]["id"].as_str().unwrap(),
        "ses_0123456789abcdefDATABASE",
    );
    let db_export: Value =
        serde_json::from_str(&export.to_string().replace(old_id, new_id)).unwrap();
    let db_export_file = work.join("db-export.json");
    std::fs::write(&db_export_file, db_export.to_string()).unwrap();
    let opencode_db = home.join(".local/share/opencode/opencode.db");
    let opencode = write_database(&opencode_db, &db_export);
    opencode
        .execute_batch("BEGIN IMMEDIATE; UPDATE session SET title = 'Renamed by its user'")
        .unwrap();
    expected += 1;
    // Not sessions: ignored.
    std::fs::write(home.join(".claude/settings.json"), b"{}").ok();

    let db = work.join("store");
    let first = common::json_of(&common::run_home(
        &home,
        &db,
        &["--json", "import", "--discover"],
    ));
    let files = first["files"].as_array().unwrap();
    assert_eq!(files.len(), expected, "{first}");
    assert_eq!(first["imported"], json!(expected), "{first}");
    assert_eq!(first["refused"], json!(0), "{first}");
    // OpenCode was not locked out: its transaction commits.
    opencode.execute_batch("COMMIT").unwrap();
    // The database's session imports as its export does.
    let from_db = files
        .iter()
        .find(|f| {
            f["file"]
                .as_str()
                .unwrap()
                .ends_with(&format!("opencode.db#{new_id}"))
        })
        .unwrap_or_else(|| panic!("the database's session: {first}"));
    let db_alone = common::json_of(&common::run_home(
        &home,
        &work.join("db-alone"),
        &["--json", "import", db_export_file.to_str().unwrap()],
    ));
    assert_eq!(from_db["session"], db_alone["session"], "{first}");
    assert_eq!(from_db["events"], db_alone["events"], "{first}");
    // The storage tree imports as its export does.
    let from_tree = files
        .iter()
        .find(|f| f["format"] == "opencode" && f["source_session"] == json!(old_id))
        .expect("the storage tree");
    let alone = work.join("alone");
    let o = common::run_home(
        &home,
        &alone,
        &["--json", "import", fixture().to_str().unwrap()],
    );
    let alone_doc = common::json_of(&o);
    assert_eq!(from_tree["session"], alone_doc["session"]);
    assert_eq!(from_tree["events"], alone_doc["events"]);
    let digest = |db: &Path| {
        let o = common::run_home(
            &home,
            db,
            &["--json", "replay", alone_doc["session"].as_str().unwrap()],
        );
        common::json_of(&o)["digest"].clone()
    };
    assert_eq!(digest(&db), digest(&alone));
    // Its messages are the export's; its info is the database's row (which
    // has a cost and token totals where the fixture's info has none).
    let session = db_alone["session"].as_str().unwrap();
    let messages_of = |db: &Path| {
        let o = common::run_home(&home, db, &["export", session]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        common::json_of(&o)["messages"].clone()
    };
    assert_eq!(messages_of(&db), messages_of(&work.join("db-alone")));
    // Named directly, the database imports each of its sessions.
    let named = common::json_of(&common::run_home(
        &home,
        &db,
        &["--json", "import", opencode_db.to_str().unwrap()],
    ));
    // The user renamed the session meanwhile (OpenCode committed it after
    // the first import): the new title is appended, the old one stays in
    // the log.
    assert_eq!(named["extended"], json!(1), "{named}");
    assert_eq!(named["files"][0]["new_events"], json!(1), "{named}");
    let exported = common::json_of(&common::run_home(&home, &db, &["export", session]));
    assert_eq!(exported["info"]["title"], "Renamed by its user");
    let again = common::json_of(&common::run_home(
        &home,
        &db,
        &["--json", "import", opencode_db.to_str().unwrap()],
    ));
    assert_eq!(again["unchanged"], json!(1), "{again}");
    // Again: nothing new.
    let second = common::json_of(&common::run_home(
        &home,
        &db,
        &["--json", "import", "--discover"],
    ));
    assert_eq!(second["unchanged"], json!(expected), "{second}");
    assert_eq!(second["imported"], json!(0), "{second}");
    // A human summary with a table.
    let o = common::run_home(&home, &db, &["import", "--discover"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(
        text.contains("RESULT") && text.contains(&format!("{expected} unchanged")),
        "{text}"
    );
}

#[test]
fn several_files_a_directory_and_stdin_in_one_import() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("import-many");
    let _ = std::fs::remove_dir_all(&work);
    let dir = work.join("recordings");
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    std::fs::copy(fixture(), dir.join("nested/export.json")).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a recording").unwrap();
    let bad = work.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"timestamp\":\"2025-09-25T01:22:20.083Z\",\"type\":\"session_meta\",\"payload\":{\"id\":\"\"}}\n",
    )
    .unwrap();
    let db = work.join("store");
    let home = work.join("home");
    // Nothing but refused input: nothing is created.
    let o = common::run_home(
        &home,
        &db,
        &["import", bad.to_str().unwrap(), bad.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(!db.exists(), "a refused import created the store");
    // A directory and a bad file: the good one is imported, the bad one
    // refused by name, exit 2.
    let o = common::run_home(
        &home,
        &db,
        &[
            "--json",
            "import",
            dir.to_str().unwrap(),
            bad.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let doc = common::json_of(&o);
    assert_eq!(
        (doc["imported"].clone(), doc["refused"].clone()),
        (json!(1), json!(1)),
        "{doc}"
    );
    let refused = &doc["files"][1];
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("bad.jsonl:1: field `payload.id`"),
        "{doc}"
    );
    // Standard input, sniffed from what is buffered: the same session, unchanged.
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .arg("--db")
        .arg(&db)
        .args(["--json", "import", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(fixture()).unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &bytes).unwrap();
    let o = child.wait_with_output().unwrap();
    let doc = common::json_of(&o);
    assert_eq!(doc["unchanged"], json!(1), "{doc}");
    assert_eq!(doc["files"][0]["file"], "stdin");
}

/// An error in OpenCode's storage tree names the message or part file it is
/// in, and the field in it.
#[test]
fn a_bad_file_of_a_storage_tree_is_named() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("discover-bad-tree");
    let _ = std::fs::remove_dir_all(&work);
    let home = work.join("home");
    let mut export: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    // A step-finish part whose input tokens are a string.
    let (message, part) = export["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| {
            let p = m["parts"]
                .as_array()?
                .iter()
                .find(|p| p["type"] == "step-finish")?;
            Some((
                m["info"]["id"].as_str()?.to_owned(),
                p["id"].as_str()?.to_owned(),
            ))
        })
        .expect("a step-finish part");
    for m in export["messages"].as_array_mut().unwrap() {
        for p in m["parts"].as_array_mut().unwrap() {
            if p["id"] == part.as_str() {
                p["tokens"]["input"] = json!("12");
            }
        }
    }
    common::write_storage(&home.join(".local/share/opencode/storage"), &export);
    let db = work.join("store");
    let o = common::run_home(&home, &db, &["import", "--discover"]);
    assert_eq!(o.status.code(), Some(2));
    let out = String::from_utf8_lossy(&o.stdout);
    let file = format!("part/{message}/{part}.json");
    assert!(
        out.contains(&file) && out.contains("tokens.input") && out.contains("\"12\""),
        "{out}"
    );
    assert!(!db.exists(), "nothing was written");
}
