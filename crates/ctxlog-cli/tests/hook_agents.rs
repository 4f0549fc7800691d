//! The agents' own hooks keep the store current, in the real agents,
//! driven offline by a scripted model server, with the hooks as `ctxlog
//! hooks install` writes them and no `ctxlog import` run by hand: after
//! every turn the store holds the session up to that turn; the capture
//! before each compaction (one automatic, one manual) holds everything the
//! compaction replaces; importing the recording by hand afterwards adds
//! nothing; the hooks' added latency is measured; and with the store
//! unusable, or the `ctxlog` binary gone, the agent's session goes on.
//!
//! The agents are the pinned ones of `ctxlog-differential`; a test skips
//! with a message when the npm registry cannot be reached.

mod hooks;

use ctxlog_differential::drive::DriveError;
use ctxlog_differential::model_server::{Api, ModelServer, Reply, Script, Usage};
use hooks::Hooked;
use serde_json::json;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

fn skipped(agent: &str, e: DriveError) -> Option<PathBuf> {
    match e {
        DriveError::Unreachable(why) => {
            eprintln!("SKIPPED: the {agent} hooks test needs the npm registry: {why}");
            None
        }
        e => panic!("installing {agent} failed: {e}"),
    }
}

fn this_ctxlog() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ctxlog"))
}

/// A copy of this build at `dir/bin/ctxlog`, to install from and then
/// take away.
fn ctxlog_copy(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let copy = bin.join("ctxlog");
    std::fs::copy(this_ctxlog(), &copy).unwrap();
    copy
}

/// Makes the store unusable for writing: read-only for a user, a plain
/// file where its directory was for root (whom no mode stops); the undo.
fn spoil_store(db: &Path) -> impl FnOnce() + '_ {
    use std::os::unix::fs::PermissionsExt;
    let aside = db.with_extension("aside");
    let root = std::fs::metadata("/proc/self").map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    });
    let root = root.unwrap_or(false);
    if root {
        std::fs::rename(db, &aside).unwrap();
        std::fs::write(db, b"not a store").unwrap();
    } else {
        for e in std::fs::read_dir(db).unwrap().flatten() {
            let _ = std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o400));
        }
        std::fs::set_permissions(db, std::fs::Permissions::from_mode(0o500)).unwrap();
    }
    move || {
        if root {
            std::fs::remove_file(db).unwrap();
            std::fs::rename(&aside, db).unwrap();
        } else {
            std::fs::set_permissions(db, std::fs::Permissions::from_mode(0o700)).unwrap();
            for e in std::fs::read_dir(db).unwrap().flatten() {
                let mode = if e.path().is_dir() { 0o700 } else { 0o600 };
                let _ = std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(mode));
            }
        }
    }
}

fn text(t: &str, usage: Usage) -> Reply {
    Reply::Text {
        text: t.into(),
        usage,
    }
}

#[test]
fn claude_code_keeps_the_store_current_through_its_hooks() {
    let _serial = serial();
    use ctxlog_differential::claude_code;
    let Some(bin) = claude_code::install().map_or_else(|e| skipped("Claude Code", e), Some) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("ctxlog-hooks-claude-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let summary = |i: usize| {
        text(
            &format!("<analysis>scripted</analysis>\n<summary>scripted summary {i}</summary>"),
            Usage::new(3_000, 400),
        )
    };
    let script = Script {
        agent: VecDeque::from(vec![
            Reply::ToolCalls {
                calls: vec![(
                    "toolu_01Migrate".into(),
                    "Bash".into(),
                    json!({"command": "echo 'MIGRATION-7f3a rows affected: 4242'", "description": "Run the migration"}),
                )],
                usage: Usage::new(10_000, 50),
            },
            // 167,100 of a usable 167,000: Claude Code compacts before the
            // next prompt.
            text(
                "The migration ran.",
                Usage {
                    prompt: 60_000,
                    completion: 7_100,
                    cached: 80_000,
                    cache_write: 20_000,
                    ..Usage::new(0, 0)
                },
            ),
            text("Turn two done.", Usage::new(9_000, 100)),
            text("Turn three done.", Usage::new(5_000, 100)),
            text("Turn four done.", Usage::new(5_500, 100)),
            text("Turn five done.", Usage::new(6_000, 100)),
        ]),
        summary: VecDeque::from(vec![summary(1), summary(2)]),
    };
    let server = ModelServer::start_api(Api::AnthropicMessages, script).expect("model server");
    let sandbox =
        claude_code::Sandbox::new(bin, dir.clone(), &server.origin(), "claude-sonnet-4-6", &[])
            .expect("sandbox");
    let hooked = Hooked::new(&dir, &dir.join("home"));
    let config = [dir.join("home/.claude/settings.json")];
    let before = hooks::snapshot(&config);
    hooked.install(this_ctxlog(), "claude-code", &[]);
    let first = sandbox.prompt("Run the migration.", None).expect("turn 1");
    let session = first["session_id"]
        .as_str()
        .expect("a session id")
        .to_owned();
    let transcript = sandbox.transcript(&session).expect("transcript");
    hooked.check_current(&transcript, &session, "turn 1");
    for (n, prompt) in [
        (2, "turn two"),
        (3, "/compact keep names"),
        (4, "turn three"),
    ] {
        let out = sandbox.prompt(prompt, Some(&session)).expect("a turn");
        assert_eq!(out["is_error"], false, "{out}");
        hooked.check_current(&transcript, &session, &format!("turn {n}"));
    }
    hooked.check_final(&transcript);
    let stored = hooked.stored(&session);
    assert_eq!(stored["compactions"], 2, "{stored}");
    assert_eq!(stored["live"], false, "the session ended: {stored}");
    let id = stored["session"].as_str().unwrap().to_owned();
    assert_eq!(
        hooked.check_captured_before_compactions(&id, "PreCompact"),
        2
    );
    hooked.check_no_failures();
    hooked.report_latency("claude-code");

    // The store unusable: the turn completes, the failure is in the log.
    let undo = spoil_store(&hooked.db);
    let out = sandbox
        .prompt("turn four", Some(&session))
        .expect("turn with the store spoiled");
    assert_eq!(out["is_error"], false, "{out}");
    hooked.settle();
    undo();
    let status = hooked.json(&["hooks", "status", "--agent", "claude-code"]);
    assert!(
        !status["agents"][0]["failing"]
            .as_array()
            .unwrap()
            .is_empty(),
        "the failure is told: {status}"
    );
    // The binary gone: the turn completes.
    let copy = ctxlog_copy(&dir);
    hooked.install(&copy, "claude-code", &[]);
    std::fs::remove_file(&copy).unwrap();
    let out = sandbox
        .prompt("turn five", Some(&session))
        .expect("turn without ctxlog");
    assert_eq!(out["is_error"], false, "{out}");
    hooked.uninstall("claude-code", &[], &config, &before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn codex_keeps_the_store_current_through_its_hooks() {
    let _serial = serial();
    use ctxlog_differential::codex;
    let Some(js) = codex::install().map_or_else(|e| skipped("Codex", e), Some) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("ctxlog-hooks-codex-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let script = Script {
        agent: VecDeque::from(vec![
            Reply::ToolCalls {
                calls: vec![(
                    "call_migrate".into(),
                    "exec_command".into(),
                    json!({"cmd": "echo 'MIGRATION-7f3a rows affected: 4242'"}),
                )],
                usage: Usage::new(1_000, 10),
            },
            // The turn ends at the configured limit: Codex compacts before
            // the next prompt.
            text("The migration ran.", Usage::new(79_000, 1_000)),
            text("Turn two done.", Usage::new(3_000, 10)),
            text("Turn three done.", Usage::new(3_500, 10)),
            text("Turn four done.", Usage::new(4_000, 10)),
            text("Turn five done.", Usage::new(4_500, 10)),
        ]),
        summary: VecDeque::from(vec![
            text("SUMMARY 1: a migration was run.", Usage::new(500, 50)),
            text("SUMMARY 2: a migration was run.", Usage::new(600, 50)),
        ]),
    };
    let server = ModelServer::start_api(Api::OpenAiResponses, script).expect("model server");
    let model = codex::ModelConfig {
        context: 100_000,
        auto_compact_limit: Some(80_000),
    };
    let sandbox = codex::Sandbox::new(js, dir.clone(), &server.base_url(), model).expect("sandbox");
    let home = dir.join("home");
    let codex_home = home.join(".codex");
    let hooked = Hooked::new(&dir, &home);
    let config = [
        codex_home.join("hooks.json"),
        codex_home.join("config.toml"),
    ];
    let before = hooks::snapshot(&config);
    hooked.install(this_ctxlog(), "codex", &[("CODEX_HOME", &codex_home)]);
    let status = hooked.json(&["hooks", "status", "--agent", "codex"]);
    assert!(
        status["agents"][0]["scopes"][0]["problems"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{status}"
    );
    let thread = sandbox.exec("Run the migration.", None).expect("turn 1");
    let rollout = sandbox.rollout(&thread).expect("rollout");
    hooked.check_current(&rollout, &thread, "turn 1");
    sandbox.exec("turn two", Some(&thread)).expect("turn 2");
    hooked.check_current(&rollout, &thread, "turn 2");
    sandbox.compact(&thread).expect("manual compaction");
    hooked.check_current(&rollout, &thread, "the manual compaction");
    sandbox.exec("turn three", Some(&thread)).expect("turn 3");
    hooked.check_current(&rollout, &thread, "turn 3");
    hooked.check_final(&rollout);
    let stored = hooked.stored(&thread);
    assert_eq!(stored["compactions"], 2, "{stored}");
    let id = stored["session"].as_str().unwrap().to_owned();
    assert_eq!(
        hooked.check_captured_before_compactions(&id, "PreCompact"),
        2
    );
    hooked.check_no_failures();
    hooked.report_latency("codex");
    let log = || std::fs::read_to_string(dir.join("exec.log")).unwrap_or_default();

    let undo = spoil_store(&hooked.db);
    sandbox
        .exec("turn four", Some(&thread))
        .unwrap_or_else(|e| panic!("turn with the store spoiled: {e}\n{}", log()));
    hooked.settle();
    undo();
    let copy = ctxlog_copy(&dir);
    hooked.install(&copy, "codex", &[("CODEX_HOME", &codex_home)]);
    std::fs::remove_file(&copy).unwrap();
    sandbox
        .exec("turn five", Some(&thread))
        .unwrap_or_else(|e| panic!("turn without ctxlog: {e}\n{}", log()));
    let answers = server
        .requests()
        .iter()
        .filter(|r| r.body["input"].to_string().contains("turn five"))
        .count();
    assert!(answers > 0, "Codex went on to the model without ctxlog");
    hooked.uninstall("codex", &[("CODEX_HOME", &codex_home)], &config, &before);
    let _ = std::fs::remove_dir_all(&dir);
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn opencode_keeps_the_store_current_through_its_plugin() {
    let _serial = serial();
    use ctxlog_differential::opencode;
    let Some(bin) = opencode::install().map_or_else(|e| skipped("OpenCode", e), Some) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("ctxlog-hooks-opencode-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut script = Script::default();
    script.agent.extend([
        Reply::bash(
            "call_0001",
            "echo 'MIGRATION-7f3a rows affected: 4242'",
            20_000,
            20,
        ),
        // 95,997 + 3 = the usable 96,000: OpenCode compacts, then goes on.
        Reply::text("One.", 95_997, 3),
        Reply::text("Resumed once.", 5_000, 3),
        Reply::text("After the manual compaction.", 2_000, 3),
        Reply::text("Four.", 2_500, 3),
        Reply::text("Five.", 3_000, 3),
    ]);
    script.summary.extend([
        Reply::text("## Objective\n- First summary.", 9_000, 20),
        Reply::text("## Objective\n- Manual summary.", 3_000, 20),
    ]);
    let server = ModelServer::start(script).expect("model server");
    let model = opencode::ModelConfig {
        context: 100_000,
        output: 4_000,
        prune: true,
    };
    let sandbox =
        opencode::Sandbox::new(bin, dir.clone(), &server.base_url(), model).expect("sandbox");
    let home = dir.join("home");
    let hooked = Hooked::new(&dir, &home).with_data(&dir.join("data"));
    let config = dir.join("config");
    let plugin = [config.join("opencode/plugins/ctxlog.js")];
    let before = hooks::snapshot(&plugin);
    hooked.install(this_ctxlog(), "opencode", &[("XDG_CONFIG_HOME", &config)]);
    let database = dir.join("data/opencode/opencode.db");
    let oc = opencode::Server::start(&sandbox).expect("opencode serve");
    let id = oc.create_session().expect("session");
    let turn = |n: u32, what: &dyn Fn() -> Result<(), DriveError>, idle: bool| {
        let since = now_ms();
        what().unwrap_or_else(|e| panic!("turn {n}: {e}"));
        if idle {
            hooked.wait_for("session.idle", since);
        }
    };
    turn(1, &|| oc.prompt(&id, "first turn"), true);
    hooked.compare_current(&database, &id, "turn 1 (with its automatic compaction)");
    turn(2, &|| oc.summarize(&id), false);
    hooked.wait_for("session.compacted", now_ms() - 60_000);
    turn(3, &|| oc.prompt(&id, "after compacting"), true);
    hooked.compare_current(&database, &id, "turn 3");
    hooked.check_final(&database);
    let stored = hooked.stored(&id);
    assert_eq!(stored["compactions"], 2, "{stored}");
    let session = stored["session"].as_str().unwrap().to_owned();
    assert_eq!(
        hooked.check_captured_before_compactions(&session, "experimental.session.compacting"),
        2
    );
    hooked.check_no_failures();
    hooked.report_latency("opencode");

    let undo = spoil_store(&hooked.db);
    turn(4, &|| oc.prompt(&id, "turn four"), true);
    undo();
    let copy = ctxlog_copy(&dir);
    hooked.install(&copy, "opencode", &[("XDG_CONFIG_HOME", &config)]);
    drop(oc);
    std::fs::remove_file(&copy).unwrap();
    let oc = opencode::Server::start(&sandbox).expect("opencode serve without ctxlog");
    oc.prompt(&id, "turn five").expect("turn without ctxlog");
    drop(oc);
    let fives = server
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("turn five"))
        .count();
    assert!(fives > 0, "OpenCode went on to the model without ctxlog");
    hooked.uninstall(
        "opencode",
        &[("XDG_CONFIG_HOME", &config)],
        &plugin,
        &before,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pi_keeps_the_store_current_through_its_extension() {
    use ctxlog_differential::pi;
    let _serial = serial();
    let Some(cli) = pi::install().map_or_else(|e| skipped("pi", e), Some) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("ctxlog-hooks-pi-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let script = Script {
        agent: VecDeque::from(vec![
            Reply::ToolCalls {
                calls: vec![(
                    "toolu_01".into(),
                    "bash".into(),
                    json!({"command": "echo 'MIGRATION-7f3a rows affected: 4242'"}),
                )],
                usage: Usage::new(10_000, 50),
            },
            // 183,617, over pi's 183,616 for the model: pi compacts after
            // the run's final answer.
            text("The migration ran.", Usage::new(183_616, 1)),
            text("Turn two done.", Usage::new(5_000, 100)),
            text("Turn three done.", Usage::new(5_500, 100)),
            text("Turn four done.", Usage::new(6_000, 100)),
            text("Turn five done.", Usage::new(6_500, 100)),
            text("Turn six done.", Usage::new(7_000, 100)),
        ]),
        summary: VecDeque::from(vec![
            text("## Goal\nscripted summary 1", Usage::new(3_000, 400)),
            text("## Goal\nscripted summary 2", Usage::new(3_000, 400)),
        ]),
    };
    let server = ModelServer::start_api(Api::AnthropicMessages, script).expect("model server");
    let model = pi::ModelConfig {
        id: "claude-sonnet-4-5-20250929".into(),
        context: 200_000,
        output: 64_000,
        reserve_tokens: None,
        // Little kept: each compaction replaces the turns before it.
        keep_recent_tokens: Some(10),
    };
    let sandbox = pi::Sandbox::new(cli, dir.clone(), &server.origin(), model).expect("sandbox");
    let home = dir.join("home");
    let hooked = Hooked::new(&dir, &home).with_data(&dir.join("data"));
    let extension = [home.join(".pi/agent/extensions/ctxlog.ts")];
    let before = hooks::snapshot(&extension);
    hooked.install(this_ctxlog(), "pi", &[]);
    let mut rpc = pi::Rpc::start(&sandbox).expect("pi --mode rpc");
    rpc.prompt("Run the migration.").expect("turn 1");
    let file = rpc.session_file().expect("pi's session file");
    let id = pi_session_id(&file);
    hooked.check_current(&file, &id, "turn 1 (with its automatic compaction)");
    for n in [2, 3] {
        rpc.prompt(&format!("turn {n}")).expect("a turn");
        hooked.check_current(&file, &id, &format!("turn {n}"));
    }
    rpc.compact("keep names").expect("manual compaction");
    hooked.check_current(&file, &id, "the manual compaction");
    rpc.prompt("turn four").expect("turn 4");
    hooked.check_current(&file, &id, "turn 4");
    hooked.check_final(&file);
    let stored = hooked.stored(&id);
    assert_eq!(stored["compactions"], 2, "{stored}");
    assert_eq!(stored["live"], true, "pi still runs the session: {stored}");
    let session = stored["session"].as_str().unwrap().to_owned();
    assert_eq!(
        hooked.check_captured_before_compactions(&session, "session_before_compact"),
        2
    );
    hooked.check_no_failures();
    hooked.report_latency("pi");

    let undo = spoil_store(&hooked.db);
    rpc.prompt("turn five")
        .expect("turn with the store spoiled");
    hooked.settle();
    undo();
    let copy = ctxlog_copy(&dir);
    hooked.install(&copy, "pi", &[]);
    std::fs::remove_file(&copy).unwrap();
    drop(rpc);
    hooked.settle();
    let mut rpc = pi::Rpc::start(&sandbox).expect("pi --mode rpc without ctxlog");
    rpc.prompt("turn six").expect("turn without ctxlog");
    drop(rpc);
    let sixes = server
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("turn six"))
        .count();
    assert!(sixes > 0, "pi went on to the model without ctxlog");
    let stored = hooked.stored(&id);
    assert_eq!(stored["live"], false, "pi's session ended: {stored}");
    hooked.uninstall("pi", &[], &extension, &before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// pi's id of the session in `file` (its header's `id`).
fn pi_session_id(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    header["id"].as_str().unwrap().to_owned()
}

/// One agent at a time: each runs a Node or Bun process on 2 cores.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}
