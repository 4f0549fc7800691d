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

mod common;
mod hostile;

use ctxlog_differential::npm;
use ctxlog_testkit::browser::Browser;
use hostile::hostile_recording;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The CommonMark reference implementation, pinned.
const COMMONMARK: (&str, &str) = ("commonmark", "0.31.2");

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
