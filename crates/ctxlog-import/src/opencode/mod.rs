//! OpenCode `opencode export` JSON (`session-formats.md` §1,
//! `opencode-behavior.md` §2.3).
//!
//! Streaming: the top-level object is read with a serde visitor that takes
//! one message (`{info, parts}`) at a time, so only one message's tree is in
//! memory. `info` may come before or after `messages`.
//!
//! - A user message with a `compaction` part is a compaction marker
//!   (`CompactionRequested`, `auto` and `overflow` kept; `tail_start_id`
//!   becomes the job's tail start).
//! - An assistant message with `summary: true` whose `parentID` is a marker
//!   is that job's summary: `CompactionStarted`, its text and reasoning
//!   parts, then `SummaryCompleted` when it has a `finish` and no `error`,
//!   `CompactionFailed` when it has an `error`; with neither it stays
//!   running (interrupted), as in OpenCode.
//! - Other assistant messages: their parts in order; each `step-finish`
//!   becomes `StepFinished` (a message with a `finish` but no step-finish
//!   part gets one from its `info.tokens`); `error` becomes `MessageErrored`.
//! - Tool parts keep their state (`pending`, `running`, `completed`,
//!   `error`). A completed part with `state.time.compacted` was pruned:
//!   `PartsPruned` events (policy `imported`, one per distinct time) are
//!   placed before the first later message created after that time.
//! - `file` parts become attachments; `patch`, `agent`, `subtask`, `retry`,
//!   `snapshot` and any other type are kept verbatim (`PartBody::Other`).
//! - A user message whose text parts are all `synthetic` (the continue
//!   message) is synthetic. Source ids are OpenCode's message, part and call
//!   ids; errors name the JSON path (`messages[3].parts[1].state`).
//!
//! Files: this one holds the importer's state and reads the export message
//! by message; `messages` maps user and assistant messages, `parts` their
//! parts, `tool` tool parts and their states, `compaction` markers,
//! summaries and pruned marks, `fields` keeps what ctxlog does not model,
//! and `values` reads OpenCode's values (tokens, costs, strings).

mod compaction;
mod fields;
mod messages;
mod parts;
mod tool;
mod values;

pub use crate::opencode_names::{finish_from, finish_name};
pub use values::tokens_from;

use crate::build::Builder;
use crate::strict;
use crate::{Bounded, Format, ImportError, ImportOptions, Imported};
use ctxlog_core::{MessageId, PartId, SourceTarget, TokenUsage};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::io::BufRead;
use values::{cost_micros, str_at};

struct Marker {
    tail: Option<MessageId>,
}

struct Importer<'a> {
    b: Builder<'a>,
    info: Option<Value>,
    /// OpenCode message id → ctxlog message id.
    ids: BTreeMap<String, MessageId>,
    /// Every message id read, with where it was.
    message_paths: BTreeMap<String, String>,
    /// Every part id read, with where it was.
    part_paths: BTreeMap<String, String>,
    /// Whether the export had its `messages` array.
    has_messages: bool,
    /// The summed `cost` of the assistant messages (OpenCode's session
    /// total is that sum), micro-dollars.
    message_cost: Option<u64>,
    /// Bytes read since the last message (see [`Bounded`]).
    message_bytes: Option<std::rc::Rc<std::cell::Cell<u64>>>,
    /// Marker (job) → what its compaction part said.
    markers: BTreeMap<MessageId, Marker>,
    /// Pruned parts waiting to be placed: (time, part, tokens).
    prunes: Vec<(u64, PartId, u64)>,
    failed: Option<ImportError>,
}

impl<'a> Importer<'a> {
    fn err(&self, path: String, m: impl Into<String>) -> ImportError {
        let mut e = self.b.err(m);
        e.path = Some(path);
        e
    }

    /// The count or time at `pointer` of `v` (the object at `path`,
    /// made only for an error).
    fn count(
        &self,
        v: &Value,
        pointer: &str,
        path: impl FnOnce() -> String,
    ) -> Result<Option<u64>, ImportError> {
        strict::count_at(v, pointer).map_err(|e| self.err(path(), e))
    }

    /// The `tokens` and `cost` of `v` (the object at `path`).
    fn usage(&self, v: &Value, path: &str) -> Result<(TokenUsage, Option<u64>), ImportError> {
        let tokens = match v.get("tokens") {
            None | Some(Value::Null) => TokenUsage::default(),
            Some(t) => tokens_from(t).map_err(|e| self.err(path.to_owned(), e))?,
        };
        let cost = cost_micros(v.get("cost")).map_err(|e| self.err(path.to_owned(), e))?;
        Ok((tokens, cost))
    }

    fn start(&mut self, fallback: Option<&str>, at: u64) -> Result<(), ImportError> {
        if self.b.started() {
            return Ok(());
        }
        let info = self.info.clone();
        let id = info
            .as_ref()
            .and_then(|i| str_at(i, "id"))
            .or(fallback)
            .ok_or_else(|| self.err("info.id".into(), "missing: no session id"))?
            .to_owned();
        let created = match &info {
            Some(i) => self.count(i, "/time/created", || "info".into())?,
            None => None,
        }
        .unwrap_or(at);
        // The title is a description (OpenCode generates it after the first
        // prompt): it is recorded with the others, never in `SessionStarted`,
        // whose bytes must not change as the session grows.
        let version = info.as_ref().and_then(|i| str_at(i, "version"));
        let policy = self.b.policy_for(version);
        self.b.start(&id, created, None, policy)
    }

    /// [`Importer::message`], its error kept for the caller and turned into
    /// a deserializer error that stops the read.
    fn message_or_fail<E: serde::de::Error>(&mut self, index: usize, v: Value) -> Result<(), E> {
        self.b.at.path = Some(format!("messages[{index}]"));
        self.message(index, v).map_err(|e| {
            self.failed = Some(e);
            E::custom("import failed")
        })
    }

    /// Records what the export's `info` says of the session (its title,
    /// directory, writer, model and cost) and keeps what ctxlog does not
    /// model of it.
    fn describe(&mut self, info: &Value) -> Result<(), ImportError> {
        let at = self.b.time(None);
        let text = |k: &str| str_at(info, k).map(str::to_owned);
        self.b.about.title = text("title");
        self.b.about.directory = text("directory");
        self.b.about.agent = Some(match text("version") {
            Some(v) => format!("opencode-{v}"),
            None => "opencode".into(),
        });
        if let (Some(provider), Some(model)) = (
            info.pointer("/model/providerID").and_then(Value::as_str),
            info.pointer("/model/id").and_then(Value::as_str),
        ) {
            self.b.about.model = Some(format!("{provider}/{model}"));
        }
        self.b.about.cost_usd = strict::amount_value(info.get("cost"), "cost")
            .map_err(|e| self.err("info.cost".into(), e))?
            .or(self.message_cost.map(|c| c as f64 / 1_000_000.0));
        self.keep_source(
            at,
            SourceTarget::Session,
            info,
            &["id", "title", "time.created"],
        )
    }
}

struct Top<'i, 'a>(&'i mut Importer<'a>);
struct Messages<'i, 'a>(&'i mut Importer<'a>);

impl<'de> DeserializeSeed<'de> for Top<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OpenCode export object {info, messages}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "info" => {
                    let info: Value = map.next_value()?;
                    if !info.is_object() {
                        return Err(serde::de::Error::custom("`info` is not an object"));
                    }
                    self.0.info = Some(info);
                }
                "messages" if self.0.has_messages => {
                    return Err(serde::de::Error::custom("a second `messages` key"));
                }
                "messages" => {
                    self.0.has_messages = true;
                    map.next_value_seed(Messages(&mut *self.0))?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Messages<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Messages<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of messages")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        // Each message is imported once the next one is read: the last one
        // of a session OpenCode is still writing may not be finished.
        let mut held: Option<(usize, Value)> = None;
        loop {
            self.0.b.at.path = Some(format!("messages[{i}]"));
            let Some(v) = seq.next_element::<Value>()? else {
                break;
            };
            // The limit holds per message, not for the whole export.
            if let Some(used) = &self.0.message_bytes {
                used.set(0);
            }
            if let Some((n, m)) = held.replace((i, v)) {
                self.0.message_or_fail(n, m)?;
            }
            i += 1;
        }
        if let Some((n, m)) = held {
            match still_written(&m) {
                Some(why) => self.0.b.step_waits(&format!("messages[{n}] {why}")),
                None => self.0.message_or_fail(n, m)?,
            }
        }
        self.0.b.at.path = None;
        Ok(())
    }
}

/// Why the last message of a session OpenCode may still be writing is not
/// finished: a user message with nothing after it yet (OpenCode writes a
/// message's row before its parts, a compaction marker's part included, and
/// starts the reply only once they are written), an assistant message
/// without `time.completed`, or one with a tool call that has no result yet.
fn still_written(message: &Value) -> Option<&'static str> {
    if message.pointer("/info/role").and_then(Value::as_str) != Some("assistant") {
        return Some("has nothing after it yet (its parts may still be written)");
    }
    if message.pointer("/info/time/completed").is_none() {
        return Some("is not completed yet");
    }
    let open_call = message
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|p| {
            p.get("type").and_then(Value::as_str) == Some("tool")
                && matches!(
                    p.pointer("/state/status").and_then(Value::as_str),
                    Some("pending" | "running")
                )
        });
    open_call.then_some("has a tool call without its result")
}

/// Imports an OpenCode export read from `reader`; `file` names it in errors.
pub fn import<R: BufRead>(
    reader: R,
    file: &str,
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    let mut im = Importer {
        b: Builder::new(file, Format::OpenCode, options),
        info: None,
        ids: BTreeMap::new(),
        message_paths: BTreeMap::new(),
        part_paths: BTreeMap::new(),
        has_messages: false,
        message_cost: None,
        message_bytes: None,
        markers: BTreeMap::new(),
        prunes: Vec::new(),
        failed: None,
    };
    // A byte-order mark before the document is not part of it.
    let mut reader = reader;
    if reader
        .fill_buf()
        .is_ok_and(|head| head.starts_with(b"\xef\xbb\xbf"))
    {
        reader.consume(3);
    }
    let (reader, used) = Bounded::new(reader, options.max_line_bytes);
    im.message_bytes = Some(used);
    // serde_json reads a byte at a time, which std answers from the buffer
    // only when the reader is a `BufReader`: the bound goes under one
    // (it then counts what the buffer takes in, in chunks of at most a
    // sixteenth of the limit, so a message is refused once it is longer
    // than the limit and accepted up to a sixteenth beyond it).
    let chunk = (options.max_line_bytes / 16).clamp(1, 64 << 10);
    let reader = std::io::BufReader::with_capacity(chunk as usize, reader);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let parsed = Top(&mut im).deserialize(&mut de).and_then(|()| de.end());
    if let Some(e) = im.failed.take() {
        return Err(e);
    }
    if let Err(e) = parsed {
        let mut err = im.b.err(format!("not a valid OpenCode export: {e}"));
        err.line = e.line() as u64;
        return Err(err);
    }
    im.b.at.path = None;
    if !im.has_messages {
        return Err(im.err(
            "messages".into(),
            "missing: an OpenCode export has a `messages` array (an empty session has `[]`)",
        ));
    }
    if im.info.is_none() {
        return Err(im.err(
            "info".into(),
            "missing: an OpenCode export has an `info` object (the session's id, title, \
             directory and version); nothing was imported",
        ));
    }
    if !im.b.started() {
        // An export with no messages: the session still exists.
        im.start(None, 0)?;
    }
    im.flush_prunes(None)?;
    if let Some(info) = im.info.take() {
        im.describe(&info)?;
    }
    im.b.finish()
}
