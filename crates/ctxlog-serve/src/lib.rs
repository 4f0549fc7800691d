//! ctxlog-serve: `ctxlog serve`, every session of a store in the browser,
//! live, for the user who runs it. The list of sessions (the columns of
//! `ctxlog sessions`), search over every session, each session's page (the
//! report's page: its curve, compactions and prunes, the window at any
//! step, its audit) and the usage rollup; a page updates while an agent
//! writes, with no reload.
//!
//! It is a front door: every view is a use case of `ctxlog-app` or the
//! report's page, and it only reads (the search index it keeps up to date
//! is derived). Only the user who runs it is answered: loopback by
//! default, a secret token in the printed address (a cookie after the
//! first visit), `Host`, `Origin` and the browser's fetch site checked, no
//! CORS, and a Content-Security-Policy that runs no script but the
//! server's own files.
//!
//! Synchronous, like the store: `tiny_http` accepts, a few workers answer,
//! one thread watches the log, and each open event stream has a thread.
//!
//! Files:
//! - `admit.rs`: Who may ask: method, `Host`, `Origin`, fetch site, token
//!   and cookie, decided in one pure function.
//! - `api.rs`: The page's data as JSON: the list, search, audit, usage.
//! - `assets.rs`: The list page, its script and style, and the session
//!   page's banner and live script (`assets/`).
//! - `live.rs`: The kept list, read again as heads move, and the event
//!   streams that tell open pages.
//! - `pages.rs`: Session pages, made once per head and kept; an open one
//!   made again as soon as its head moves.
//! - `reply.rs`: Responses, each with the same guards.
//! - `routes.rs`: Which answer a path gets.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admit;
mod api;
mod assets;
mod live;
mod pages;
mod reply;
mod routes;

use ctxlog_app::dates::Zone;
use ctxlog_app::logs::AnyLog;
use ctxlog_app::pricing::PriceTable;
use ctxlog_app::search_index::{self, Index};
use ctxlog_app::usage::GroupBy;
use ctxlog_search::{Found, SearchError, SearchRequest};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};

/// Workers answering requests at once (an event stream takes none).
const WORKERS: usize = 4;

/// Requests waiting for a worker before more are answered 503.
const QUEUE: usize = 64;

/// What the server is told when it starts.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where to listen (loopback unless told otherwise; port 0: a free
    /// one).
    pub listen: SocketAddr,
    /// Recorded secrets shown replaced by markers.
    pub redact: bool,
    /// The zone days are counted in (usage).
    pub zone: Zone,
    /// The prices costs are estimated from (usage).
    pub prices: PriceTable,
}

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}: {why}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        why: String,
    },
    /// No secret could be made.
    #[error("cannot make the secret token (/dev/urandom): {0}")]
    Secret(std::io::Error),
}

/// What every request's answer reads.
pub(crate) struct Shared {
    log: AnyLog,
    index: Mutex<Index>,
    live: live::Live,
    pages: Mutex<pages::PageCache>,
    /// The last usage rollup: the list's version it was made at, its
    /// grouping, and the answer.
    usage: Mutex<Option<(u64, GroupBy, serde_json::Value)>>,
    gate: admit::Gate,
    redact: bool,
    zone: Zone,
    prices: PriceTable,
}

impl Shared {
    /// The kept session pages.
    fn pages(&self) -> std::sync::MutexGuard<'_, pages::PageCache> {
        self.pages.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The usage rollup grouped `by` made at the list's `version`, when
    /// kept.
    fn kept_usage(&self, version: u64, by: GroupBy) -> Option<serde_json::Value> {
        let kept = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
        kept.as_ref()
            .filter(|(v, b, _)| *v == version && *b == by)
            .map(|(_, _, doc)| doc.clone())
    }

    /// Keeps the usage rollup grouped `by`, made at the list's `version`.
    fn keep_usage(&self, version: u64, by: GroupBy, doc: serde_json::Value) {
        *self.usage.lock().unwrap_or_else(PoisonError::into_inner) = Some((version, by, doc));
    }

    /// Brings the search index up to the log (a failure is logged: search
    /// says it when asked).
    fn bring_index_up(&self) {
        let index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = search_index::bring_up_to_date(&index, &self.log, &mut |_| {}) {
            tracing::warn!("ctxlog serve: the search index could not be brought up: {e}");
        }
    }

    /// Runs `request` on the index, brought up to the log first.
    fn search(&self, request: &SearchRequest) -> Result<Found, SearchError> {
        let index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        search_index::bring_up_to_date(&index, &self.log, &mut |_| {})?;
        ctxlog_search::search(&*index, &self.log, request)
    }
}

/// A server bound to its address, not yet answering.
pub struct Server {
    http: tiny_http::Server,
    shared: Arc<Shared>,
    url: String,
}

impl Server {
    /// Binds `settings.listen` over `log` and its search `index`.
    pub fn bind(log: AnyLog, index: Index, settings: Settings) -> Result<Server, ServeError> {
        let addr = settings.listen;
        let http = tiny_http::Server::http(addr).map_err(|e| ServeError::Listen {
            addr,
            why: e.to_string(),
        })?;
        let bound = http
            .server_addr()
            .to_ip()
            .ok_or_else(|| ServeError::Listen {
                addr,
                why: "not an IP address".into(),
            })?;
        let token = secret().map_err(ServeError::Secret)?;
        let gate = admit::Gate::new(
            token.clone(),
            bound.port(),
            host_names(bound.ip()),
            bound.ip().is_unspecified(),
        );
        let shown = match bound.ip() {
            ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) => ip.to_string(),
        };
        let url = format!("http://{shown}:{}/?token={token}", bound.port());
        let shared = Arc::new(Shared {
            log,
            index: Mutex::new(index),
            live: live::Live::default(),
            pages: Mutex::new(pages::PageCache::default()),
            usage: Mutex::new(None),
            gate,
            redact: settings.redact,
            zone: settings.zone,
            prices: settings.prices,
        });
        Ok(Server { http, shared, url })
    }

    /// The address to open, with the secret token.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Answers until the process ends.
    pub fn run(self) {
        let shared = self.shared;
        let watched = shared.clone();
        let _ = std::thread::Builder::new()
            .name("ctxlog-serve-watch".into())
            .spawn(move || live::Live::watch(&watched));
        let (tx, rx) = crossbeam_channel::bounded::<tiny_http::Request>(QUEUE);
        for n in 0..WORKERS {
            let rx = rx.clone();
            let shared = shared.clone();
            let _ = std::thread::Builder::new()
                .name(format!("ctxlog-serve-{n}"))
                .spawn(move || {
                    for request in rx {
                        // A bug in one answer costs that request (tiny_http
                        // answers 500 for a request dropped unanswered),
                        // never the worker.
                        let answer = std::panic::AssertUnwindSafe(|| {
                            routes::answer(&shared, request);
                        });
                        let _ = std::panic::catch_unwind(answer);
                    }
                });
        }
        for request in self.http.incoming_requests() {
            if let Err(crossbeam_channel::TrySendError::Full(request)) = tx.try_send(request) {
                let _ = request.respond(reply::error(503, "busy: try again"));
            }
        }
    }
}

/// The names a server listening on `ip` is reached by: loopback's, and
/// the address itself (on every address: any IP literal, see
/// [`admit::Gate::new`]).
fn host_names(ip: IpAddr) -> Vec<String> {
    let mut names = vec![
        "127.0.0.1".to_owned(),
        "localhost".to_owned(),
        "[::1]".to_owned(),
    ];
    if !ip.is_loopback() && !ip.is_unspecified() {
        names.push(match ip {
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) => ip.to_string(),
        });
    }
    names
}

/// 256 random bits from the system, in hex.
fn secret() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
