//! Which answer a path gets, once admission let the request in: the list
//! page, the session pages, the assets, the JSON of `api.rs`, and the
//! event stream.

use crate::admit::{split_target, Admission, Asked};
use crate::reply::{self, Reply};
use crate::{api, assets, Shared};
use ctxlog_app::catalog;
use ctxlog_core::printable::one_line;
use std::io::Write;

/// Answers `request` (on a worker thread).
pub(crate) fn answer(shared: &Shared, request: tiny_http::Request) {
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|h| (h.field.as_str().to_string(), h.value.as_str().to_owned()))
        .collect();
    let method = request.method().as_str().to_owned();
    let target = request.url().to_owned();
    let (path, query) = split_target(&target);
    let asked = Asked {
        method: &method,
        target: &target,
        headers: &headers,
    };
    match shared.gate.admit(&asked) {
        Admission::Pass => {}
        Admission::Remember { location } => {
            let _ = request.respond(reply::remember(&location, &shared.gate.cookie()));
            return;
        }
        Admission::Refused(why) => {
            // The path only (a query may hold a wrong token), made inert
            // for the terminal as the rest of the words are; a closed
            // stderr is ignored.
            let _ = writeln!(
                std::io::stderr(),
                "ctxlog serve: refused {} {}: {}",
                one_line(&method),
                one_line(path),
                why.words()
            );
            let _ = request.respond(reply::text(why.status(), &why.words()));
            return;
        }
    }
    if path == "/events" {
        let writer = request.into_writer();
        if let Err(mut writer) = shared.live.open_stream(writer) {
            let _ = writer.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
        return;
    }
    let _ = request.respond(route(shared, path, query));
}

/// The answer to `path` with `query`.
fn route(shared: &Shared, path: &str, query: &str) -> Reply {
    match path {
        "/" => reply::bytes(200, assets::HTML, assets::INDEX_HTML.as_bytes().to_vec()),
        "/assets/page.js" => script(ctxlog_report::PAGE_SCRIPT),
        "/assets/app.js" => script(assets::APP_JS),
        "/assets/live.js" => script(assets::LIVE_JS),
        "/assets/serve.css" => reply::bytes(200, "text/css", assets::SERVE_CSS.as_bytes().to_vec()),
        "/api/sessions" => api::sessions(shared, query),
        "/api/search" => api::search(shared, query),
        "/api/audit" => api::audit(shared, query),
        "/api/usage" => api::usage(shared, query),
        p => match p.strip_prefix("/s/") {
            Some(name) => session_page(shared, name),
            None => reply::text(404, "no such page"),
        },
    }
}

fn script(text: &str) -> Reply {
    reply::bytes(200, "text/javascript", text.as_bytes().to_vec())
}

/// The page of the session `name` names (its id, a prefix of it, or the
/// recording's id): the report's page, linked to the server's scripts.
fn session_page(shared: &Shared, name: &str) -> Reply {
    let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
    let session = match catalog::resolve_session(&shared.log, &name) {
        Ok(s) => s,
        Err(e) => return reply::text(404, &e.to_string()),
    };
    match crate::pages::page(shared, session) {
        Ok(page) => reply::bytes(200, assets::HTML, page.to_vec()),
        Err(why) => reply::text(500, &why),
    }
}
