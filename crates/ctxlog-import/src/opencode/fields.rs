//! What ctxlog does not model of an export's objects: the fields each
//! object's events carry, and the rest kept as source fields
//! (`SourceFields`), so that an export gives the object back as it came.

use super::Importer;
use crate::opencode_names::SENT_ROLE;
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
    SENT_ROLE,
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
    match without(v, modelled) {
        Value::Object(m) if !m.is_empty() => Some(Value::Object(m)),
        _ => None,
    }
}

/// A copy of `v` without `paths`, and without the objects a path led into
/// that are left empty. Only what is kept is copied: the modelled fields
/// (a tool's output among them) are never cloned.
fn without(v: &Value, paths: &[&str]) -> Value {
    let Value::Object(m) = v else {
        return v.clone();
    };
    // Each path as its first key and the rest, split once per object.
    let split: Vec<(&str, Option<&str>)> = paths
        .iter()
        .map(|p| match p.split_once('.') {
            Some((head, rest)) => (head, Some(rest)),
            None => (*p, None),
        })
        .collect();
    let mut kept = Map::new();
    for (key, child) in m {
        let mine = || split.iter().filter(|(head, _)| *head == key);
        if mine().any(|(_, rest)| rest.is_none()) {
            continue;
        }
        let inner: Vec<&str> = mine().filter_map(|(_, rest)| *rest).collect();
        if inner.is_empty() {
            kept.insert(key.clone(), child.clone());
            continue;
        }
        let rest = without(child, &inner);
        if !rest.as_object().is_some_and(Map::is_empty) {
            kept.insert(key.clone(), rest);
        }
    }
    Value::Object(kept)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// The first way it was done, the reference: the whole value cloned,
    /// then each path removed, then the objects a path left empty.
    fn cloned_then_removed(v: &Value, modelled: &[&str]) -> Option<Value> {
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
        let mut rest = v.clone();
        for path in modelled {
            remove_path(&mut rest, path);
        }
        match &rest {
            Value::Object(m) if !m.is_empty() => Some(rest),
            _ => None,
        }
    }

    #[test]
    fn what_is_left_of_a_tool_part() {
        let part = json!({
            "id": "p1", "type": "tool", "tool": "bash", "callID": "c",
            "state": {"status": "completed", "output": "long", "time": {"start": 1, "end": 2},
                      "extra": {"kept": true}},
            "empty": {},
            "a.b": 1,
        });
        let fields = [
            "id",
            "type",
            "tool",
            "callID",
            "state.status",
            "state.output",
            "state.time.start",
            "state.time.end",
            "empty.x",
            "a.b",
        ];
        assert_eq!(
            unmodelled(&part, &fields),
            Some(json!({"state": {"extra": {"kept": true}}, "a.b": 1}))
        );
        assert_eq!(unmodelled(&json!({"id": "p"}), &["id"]), None);
        assert_eq!(unmodelled(&json!("text"), &["id"]), None);
    }

    /// Values over a few keys (one with a dot in it), nested three deep.
    fn values() -> impl Strategy<Value = Value> {
        let key = prop::sample::select(vec!["a", "b", "c", "a.b"]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<u8>().prop_map(|n| json!(n)),
            Just(json!("s")),
            Just(json!([1, 2])),
        ];
        leaf.prop_recursive(3, 24, 4, move |inner| {
            prop::collection::btree_map(key.clone(), inner, 0..4).prop_map(|m| {
                Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            })
        })
    }

    proptest! {
        #[test]
        fn copying_what_is_kept_equals_removing_what_is_modelled(
            v in values(),
            paths in prop::collection::vec(
                prop::sample::select(vec!["a", "b", "a.b", "a.c", "b.a.c", "c.c.c", "a.b.c"]),
                0..5,
            ),
        ) {
            prop_assert_eq!(unmodelled(&v, &paths), cloned_then_removed(&v, &paths));
        }
    }
}
