//! The hooks shape Claude Code's `settings.json` and Codex's `hooks.json`
//! share: `{"hooks": {"<Event>": [{"matcher": …, "hooks": [{"type":
//! "command", "command": …, "timeout": …}]}]}}`. ctxlog adds one group per
//! event after the user's, holding its one handler.

use super::{is_ours, Agent};
use crate::files::InstallError;
use serde_json::{json, Map, Value};
use std::path::Path;

/// The document in `text` (`None`: no file yet, an empty object), or why
/// it does not read.
pub(crate) fn parse(
    file: &Path,
    text: Option<&str>,
    what: &'static str,
) -> Result<Value, InstallError> {
    let unreadable = |why: String| InstallError::Unreadable {
        file: file.to_owned(),
        what,
        why,
    };
    let doc: Value = match text {
        None => json!({}),
        Some(t) => serde_json::from_str(t).map_err(|e| unreadable(e.to_string()))?,
    };
    if !doc.is_object() {
        return Err(unreadable("it is not an object".into()));
    }
    if doc.get("hooks").is_some_and(|h| !h.is_object()) {
        return Err(unreadable("its \"hooks\" is not an object".into()));
    }
    Ok(doc)
}

/// `doc` as written back: `original` itself when nothing changed in
/// meaning, else pretty JSON.
pub(crate) fn render(doc: &Value, original: Option<&str>) -> String {
    if let Some(t) = original {
        if serde_json::from_str::<Value>(t).ok().as_ref() == Some(doc) {
            return t.to_owned();
        }
    }
    let mut out = serde_json::to_string_pretty(doc).unwrap_or_else(|_| "{}".into());
    out.push('\n');
    out
}

/// The handler ctxlog writes.
fn handler(command: &str, timeout: u64) -> Value {
    json!({ "type": "command", "command": command, "timeout": timeout })
}

/// Whether `h` is a handler ctxlog wrote for `agent`.
pub(crate) fn is_our_handler(h: &Value, agent: Agent) -> bool {
    h.get("type").and_then(Value::as_str) == Some("command")
        && h.get("command")
            .and_then(Value::as_str)
            .is_some_and(|c| is_ours(c, agent))
}

/// `before`, the text of `file` (`what` it is; `None`: no file yet), with
/// ctxlog's group added for each of `events` (name, timeout) running
/// `command`, after the user's (a group of ctxlog's with another command
/// or timeout, an older install's, is replaced where it stands): the
/// document, and the text to write.
pub(crate) fn with_ours(
    (file, what): (&Path, &'static str),
    before: Option<&str>,
    agent: Agent,
    events: &[(&str, u64)],
    command: &str,
) -> Result<(Value, String), InstallError> {
    let mut doc = parse(file, before, what)?;
    add_groups(&mut doc, agent, events, command).map_err(|why| InstallError::Unreadable {
        file: file.to_owned(),
        what,
        why,
    })?;
    let after = render(&doc, before);
    Ok((doc, after))
}

/// Adds ctxlog's groups (see [`with_ours`]), saying why not in words.
fn add_groups(
    doc: &mut Value,
    agent: Agent,
    events: &[(&str, u64)],
    command: &str,
) -> Result<(), String> {
    let Some(root) = doc.as_object_mut() else {
        return Err("it is not an object".into());
    };
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err("its \"hooks\" is not an object".into());
    };
    for &(event, timeout) in events {
        let groups = hooks.entry(event).or_insert_with(|| json!([]));
        let Some(groups) = groups.as_array_mut() else {
            return Err(format!("its hooks.{event} is not a list"));
        };
        let ours = groups.iter().position(|g| only_ours(g, agent));
        let group = json!({ "hooks": [handler(command, timeout)] });
        match ours {
            Some(i) => groups[i] = group,
            None => groups.push(group),
        }
    }
    Ok(())
}

/// `text`, read from `file` (`what` it is), without ctxlog's handlers for
/// `agent` ([`remove`]), as written back.
pub(crate) fn without_ours(
    file: &Path,
    what: &'static str,
    text: &str,
    agent: Agent,
) -> Result<Option<String>, InstallError> {
    let mut doc = parse(file, Some(text), what)?;
    remove(&mut doc, agent);
    Ok(Some(render(&doc, Some(text))))
}

/// Whether group `g` holds ctxlog's handler only.
fn only_ours(g: &Value, agent: Agent) -> bool {
    g.get("hooks")
        .and_then(Value::as_array)
        .is_some_and(|hs| !hs.is_empty() && hs.iter().all(|h| is_our_handler(h, agent)))
}

/// Removes every handler ctxlog wrote for `agent`; a group, an event or
/// `hooks` left empty by that goes too. Returns, per event, the index of
/// each group removed (Codex keys its trust by position).
pub(crate) fn remove(doc: &mut Value, agent: Agent) -> Vec<(String, usize)> {
    let mut removed = Vec::new();
    let Some(root) = doc.as_object_mut() else {
        return removed;
    };
    let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) else {
        return removed;
    };
    let mut emptied = Vec::new();
    for (event, groups) in hooks.iter_mut() {
        let Some(groups) = groups.as_array_mut() else {
            continue;
        };
        let mut index = 0;
        groups.retain_mut(|g| {
            let at = index;
            index += 1;
            let Some(hs) = g.get_mut("hooks").and_then(Value::as_array_mut) else {
                return true;
            };
            let before = hs.len();
            hs.retain(|h| !is_our_handler(h, agent));
            if hs.is_empty() && before > 0 {
                removed.push((event.clone(), at));
                return false;
            }
            true
        });
        if groups.is_empty() {
            emptied.push(event.clone());
        }
    }
    for e in emptied {
        hooks.remove(&e);
    }
    if hooks.is_empty() {
        root.remove("hooks");
    }
    removed
}

/// One of ctxlog's handlers where it stands.
pub(crate) struct Placed {
    /// Its event.
    pub event: String,
    /// Its group's index in the event's list.
    pub group: usize,
    /// Its index in the group.
    pub handler: usize,
    /// The group's matcher.
    pub matcher: Option<Value>,
    /// The handler.
    pub entry: Map<String, Value>,
}

/// ctxlog's handlers for `agent` in `doc`.
pub(crate) fn ours(doc: &Value, agent: Agent) -> Vec<Placed> {
    let mut out = Vec::new();
    let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, groups) in hooks {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                if is_our_handler(handler, agent) {
                    out.push(Placed {
                        event: event.clone(),
                        group: g,
                        handler: h,
                        matcher: group.get("matcher").cloned(),
                        entry: handler.as_object().cloned().unwrap_or_default(),
                    });
                }
            }
        }
    }
    out
}
