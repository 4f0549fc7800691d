//! Every command on a PostgreSQL log (`--db postgresql://…`), the same
//! answers as on sled, `copy` both ways with equal digests, and the
//! connection string's password never shown. Needs a server
//! (`CTXLOG_TEST_POSTGRES`); skipped with a message without one, outside CI.

mod common;

use common::{ctxlog, ctxlog_at, root};
use ctxlog_testkit::{PgDatabase, TempDir};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The repository's recordings of the four agents.
fn fixtures() -> Vec<String> {
    [
        "opencode/compacted-and-pruned.json",
        "claude-code/edge-cases.jsonl",
        "codex/edge-cases.jsonl",
        "pi/edge-cases.jsonl",
    ]
    .iter()
    .map(|f| {
        root()
            .join("fixtures/sessions")
            .join(f)
            .display()
            .to_string()
    })
    .collect()
}

/// Runs `ctxlog --db db args`, which must succeed; its output, after
/// checking that `password` is nowhere in it.
fn run(db: &str, password: &str, args: &[&str]) -> String {
    let out = ctxlog_at(Path::new(db), args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        !stdout.contains(password) && !stderr.contains(password),
        "ctxlog {args:?} showed the password:\n{stdout}\n{stderr}"
    );
    assert!(out.status.success(), "ctxlog {args:?}: {stderr}\n{stdout}");
    stdout
}

fn json(db: &str, password: &str, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    serde_json::from_str(&run(db, password, &args)).expect("one JSON document")
}

/// Each session's replay digest, by id.
fn digests(db: &str, password: &str) -> BTreeMap<String, String> {
    let sessions = json(db, password, &["sessions"]);
    let simulations = json(db, password, &["sessions", "--simulations"]);
    sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .chain(simulations["sessions"].as_array().unwrap())
        .map(|s| {
            let id = s["session"].as_str().unwrap().to_owned();
            let digest = json(db, password, &["replay", &id])["digest"]
                .as_str()
                .unwrap()
                .to_owned();
            (id, digest)
        })
        .collect()
}

#[test]
fn every_command_works_on_postgres_as_on_sled() {
    let Some(pg) = PgDatabase::create("cli_every_command") else {
        return;
    };
    let (url, password) = (
        pg.url(),
        pg.password().expect("the test URL has a password"),
    );
    let dir = TempDir::new("cli-pg-sled");
    let sled = dir.path().display().to_string();
    let files = fixtures();
    let mut import = vec!["import"];
    import.extend(files.iter().map(String::as_str));
    for db in [url, sled.as_str()] {
        let done = json(db, &password, &import);
        assert_eq!(done["imported"], 4, "{done}");
    }

    // The same sessions, the same digests, on both backends; `verify`
    // counts them alike (PostgreSQL counted description streams too).
    let on_pg = digests(url, &password);
    assert_eq!(on_pg.len(), 4);
    assert_eq!(on_pg, digests(&sled, &password));
    let counted = |db: &str| json(db, &password, &["verify"])["sessions"].clone();
    assert_eq!(counted(url), 4);
    assert_eq!(counted(url), counted(&sled));

    // The views and use cases, on PostgreSQL.
    let out = TempDir::created("cli-pg-out");
    let session = "ses_0a3f";
    let timeline = json(url, &password, &["timeline", session]);
    assert!(
        !timeline["steps"].as_array().unwrap().is_empty(),
        "{timeline}"
    );
    let window = json(url, &password, &["window", session]);
    assert!(window["seq"].as_u64().unwrap() > 0, "{window}");
    let audit = json(url, &password, &["audit", session]);
    assert!(!audit["entries"].as_array().unwrap().is_empty(), "{audit}");
    let page = out.join("r.html");
    run(
        url,
        &password,
        &["report", session, "--out", page.to_str().unwrap()],
    );
    assert!(std::fs::metadata(&page).unwrap().len() > 10_000);
    let export = out.join("e.json");
    run(
        url,
        &password,
        &["export", session, "--out", export.to_str().unwrap()],
    );
    let markdown = run(url, &password, &["export", session, "--format", "markdown"]);
    assert!(markdown.contains("# "), "{markdown}");
    let kept = json(
        url,
        &password,
        &["simulate", &files[0], "--policy", "opencode-1.17", "--keep"],
    );
    assert!(kept.to_string().contains("@opencode-1.17"), "{kept}");
    let compacted = json(url, &password, &["compact", "7f1c2d3e"]);
    assert_eq!(compacted["ok"], true, "{compacted}");
    let verified = json(url, &password, &["verify"]);
    assert_eq!(verified["ok"], true, "{verified}");
    // CTXLOG_DB names it as --db does.
    let listed = ctxlog()
        .env("CTXLOG_DB", url)
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    assert!(listed.status.success());
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        listed["sessions"].as_array().unwrap().len(),
        5,
        "4 recorded, 1 manual copy (the kept simulation is listed apart)"
    );

    // copy: PostgreSQL → sled → another PostgreSQL database, equal digests.
    let back = TempDir::new("cli-pg-copy");
    let back = back.path().display().to_string();
    let Some(pg2) = PgDatabase::create("cli_copy_back") else {
        return;
    };
    let first = json(url, &password, &["copy", url, &back]);
    let second = json(url, &password, &["copy", &back, pg2.url()]);
    assert_eq!(first["digest"], second["digest"]);
    assert_eq!(first["events"], second["events"]);
    let all = digests(url, &password);
    assert_eq!(all.len(), 6);
    assert_eq!(digests(&back, &password), all);
    assert_eq!(digests(pg2.url(), &password), all);
    // Run again, a copy appends nothing.
    assert_eq!(
        json(url, &password, &["copy", &back, pg2.url()])["appended"],
        0
    );
}

#[test]
fn a_failed_connection_names_the_server_but_never_the_password() {
    let Some(pg) = PgDatabase::create("cli_bad_password") else {
        return;
    };
    let password = pg.password().unwrap();
    let wrong = pg
        .url()
        .replace(&format!(":{password}@"), ":not-the-password-71@");
    for url in [
        wrong.as_str(),
        "postgresql://u:secret-pw-93@127.0.0.1:1/none",
    ] {
        let out = ctxlog_at(Path::new(url), &["sessions"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(":***@"), "{stderr}");
        for secret in ["not-the-password-71", "secret-pw-93", password.as_str()] {
            assert!(!stderr.contains(secret), "{stderr}");
        }
    }
}

#[test]
fn import_follow_writes_to_postgres_as_recordings_arrive() {
    let Some(pg) = PgDatabase::create("cli_follow") else {
        return;
    };
    let password = pg.password().unwrap();
    let dir = TempDir::created("cli-pg-follow");
    let files = fixtures();
    std::fs::copy(&files[1], dir.join("a.jsonl")).unwrap();
    let mut follower = common::ctxlog_on(
        Path::new(pg.url()),
        &[
            "import",
            "--follow",
            "--interval",
            "50",
            dir.path().to_str().unwrap(),
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let count = || {
        json(pg.url(), &password, &["sessions"])["sessions"]
            .as_array()
            .map_or(0, Vec::len)
    };
    let wait_for = |n: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while count() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "the follower did not import"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    wait_for(1);
    // A recording that arrives while it follows.
    std::fs::copy(&files[2], dir.join("b.jsonl")).unwrap();
    wait_for(2);
    follower.kill().unwrap();
    let out = follower.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("b.jsonl"), "{said}");
    assert!(!said.contains(&password), "{said}");
}

/// The server as libpq users name it: key/value settings, `PGPASSWORD`,
/// `~/.pgpass`, a service (`PGSERVICEFILE`, `service=`), the `PG*`
/// variables with an empty URL. Each reaches the same log, none is taken
/// for a directory, and no password is ever shown.
#[test]
fn libpq_forms_name_the_same_log_and_never_a_directory() {
    let Some(pg) = PgDatabase::create("cli_libpq_forms") else {
        return;
    };
    let password = pg.password().unwrap();
    let settings: BTreeMap<String, String> = ctxlog_postgres::conninfo::parse(pg.url())
        .unwrap()
        .into_iter()
        .collect();
    let [host, port, user, dbname] =
        ["host", "port", "user", "dbname"].map(|k| settings[k].clone());
    let home = TempDir::created("cli-libpq-home");
    let work = TempDir::created("cli-libpq-work");
    let store = work.join("store");
    for f in fixtures() {
        common::succeeds(&store, &["import", &f]);
    }
    // Runs ctxlog in `work` with `envs`, as a user whose home is `home`
    // and who has no PG* settings but these.
    let run_with = |envs: &[(&str, &str)], args: &[&str]| -> std::process::Output {
        let mut c = ctxlog();
        c.current_dir(work.path()).env("HOME", home.path());
        for (k, _) in std::env::vars() {
            if k.starts_with("PG") {
                c.env_remove(k);
            }
        }
        c.envs(envs.iter().copied()).args(args);
        let out = c.output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !text.contains(&password),
            "{args:?} showed the password: {text}"
        );
        out
    };
    let listed = |out: &std::process::Output| {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text.contains("ses_0a3f")
    };

    // Key/value settings with PGPASSWORD: `copy` writes the log, not a
    // directory named after the string.
    let kv = format!("host={host} port={port} user={user} dbname={dbname}");
    let out = run_with(
        &[("PGPASSWORD", &password)],
        &["copy", store.to_str().unwrap(), &kv],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let entries: Vec<_> = std::fs::read_dir(work.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        entries,
        ["store"],
        "copy made a directory of the connection string"
    );
    assert!(listed(&run_with(
        &[("PGPASSWORD", &password)],
        &["--db", &kv, "sessions"]
    )));
    // The password in the settings themselves, never shown.
    let with_password = format!("{kv} password={password}");
    assert!(listed(&run_with(
        &[],
        &["--db", &with_password, "sessions"]
    )));
    let wrong = run_with(
        &[],
        &["--db", &format!("{kv} password=not-it-55"), "sessions"],
    );
    assert_eq!(wrong.status.code(), Some(1));
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        err.contains("password=***") && !err.contains("not-it-55"),
        "{err}"
    );
    // Without a password anywhere: the server asks for one, and the error
    // says where libpq users put it.
    let none = run_with(&[], &["--db", &kv, "sessions"]);
    assert_eq!(none.status.code(), Some(1));
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(
        err.contains("PGPASSWORD") && err.contains(".pgpass"),
        "{err}"
    );
    // ~/.pgpass (0600), for a URL without a password.
    let pgpass = home.join(".pgpass");
    std::fs::write(&pgpass, format!("{host}:{port}:*:{user}:{password}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let url = format!("postgresql://{user}@{host}:{port}/{dbname}");
    assert!(listed(&run_with(&[], &["--db", &url, "sessions"])));
    std::fs::remove_file(&pgpass).unwrap();
    // A service, and the PG* variables with an empty URL.
    let services = home.join("services.conf");
    std::fs::write(
        &services,
        format!("[ctx]\nhost={host}\nport={port}\nuser={user}\ndbname={dbname}\n"),
    )
    .unwrap();
    let service_file = services.to_str().unwrap();
    assert!(listed(&run_with(
        &[("PGSERVICEFILE", service_file), ("PGPASSWORD", &password)],
        &["--db", "service=ctx", "sessions"],
    )));
    assert!(listed(&run_with(
        &[
            ("PGHOST", &host),
            ("PGPORT", &port),
            ("PGUSER", &user),
            ("PGDATABASE", &dbname),
            ("PGPASSWORD", &password),
        ],
        &["--db", "postgresql://", "sessions"],
    )));
    let missing = run_with(
        &[("PGSERVICEFILE", service_file)],
        &["--db", "service=nope", "sessions"],
    );
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("service \"nope\""));
}

#[test]
fn search_recall_and_index_answer_on_postgres_as_on_sled() {
    let Some(pg) = PgDatabase::create("cli_search") else {
        return;
    };
    let (url, password) = (
        pg.url(),
        pg.password().expect("the test URL has a password"),
    );
    let dir = TempDir::new("cli-pg-search");
    let sled = dir.path().display().to_string();
    let files = fixtures();
    let mut import = vec!["import"];
    import.extend(files.iter().map(String::as_str));
    for db in [url, sled.as_str()] {
        json(db, &password, &import);
    }
    let call = "toolu_01Nc8cHPow5epgXnpMZT5HN1";
    let both = |args: &[&str]| {
        let on_pg = json(url, &password, args);
        assert_eq!(on_pg, json(&sled, &password, args), "{args:?}");
        on_pg
    };
    // Pruned, then compacted away at 42: found by a phrase, with its
    // status; the same hits but for their scores and so their order
    // (BM25 against ts_rank).
    let hits = |db: &str, args: &[&str]| {
        let mut v = json(db, &password, args);
        let hits = v["hits"].as_array_mut().unwrap();
        for h in hits.iter_mut() {
            h["score"] = Value::Null;
        }
        hits.sort_by_key(|h| h["part"].as_str().unwrap().to_owned());
        v
    };
    let query = ["search", "\"line_14 tokens next\"", "--dropped"];
    let found = hits(url, &query);
    assert_eq!(found["hits"][0]["call_id"], call, "{found}");
    assert_eq!(found["hits"][0]["status"]["at"], 42, "{found}");
    assert_eq!(found, hits(&sled, &query));
    let prefixed = ["search", "pars* -objective", "--session", "ses_0a3f"];
    assert_eq!(hits(url, &prefixed), hits(&sled, &prefixed));
    both(&["recall", call]);
    both(&["recall", "--compaction", "last", "ses_0a3f"]);
    // The index is in the database: verify says it is up to date, a
    // rebuild makes it again from the log.
    assert_eq!(both(&["verify"])["index"]["state"], "up_to_date");
    let rebuilt = json(url, &password, &["index", "--rebuild"]);
    assert_eq!(rebuilt["rebuilt"], true, "{rebuilt}");
    assert!(rebuilt["log_bytes"].is_null(), "{rebuilt}");
    assert_eq!(hits(url, &query), found);
}
