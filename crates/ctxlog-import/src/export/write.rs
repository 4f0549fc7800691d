//! The export written: the session's `info` with OpenCode's totals, then
//! its messages one by one.

use super::doc::Doc;
use super::error::ExportError;
use super::fold::fold;
use super::ids::assign_ids;
use super::values::{js_number, with_source};
use crate::json::merge;
use ctxlog_core::{Contents, Envelope, ModelRef, Role};
use serde_json::{json, Value};
use std::io::Write;

/// Writes the session whose events are `events` (seq 1 onwards) to `out`.
pub fn opencode<W: Write>(events: &[Envelope], out: W) -> Result<(), ExportError> {
    opencode_streamed(events.iter().map(Ok), events, out).map(|_| ())
}

/// Writes a session to `out` reading its events once, in order (seq 1
/// onwards), and each sealed part's content back from `contents` (the
/// session's log, e.g. `ctxlog_store::SessionContents`): memory holds the
/// session's state, never all of its events. Returns the number of events
/// read.
pub fn opencode_streamed<B, L, W>(
    events: impl IntoIterator<Item = Result<B, ExportError>>,
    contents: &L,
    mut out: W,
) -> Result<u64, ExportError>
where
    B: std::borrow::Borrow<Envelope>,
    L: Contents + ?Sized,
    W: Write,
{
    let (state, extra, updated) = fold(events)?;
    let session = state.session.ok_or(ExportError::Empty)?;
    let (sid, msg_ids, part_ids) = assign_ids(&state, session, &extra.source);
    let slug: String = sid.chars().skip(4).take(8).collect();
    let about = state.about.as_ref();
    let info = json!({
        "id": sid,
        "slug": format!("ctxlog-{slug}"),
        "projectID": "global",
        "directory": about.and_then(|a| a.directory.clone()).unwrap_or_default(),
        "title": state.title.clone().unwrap_or_default(),
        "version": concat!("ctxlog-", env!("CARGO_PKG_VERSION")),
        "time": {"created": state.started_at, "updated": updated},
    });
    let model = state
        .messages
        .iter()
        .find_map(|m| m.model.as_deref().cloned())
        .unwrap_or_else(|| ModelRef {
            provider: UNKNOWN.into(),
            model: UNKNOWN.into(),
        });
    let doc = Doc {
        model,
        log: contents,
        state: &state,
        extra: &extra,
        sid: &sid,
        msg_ids: &msg_ids,
        part_ids: &part_ids,
    };
    // OpenCode's session totals: the sums over its assistant messages.
    let mut totals = Totals::default();
    for m in state.messages.iter().filter(|m| m.role == Role::Assistant) {
        totals.add(&doc.info_json(m));
    }
    // The recording's own total, when it gave one.
    if let Some(cost) = about.and_then(|a| a.cost_usd) {
        totals.cost = cost;
    }
    let info = totals.written_into(info, extra.source.session.as_ref());
    out.write_all(b"{\"info\":")?;
    serde_json::to_writer(&mut out, &info)?;
    out.write_all(b",\"messages\":[")?;
    for (i, m) in state.messages.iter().enumerate() {
        if i > 0 {
            out.write_all(b",\n")?;
        } else {
            out.write_all(b"\n")?;
        }
        serde_json::to_writer(&mut out, &doc.message_json(m)?)?;
    }
    out.write_all(b"\n]}\n")?;
    out.flush()?;
    Ok(state.head)
}

/// The session's `cost` and `tokens` as OpenCode keeps them: the sums over
/// its assistant messages.
#[derive(Default)]
struct Totals {
    cost: f64,
    tokens: [u64; 5],
}

/// The token fields OpenCode sums, as paths in a `tokens` object.
const TOKEN_FIELDS: [&str; 5] = [
    "/input",
    "/output",
    "/reasoning",
    "/cache/read",
    "/cache/write",
];

impl Totals {
    /// Adds an exported assistant message's `info`.
    fn add(&mut self, info: &Value) {
        self.cost += info["cost"].as_f64().unwrap_or(0.0);
        for (sum, path) in self.tokens.iter_mut().zip(TOKEN_FIELDS) {
            *sum += info["tokens"]
                .pointer(path)
                .and_then(Value::as_u64)
                .unwrap_or(0);
        }
    }

    /// The session's `info` with the totals, and what the source kept of it
    /// (its own totals among them) over both.
    fn written_into(&self, info: Value, kept: Option<&Value>) -> Value {
        let [input, output, reasoning, read, write] = self.tokens;
        let totals = json!({
            "cost": js_number(self.cost),
            "tokens": {
                "input": input,
                "output": output,
                "reasoning": reasoning,
                "cache": {"read": read, "write": write},
            },
        });
        let mut merged = info;
        merge(&mut merged, totals);
        with_source(merged, kept)
    }
}

/// The provider and model ids of a session that records no model.
const UNKNOWN: &str = "unknown";
