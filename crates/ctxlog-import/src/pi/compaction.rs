//! A pi `compaction` entry as a completed compaction: its summary, the tail
//! it kept (`firstKeptEntryId`, or `firstKeptEntryIndex` in version 1), and
//! the reason pi did not record, read from what came before ([`Reason`]).

use super::Importer;
use crate::build::{ImportedCompaction, RecordedKind};
use crate::{strict, ImportError};
use ctxlog_core::{FinishReason, MessageId, Policy, TokenUsage};
use serde_json::Value;

/// Why pi compacted, as read from what came before its `compaction` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reason {
    /// The newest answer's total was over pi's threshold.
    Threshold,
    /// The provider refused the request as too large, or an answer's input
    /// exceeded the window.
    Overflow,
    /// Neither: the user asked for it (`/compact`, RPC `compact`).
    Manual,
}

impl Importer<'_> {
    pub(super) fn compaction(&mut self, v: &Value, at: u64) -> Result<(), ImportError> {
        let text = v
            .get("summary")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("field `summary` missing or not a string"))?
            .to_owned();
        // The kept tail starts at the first message at or after the entry
        // `firstKeptEntryId` names, or `firstKeptEntryIndex` (0-based over
        // the file's lines) points at.
        let tail = match v.get("firstKeptEntryId") {
            Some(Value::String(id)) => {
                let line = *self.entries.get(id).ok_or_else(|| {
                    self.err(format!(
                        "field `firstKeptEntryId`: no entry {id:?} before this line"
                    ))
                })?;
                self.by_line.range(line..).next().map(|(_, m)| *m)
            }
            Some(Value::Null) | None => self.tail_by_index(v)?,
            Some(_) => return Err(self.err("field `firstKeptEntryId` is not a string")),
        };
        let tokens_before = strict::count(v, "tokensBefore").map_err(|e| self.err(e))?;
        let source = Some(format!("line:{}", self.line));
        // pi checks only answers after the latest compaction.
        let reason = self.last_answer.take().unwrap_or(Reason::Threshold);
        self.b
            .imported_compaction(
                at,
                ImportedCompaction {
                    kind: RecordedKind {
                        auto: reason != Reason::Manual,
                        overflow: reason == Reason::Overflow,
                    },
                    source,
                    text: &text,
                    tail,
                    tokens_before,
                    tokens: None,
                },
            )
            .map(|_| ())
    }

    /// The tail of a version-1 compaction: the first message at or after
    /// line `firstKeptEntryIndex` + 1.
    fn tail_by_index(&self, v: &Value) -> Result<Option<MessageId>, ImportError> {
        Ok(match v.get("firstKeptEntryIndex") {
            Some(Value::Number(n)) => {
                let idx = n.as_u64().ok_or_else(|| {
                    self.err("field `firstKeptEntryIndex` is not a non-negative integer")
                })?;
                // 1-based lines; an index past every line keeps no tail.
                idx.checked_add(1)
                    .and_then(|line| self.by_line.range(line..).next())
                    .map(|(_, m)| *m)
            }
            Some(Value::Null) | None => None,
            Some(_) => return Err(self.err("field `firstKeptEntryIndex` is not a number")),
        })
    }

    /// Why pi would compact right after an answer that finished with
    /// `reason` and `tokens` (pi 0.73's `_checkCompaction`): its input over
    /// the window is an overflow, its total over the threshold an automatic
    /// compaction; under it (the window known) only a manual one.
    pub(super) fn reason_after(&self, reason: &FinishReason, tokens: &TokenUsage) -> Reason {
        let Some(limits) = self.b.state().map(|s| s.limits.clone()) else {
            return Reason::Threshold;
        };
        if limits.context == 0 {
            return Reason::Threshold;
        }
        let input = tokens.input.saturating_add(tokens.cache_read);
        if *reason == FinishReason::Stop && input > limits.context {
            return Reason::Overflow;
        }
        if Policy::pi_0_73().check_overflow(&limits, tokens).overflow {
            Reason::Threshold
        } else {
            Reason::Manual
        }
    }
}
