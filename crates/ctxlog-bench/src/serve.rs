//! `ctxlog serve` on big stores ([`bench_serve`]): a store of many
//! sessions and one of a single session of ten thousand steps (at full
//! size), each served by the real `ctxlog serve`; how long the list takes
//! to be read, how long a page of it and a session's page take to answer
//! (first and kept), against the command line making the same (`sessions
//! --json`, `report`) in the same run; the server's peak memory; and, when
//! Chromium is installed, how long each page takes to open in it.

use crate::measure::{median, Scratch};
use crate::memory::{ctxlog_args, only_session, RunCtxlog};
use crate::report::Report;
use crate::sizes::Sizes;
use crate::{failed, BenchError};
use ctxlog_testkit::browser::Browser;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server is given to read its store's list.
const READY_WAIT: Duration = Duration::from_secs(300);

/// `ctxlog serve` on a store, stopped when dropped.
struct Served {
    child: Child,
    base: String,
    cookie: String,
    url: String,
}

impl Served {
    /// Starts this binary's `serve` on `db` (the bench runs inside `ctxlog
    /// bench`, whose binary is `ctxlog`) and reads the address it prints.
    fn start(db: &Path) -> Result<Served, BenchError> {
        let exe = std::env::current_exe().map_err(|e| failed("serve: the binary")(&e))?;
        let mut child = Command::new(exe)
            .args(ctxlog_args(db, &[&"serve"]))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| failed("serve: start")(&e))?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            BufReader::new(out)
                .read_line(&mut line)
                .map_err(|e| failed("serve: its address")(&e))?;
        }
        let url = line.trim().to_owned();
        let Some((base, token)) = url.split_once("/?token=") else {
            let _ = child.kill();
            return Err(BenchError::Failed(format!(
                "bench: serve printed {url:?}, not an address"
            )));
        };
        let port = base.rsplit(':').next().unwrap_or("");
        Ok(Served {
            cookie: format!("ctxlog-serve-{port}={token}"),
            base: base.to_owned(),
            url: url.clone(),
            child,
        })
    }

    /// GETs `path`; its body, and how long the answer took in seconds.
    fn get(&self, path: &str) -> Result<(String, f64), BenchError> {
        let started = Instant::now();
        let body = ureq::get(&format!("{}{path}", self.base))
            .set("Cookie", &self.cookie)
            .call()
            .map_err(|e| failed("serve: a request")(&e))?
            .into_string()
            .map_err(|e| failed("serve: an answer")(&e))?;
        Ok((body, started.elapsed().as_secs_f64()))
    }

    /// Seconds from now until the server has read every session's line.
    fn until_listed(&self) -> Result<f64, BenchError> {
        let started = Instant::now();
        loop {
            let (body, _) = self.get("/api/sessions?limit=1")?;
            let doc: Value = serde_json::from_str(&body).map_err(|e| failed("serve: JSON")(&e))?;
            if doc["complete"] == json!(true) {
                return Ok(started.elapsed().as_secs_f64());
            }
            if started.elapsed() > READY_WAIT {
                return Err(BenchError::Failed(
                    "bench: serve never finished reading the list".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's peak resident memory so far, in bytes.
    fn peak_rss(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let kb = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse::<u64>()
            .ok()?;
        Some(kb * 1024)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Seconds Chromium takes to open `url` until `ready` (a script) is true.
fn open_in(browser: &Browser, url: &str, ready: &str) -> Result<f64, BenchError> {
    let started = Instant::now();
    browser.post("/url", &json!({ "url": url }));
    while browser.eval(ready) != json!(true) {
        if started.elapsed() > Duration::from_secs(60) {
            return Err(BenchError::Failed(format!("bench: {url} never opened")));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Stage 14: `serve` over a store of `z.serve_sessions` sessions and one of
/// a session of `z.serve_long_events` events.
pub fn bench_serve(z: &Sizes, r: &mut Report, run: RunCtxlog<'_>) -> Result<(), BenchError> {
    let dir = Scratch::new("serve");
    let (many, long) = (dir.path().join("many"), dir.path().join("long"));
    let (n, e, le) = (
        z.serve_sessions.to_string(),
        z.serve_session_events.to_string(),
        z.serve_long_events.to_string(),
    );
    let stress = |db: &Path, args: [&str; 6]| {
        let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"stress", &"--seed", &"5"];
        a.extend(args.iter().map(|s| s as &dyn AsRef<std::ffi::OsStr>));
        run(&ctxlog_args(db, &a))
    };
    stress(&many, ["--sessions", &n, "--events", &e, "--batch", &e])?;
    stress(
        &long,
        ["--sessions", "1", "--events", &le, "--batch", "2000"],
    )?;
    // Indexed before: the servers' first catch-up would share the cores
    // with what is timed.
    run(&ctxlog_args(&many, &[&"index"]))?;
    run(&ctxlog_args(&long, &[&"index"]))?;
    let id = only_session(&long)?.to_string();
    // Let sled release its lock before the store is opened again.
    std::thread::sleep(Duration::from_millis(100));
    let sessions_cmd = run(&ctxlog_args(&many, &[&"--json", &"sessions"]))?;
    let page_file = dir.path().join("long.html");
    let report_cmd = run(&ctxlog_args(&long, &[&"report", &id, &"--out", &page_file]))?;
    let browser = Browser::start();
    serve_list(z, r, &many, sessions_cmd.seconds, browser.as_ref())?;
    serve_page(z, r, &long, &id, report_cmd.seconds, browser.as_ref())
}

/// The list of the store at `db`: how long until it is read, a page of it
/// against `sessions --json` (`command` seconds), Chromium's open.
fn serve_list(
    z: &Sizes,
    r: &mut Report,
    db: &Path,
    command: f64,
    browser: Option<&Browser>,
) -> Result<(), BenchError> {
    let served = Served::start(db)?;
    r.set_figure("serve_list_ready_seconds", json!(served.until_listed()?));
    let list: Vec<f64> = (0..z.runs.max(5))
        .map(|_| served.get("/api/sessions?limit=100").map(|(_, s)| s))
        .collect::<Result<_, _>>()?;
    let list = median(list)?;
    r.set_figure("serve_list_seconds", json!(list));
    r.set_ratio("serve_list_vs_sessions", list / command.max(1e-9));
    if let Some(b) = browser {
        let rows = "return document.querySelectorAll('#rows tr').length > 0";
        open_in(b, &served.url, rows)?;
        let opened = open_in(b, &format!("{}/", served.base), rows)?;
        r.set_ratio("serve_list_open_vs_1s", opened);
    }
    r.set_figure("serve_rss_list_bytes", json!(served.peak_rss()));
    Ok(())
}

/// The page of session `id` of the store at `db`: first and kept, against
/// `report` (`command` seconds), Chromium's open.
fn serve_page(
    z: &Sizes,
    r: &mut Report,
    db: &Path,
    id: &str,
    command: f64,
    browser: Option<&Browser>,
) -> Result<(), BenchError> {
    let served = Served::start(db)?;
    served.until_listed()?;
    let path = format!("/s/{id}");
    let (page, cold) = served.get(&path)?;
    let kept: Vec<f64> = (0..z.runs)
        .map(|_| served.get(&path).map(|(_, s)| s))
        .collect::<Result<_, _>>()?;
    let kept = median(kept)?;
    r.set_figure("serve_page_bytes", json!(page.len()));
    r.set_figure("serve_page_first_seconds", json!(cold));
    r.set_figure("serve_page_kept_seconds", json!(kept));
    r.set_ratio("serve_page_first_vs_report", cold / command.max(1e-9));
    if let Some(b) = browser {
        open_in(b, &served.url, "return document.readyState === 'complete'")?;
        let ready = "return !!document.getElementById('where') && document.getElementById('where').textContent.length > 0";
        let opened = open_in(b, &format!("{}{path}", served.base), ready)?;
        r.set_ratio("serve_page_open_vs_1s", opened);
    }
    r.set_figure("serve_rss_page_bytes", json!(served.peak_rss()));
    Ok(())
}
