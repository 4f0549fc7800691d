//! Nothing a recording holds can act on a reader. A hostile corpus (the
//! checked-in recordings of all four agents, every text, title, name, id,
//! model, version, error and summary made hostile: HTML, `</details>`,
//! unmatched backticks, indented fences, `javascript:` links, entities,
//! terminal escapes) is imported, then:
//! - each Markdown export (plain and `--redact`) is rendered by the
//!   CommonMark reference renderer (commonmark.js, pinned, from npm) with
//!   raw HTML enabled, in headless Chromium: the page may hold only the
//!   elements the transcript writes itself, with no attribute, and shows
//!   the hostile strings as text;
//! - the text output of `sessions`, `audit`, `window`, `timeline` and the
//!   export holds no control character but newlines and tabs.

mod browser;
mod common;

use browser::Browser;
use ctxlog_differential::npm;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The CommonMark reference implementation, pinned.
const COMMONMARK: (&str, &str) = ("commonmark", "0.31.2");

/// What a name (tool, call id, model, agent, version, file, error) gets.
const HOSTILE_NAME: &str =
    "<img src=x onerror=alert(1)>`</details>*[x](javascript:alert(2))\u{1b}]52;c;aGk=\u{7}";

/// What a text (prompt, answer, reasoning, output, summary, title) gets.
const HOSTILE_TEXT: &str = "\n<script>alert(3)</script>\n`unmatched <img src=x onerror=alert(4)>\n    ```\n<iframe src=javascript:alert(5)></iframe>\n```\n</details><details open><summary>x</summary>\n[click](javascript:alert(6)) <javascript:alert(7)> ![i](x.png)\n&lt;b&gt; &#60;i&#62; &amp;\n<!-- c -->\n| a | b |\n|---|---|\n# heading\n- list\n1. one\n    indented code\n===\n\u{1b}[2J\u{1b}]52;c;aGk=\u{7}\u{9b}31m\u{202e}gnp.exe";

/// The elements the transcript writes itself.
const INTENDED: &[&str] = &[
    "p",
    "h1",
    "h3",
    "strong",
    "em",
    "hr",
    "blockquote",
    "details",
    "summary",
    "pre",
    "code",
    "br",
];

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
fn hostile_recording(fixture: &str, dir: &Path) -> PathBuf {
    let src = common::root().join("fixtures/sessions").join(fixture);
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

/// The pinned renderer's browser bundle, installed from npm into the cache
/// the agents use; `None` (skip) when npm or the registry is not there and
/// the browser is not required.
fn commonmark_bundle() -> Option<PathBuf> {
    let (package, version) = COMMONMARK;
    let bundle = |dir: &Path| dir.join("node_modules/commonmark/dist/commonmark.js");
    let cached = bundle(&npm::install_dir(package, version));
    if cached.exists() {
        return Some(cached);
    }
    let why = match npm::install(package, version) {
        Ok(dir) if bundle(&dir).exists() => return Some(bundle(&dir)),
        Ok(dir) => format!("no browser bundle in {}", dir.display()),
        Err(e) => e.to_string(),
    };
    assert!(
        std::env::var_os("CTXLOG_REQUIRE_BROWSER").is_none(),
        "cannot install {package}@{version}: {why}"
    );
    eprintln!("SKIPPED: cannot install {package}@{version} from npm: {why}");
    None
}

/// Renders `markdown` with commonmark.js (raw HTML on) into the page and
/// returns every element's tag and attributes and the text shown.
const RENDER: &str = r#"
const md = arguments[0];
const html = new commonmark.HtmlRenderer({safe: false}).render(new commonmark.Parser().parse(md));
const out = document.getElementById('out');
out.innerHTML = html;
const elements = [];
for (const el of out.querySelectorAll('*')) {
  elements.push({tag: el.tagName.toLowerCase(), attrs: Array.from(el.attributes).map(a => a.name + '=' + a.value)});
}
return {elements, text: out.textContent, html};
"#;

fn hostile_store(dir: &Path) -> (PathBuf, Vec<String>) {
    let db = dir.join("store");
    let mut ids = Vec::new();
    for fixture in [
        "opencode/compacted-and-pruned.json",
        "claude-code/edge-cases.jsonl",
        "codex/edge-cases.jsonl",
        "pi/edge-cases.jsonl",
    ] {
        let file = hostile_recording(fixture, dir);
        let out = common::succeeds(
            &db,
            &[
                "--json",
                "import",
                file.to_str().unwrap(),
                "--context",
                "200000",
            ],
        );
        let v: Value = serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("{fixture}: {e}: {}", String::from_utf8_lossy(&out)));
        let id = v["session"]
            .as_str()
            .unwrap_or_else(|| panic!("{fixture}: no session in {v}"))
            .to_owned();
        ids.push(id);
    }
    (db, ids)
}

#[test]
fn a_hostile_transcript_renders_only_what_ctxlog_wrote() {
    let Some(browser) = Browser::start() else {
        return;
    };
    let Some(bundle) = commonmark_bundle() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("ctxlog-inject-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (db, ids) = hostile_store(&dir);
    let page = dir.join("render.html");
    std::fs::write(
        &page,
        format!(
            "<!doctype html><meta charset=utf-8><div id=out></div><script src=\"file://{}\"></script>",
            bundle.display()
        ),
    )
    .unwrap();
    browser.post(
        "/url",
        &json!({"url": format!("file://{}", page.display())}),
    );
    let mut problems = Vec::new();
    for id in &ids {
        for redact in [false, true] {
            let mut args = vec!["export", id.as_str(), "--format", "markdown"];
            if redact {
                args.push("--redact");
            }
            let md = String::from_utf8(common::succeeds(&db, &args)).unwrap();
            let got = browser.eval_with(RENDER, &[json!(md)]);
            let elements = got["elements"].as_array().expect("elements");
            for el in elements {
                let tag = el["tag"].as_str().unwrap();
                let attrs = el["attrs"].as_array().unwrap();
                if !INTENDED.contains(&tag) || !attrs.is_empty() {
                    problems.push(format!("{id} (redact {redact}): <{tag} {attrs:?}>"));
                }
            }
            let text = got["text"].as_str().unwrap();
            for shown in [
                "<img src=x onerror=alert(1)>",
                "<script>alert(3)</script>",
                "</details><details open>",
                "[click](javascript:alert(6))",
            ] {
                if !text.contains(shown) {
                    problems.push(format!(
                        "{id} (redact {redact}): {shown:?} is not shown as text"
                    ));
                }
            }
            assert!(
                elements.iter().any(|e| e["tag"] == "details"),
                "{id}: the transcript's own folds are there"
            );
        }
    }
    assert!(
        problems.is_empty(),
        "{} unintended elements or missing text:\n{}",
        problems.len(),
        problems.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn text_output_carries_no_terminal_control() {
    let dir = std::env::temp_dir().join(format!("ctxlog-inert-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (db, ids) = hostile_store(&dir);
    let mut outputs = vec![("sessions".to_owned(), common::succeeds(&db, &["sessions"]))];
    for id in &ids {
        for cmd in [
            vec!["audit", id],
            vec!["window", id],
            vec!["timeline", id],
            vec!["export", id, "--format", "markdown"],
        ] {
            outputs.push((cmd.join(" "), common::succeeds(&db, &cmd)));
        }
        // JSON keeps every character as an escape, never raw.
        let json_out = common::succeeds(&db, &["--json", "window", id]);
        let text = String::from_utf8(json_out.clone()).unwrap();
        assert!(text.contains("\\u001b"), "{id}: the escape is kept as data");
        outputs.push((format!("--json window {id}"), json_out));
    }
    for (what, out) in outputs {
        let text = String::from_utf8(out).unwrap();
        let active: Vec<char> = text
            .chars()
            .filter(|&c| {
                (c.is_control() && c != '\n' && c != '\t')
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            })
            .collect();
        assert!(active.is_empty(), "{what}: {active:?} reach the terminal");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `export --format markdown --redact` and `report --redact` show no secret
/// the redactor knows and count what they took by kind; without the switch
/// the transcript keeps the text as recorded; the log is not changed.
#[test]
fn redact_takes_the_secrets_out_of_the_transcript_and_the_page() {
    let dir = std::env::temp_dir().join(format!("ctxlog-redact-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = common::root().join("fixtures/sessions/pi/edge-cases.jsonl");
    let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n";
    let text = std::fs::read_to_string(&src).unwrap().replacen(
        "Read the theme docs and port the selector.",
        &format!(
            "Use {token} and this key {} then port the selector.",
            key.escape_default()
        ),
        1,
    );
    assert!(
        text.contains(token),
        "the fixture's first prompt is where the secrets go"
    );
    let file = dir.join("pi.jsonl");
    std::fs::write(&file, text).unwrap();
    let db = dir.join("store");
    let out = common::succeeds(&db, &["--json", "import", file.to_str().unwrap()]);
    let id = serde_json::from_slice::<Value>(&out).unwrap()["session"]
        .as_str()
        .unwrap()
        .to_owned();
    // The transcript escapes `_`: compare without the backslashes.
    let shown = |args: &[&str]| {
        String::from_utf8(common::succeeds(&db, args))
            .unwrap()
            .replace('\\', "")
    };
    let plain = shown(&["export", &id, "--format", "markdown"]);
    assert!(
        plain.contains(token),
        "without --redact the transcript is as recorded"
    );
    let md = String::from_utf8(common::succeeds(
        &db,
        &["export", &id, "--format", "markdown", "--redact"],
    ))
    .unwrap();
    let unescaped = md.replace('\\', "");
    assert!(
        !unescaped.contains(token)
            && !unescaped.contains("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ")
    );
    assert!(md.contains("\\[REDACTED github-token\\]"), "{md}");
    assert!(
        md.contains("then port the selector"),
        "what follows the key is kept"
    );
    let page = dir.join("r.html");
    let out = common::succeeds(
        &db,
        &[
            "--json",
            "report",
            &id,
            "--out",
            page.to_str().unwrap(),
            "--redact",
        ],
    );
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["redacted"]["github-token"], 1, "{v}");
    assert_eq!(v["redacted"]["private-key"], 1, "{v}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains(token));
    // The log keeps what was recorded.
    assert!(shown(&["export", &id, "--format", "markdown"]).contains(token));
    let _ = std::fs::remove_dir_all(&dir);
}
