//! The server's own files (`assets/`): the list page and its script, the
//! style, and the session page's banner and live script. The session page
//! itself is the report's (`ctxlog_report::PAGE_SCRIPT` is served beside
//! these).

use ctxlog_core::SessionId;
use ctxlog_report::escape;

/// The content type of every page.
pub(crate) const HTML: &str = "text/html; charset=utf-8";

/// The list page: sessions, search, usage (filled by [`APP_JS`]).
pub(crate) const INDEX_HTML: &str = include_str!("../assets/index.html");

/// The list page's script.
pub(crate) const APP_JS: &str = include_str!("../assets/app.js");

/// The session page's script beside the report's: keeps it current.
pub(crate) const LIVE_JS: &str = include_str!("../assets/live.js");

/// The style of the list page and of the session page's banner.
pub(crate) const SERVE_CSS: &str = include_str!("../assets/serve.css");

/// The banner that opens a session's page: back to the list, a search
/// box, the session's line (filled by [`LIVE_JS`]) and its audit trail;
/// `head` is the seq the page was made at, which the live script compares
/// with the heads the server announces.
pub(crate) fn banner(session: SessionId, head: u64) -> String {
    let session = escape(&session.to_string());
    format!(
        r#"<link rel="stylesheet" href="/assets/serve.css"><nav id="serve-bar" data-session="{session}" data-head="{head}"><a href="/">← every session</a><form action="/" method="get"><input name="q" type="search" placeholder="search every session" autocomplete="off"></form><span id="serve-live" class="sub">connecting…</span></nav>
<p id="serve-info"></p><details id="audit-box"><summary>Audit trail <span id="audit-count" class="sub"></span></summary><ol id="audit-lines"></ol></details>
"#
    )
}
