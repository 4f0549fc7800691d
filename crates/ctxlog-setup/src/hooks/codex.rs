//! Codex: command hooks in `hooks.json` (the project's `.codex/hooks.json`,
//! or `$CODEX_HOME/hooks.json`), one group per event after the user's, and
//! each marked trusted in the user's `$CODEX_HOME/config.toml`
//! (`[hooks.state."<file>:<event>:<group>:<handler>"] trusted_hash`), as
//! Codex's own trust prompt would: `codex exec` skips a hook that is not.
//! The hash is Codex 0.169's: SHA-256 of the handler normalized (its
//! event, matcher, type, command, timeout, async and status message) as
//! JSON with sorted keys. The key names the handler's place, so removing
//! ctxlog's group moves the trust of the user's groups after it along.

use super::json_hooks::{self, Placed};
use super::record::{undo, write_installed};
use super::{Agent, HookCommand, Status};
use crate::files::{io, read_optional, Homes, InstallError, Written};
use crate::mcp::Scope;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml_edit::{value, DocumentMut, Item, Table};

/// The events ctxlog's hook runs on, with their timeouts in seconds
/// (Codex clamps `SessionEnd`'s to 3).
pub const EVENTS: [(&str, u64); 6] = [
    ("SessionStart", 10),
    ("UserPromptSubmit", 10),
    ("Stop", 10),
    ("PreCompact", 10),
    ("PostCompact", 10),
    ("SessionEnd", 3),
];

const WHAT: &str = "Codex's hooks.json";
const CONFIG: &str = "Codex's config.toml";

/// Events whose matcher Codex ignores (and leaves out of the hash).
const NO_MATCHER: [&str; 5] = [
    "Stop",
    "UserPromptSubmit",
    "Interrupt",
    "PreModelRequest",
    "PostModelRequest",
];
/// Events whose `additionalContextLimit` Codex ignores.
const NO_CONTEXT_LIMIT: [&str; 9] = [
    "PreModelRequest",
    "PostModelRequest",
    "PermissionRequest",
    "PreCompact",
    "PostCompact",
    "SessionEnd",
    "SubagentStop",
    "Stop",
    "Interrupt",
];
/// Events whose timeout defaults to 1 s and is clamped to 3.
const SHORT: [&str; 2] = ["SessionEnd", "Interrupt"];

/// The hooks file of `scope`.
pub fn hooks_file(scope: Scope, homes: &Homes) -> PathBuf {
    match scope {
        Scope::Project => homes.project.join(".codex/hooks.json"),
        Scope::User => homes.codex_dir().join("hooks.json"),
    }
}

/// The configuration that says which hooks are trusted: the user's.
pub fn config_file(homes: &Homes) -> PathBuf {
    homes.codex_dir().join("config.toml")
}

/// `PreCompact` → `pre_compact`.
fn snake(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Codex's trust hash of one handler (see the module doc).
pub fn trust_hash(event: &str, matcher: Option<&Value>, entry: &Map<String, Value>) -> String {
    let short = SHORT.contains(&event);
    let mut timeout = entry
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(if short { 1 } else { 600 })
        .max(1);
    if short {
        timeout = timeout.min(3);
    }
    let mut normalized = json!({
        "type": "command",
        "command": entry.get("command").cloned().unwrap_or(Value::Null),
        "timeout": timeout,
        "async": entry.get("async").and_then(Value::as_bool).unwrap_or(false),
    });
    if let Some(m) = entry.get("statusMessage").filter(|m| !m.is_null()) {
        normalized["statusMessage"] = m.clone();
    }
    if let Some(l) = entry.get("additionalContextLimit").filter(|l| !l.is_null()) {
        if !NO_CONTEXT_LIMIT.contains(&event) {
            normalized["additionalContextLimit"] = l.clone();
        }
    }
    let mut hashed = json!({ "event_name": snake(event), "hooks": [normalized] });
    if let Some(m) = matcher.filter(|m| !m.is_null()) {
        if !NO_MATCHER.contains(&event) {
            hashed["matcher"] = m.clone();
        }
    }
    // serde_json's maps are sorted: keys in order, compact, UTF-8 as is.
    let text = serde_json::to_string(&hashed).unwrap_or_default();
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The trust key of a handler at `p` in `file` (the absolute path).
fn trust_key(file: &Path, p: &Placed) -> String {
    format!(
        "{}:{}:{}:{}",
        file.display(),
        snake(&p.event),
        p.group,
        p.handler
    )
}

/// The trust entries ctxlog's handlers in `doc` need: key → hash.
fn trust_of(file: &Path, doc: &Value) -> BTreeMap<String, String> {
    json_hooks::ours(doc, Agent::Codex)
        .iter()
        .map(|p| {
            (
                trust_key(file, p),
                trust_hash(&p.event, p.matcher.as_ref(), &p.entry),
            )
        })
        .collect()
}

/// `file` as Codex names it in a trust key: its absolute, resolved path
/// (its directory's, when the file is not there yet).
fn resolved(file: &Path) -> PathBuf {
    if let Ok(f) = std::fs::canonicalize(file) {
        return f;
    }
    match (
        file.parent().and_then(|d| std::fs::canonicalize(d).ok()),
        file.file_name(),
    ) {
        (Some(d), Some(n)) => d.join(n),
        _ => file.to_owned(),
    }
}

fn parse_config(file: &Path, text: &str) -> Result<DocumentMut, InstallError> {
    text.parse()
        .map_err(|e: toml_edit::TomlError| InstallError::Unreadable {
            file: file.to_owned(),
            what: CONFIG,
            why: e.to_string(),
        })
}

/// The `hooks.state` table of `doc`, made when `make`.
fn state_table(doc: &mut DocumentMut, make: bool) -> Option<&mut Table> {
    let implicit = || {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    };
    let hooks = if make {
        doc.entry("hooks").or_insert_with(implicit)
    } else {
        doc.get_mut("hooks")?
    };
    let hooks = hooks.as_table_mut()?;
    let state = if make {
        hooks.entry("state").or_insert_with(implicit)
    } else {
        hooks.get_mut("state")?
    };
    state.as_table_mut()
}

/// See [`super::install`].
pub fn install(
    scope: Scope,
    homes: &Homes,
    command: &HookCommand,
    records: &Path,
) -> Result<Vec<Written>, InstallError> {
    let file = hooks_file(scope, homes);
    let before = read_optional(&file).map_err(io(&file))?;
    let key_file = resolved(&file);
    let old_trust = trust_of(
        &key_file,
        &json_hooks::parse(&file, before.as_deref(), WHAT)?,
    );
    let (doc, after) = json_hooks::with_ours(
        (&file, WHAT),
        before.as_deref(),
        Agent::Codex,
        &EVENTS,
        &command.shell(Agent::Codex),
    )?;
    let new_trust = trust_of(&key_file, &doc);
    let config = config_file(homes);
    let config_before = read_optional(&config).map_err(io(&config))?;
    let mut toml = parse_config(&config, config_before.as_deref().unwrap_or(""))?;
    let state = state_table(&mut toml, true).ok_or_else(|| InstallError::Unreadable {
        file: config.clone(),
        what: CONFIG,
        why: "its hooks or hooks.state is not a table".into(),
    })?;
    for key in old_trust.keys().filter(|k| !new_trust.contains_key(*k)) {
        state.remove(key);
    }
    for (key, hash) in &new_trust {
        let entry = state
            .entry(key)
            .or_insert_with(|| Item::Table(Table::new()));
        let Some(entry) = entry.as_table_mut() else {
            continue;
        };
        if entry.get("trusted_hash").and_then(Item::as_str) != Some(hash.as_str()) {
            entry.insert("trusted_hash", value(hash.clone()));
        }
    }
    let config_after = toml.to_string();
    let hooks_written = write_installed(records, &file, before.as_deref(), &after)?;
    let config_written =
        write_installed(records, &config, config_before.as_deref(), &config_after)?;
    Ok(vec![hooks_written, config_written])
}

/// See [`super::uninstall`].
pub fn uninstall(
    scope: Scope,
    homes: &Homes,
    records: &Path,
) -> Result<Vec<Written>, InstallError> {
    let file = hooks_file(scope, homes);
    let key_file = resolved(&file);
    let current = read_optional(&file).map_err(io(&file))?;
    let doc = json_hooks::parse(&file, current.as_deref(), WHAT)?;
    let ours = trust_of(&key_file, &doc);
    let mut removed_groups = doc.clone();
    let removed = json_hooks::remove(&mut removed_groups, Agent::Codex);
    // The trust first: the directory an install made for both files goes
    // with the last.
    let config = config_file(homes);
    let config_written = undo(records, &config, |text| {
        let mut toml = parse_config(&config, text)?;
        if let Some(state) = state_table(&mut toml, false) {
            for key in ours.keys() {
                state.remove(key);
            }
            shift_trust(state, &key_file, &removed);
        }
        Ok(Some(toml.to_string()))
    })?;
    let hooks_written = undo(records, &file, |text| {
        json_hooks::without_ours(&file, WHAT, text, Agent::Codex)
    })?;
    Ok(vec![hooks_written, config_written])
}

/// Moves the trust of the groups after each removed one (`removed`: event
/// and group index) one place up, as the groups themselves moved.
fn shift_trust(state: &mut Table, file: &Path, removed: &[(String, usize)]) {
    let prefix = format!("{}:", file.display());
    let keys: Vec<String> = state
        .iter()
        .map(|(k, _)| k.to_owned())
        .filter(|k| k.starts_with(&prefix))
        .collect();
    let mut moves = Vec::new();
    for key in keys {
        let rest = &key[prefix.len()..];
        let parts: Vec<&str> = rest.split(':').collect();
        let [event, group, handler] = parts[..] else {
            continue;
        };
        let Ok(group) = group.parse::<usize>() else {
            continue;
        };
        let before = removed
            .iter()
            .filter(|(e, g)| snake(e) == event && *g < group)
            .count();
        if before > 0 {
            moves.push((
                key.clone(),
                format!("{prefix}{event}:{}:{handler}", group - before),
            ));
        }
    }
    for (from, to) in moves {
        if let Some(item) = state.remove(&from) {
            state.insert(&to, item);
        }
    }
}

/// See [`super::status`].
pub fn status(scope: Scope, homes: &Homes) -> Result<Status, InstallError> {
    let file = hooks_file(scope, homes);
    let text = read_optional(&file).map_err(io(&file))?;
    let doc = json_hooks::parse(&file, text.as_deref(), WHAT)?;
    let found = json_hooks::ours(&doc, Agent::Codex);
    let mut problems = Vec::new();
    let config = config_file(homes);
    let config_text = read_optional(&config)
        .map_err(io(&config))?
        .unwrap_or_default();
    let mut toml = parse_config(&config, &config_text)?;
    let key_file = resolved(&file);
    if !found.is_empty() {
        let state = state_table(&mut toml, false);
        for (key, hash) in trust_of(&key_file, &doc) {
            let trusted = state
                .as_ref()
                .and_then(|s| s.get(&key))
                .and_then(|e| e.get("trusted_hash"))
                .and_then(Item::as_str)
                == Some(hash.as_str());
            if !trusted {
                problems.push(format!(
                    "{key} is not trusted in {}: Codex skips it (install again)",
                    config.display()
                ));
            }
        }
        if scope == Scope::Project && !project_trusted(&toml, &homes.project) {
            problems.push(format!(
                "Codex reads {} only in a trusted project: trust {} in Codex first",
                file.display(),
                homes.project.display()
            ));
        }
    }
    Ok(Status {
        files: vec![file, config],
        commands: super::claude_code::commands(&found),
        problems,
    })
}

/// Whether `config` trusts `project` (`[projects."<dir>"] trust_level =
/// "trusted"`).
fn project_trusted(config: &DocumentMut, project: &Path) -> bool {
    config
        .get("projects")
        .and_then(|p| p.get(project.display().to_string()))
        .and_then(|p| p.get("trust_level"))
        .and_then(Item::as_str)
        == Some("trusted")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hashes Codex 0.169's app-server (`hooks/list`) reported.
    #[test]
    fn the_hash_is_codexs() {
        let start = json!({"type": "command", "command": "ctxlog hook codex", "timeout": 1});
        assert_eq!(
            trust_hash(
                "SessionStart",
                Some(&json!("startup|resume")),
                start.as_object().unwrap()
            ),
            "sha256:a87c5aca65c4f5c92d18f29e5ec07cb551f56a40ef5178963b7a69df17c5633d"
        );
        let pre = json!({"type": "command", "command": "echo pre", "additionalContextLimit": 100});
        assert_eq!(
            trust_hash(
                "PreToolUse",
                Some(&json!("^Bash$")),
                pre.as_object().unwrap()
            ),
            "sha256:9886c1c46120db8091aafe711be469bbefa4f1117a3f73ed834a70e24de9d61d"
        );
        assert_eq!(snake("UserPromptSubmit"), "user_prompt_submit");
    }
}
