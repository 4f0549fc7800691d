//! What the server answers with: every response carries the same guards
//! (a Content-Security-Policy that allows only the server's own scripts,
//! no sniffing, no framing, no referrer, nothing cached, no CORS header
//! ever), built in one place.

use std::io::Cursor;
use tiny_http::{Header, Response, StatusCode};

/// A response with a body held in memory.
pub(crate) type Reply = Response<Cursor<Vec<u8>>>;

/// The policy of every page: scripts only from this server (so nothing a
/// recording holds can run, even if it reached the markup), styles from
/// the page itself, data only from this server, no frames, no forms
/// elsewhere.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
form-action 'self'; frame-ancestors 'none'";

/// The guards every response carries (the event stream included).
pub(crate) const GUARDS: [(&str, &str); 7] = [
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
];

/// A header; `None` when `value` cannot be one (not visible ASCII).
fn header(name: &str, value: &str) -> Option<Header> {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

/// `body` as `content_type`, with status `status` and the guards.
pub(crate) fn bytes(status: u16, content_type: &str, body: Vec<u8>) -> Reply {
    let mut r = Response::from_data(body).with_status_code(StatusCode(status));
    for (n, v) in GUARDS
        .iter()
        .copied()
        .chain([("Content-Type", content_type)])
    {
        if let Some(h) = header(n, v) {
            r.add_header(h);
        }
    }
    r
}

/// A JSON document.
pub(crate) fn json(status: u16, value: &serde_json::Value) -> Reply {
    bytes(status, "application/json", value.to_string().into_bytes())
}

/// Plain text for a person (a refusal, a page that is not there).
pub(crate) fn text(status: u16, words: &str) -> Reply {
    bytes(
        status,
        "text/plain; charset=utf-8",
        words.as_bytes().to_vec(),
    )
}

/// An error as JSON (`ok: false` and what went wrong) for the page's
/// script.
pub(crate) fn error(status: u16, why: &str) -> Reply {
    json(status, &serde_json::json!({ "ok": false, "error": why }))
}

/// A redirect to `location` (a path of this server) that sets `cookie`.
pub(crate) fn remember(location: &str, cookie: &str) -> Reply {
    let mut r = bytes(303, "text/plain; charset=utf-8", Vec::new());
    // A path that is not a header value (it came from the request) is
    // replaced by the start page.
    r.add_header(
        header("Location", location)
            .unwrap_or_else(|| header("Location", "/").expect("a constant header")),
    );
    if let Some(h) = header("Set-Cookie", cookie) {
        r.add_header(h);
    }
    r
}

/// The head of the event stream, written by hand: the stream is the
/// connection's to keep, and every event is flushed as it is written.
pub(crate) fn event_stream_head() -> String {
    let mut head =
        String::from("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n");
    for (n, v) in GUARDS {
        head.push_str(n);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}
