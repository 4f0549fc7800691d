//! `ctxlog serve` in a real browser (headless Chromium through
//! chromedriver), on sled and on PostgreSQL: the hostile corpus of the
//! four agents and a pi session that grows are stored; the page at the
//! printed address lists them, searches, opens a hit's session at its
//! step, moves to another step and reads its window; while the test
//! imports more of the growing session, its open page shows the new steps
//! with no reload. Requests without the token, with a foreign `Host` or
//! `Origin`, with another method, or from a page of another site are
//! refused (the server says so on stderr), and nothing the hostile corpus
//! holds becomes markup. Screenshots of the list and of a session page
//! are saved (`docs/serve.png` is one).

mod common;
mod hostile;

use ctxlog_testkit::browser::Browser;
use ctxlog_testkit::{PgDatabase, TempDir};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The fixtures made hostile and stored.
const FIXTURES: [&str; 4] = [
    "opencode/compacted-and-pruned.json",
    "claude-code/edge-cases.jsonl",
    "codex/edge-cases.jsonl",
    "pi/edge-cases.jsonl",
];

/// Turns of the growing session stored before the page opens, and after.
const TURNS_BEFORE: usize = 3;
const TURNS_AFTER: usize = 6;

/// `ctxlog serve` running on a store, killed when dropped.
struct Served {
    child: Child,
    /// The printed address, with the token.
    url: String,
    /// `http://127.0.0.1:PORT`.
    base: String,
    /// What the server wrote to stderr so far.
    stderr: Arc<Mutex<String>>,
}

impl Served {
    fn start(db: &str) -> Served {
        let mut child = common::ctxlog()
            .args(["--db", db, "serve"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start ctxlog serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the address");
        let url = line.trim().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "printed {url:?}");
        let base = url.split("/?token=").next().unwrap().to_owned();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (mut from, into) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                into.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Served {
            child,
            url,
            base,
            stderr,
        }
    }

    fn port(&self) -> &str {
        self.base.rsplit(':').next().unwrap()
    }

    fn said(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until the server has said `what` (its stderr is read on a
    /// thread of the test's).
    fn wait_said(&self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.said().contains(what) {
            assert!(
                Instant::now() < deadline,
                "the server never said {what:?}: {}",
                self.said()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `script` in the page until it returns something truthy; that.
fn wait_for(browser: &Browser, script: &str, what: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = browser.eval(script);
        if !(v.is_null() || v == json!(false) || v == json!("") || v == json!(0)) {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}: never came ({script})");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Elements no page of ctxlog makes: a recorded string that became markup.
const FOREIGN: &str = "return Array.from(document.querySelectorAll('img,iframe,object,embed,script:not([src]):not([type=\"application/json\"]),a[href^=\"javascript\"],[onerror],[onload],[onclick]')).map(e=>e.outerHTML.slice(0,120))";

/// What a plain request (no browser) gets: the status and the body.
fn ask(served: &Served, path: &str, headers: &[(&str, &str)], method: &str) -> (u16, String) {
    let mut r = ureq::request(method, &format!("{}{path}", served.base));
    for (n, v) in headers {
        r = r.set(n, v);
    }
    match r.call() {
        Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
        Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap_or_default()),
        Err(e) => panic!("{path}: {e}"),
    }
}

/// The store: the hostile corpus and the first turns of a pi session; the
/// growing pi recording and its full text.
fn stored(db: &str, dir: &Path) -> (PathBuf, String) {
    for f in FIXTURES {
        let file = hostile::hostile_recording(f, dir);
        common::succeeds(Path::new(db), &["import", file.to_str().unwrap()]);
    }
    let full = common::pi_recording(7, TURNS_AFTER);
    let lines: Vec<&str> = full.lines().collect();
    let file = dir.join("growing.jsonl");
    let first: String = lines[..1 + 4 * TURNS_BEFORE]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, first).unwrap();
    common::succeeds(Path::new(db), &["import", file.to_str().unwrap()]);
    (file, full)
}

/// The whole scenario on the store `db` (a directory or a PostgreSQL URL).
fn scenario(db: &str, dir: &Path, shots: &str) {
    let Some(browser) = Browser::start() else {
        return;
    };
    let (growing, full) = stored(db, dir);
    let served = Served::start(db);
    refusals(&served);

    // The list: every session, the hostile titles as text.
    browser.post("/url", &json!({ "url": served.url }));
    let path = browser.eval("return location.pathname + location.search");
    assert_eq!(path, json!("/"), "the token is traded for a cookie at once");
    wait_for(
        &browser,
        "return document.querySelectorAll('#rows tr').length === 5",
        "five sessions listed",
    );
    let titles = browser
        .eval("return Array.from(document.querySelectorAll('#rows td a')).map(a=>a.textContent)");
    assert!(
        titles.to_string().contains("<script>alert(3)</script>"),
        "a hostile title is shown as text: {titles}"
    );
    assert_eq!(browser.eval(FOREIGN), json!([]), "the list");
    save(&browser, &format!("{shots}-list.png"));
    sorted_and_filtered(&browser);

    // Search, and the hit's session at its step.
    browser.eval("document.getElementById('search').value='parser'; document.getElementById('search-form').requestSubmit()");
    wait_for(
        &browser,
        "return document.querySelectorAll('#hits li').length > 0",
        "search hits",
    );
    assert_eq!(browser.eval(FOREIGN), json!([]), "the hits");
    let href = browser.eval("return document.querySelector('#hits li a').getAttribute('href')");
    assert!(
        href.as_str().unwrap().contains("#seq="),
        "a hit links to its step: {href}"
    );
    browser.click("#hits li a");
    wait_for(&browser, "return location.pathname.startsWith('/s/') && document.getElementById('where') && document.getElementById('where').textContent", "the hit's session page");
    let seq: u64 = href
        .as_str()
        .unwrap()
        .rsplit('=')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let shown = browser.eval("var v=window.ctxlogReportView.where(); return v.step");
    let step_seq = browser.eval(&format!("return JSON.parse(document.getElementById('data').textContent).sessions[0].steps[{shown}].seq"));
    assert!(
        step_seq.as_u64().unwrap() >= seq,
        "the page opens at the hit's step (seq {seq}, step ends at {step_seq})"
    );
    let before = browser.eval("return document.getElementById('where').textContent");
    browser.click("#next");
    let after = browser.eval("return document.getElementById('where').textContent");
    assert_ne!(before, after, "another step");
    let window = browser.eval("return document.querySelectorAll('#window .msg').length");
    assert!(window.as_u64().unwrap() > 0, "its window is shown");
    wait_for(
        &browser,
        "return document.querySelectorAll('#audit-lines li').length",
        "the audit trail",
    );
    assert_eq!(browser.eval(FOREIGN), json!([]), "a hostile session's page");
    assert!(
        browser.console().iter().all(|e| e["level"] != "SEVERE"),
        "no script error, no policy violation"
    );

    // Were a recorded string ever to become a script, the policy would
    // not run it: an inline script put in the page does not run.
    let ran = browser.eval("var s=document.createElement('script'); s.textContent='window.injected=1'; document.body.appendChild(s); return window.injected === 1");
    assert_eq!(
        ran,
        json!(false),
        "the Content-Security-Policy runs no inline script"
    );
    live(&browser, &served, db, &growing, &full, shots);
    captured(&browser, &served, db, &growing, dir);
    from_another_site(&browser, &served);
}

/// The list sorted by a column both ways (on the server), and filtered.
fn sorted_and_filtered(browser: &Browser) {
    // The events column (the 9th), as shown.
    const EVENTS: &str = "return Array.from(document.querySelectorAll('#rows tr')).map(r=>Number(r.children[8].textContent.replace(/,/g,'')))";
    let shown =
        |b: &Browser| -> Vec<u64> { serde_json::from_value(b.eval(EVENTS)).expect("numbers") };
    browser.click("th[data-sort=events]");
    wait_for(browser, "return document.querySelector('th.sorted.desc[data-sort=events]') && document.getElementById('rows').children.length === 5", "sorted by events");
    let wanted = |b: &Browser, desc: bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let v = shown(b);
            let mut sorted = v.clone();
            sorted.sort_unstable();
            if desc {
                sorted.reverse();
            }
            if v == sorted && v.len() == 5 {
                return v;
            }
            assert!(Instant::now() < deadline, "not in order: {v:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let desc = wanted(browser, true);
    browser.click("th[data-sort=events]");
    let asc = wanted(browser, false);
    assert_eq!(
        desc.iter().rev().collect::<Vec<_>>(),
        asc.iter().collect::<Vec<_>>()
    );
    browser.eval("var f=document.getElementById('filter'); f.value='codex'; f.dispatchEvent(new Event('input'))");
    wait_for(browser, "return document.querySelectorAll('#rows tr').length === 1 && document.querySelector('#rows tr').children[1].textContent.startsWith('codex')", "filtered to the codex session");
    browser.eval(
        "var f=document.getElementById('filter'); f.value=''; f.dispatchEvent(new Event('input'))",
    );
    wait_for(
        browser,
        "return document.querySelectorAll('#rows tr').length === 5",
        "the filter cleared",
    );
}

/// The growing session's open page shows its new steps with no reload.
fn live(browser: &Browser, served: &Served, db: &str, growing: &Path, full: &str, shots: &str) {
    browser.post(
        "/url",
        &json!({ "url": format!("{}/s/5e1f0c2a-9b8d-4e7f-a6c5-000000000007", served.base) }),
    );
    wait_for(
        browser,
        "return document.getElementById('serve-live').textContent === 'live'",
        "the page's stream",
    );
    let steps = |b: &Browser| {
        b.eval("return JSON.parse(document.getElementById('data').textContent).sessions[0].steps.length").as_u64().unwrap()
    };
    assert_eq!(steps(browser), 2 * TURNS_BEFORE as u64);
    browser.eval("window.notReloaded = true");
    std::fs::write(growing, full).unwrap();
    let imported = Instant::now();
    common::succeeds(Path::new(db), &["import", growing.to_str().unwrap()]);
    let newest = 2 * TURNS_AFTER;
    wait_for(
        browser,
        &format!("return JSON.parse(document.getElementById('data').textContent).sessions[0].steps.length === {newest}"),
        "the new steps on the open page",
    );
    eprintln!(
        "the new steps were shown {:?} after the import ended",
        imported.elapsed()
    );
    assert_eq!(
        browser.eval("return window.notReloaded === true"),
        json!(true),
        "no reload"
    );
    let at = browser.eval("return document.getElementById('where').textContent");
    assert!(
        at.as_str().unwrap().contains(&format!("of {newest}")),
        "{at}"
    );
    save(browser, &format!("{shots}-session.png"));
}

/// A hook's call on the growing session (which only records the moment in
/// its description stream: the recording has nothing new) marks it live on
/// the open list, with no reload.
fn captured(browser: &Browser, served: &Served, db: &str, growing: &Path, dir: &Path) {
    browser.post("/url", &json!({ "url": format!("{}/", served.base) }));
    let mark = "return Array.from(document.querySelectorAll('#rows tr.live')).some(r => r.textContent.includes('step 0 of session 7'))";
    wait_for(
        browser,
        "return document.querySelectorAll('#rows tr').length === 5",
        "the list",
    );
    assert_eq!(browser.eval(mark), json!(false), "not live before the hook");
    browser.eval("window.notReloaded = true");
    let payload = json!({
        "session_id": "5e1f0c2a-9b8d-4e7f-a6c5-000000000007",
        "transcript_path": growing,
        "cwd": "/home/dev/p7",
        "hook_event_name": "turn_end",
    });
    let mut hook = common::ctxlog()
        .args(["--db", db, "hook", "pi"])
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ctxlog hook");
    hook.stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    assert!(hook.wait().unwrap().success());
    wait_for(browser, mark, "the session marked live by its hook");
    assert_eq!(
        browser.eval("return window.notReloaded === true"),
        json!(true),
        "no reload"
    );
}

/// Requests a person's browser would not make, each refused and said.
fn refusals(served: &Served) {
    let host = format!("127.0.0.1:{}", served.port());
    let token = served.url.rsplit('=').next().unwrap();
    let cookie = format!("ctxlog-serve-{}={token}", served.port());
    assert_eq!(
        ask(served, "/api/sessions", &[("Cookie", &cookie)], "GET").0,
        200
    );
    assert_eq!(ask(served, "/api/sessions", &[], "GET").0, 403, "no token");
    let wrong = format!("ctxlog-serve-{}={}", served.port(), "0".repeat(64));
    assert_eq!(
        ask(served, "/api/sessions", &[("Cookie", &wrong)], "GET").0,
        403,
        "a wrong token"
    );
    let foreign_host = format!("attacker.example:{}", served.port());
    let (status, body) = ask(
        served,
        "/api/sessions",
        &[("Cookie", &cookie), ("Host", &foreign_host)],
        "GET",
    );
    assert_eq!(status, 421, "DNS rebinding: {body}");
    for origin in [
        "http://attacker.example",
        &format!(
            "http://localhost:{}",
            served.port().parse::<u32>().unwrap() + 1
        ),
    ] {
        let (status, _) = ask(
            served,
            "/api/sessions",
            &[("Cookie", &cookie), ("Host", &host), ("Origin", origin)],
            "GET",
        );
        assert_eq!(status, 403, "Origin {origin}");
    }
    assert_eq!(
        ask(
            served,
            "/",
            &[("Cookie", &cookie), ("Sec-Fetch-Site", "cross-site")],
            "GET"
        )
        .0,
        403
    );
    assert_eq!(
        ask(served, "/api/sessions", &[("Cookie", &cookie)], "POST").0,
        405
    );
    // No CORS header, even to a request that names its origin.
    let own = format!("http://{host}");
    let answer = ureq::get(&format!("{}/api/sessions", served.base))
        .set("Cookie", &cookie)
        .set("Origin", &own)
        .call()
        .expect("an answer");
    let cors: Vec<String> = answer
        .headers_names()
        .into_iter()
        .filter(|n| n.to_ascii_lowercase().starts_with("access-control"))
        .collect();
    assert!(
        answer.status() == 200 && cors.is_empty(),
        "no CORS: {cors:?}"
    );
    for why in [
        "secret token",
        "attacker.example",
        "Origin",
        "another site",
        "only reads",
    ] {
        served.wait_said(why);
    }
}

/// A page of another site (another origin on this machine) that tries to
/// read the server's data: the browser sends no cookie (SameSite) and the
/// server refuses.
fn from_another_site(browser: &Browser, served: &Served) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = listener.local_addr().unwrap().port();
    let target = format!("http://127.0.0.1:{}/api/sessions", served.port());
    let page = format!(
        "<!doctype html><title>other</title><script>fetch('{target}',{{credentials:'include'}}).then(r=>r.text()).then(t=>document.title='read '+t.length).catch(e=>document.title='blocked');</script>"
    );
    let page_thread = std::thread::spawn(move || {
        for stream in listener.incoming().take(2).flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 2048];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    browser.post(
        "/url",
        &json!({ "url": format!("http://localhost:{other}/") }),
    );
    let title = wait_for(
        browser,
        "return document.title !== 'other' && document.title",
        "the other site's fetch",
    );
    assert_eq!(title, json!("blocked"), "the other site read nothing");
    // Refused by the server, not only unread by the browser.
    served.wait_said(&format!(
        "refused GET /api/sessions: Origin \"http://localhost:{other}\""
    ));
    drop(page_thread);
}

fn save(browser: &Browser, name: &str) {
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&shot, browser.screenshot()).unwrap();
    eprintln!("screenshot: {}", shot.display());
}

#[test]
fn serve_on_sled_lists_searches_shows_a_step_and_follows_a_live_session() {
    let dir = TempDir::created("serve-sled");
    let db = dir.join("store");
    scenario(db.to_str().unwrap(), dir.path(), "serve-sled");
}

#[test]
fn serve_on_postgres_lists_searches_shows_a_step_and_follows_a_live_session() {
    let Some(pg) = PgDatabase::create("cli_serve") else {
        return;
    };
    let dir = TempDir::created("serve-pg");
    scenario(pg.url(), dir.path(), "serve-postgres");
}
