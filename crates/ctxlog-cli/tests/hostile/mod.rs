//! The hostile corpus: the checked-in recordings of all four agents with
//! every text, title, name, id, model, version, error and summary made
//! hostile (HTML, `</details>`, unmatched backticks, indented fences,
//! `javascript:` links, entities, terminal escapes). Nothing of it may act
//! on a reader (tests/inject.rs, tests/serve.rs).

#![allow(dead_code)] // not every test uses every item

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a name (tool, call id, model, agent, version, file, error) gets.
pub const HOSTILE_NAME: &str =
    "<img src=x onerror=alert(1)>`</details>*[x](javascript:alert(2))\u{1b}]52;c;aGk=\u{7}";

/// What a text (prompt, answer, reasoning, output, summary, title) gets.
pub const HOSTILE_TEXT: &str = "\n<script>alert(3)</script>\n`unmatched <img src=x onerror=alert(4)>\n    ```\n<iframe src=javascript:alert(5)></iframe>\n```\n</details><details open><summary>x</summary>\n[click](javascript:alert(6)) <javascript:alert(7)> ![i](x.png)\n&lt;b&gt; &#60;i&#62; &amp;\n<!-- c -->\n| a | b |\n|---|---|\n# heading\n- list\n1. one\n    indented code\n===\n\u{1b}[2J\u{1b}]52;c;aGk=\u{7}\u{9b}31m\u{202e}gnp.exe";

/// Keys whose string values are texts.
const TEXT_KEYS: &[&str] = &[
    "text", "content", "thinking", "output", "summary", "title", "message", "error",
];

/// Keys whose string values are names, renamed everywhere they occur.
const NAME_KEYS: &[&str] = &[
    "tool",
    "callID",
    "call_id",
    "tool_use_id",
    "toolCallId",
    "toolName",
    "modelID",
    "model",
    "modelId",
    "agent",
    "filename",
];

/// Collects the values of [`NAME_KEYS`] (and the names and ids of tool
/// calls), so each is renamed everywhere.
fn collect_names(v: &Value, key: Option<&str>, names: &mut BTreeMap<String, String>) {
    match v {
        Value::String(s)
            if key.is_some_and(|k| NAME_KEYS.contains(&k)) && !s.is_empty() && s.len() < 100 =>
        {
            names.insert(s.clone(), format!("{s}{HOSTILE_NAME}"));
        }
        Value::Array(items) => items.iter().for_each(|i| collect_names(i, None, names)),
        Value::Object(map) => {
            let typ = map.get("type").and_then(Value::as_str).unwrap_or("");
            let tool_call = matches!(
                typ,
                "tool_use" | "toolCall" | "function_call" | "custom_tool_call"
            );
            for (k, item) in map {
                let named = tool_call && matches!(k.as_str(), "name" | "id");
                let error_name = k == "name" && map.contains_key("data");
                if named || error_name {
                    if let Some(s) = item.as_str() {
                        names.insert(s.to_owned(), format!("{s}{HOSTILE_NAME}"));
                    }
                }
                collect_names(item, Some(k), names);
            }
        }
        _ => {}
    }
}

/// Renames the collected names and appends [`HOSTILE_TEXT`] to texts.
fn make_hostile(v: &mut Value, key: Option<&str>, names: &BTreeMap<String, String>) {
    match v {
        Value::String(s) => {
            if let Some(new) = names.get(s.as_str()) {
                *s = new.clone();
            } else if key.is_some_and(|k| TEXT_KEYS.contains(&k)) {
                s.push_str(HOSTILE_TEXT);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| make_hostile(i, None, names)),
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                if k != "type" && k != "role" {
                    make_hostile(item, Some(k), names);
                }
            }
        }
        _ => {}
    }
}

/// The hostile copy of one checked-in recording, written into `dir`.
pub fn hostile_recording(fixture: &str, dir: &Path) -> PathBuf {
    let src = super::common::root()
        .join("fixtures/sessions")
        .join(fixture);
    let text = std::fs::read_to_string(&src).expect("fixture");
    let out = dir.join(fixture.replace('/', "-"));
    let body = if fixture.ends_with(".json") {
        let mut doc: Value = serde_json::from_str(&text).unwrap();
        let mut names = BTreeMap::new();
        collect_names(&doc, None, &mut names);
        make_hostile(&mut doc, None, &names);
        serde_json::to_string_pretty(&doc).unwrap()
    } else {
        let mut lines: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let mut names = BTreeMap::new();
        for l in &lines {
            collect_names(l, None, &mut names);
        }
        for l in &mut lines {
            make_hostile(l, None, &names);
        }
        lines.iter().map(|l| format!("{l}\n")).collect()
    };
    std::fs::write(&out, body).unwrap();
    out
}
