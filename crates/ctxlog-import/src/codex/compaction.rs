//! A top-level `compacted` item: a completed compaction whose summary is
//! its `message`; for 0.169, its `replacement_history` recorded again as
//! the compaction's tail.

use super::usage::usage;
use super::Importer;
use crate::build::{ImportedCompaction, NewMessage, RecordedKind};
use crate::ImportError;
use ctxlog_core::decide::count_before_request;
use ctxlog_core::policy::{BudgetRule, OverflowRule, FULL_THRESHOLD};
use ctxlog_core::{Event, MessageId, Policy, Role, TokenUsage};
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
        let tokens = self.compaction_usage(p)?;
        // Before 0.169 a rollout cannot tell a manual compaction from an
        // automatic one: nothing is inferred from it.
        let tokens_before = if kind.auto && self.since_0_169 {
            self.infer_limit(at)?
        } else {
            None
        };
        let c = ImportedCompaction {
            kind,
            source,
            text,
            tail,
            tokens_before,
            tokens,
        };
        self.b.imported_compaction(at, c).map(|_| ())
    }

    /// The count Codex compacted at automatically (its last response's
    /// total and the estimate of what followed), the compaction's
    /// `tokens_before`. Codex records no configured
    /// `model_auto_compact_token_limit`, but a compaction at a count under
    /// the threshold in force shows one at or under that count: the policy
    /// is recorded again (`PolicyChanged`) with that count as its limit,
    /// before the compaction, so the audit names the inference and its
    /// evidence and `simulate` compacts where Codex did.
    fn infer_limit(&mut self, at: u64) -> Result<Option<u64>, ImportError> {
        let Some(state) = self.b.state() else {
            return Ok(None);
        };
        let Some((_, count)) = count_before_request(state) else {
            return Ok(None);
        };
        let policy = &state.policy;
        if policy.threshold(&state.limits).is_none_or(|t| count >= t) {
            return Ok(Some(count));
        }
        let base = state
            .limits
            .input
            .filter(|&i| i > 0)
            .unwrap_or(state.limits.context);
        let inferred = Policy {
            overflow: OverflowRule {
                budget: BudgetRule::ContextLess {
                    output_cap: 0,
                    buffer: base.saturating_sub(count),
                },
                ..policy.overflow.clone()
            },
            threshold_percent: FULL_THRESHOLD,
            ..policy.clone()
        };
        self.b
            .record(at, Event::PolicyChanged { policy: inferred })?;
        Ok(Some(count))
    }

    /// The usage of the compaction's own model call: 0.169's
    /// `latest_token_usage_record` of the `compaction_response_id` (the
    /// record of that response, copied).
    fn compaction_usage(&self, p: &Value) -> Result<Option<TokenUsage>, ImportError> {
        let Some(record) = p.get("latest_token_usage_record").filter(|r| !r.is_null()) else {
            return Ok(None);
        };
        let response = record.get("response_id").and_then(Value::as_str);
        let compaction = p.get("compaction_response_id").and_then(Value::as_str);
        if response.is_some() && compaction.is_some() && response != compaction {
            return Ok(None);
        }
        let u = record
            .get("usage")
            .filter(|u| u.is_object())
            .ok_or_else(|| {
                self.err("field `payload.latest_token_usage_record.usage` missing or not an object")
            })?;
        usage(u)
            .map(Some)
            .map_err(|e| self.err(format!("payload.latest_token_usage_record.usage: {e}")))
    }

    /// Records the messages of `compacted.replacement_history` but its last
    /// one when that is the summary (`summary`), as synthetic messages with
    /// the roles they are sent with; the first of them.
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
            let role = match item.get("role").and_then(Value::as_str) {
                Some("developer") => Role::Developer,
                Some("system") => Role::System,
                _ => Role::User,
            };
            let message = self.b.message(
                at,
                role,
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
