//! Every recording under ../shared/sessions (skipped with a message when the
//! folder is absent): it is detected, imports, its counts match a count done
//! here without the importer, it replays to the same digest twice, and a
//! second import yields identical events (so the store deduplicates it).

use ctxlog_core::*;
use ctxlog_import::{import, Format, ImportOptions};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn shared_files() -> Option<Vec<PathBuf>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/sessions");
    let mut files = Vec::new();
    for dir in std::fs::read_dir(&root).ok()? {
        let dir = dir.ok()?.path();
        if !dir.is_dir() || dir.ends_with("licenses") {
            continue;
        }
        for f in std::fs::read_dir(&dir).ok()? {
            let f = f.ok()?.path();
            if f.is_file() {
                files.push(f);
            }
        }
    }
    files.sort();
    Some(files)
}

/// (steps, distinct tool calls), counted from the raw lines.
fn independent_counts(format: Format, text: &str) -> (u64, u64) {
    let lines = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let (mut steps, mut tools) = (BTreeSet::new(), BTreeSet::new());
    for (i, v) in lines.enumerate() {
        match format {
            Format::ClaudeCode if v["type"] == "assistant" => {
                steps.insert(v["message"]["id"].as_str().unwrap().to_owned());
                for b in v["message"]["content"].as_array().unwrap() {
                    if b["type"] == "tool_use" {
                        tools.insert(b["id"].as_str().unwrap().to_owned());
                    }
                }
            }
            // Codex 0.40 writes one token_count (with info) per model request.
            Format::Codex => {
                let p = &v["payload"];
                if p["type"] == "token_count" && !p["info"].is_null() {
                    steps.insert(i.to_string());
                }
                if v["type"] == "response_item" && p["type"] == "function_call" {
                    tools.insert(p["call_id"].as_str().unwrap().to_owned());
                }
            }
            Format::Pi if v["type"] == "message" && v["message"]["role"] == "assistant" => {
                steps.insert(i.to_string());
                for b in v["message"]["content"].as_array().unwrap() {
                    if b["type"] == "toolCall" {
                        tools.insert(b["id"].as_str().unwrap().to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    (steps.len() as u64, tools.len() as u64)
}

#[test]
fn every_shared_recording_imports_counts_and_replays_deterministically() {
    let Some(files) = shared_files() else {
        eprintln!("skipping: ../shared/sessions is absent");
        return;
    };
    assert!(!files.is_empty());
    let mut seen = BTreeSet::new();
    for f in files {
        let name = f.display().to_string();
        if f.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let format = Format::sniff(&text.as_bytes()[..text.len().min(64 << 10)])
            .unwrap_or_else(|| panic!("{name}: format not detected"));
        let dir = f.parent().unwrap().file_name().unwrap().to_str().unwrap();
        assert_eq!(format.name(), dir, "{name}: detected as {}", format.name());
        seen.insert(format.name());
        let a = import(text.as_bytes(), &name, format, &ImportOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let s1 = SessionState::replay(&a.events.to_vec().unwrap()).unwrap();
        let s2 = SessionState::replay(&a.events.to_vec().unwrap()).unwrap();
        assert_eq!(s1.digest(), s2.digest(), "{name}");
        // The last step's end waits for a later line (no line says which of
        // its items is the last): it is stored as far as it is known, open.
        let open = s1
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant && !m.summary && m.finish.is_none())
            .count() as u64;
        assert!(open <= 1, "{name}: at most the last step is open");
        assert_eq!(
            (a.steps, a.tool_calls),
            independent_counts(format, &text),
            "{name}: (steps, tool calls); {:?}",
            a.warnings
        );
        assert_eq!(s1.messages.len() as u64, a.messages, "{name}");
        assert!(a.source_session.is_some(), "{name}");
        assert!(
            a.warnings.iter().all(|w| w.contains("waits for the")),
            "{name}: {:?}",
            a.warnings
        );
        // every step carries its usage, the open one too; the window is not
        // empty
        let stepped = s1
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant && !m.summary)
            .filter(|m| m.tokens.is_some())
            .count() as u64;
        assert_eq!(stepped, a.steps, "{name}: every step has usage");
        assert!(!window(&s1).messages.is_empty(), "{name}");
        // a second import gives the same events: the store deduplicates it
        let b = import(text.as_bytes(), &name, format, &ImportOptions::default()).unwrap();
        assert_eq!(
            a.events.to_vec().unwrap(),
            b.events.to_vec().unwrap(),
            "{name}"
        );
        assert_eq!(a.session, b.session, "{name}");
    }
    eprintln!("formats seen: {seen:?}");
}

#[test]
fn codex_usage_is_stored_the_opencode_way() {
    let Some(files) = shared_files() else {
        eprintln!("skipping: ../shared/sessions is absent");
        return;
    };
    let Some(f) = files
        .iter()
        .find(|f| f.to_string_lossy().contains("09-49-46"))
    else {
        eprintln!("skipping: the long Codex rollout is absent");
        return;
    };
    let text = std::fs::read_to_string(f).unwrap();
    let a = import(
        text.as_bytes(),
        "r",
        Format::Codex,
        &ImportOptions::default(),
    )
    .unwrap();
    let s = SessionState::replay(&a.events.to_vec().unwrap()).unwrap();
    // The last token_count, read here: input includes the cached tokens.
    let raw = text
        .lines()
        .rev()
        .filter(|l| l.contains("\"token_count\""))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| !v["payload"]["info"].is_null())
        .unwrap();
    let u = &raw["payload"]["info"]["last_token_usage"];
    let (input, cached) = (
        u["input_tokens"].as_u64().unwrap(),
        u["cached_input_tokens"].as_u64().unwrap(),
    );
    let (output, reasoning) = (
        u["output_tokens"].as_u64().unwrap(),
        u["reasoning_output_tokens"].as_u64().unwrap(),
    );
    let last = s
        .messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .find_map(|m| m.tokens.as_deref().copied())
        .unwrap();
    assert_eq!(last.input + last.cache_read, input, "prompt = input_tokens");
    assert_eq!(last.cache_read, cached);
    assert_eq!(last.output + last.reasoning, output);
    assert_eq!(last.reasoning, reasoning);
    assert!(cached > 0 && last.input < input, "cached not counted twice");
    assert_eq!(s.limits.context, 272_000, "the file's own window");
}
