//! Debian's headless Chromium driven through chromedriver (WebDriver over
//! HTTP on loopback), for the tests that render ctxlog's pages and
//! transcripts in a real browser, and the bench that times them. Without Chromium the tests skip with a
//! message, unless `CTXLOG_REQUIRE_BROWSER` is set (as `.ci/run` sets it).

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// chromedriver on a free loopback port and one browser session in it.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
}

impl Browser {
    /// `None` when Chromium or chromedriver is not installed (and the
    /// environment does not require them).
    pub fn start() -> Option<Browser> {
        if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
            assert!(
                std::env::var_os("CTXLOG_REQUIRE_BROWSER").is_none(),
                "{CHROMIUM} or {CHROMEDRIVER} is missing (apt-get install chromium chromium-driver)"
            );
            eprintln!("SKIPPED: {CHROMIUM} or {CHROMEDRIVER} is missing; .ci/run installs them");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while ureq::get(&format!("{base}/status")).call().is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not answer");
            std::thread::sleep(Duration::from_millis(50));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1200,1500"],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let mut b = Browser {
            driver,
            base,
            session: String::new(),
        };
        let created = b.post("/session", &caps);
        b.session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {created}"))
            .to_owned();
        Some(b)
    }

    fn url(&self, path: &str) -> String {
        if self.session.is_empty() {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        }
    }

    /// POSTs `body` to the WebDriver session's `path`; its answer.
    pub fn post(&self, path: &str, body: &Value) -> Value {
        let text = match ureq::post(&self.url(path))
            .set("Content-Type", "application/json")
            .send_string(&body.to_string())
        {
            Ok(r) => r.into_string().expect("a WebDriver answer"),
            Err(ureq::Error::Status(code, r)) => {
                panic!(
                    "WebDriver {path}: {code}: {}",
                    r.into_string().unwrap_or_default()
                )
            }
            Err(e) => panic!("WebDriver {path}: {e}"),
        };
        serde_json::from_str(&text).expect("WebDriver JSON")
    }

    /// GETs the WebDriver session's `path`; its answer.
    pub fn get(&self, path: &str) -> Value {
        let text = ureq::get(&self.url(path))
            .call()
            .unwrap_or_else(|e| panic!("WebDriver {path}: {e}"))
            .into_string()
            .expect("a WebDriver answer");
        serde_json::from_str(&text).expect("WebDriver JSON")
    }

    /// Runs `script` in the page; its return value.
    pub fn eval(&self, script: &str) -> Value {
        self.post("/execute/sync", &json!({"script": script, "args": []}))["value"].clone()
    }

    /// Clicks the first element matching `css`, as a user would.
    pub fn click(&self, css: &str) {
        let found = self.post("/element", &json!({"using": "css selector", "value": css}));
        let id = found["value"]
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned();
        self.post(&format!("/element/{id}/click"), &json!({}));
    }

    /// Runs `script` in the page with `args` (`arguments[0]`, ...); its return
    /// value.
    pub fn eval_with(&self, script: &str, args: &[Value]) -> Value {
        self.post("/execute/sync", &json!({"script": script, "args": args}))["value"].clone()
    }

    /// The browser's console entries since the last call.
    pub fn console(&self) -> Vec<Value> {
        self.post("/se/log", &json!({"type": "browser"}))["value"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The page as a PNG.
    pub fn screenshot(&self) -> Vec<u8> {
        let v = self.get("/screenshot");
        base64(v["value"].as_str().expect("a screenshot"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = ureq::delete(&self.url("")).call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Standard base64 (what WebDriver's screenshot is).
pub fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let bytes: Vec<u8> = text.bytes().filter(|&c| c != b'=' && c != b'\n').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c) << (18 - 6 * i);
        }
        let take = chunk.len() - 1;
        out.extend_from_slice(&n.to_be_bytes()[1..=take]);
    }
    out
}

#[cfg(test)]
#[test]
fn base64_decodes() {
    assert_eq!(base64("aGVsbG8="), b"hello");
    assert_eq!(base64("aGk="), b"hi");
    assert_eq!(base64("YWJj"), b"abc");
}
