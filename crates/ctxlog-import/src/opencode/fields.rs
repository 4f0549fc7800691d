//! What ctxlog does not model of an export's objects: the fields each
//! object's events carry, and the rest kept as source fields
//! (`SourceFields`), so that an export gives the object back as it came.

use super::Importer;
use crate::ImportError;
use ctxlog_core::{PartId, SourceTarget};
use serde_json::{Map, Value};

/// What ctxlog models of a user message's `info` (see [`unmodelled`]).
pub(super) const USER_INFO: &[&str] = &[
    "id",
    "sessionID",
    "role",
    "time.created",
    "agent",
    "model.providerID",
    "model.modelID",
];
/// What ctxlog models of an assistant message's `info`.
pub(super) const ASSISTANT_INFO: &[&str] = &[
    "id",
    "sessionID",
    "role",
    "time.created",
    "agent",
    "modelID",
    "providerID",
    "parentID",
    "summary",
];
/// What ctxlog models of every part (its id only where it keeps the source
/// id: parts written by `StepFinished`, `SummaryCompleted` and
/// `CompactionRequested` get ids of their own, so theirs is kept here).
const PART: &[&str] = &["sessionID", "messageID", "type"];

/// What ctxlog models of a part of `kind`, besides [`PART`] and its id.
pub(super) fn part_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "text" => &["text", "synthetic", "time.start", "time.end"],
        "reasoning" => &["text", "time.start", "time.end"],
        "file" => &["mime", "filename", "url"],
        "step-start" => &["snapshot"],
        "step-finish" => &["reason", "tokens", "cost"],
        "compaction" => &["auto", "overflow", "tail_start_id"],
        "tool" => &[
            "tool",
            "callID",
            "state.status",
            "state.input",
            "state.output",
            "state.title",
            "state.metadata",
            "state.time.start",
            "state.time.end",
            "state.time.compacted",
            "state.attachments",
            "state.error",
            "state.raw",
        ],
        _ => &[],
    }
}

/// `v` without the `modelled` paths (`a.b` is key `b` of object `a`) and
/// without the objects that left empty: the fields ctxlog does not model,
/// `None` when there are none.
fn unmodelled(v: &Value, modelled: &[&str]) -> Option<Value> {
    let mut rest = v.clone();
    for path in modelled {
        remove_path(&mut rest, path);
    }
    match &rest {
        Value::Object(m) if !m.is_empty() => Some(rest),
        _ => None,
    }
}

fn remove_path(v: &mut Value, path: &str) {
    let Value::Object(m) = v else {
        return;
    };
    match path.split_once('.') {
        None => {
            m.remove(path);
        }
        Some((head, rest)) => {
            if let Some(child) = m.get_mut(head) {
                remove_path(child, rest);
                if child.as_object().is_some_and(Map::is_empty) {
                    m.remove(head);
                }
            }
        }
    }
}

impl Importer<'_> {
    /// Keeps the fields of `source` that ctxlog does not model besides
    /// `modelled` (a [`ctxlog_core::Event::SourceFields`] for `target`), if
    /// there are any.
    pub(super) fn keep_source(
        &mut self,
        _at: u64,
        target: SourceTarget,
        source: &Value,
        modelled: &[&str],
    ) -> Result<(), ImportError> {
        if let Some(fields) = unmodelled(source, modelled) {
            self.b.keep_source("opencode", target, fields);
        }
        Ok(())
    }

    /// Keeps what ctxlog does not model of part `p` (besides `fields`),
    /// created as `part`; `kept_id` when the part's event carries the source
    /// id.
    pub(super) fn keep_part(
        &mut self,
        at: u64,
        part: PartId,
        p: &Value,
        fields: &[&str],
        kept_id: bool,
    ) -> Result<(), ImportError> {
        let mut modelled: Vec<&str> = PART.to_vec();
        modelled.extend_from_slice(fields);
        if kept_id {
            modelled.push("id");
        }
        self.keep_source(at, SourceTarget::Part(part), p, &modelled)
    }
}
