//! The HTML report in a real browser: Debian's headless Chromium driven
//! through chromedriver (WebDriver over HTTP on loopback). The page must
//! load without a console error, its chart must hold exactly what
//! `timeline --json` says (every point's `data-seq` and `data-total`),
//! clicking a compaction marker must show that step's window and what the
//! compaction removed, and a screenshot is saved.
//!
//! `.ci/run` installs `chromium` and `chromium-driver` and sets
//! `CTXLOG_REQUIRE_BROWSER=1`, so there the test cannot skip; elsewhere it
//! skips with a message when they are missing.

mod common;

use ctxlog_testkit::browser::Browser;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The sessions the page shows: the real pi recording with two simulations
/// when `../shared/sessions` is there, else the checked-in OpenCode fixture
/// (compacted and pruned) with one. Returns (main, others).
fn sessions(db: &Path) -> (String, Vec<String>) {
    let pi = common::root().join("../shared/sessions/pi/large-session.jsonl");
    let (file, id, policies) = if pi.exists() {
        (
            pi,
            "d703a1a9-1b7b-4fb1-b512-c9738b1fe617".to_owned(),
            "opencode-1.17,claude-code",
        )
    } else {
        eprintln!("../shared/sessions is absent: the page shows the checked-in fixture");
        let file = common::root().join("fixtures/sessions/opencode/compacted-and-pruned.json");
        let text = std::fs::read_to_string(&file).expect("fixture");
        let doc: Value = serde_json::from_str(&text).expect("fixture JSON");
        let id = doc["info"]["id"].as_str().expect("session id").to_owned();
        (file, id, "opencode-1.17")
    };
    let file = file.display().to_string();
    run(db, &["import", &file]);
    run(
        db,
        &["simulate", &file, "--policy", policies, "--keep", "--json"],
    );
    let others = policies.split(',').map(|p| format!("{id}@{p}")).collect();
    (id, others)
}

#[test]
fn the_report_opens_in_chromium_without_errors_and_its_chart_is_the_timeline() {
    let Some(browser) = Browser::start() else {
        return;
    };
    let dir = fresh_dir("test");
    let db = dir.join("store");
    let (main, others) = sessions(&db);
    let page = dir.join("report.html");
    let page_text = page.display().to_string();
    let mut args = vec!["report", main.as_str(), "--out", page_text.as_str()];
    for o in &others {
        args.extend(["--with", o.as_str()]);
    }
    run(&db, &args);
    let html = std::fs::read_to_string(&page).unwrap();
    // Nothing is loaded from elsewhere: no script or style source, and no
    // address in an attribute (the session's own text, in the data script,
    // may name any address).
    let start = html
        .find("<script type=\"application/json\" id=\"data\">")
        .unwrap();
    let end = start + html[start..].find("</script>").unwrap();
    let markup = format!("{}{}", &html[..start], &html[end..]);
    assert!(!markup.contains("<script src") && !markup.contains("<link rel=\"stylesheet\""));
    for attr in ["src=\"", "href=\"", "url("] {
        for (i, _) in markup.match_indices(attr) {
            let value: String = markup[i + attr.len()..].chars().take(12).collect();
            assert!(
                value.starts_with("data:") || value.starts_with('#'),
                "an external reference: {attr}{value}"
            );
        }
    }

    browser.post("/url", &json!({"url": format!("file://{page_text}")}));
    let ready = browser.eval("return document.readyState");
    assert_eq!(ready, "complete");

    // Every curve's points are exactly its timeline's steps.
    for (c, session) in std::iter::once(&main).chain(&others).enumerate() {
        let timeline: Value =
            serde_json::from_str(&run(&db, &["timeline", session, "--json"])).unwrap();
        // A step without usage is a hollow point with no total: a gap in
        // the curve, never a zero.
        let want: Vec<(u64, Option<u64>)> = timeline["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let total = s["tokens"]["total"].as_u64().unwrap();
                (
                    s["seq"].as_u64().unwrap(),
                    (s["no_usage"] != true).then_some(total),
                )
            })
            .collect();
        assert!(!want.is_empty(), "{session} has steps");
        let got = browser.eval(&format!(
            "return Array.from(document.querySelectorAll('circle.pt[data-curve=\"{c}\"]')).map(function(p){{return [Number(p.dataset.seq), p.dataset.total===undefined?null:Number(p.dataset.total)];}})"
        ));
        let got: Vec<(u64, Option<u64>)> = got
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64()))
            .collect();
        assert_eq!(got, want, "curve {c} ({session}) is its timeline");
    }

    // Clicking a compaction marker shows its step: what the compaction
    // removed, and the window the marker's step had.
    let marker = browser.eval(
        "var m=document.querySelector('g.marker.compaction');return m?[Number(m.dataset.curve),Number(m.dataset.step),Number(m.dataset.seq)]:null",
    );
    assert!(marker.is_array(), "the chart has a compaction marker");
    // Its knob, as a user clicks it: the middle of the marker's box can lie
    // under another marker's line (two curves compacting at nearby steps).
    browser.click("g.marker.compaction circle");
    let shown = browser.eval(
        "return [document.getElementById('curve').value, document.getElementById('pick').value, document.getElementById('step-removed').textContent, document.querySelectorAll('#window .msg').length, document.getElementById('step-events').textContent]",
    );
    assert_eq!(shown[0], marker[0].to_string(), "the marker's session");
    assert_eq!(shown[1], marker[1].to_string(), "the marker's step");
    let removed = shown[2].as_str().unwrap();
    assert!(
        removed.contains("Left the window before the next step"),
        "what the compaction removed: {removed:?}"
    );
    assert!(shown[3].as_u64().unwrap() > 0, "the window has messages");
    assert!(shown[4].as_str().unwrap().contains("summary_completed"));
    // The next step's window starts at the compaction's marker.
    browser.click("#next");
    let pivot = browser.eval(
        "return [document.querySelectorAll('#window .msg.pivot').length, document.querySelectorAll('#window .msg.summary').length]",
    );
    assert_eq!(pivot, json!([1, 1]), "the pivot and its summary");

    assert_no_console_errors(&browser);

    browser.eval("window.scrollTo(0,0)");
    let png = browser.screenshot();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    std::fs::write(&shot, &png).unwrap();
    eprintln!("screenshot: {}", shot.display());
    if std::env::var_os("CTXLOG_BLESS").is_some() {
        std::fs::write(common::root().join("docs/report.png"), &png).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An empty directory of this process for the test named `tag`.
fn fresh_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ctxlog-report-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The page logged no error or warning to the console.
fn assert_no_console_errors(browser: &Browser) {
    let errors: Vec<Value> = browser
        .console()
        .into_iter()
        .filter(|e| e["level"] == "SEVERE" || e["level"] == "WARNING")
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
}

/// `ctxlog args` on `db`, which must succeed; its output as text.
fn run(db: &Path, args: &[&str]) -> String {
    String::from_utf8(common::succeeds(db, args)).expect("utf-8")
}

/// A session of more than 10,000 steps (a seeded synthetic one, written by
/// `ctxlog stress`): its page is one of runs of steps (each by its peak
/// step and that step's window), stays under 20 MB and its memory bounded,
/// and Chromium shows it: a point per run, each run's steps named, the
/// last run's window rebuilt from the changes. How long Chromium takes to
/// open it is printed (measured, not asserted).
#[test]
fn a_long_sessions_page_of_runs_is_small_and_opens_in_chromium() {
    let Some(browser) = Browser::start() else {
        return;
    };
    let dir = fresh_dir("long");
    let db = dir.join("store");
    run(
        &db,
        &[
            "stress",
            "--sessions",
            "1",
            "--events",
            "67000",
            "--batch",
            "2000",
            "--seed",
            "1",
        ],
    );
    let listed: Value = serde_json::from_str(&run(&db, &["sessions", "--json"])).unwrap();
    let row = &listed["sessions"][0];
    let steps = row["steps"].as_u64().unwrap();
    assert!(steps >= 10_000, "{row}");
    let session = row["session"].as_str().unwrap();
    let page = dir.join("long.html");
    let peak = dir.join("peak");
    let out = common::ctxlog_on(&db, &["report", session, "--out", page.to_str().unwrap()])
        .env("CTXLOG_PEAK_RSS_FILE", &peak)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::metadata(&page).unwrap().len();
    let peak: u64 = std::fs::read_to_string(&peak)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    eprintln!("{steps} steps: a page of {bytes} bytes, written in a peak of {peak} bytes");
    assert!(bytes < 20_000_000, "{bytes} bytes");
    assert!(peak < 300_000_000, "peak memory {peak} bytes");

    let started = std::time::Instant::now();
    browser.post(
        "/url",
        &json!({"url": format!("file://{}", page.display())}),
    );
    let points = browser.eval("return document.querySelectorAll('circle.pt').length");
    eprintln!("Chromium opened it in {:?}", started.elapsed());
    let runs = browser.eval(
        "var s=JSON.parse(document.getElementById('data').textContent).sessions[0];return [s.steps.length, s.total_steps, s.steps[1].first, s.steps[1].step]",
    );
    let (rows, stride) = (runs[0].as_u64().unwrap(), runs[2].as_u64().unwrap() - 1);
    assert_eq!(points.as_u64(), Some(rows), "a point per run");
    assert_eq!(runs[1].as_u64(), Some(steps), "{runs}");
    assert_eq!(rows, steps.div_ceil(stride), "{runs}");
    assert!(rows <= 500 && stride > 1, "{runs}");
    // Each run is shown by one of its own steps.
    let step = runs[3].as_u64().unwrap();
    assert!((stride + 1..=2 * stride).contains(&step), "{runs}");
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.contains(&format!("{steps} steps, shown as {rows} runs")));
    let shown = browser.eval(
        "document.querySelector('circle.pt[data-step=\"1\"]').dispatchEvent(new MouseEvent('click',{bubbles:true}));return document.getElementById('where').textContent",
    );
    assert!(
        shown.as_str().unwrap().starts_with(&format!(
            "step {step} of {steps} · shown for steps {}–{}",
            stride + 1,
            2 * stride
        )),
        "{shown}"
    );
    // The last step's window, rebuilt from the changes, has its size.
    let last = browser.eval(
        "var s=JSON.parse(document.getElementById('data').textContent).sessions[0];document.getElementById('pick').value=String(s.steps.length-1);document.getElementById('pick').dispatchEvent(new Event('input'));return [s.steps[s.steps.length-1].size, document.querySelectorAll('#window .msg').length]",
    );
    assert_eq!(last[0], last[1], "{last}");
    assert_no_console_errors(&browser);
    let _ = std::fs::remove_dir_all(&dir);
}
