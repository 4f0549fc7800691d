//! Session pages, made once per head: a page is the report's page of the
//! session (a second or more for a session of ten thousand steps), so the
//! last pages made are kept, up to [`PAGE_CACHE_BYTES`], and the page of a
//! session someone has open is made again as soon as its head moves,
//! before the open pages are told to read it.

use crate::{assets, Shared};
use ctxlog_app::pages;
use ctxlog_core::SessionId;
use ctxlog_report::Chrome;
use ctxlog_store::EventLog;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The most bytes of pages kept (a page of 10,000 steps is ~9 MB, and
/// none is over ~20 MB: [`ctxlog_report::PAGE_TEXT_CHARS`]).
pub(crate) const PAGE_CACHE_BYTES: usize = 64 << 20;

/// A page made at a head.
#[derive(Debug, Clone)]
struct Kept {
    head: u64,
    page: Arc<Vec<u8>>,
    /// When it was last asked for (the cache's own count, not a clock).
    used: u64,
}

/// The pages kept, by session.
#[derive(Debug, Default)]
pub(crate) struct PageCache {
    kept: BTreeMap<SessionId, Kept>,
    bytes: usize,
    uses: u64,
}

impl PageCache {
    /// The page of `session` made at `head`, when kept.
    pub fn get(&mut self, session: SessionId, head: u64) -> Option<Arc<Vec<u8>>> {
        self.uses += 1;
        let uses = self.uses;
        let kept = self.kept.get_mut(&session).filter(|k| k.head == head)?;
        kept.used = uses;
        Some(kept.page.clone())
    }

    /// Keeps `page`, made at `head`, dropping the pages asked for longest
    /// ago past [`PAGE_CACHE_BYTES`].
    pub fn put(&mut self, session: SessionId, head: u64, page: Arc<Vec<u8>>) {
        self.uses += 1;
        let len = page.len();
        if let Some(old) = self.kept.insert(
            session,
            Kept {
                head,
                page,
                used: self.uses,
            },
        ) {
            self.bytes -= old.page.len();
        }
        self.bytes += len;
        while self.bytes > PAGE_CACHE_BYTES && self.kept.len() > 1 {
            let oldest = self
                .kept
                .iter()
                .filter(|(s, _)| **s != session)
                .min_by_key(|(_, k)| k.used)
                .map(|(s, _)| *s);
            let Some(oldest) = oldest else { break };
            if let Some(k) = self.kept.remove(&oldest) {
                self.bytes -= k.page.len();
            }
        }
    }

    /// Whether a page of `session` is kept (someone opened it).
    pub fn holds(&self, session: SessionId) -> bool {
        self.kept.contains_key(&session)
    }
}

/// The page of `session` at its head: kept, else made (and kept).
pub(crate) fn page(shared: &Shared, session: SessionId) -> Result<Arc<Vec<u8>>, String> {
    let head = shared.log.head(session).map_err(|e| e.to_string())?;
    if let Some(page) = shared.pages().get(session, head) {
        return Ok(page);
    }
    let page = Arc::new(make(shared, session, head)?);
    shared.pages().put(session, head, page.clone());
    Ok(page)
}

/// Makes the page of `session` again when someone has it open (its page
/// is kept), so that reading it after the heads event is quick.
pub(crate) fn remake_if_open(shared: &Shared, session: SessionId) {
    if shared.pages().holds(session) {
        if let Err(why) = page(shared, session) {
            tracing::warn!("ctxlog serve: the page of {session} could not be made: {why}");
        }
    }
}

/// Makes the page of `session`, whose head is `head`.
fn make(shared: &Shared, session: SessionId, head: u64) -> Result<Vec<u8>, String> {
    let banner = assets::banner(session, head);
    let chrome = Chrome::Served {
        banner: &banner,
        scripts: &["/assets/page.js", "/assets/live.js"],
    };
    let mut page = Vec::new();
    pages::write_report_with(&shared.log, &[session], shared.redact, chrome, &mut page)
        .map_err(|e| e.to_string())?;
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> SessionId {
        SessionId(uuid::Uuid::from_u128(n))
    }

    #[test]
    fn pages_are_kept_by_head_and_the_least_recently_asked_go_first() {
        let mut cache = PageCache::default();
        let big = PAGE_CACHE_BYTES / 3 + 1;
        cache.put(id(1), 10, Arc::new(vec![0; big]));
        cache.put(id(2), 20, Arc::new(vec![0; big]));
        assert!(
            cache.get(id(1), 11).is_none(),
            "another head is another page"
        );
        assert!(cache.get(id(1), 10).is_some());
        cache.put(id(3), 30, Arc::new(vec![0; big]));
        assert!(cache.holds(id(1)) && cache.holds(id(3)));
        assert!(!cache.holds(id(2)), "the page asked for longest ago went");
        assert!(cache.bytes <= PAGE_CACHE_BYTES);
        cache.put(id(1), 12, Arc::new(vec![0; 10]));
        assert_eq!(cache.bytes, big + 10);
    }
}
