//! `hooks install` and `uninstall` on each agent's configuration: the
//! user's own hooks kept, installing again changes nothing, uninstalling
//! gives back the very bytes there were (or no file, and no directory it
//! made), and a file the user changed since loses ctxlog's entries only.

use ctxlog_setup::hooks::{self, codex, Agent, HookCommand};
use ctxlog_setup::mcp::Scope;
use ctxlog_setup::Homes;
use ctxlog_testkit::TempDir;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn homes(dir: &TempDir) -> Homes {
    let project = dir.join("proj");
    std::fs::create_dir_all(&project).unwrap();
    Homes {
        home: dir.join("home"),
        project,
        ..Homes::default()
    }
}

fn command(program: &str) -> HookCommand {
    HookCommand {
        program: program.into(),
        options: vec!["--db".into(), "/data/my store".into()],
    }
}

/// What each file the install touches holds (`None`: no file).
fn files(paths: &[PathBuf]) -> Vec<Option<Vec<u8>>> {
    paths.iter().map(|p| std::fs::read(p).ok()).collect()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The user's own configuration, written by hand (odd spacing, keys in
/// their order), before any install.
fn users_own(agent: Agent, homes: &Homes) -> Vec<PathBuf> {
    match agent {
        Agent::ClaudeCode => {
            let f = homes.claude_dir().join("settings.json");
            write(
                &f,
                "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": [ { \"hooks\": [ { \"type\": \"command\", \"command\": \"notify-send done\" } ] } ]\n  }\n}\n",
            );
            vec![f]
        }
        Agent::Codex => {
            let f = homes.codex_dir().join("hooks.json");
            write(
                &f,
                "{\"hooks\":{\"Stop\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"echo mine\",\"timeout\":5}]}]}}",
            );
            let c = homes.codex_dir().join("config.toml");
            write(
                &c,
                "model = \"gpt-5\"  # mine\n\n[features]\nhooks = true\n",
            );
            vec![f, c]
        }
        Agent::OpenCode | Agent::Pi => vec![],
    }
}

#[test]
fn install_keeps_the_users_hooks_and_uninstall_gives_back_the_bytes() {
    for agent in Agent::ALL {
        let dir = TempDir::new("hooks-install");
        let homes = homes(&dir);
        let records = dir.join("records");
        let mut touched = users_own(agent, &homes);
        let before = files(&touched);
        let written = hooks::install(
            agent,
            Scope::User,
            &homes,
            &command("/opt/ctxlog"),
            &records,
        )
        .unwrap();
        assert!(written.iter().any(|w| w.changed), "{agent:?}");
        for w in &written {
            if !touched.contains(&w.file) {
                touched.push(w.file.clone());
            }
        }
        let installed = files(&touched);
        let status = hooks::status(agent, Scope::User, &homes).unwrap();
        assert!(status.installed(), "{agent:?}: {status:?}");
        assert_eq!(
            status.commands.len(),
            1,
            "{agent:?}: one command for every event: {status:?}"
        );
        // The user's own hook is still there.
        if agent == Agent::ClaudeCode || agent == Agent::Codex {
            let text = std::fs::read_to_string(&touched[0]).unwrap();
            assert!(
                text.contains("notify-send done") || text.contains("echo mine"),
                "{text}"
            );
        }
        // Again: nothing changes.
        let again = hooks::install(
            agent,
            Scope::User,
            &homes,
            &command("/opt/ctxlog"),
            &records,
        )
        .unwrap();
        assert!(again.iter().all(|w| !w.changed), "{agent:?}: {again:?}");
        assert_eq!(files(&touched), installed);
        hooks::uninstall(agent, Scope::User, &homes, &records).unwrap();
        let after = files(&touched);
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "{agent:?}: the bytes from before"
        );
        assert!(
            after[before.len()..].iter().all(Option::is_none),
            "{agent:?}: the files it made are gone"
        );
        // A plugin's directories it made are gone too; the home stays.
        if agent == Agent::OpenCode {
            assert!(!homes.config_dir().join("opencode").exists());
        }
        if agent == Agent::Pi {
            assert!(!homes.pi_dir().exists());
        }
        assert!(!hooks::status(agent, Scope::User, &homes)
            .unwrap()
            .installed());
    }
}

#[test]
fn an_install_over_an_older_one_replaces_it_where_it_stands() {
    let dir = TempDir::new("hooks-moved");
    let homes = homes(&dir);
    let records = dir.join("records");
    users_own(Agent::ClaudeCode, &homes);
    hooks::install(
        Agent::ClaudeCode,
        Scope::User,
        &homes,
        &command("/old/ctxlog"),
        &records,
    )
    .unwrap();
    hooks::install(
        Agent::ClaudeCode,
        Scope::User,
        &homes,
        &command("/new/ctxlog"),
        &records,
    )
    .unwrap();
    let status = hooks::status(Agent::ClaudeCode, Scope::User, &homes).unwrap();
    assert_eq!(status.commands.len(), 1, "{status:?}");
    assert!(status.commands[0].starts_with("/new/ctxlog"), "{status:?}");
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(homes.claude_dir().join("settings.json")).unwrap(),
    )
    .unwrap();
    let stop = doc["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop.len(), 2, "the user's group, then ctxlog's: {doc}");
    assert_eq!(stop[0]["hooks"][0]["command"], "notify-send done");
}

#[test]
fn a_file_changed_since_loses_ctxlogs_entries_only() {
    let dir = TempDir::new("hooks-changed");
    let homes = homes(&dir);
    let records = dir.join("records");
    let file = homes.project.join(".claude/settings.json");
    hooks::install(
        Agent::ClaudeCode,
        Scope::Project,
        &homes,
        &command("/opt/ctxlog"),
        &records,
    )
    .unwrap();
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    doc["permissions"] = json!({"allow": ["Bash(ls)"]});
    doc["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .push(json!({"hooks": [{"type": "command", "command": "echo later"}]}));
    std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    hooks::uninstall(Agent::ClaudeCode, Scope::Project, &homes, &records).unwrap();
    let left: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        left,
        json!({
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo later"}]}]}
        })
    );
}

#[test]
fn codex_trusts_each_handler_where_it_stands_and_moves_the_users_trust_along() {
    let dir = TempDir::new("hooks-codex");
    let homes = homes(&dir);
    let records = dir.join("records");
    users_own(Agent::Codex, &homes);
    hooks::install(
        Agent::Codex,
        Scope::User,
        &homes,
        &command("/opt/ctxlog"),
        &records,
    )
    .unwrap();
    let file = std::fs::canonicalize(homes.codex_dir().join("hooks.json")).unwrap();
    let config = homes.codex_dir().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    // ctxlog's Stop group comes after the user's: its trust is keyed at 1.
    let key = format!("{}:stop:1:0", file.display());
    assert!(text.contains(&key), "{text}");
    assert!(text.contains("model = \"gpt-5\"  # mine"), "{text}");
    let problems = hooks::status(Agent::Codex, Scope::User, &homes)
        .unwrap()
        .problems;
    assert!(
        problems.iter().all(|p| !p.contains("not trusted")),
        "{problems:?}"
    );
    assert!(problems
        .iter()
        .any(|p| p.contains("/opt/ctxlog is not there")));
    // The user trusts their hook and adds one after ctxlog's, then
    // uninstalls: their later group moves up, and its trust with it.
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let later = json!({"type": "command", "command": "echo later"});
    doc["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .push(json!({"hooks": [later.clone()]}));
    std::fs::write(&file, serde_json::to_string(&doc).unwrap()).unwrap();
    let hash = codex::trust_hash("Stop", None, later.as_object().unwrap());
    let trusted = format!(
        "{text}\n[hooks.state.\"{}:stop:2:0\"]\ntrusted_hash = \"{hash}\"\n",
        file.display()
    );
    std::fs::write(&config, trusted).unwrap();
    hooks::uninstall(Agent::Codex, Scope::User, &homes, &records).unwrap();
    let left = std::fs::read_to_string(&config).unwrap();
    assert!(
        left.contains(&format!(
            "\"{}:stop:1:0\"]\ntrusted_hash = \"{hash}\"",
            file.display()
        )),
        "{left}"
    );
    assert!(!left.contains(":session_start:"), "{left}");
    assert!(left.contains("model = \"gpt-5\"  # mine"), "{left}");
}

#[test]
fn a_plugin_file_ctxlog_did_not_write_is_left_alone() {
    let dir = TempDir::new("hooks-foreign");
    let homes = homes(&dir);
    let file = homes.project.join(".opencode/plugins/ctxlog.js");
    write(&file, "export const Mine = async () => ({});\n");
    let refused = hooks::install(
        Agent::OpenCode,
        Scope::Project,
        &homes,
        &command("/opt/ctxlog"),
        &dir.join("records"),
    );
    assert!(refused.is_err());
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "export const Mine = async () => ({});\n"
    );
}

#[test]
fn in_and_out_of_a_new_home_leaves_nothing_behind() {
    for agent in Agent::ALL {
        let dir = TempDir::new("hooks-new-home");
        let homes = homes(&dir);
        std::fs::create_dir_all(&homes.home).unwrap();
        let records = dir.join("records");
        hooks::install(
            agent,
            Scope::User,
            &homes,
            &command("/opt/ctxlog"),
            &records,
        )
        .unwrap();
        assert!(std::fs::read_dir(&homes.home).unwrap().next().is_some());
        hooks::uninstall(agent, Scope::User, &homes, &records).unwrap();
        let left: Vec<_> = std::fs::read_dir(&homes.home)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(left.is_empty(), "{agent:?} left {left:?}");
    }
}
