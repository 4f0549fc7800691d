//! `mcp install` and `uninstall` on each agent's configuration: written as
//! the agent writes it, again without a change, everything else kept,
//! undone exactly, and a file that does not read left alone.

use ctxlog_setup::mcp::{install, uninstall, Agent, Scope, ServerCommand};
use ctxlog_setup::Homes;
use ctxlog_testkit::TempDir;

fn homes(dir: &TempDir) -> Homes {
    let project = dir.join("proj");
    std::fs::create_dir_all(&project).unwrap();
    Homes {
        home: dir.join("home"),
        project,
        ..Homes::default()
    }
}

fn command() -> ServerCommand {
    ServerCommand {
        program: "/opt/ctxlog/bin/ctxlog".into(),
        args: vec!["mcp".into()],
    }
}

#[test]
fn each_agent_gets_its_own_entry_once_and_keeps_the_rest() {
    let dir = TempDir::new("mcp-install");
    let homes = homes(&dir);
    let cases = [
        (
            Agent::ClaudeCode,
            Scope::Project,
            r#"{"mcpServers":{"other":{"type":"stdio","command":"x"}},"keep":1}"#,
        ),
        (
            Agent::ClaudeCode,
            Scope::User,
            r#"{"projects":{},"numStartups":3}"#,
        ),
        (
            Agent::Codex,
            Scope::User,
            "# mine\nmodel = \"gpt-5\"\n\n[mcp_servers.other]\ncommand = \"x\"\n",
        ),
        (
            Agent::OpenCode,
            Scope::Project,
            r#"{"$schema":"https://opencode.ai/config.json","model":"m"}"#,
        ),
    ];
    for (agent, scope, before) in cases {
        let file = homes.mcp_file(agent, scope);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, before).unwrap();
        let first = install(agent, scope, &homes, &command()).unwrap();
        assert!(first.changed, "{agent:?}");
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(written.contains("/opt/ctxlog/bin/ctxlog"), "{written}");
        let again = install(agent, scope, &homes, &command()).unwrap();
        assert!(!again.changed, "{agent:?}: {written}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), written);
        match agent {
            Agent::Codex => {
                assert!(
                    written.starts_with("# mine\nmodel = \"gpt-5\""),
                    "{written}"
                );
                assert!(written.contains("[mcp_servers.other]"), "{written}");
                let doc: toml_edit::DocumentMut = written.parse().unwrap();
                assert_eq!(
                    doc["mcp_servers"]["ctxlog"]["args"]
                        .as_array()
                        .unwrap()
                        .len(),
                    1
                );
            }
            _ => {
                let doc: serde_json::Value = serde_json::from_str(&written).unwrap();
                let old: serde_json::Value = serde_json::from_str(before).unwrap();
                for (k, v) in old.as_object().unwrap() {
                    if k != "mcpServers" {
                        assert_eq!(&doc[k], v, "{k}");
                    }
                }
                let entry = if agent == Agent::ClaudeCode {
                    &doc["mcpServers"]["ctxlog"]
                } else {
                    &doc["mcp"]["ctxlog"]
                };
                assert!(entry.is_object(), "{written}");
            }
        }
        let removed = uninstall(agent, scope, &homes).unwrap();
        assert!(removed.changed);
        let after = std::fs::read_to_string(&file).unwrap();
        assert!(!after.contains("/opt/ctxlog"), "{after}");
        assert!(!uninstall(agent, scope, &homes).unwrap().changed);
    }
}

#[test]
fn a_configuration_that_does_not_read_is_left_alone() {
    let dir = TempDir::new("mcp-install-bad");
    let homes = homes(&dir);
    let file = homes.mcp_file(Agent::OpenCode, Scope::Project);
    let jsonc = "{\n  // comments are OpenCode's JSONC\n  \"model\": \"m\"\n}\n";
    std::fs::write(&file, jsonc).unwrap();
    let e = install(Agent::OpenCode, Scope::Project, &homes, &command()).unwrap_err();
    assert!(e.to_string().contains("nothing was written"), "{e}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), jsonc);
    // A new file is its owner's only.
    let fresh = install(Agent::ClaudeCode, Scope::Project, &homes, &command()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&fresh.file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}
