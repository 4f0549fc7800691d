//! A top-level `compacted` item: a completed compaction whose summary is
//! its `message`; for 0.169, its `replacement_history` recorded again as
//! the compaction's tail.

use super::Importer;
use crate::build::{NewMessage, RecordedKind};
use crate::ImportError;
use ctxlog_core::{MessageId, Role};
use serde_json::Value;

impl Importer<'_> {
    /// `compacted`: ends the step in progress and records the compaction
    /// (manual in a compaction turn of its own, else automatic).
    pub(super) fn compacted(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        self.close_step(false)?;
        let text = p.get("message").and_then(Value::as_str).unwrap_or("");
        let source = Some(format!("line:{}", self.line));
        let tail = if self.since_0_169 {
            self.replacement_history(p, text, at)?
        } else {
            None
        };
        let kind = if self.compaction_turn {
            RecordedKind {
                auto: false,
                overflow: false,
            }
        } else {
            RecordedKind::AUTO
        };
        self.b
            .imported_compaction(at, kind, source.clone(), source, text, tail, None)
            .map(|_| ())
    }

    /// Records the messages of `compacted.replacement_history` but its last
    /// one when that is the summary (`summary`), as synthetic user
    /// messages; the first of them.
    fn replacement_history(
        &mut self,
        p: &Value,
        summary: &str,
        at: u64,
    ) -> Result<Option<MessageId>, ImportError> {
        let Some(items) = p.get("replacement_history").and_then(Value::as_array) else {
            return Ok(None);
        };
        let texts_of = |item: &Value| -> Vec<String> {
            item.get("content")
                .and_then(Value::as_array)
                .map(|c| {
                    c.iter()
                        .filter_map(|b| b.get("text").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut kept: Vec<&Value> = items
            .iter()
            .filter(|i| i.get("type").and_then(Value::as_str) == Some("message"))
            .collect();
        if kept
            .last()
            .is_some_and(|last| texts_of(last).concat() == summary)
        {
            kept.pop();
        }
        let mut first = None;
        for (i, item) in kept.into_iter().enumerate() {
            let message = self.b.message(
                at,
                Role::User,
                NewMessage {
                    source: Some(format!("line:{}#{i}", self.line)),
                    synthetic: true,
                    ..NewMessage::default()
                },
            )?;
            for t in texts_of(item) {
                self.b.text(at, message, t, true)?;
            }
            first.get_or_insert(message);
        }
        Ok(first)
    }
}
