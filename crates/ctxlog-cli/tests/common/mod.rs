//! What the CLI's process-level tests share.

/// The one seeded random source of the tests (the generator's
/// splitmix64): the random moments and damages of the kill and damage
/// tests replay from their seed.
#[allow(unused_imports)] // not every test uses it
pub use ctxlog_testkit::Rng;

/// The workspace root.
#[allow(dead_code)] // not every test uses it
pub fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `ctxlog` binary under test, told of no store by the environment
/// (`CTXLOG_DB` removed): each test names its own; nor of a terminal's
/// width (`COLUMNS` removed): a test that fits tables sets it; in UTC
/// (`TZ`), so days are the same on every machine.
#[allow(dead_code)] // not every test uses it
pub fn ctxlog() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlog"));
    c.env_remove("CTXLOG_DB")
        .env_remove("COLUMNS")
        .env("TZ", "UTC");
    c
}

/// [`ctxlog`] on the store at `db`, with `args`.
#[allow(dead_code)] // not every test uses it
pub fn ctxlog_on(db: &std::path::Path, args: &[&str]) -> std::process::Command {
    let mut c = ctxlog();
    c.arg("--db").arg(db).args(args);
    c
}

/// [`ctxlog_on`] as a user whose home is `home`: the agents' own
/// locations (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `OPENCODE_DB`) unset, so
/// `--discover` looks only under that home.
#[allow(dead_code)] // not every test uses it
pub fn ctxlog_home(
    home: &std::path::Path,
    db: &std::path::Path,
    args: &[&str],
) -> std::process::Command {
    let mut c = ctxlog_on(db, args);
    c.env("HOME", home)
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("OPENCODE_DB");
    c
}

/// Runs `ctxlog args` on the store at `db`, which must succeed; its
/// standard output.
#[allow(dead_code)] // not every test uses it
pub fn succeeds(db: &std::path::Path, args: &[&str]) -> Vec<u8> {
    let out = ctxlog_at(db, args);
    assert!(
        out.status.success(),
        "ctxlog {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out.stdout
}

/// Runs the `ctxlog` binary on the store at `db`; its output.
#[allow(dead_code)] // not every test uses it
pub fn ctxlog_at(db: &std::path::Path, args: &[&str]) -> std::process::Output {
    ctxlog_on(db, args).output().expect("run ctxlog")
}

/// Writes `export` as OpenCode ≤ 1.1 keeps it under `storage`.
#[allow(dead_code)] // not every test uses it
pub fn write_storage(storage: &std::path::Path, export: &serde_json::Value) {
    let info = &export["info"];
    let session = info["id"].as_str().unwrap();
    let project = info["projectID"].as_str().unwrap_or("global");
    let put = |path: std::path::PathBuf, v: &serde_json::Value| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
    };
    put(
        storage.join(format!("session/{project}/{session}.json")),
        info,
    );
    for m in export["messages"].as_array().unwrap() {
        let id = m["info"]["id"].as_str().unwrap();
        put(
            storage.join(format!("message/{session}/{id}.json")),
            &m["info"],
        );
        for p in m["parts"].as_array().unwrap() {
            let part = p["id"].as_str().unwrap();
            put(storage.join(format!("part/{id}/{part}.json")), p);
        }
    }
}
