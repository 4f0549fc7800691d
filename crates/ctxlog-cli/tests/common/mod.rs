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

/// Runs the `ctxlog` binary with `args`, no store named; its output.
#[allow(dead_code)] // not every test uses it
pub fn run(args: &[&str]) -> std::process::Output {
    ctxlog().args(args).output().expect("run ctxlog")
}

/// Runs [`ctxlog_home`]; its output.
#[allow(dead_code)] // not every test uses it
pub fn run_home(
    home: &std::path::Path,
    db: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    ctxlog_home(home, db, args).output().expect("run ctxlog")
}

/// What `out` printed, as the one JSON document it must be (else the
/// test fails showing what was printed).
#[allow(dead_code)] // not every test uses it
pub fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `ctxlog --json args` on the store at `db`, which must succeed; what it
/// printed.
#[allow(dead_code)] // not every test uses it
pub fn json_at(db: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    json_of(&ok(ctxlog_at(db, &all)))
}

/// `out`, which must be a success (else the test fails showing its exit
/// and what it printed).
#[allow(dead_code)] // not every test uses it
pub fn ok(out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "exit {:?}: {}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
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

/// A pi recording of `turns` turns whose session id ends in `n`: a
/// prompt, a tool call, its output (2 KB) and an answer per turn.
#[allow(dead_code)] // not every test uses it
pub fn pi_recording(n: usize, turns: usize) -> String {
    use std::fmt::Write;
    let id = format!("5e1f0c2a-9b8d-4e7f-a6c5-{n:012}");
    let mut out = format!(
        "{{\"type\":\"session\",\"id\":\"{id}\",\"timestamp\":\"2025-11-20T10:00:00.000Z\",\"cwd\":\"/home/dev/p{n}\",\"provider\":\"anthropic\",\"modelId\":\"claude-sonnet-4-5\",\"thinkingLevel\":\"off\"}}\n"
    );
    let output = format!("line of output {n}\n").repeat(100);
    let output = serde_json::to_string(&output).unwrap();
    for t in 0..turns {
        let ms = 1_763_632_800_000u64 + (t as u64) * 10_000;
        let at = |k: u64| {
            let ms = ms + k;
            let secs = ms / 1000;
            format!(
                "2025-11-20T{:02}:{:02}:{:02}.{:03}Z",
                10 + (secs - 1_763_632_800) / 3600,
                (secs / 60) % 60,
                secs % 60,
                ms % 1000
            )
        };
        let input = 1000 + 40 * t as u64;
        writeln!(out, "{{\"type\":\"message\",\"timestamp\":\"{}\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"step {t} of session {n}\"}}],\"timestamp\":{}}}}}", at(0), ms).unwrap();
        writeln!(out, "{{\"type\":\"message\",\"timestamp\":\"{}\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"toolCall\",\"id\":\"call_{t}\",\"name\":\"bash\",\"arguments\":{{\"command\":\"ls {t}\"}}}}],\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"usage\":{{\"input\":{input},\"output\":20,\"cacheRead\":0,\"cacheWrite\":0}},\"stopReason\":\"toolUse\",\"timestamp\":{}}}}}", at(1000), ms + 1000).unwrap();
        writeln!(out, "{{\"type\":\"message\",\"timestamp\":\"{}\",\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"call_{t}\",\"toolName\":\"bash\",\"content\":[{{\"type\":\"text\",\"text\":{output}}}],\"isError\":false,\"timestamp\":{}}}}}", at(2000), ms + 2000).unwrap();
        writeln!(out, "{{\"type\":\"message\",\"timestamp\":\"{}\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"done {t}\"}}],\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"usage\":{{\"input\":{},\"output\":5,\"cacheRead\":0,\"cacheWrite\":0}},\"stopReason\":\"stop\",\"timestamp\":{}}}}}", at(3000), input + 30, ms + 3000).unwrap();
    }
    out
}

/// Every session of the store at `db` (description streams included)
/// with its events, read after the store verifies.
#[allow(dead_code)] // not every test uses it
pub fn contents(
    db: &std::path::Path,
) -> std::collections::BTreeMap<ctxlog_core::SessionId, Vec<ctxlog_core::Envelope>> {
    use ctxlog_store::EventLog;
    let store = ctxlog_sled::SledStore::open(db).unwrap();
    let report = store.verify().unwrap();
    assert!(report.ok(), "verify: {:?}", report.errors);
    store
        .sessions()
        .unwrap()
        .into_iter()
        .map(|(s, _)| (s, store.read(s, 1).unwrap().map(Result::unwrap).collect()))
        .collect()
}
