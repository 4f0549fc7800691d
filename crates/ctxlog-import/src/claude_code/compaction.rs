//! A compaction as Claude Code records it: the `compact_boundary` line,
//! the `isCompactSummary` line after it, and whether an automatic one was
//! the reaction to a refused prompt.

use super::Importer;
use crate::strict;
use crate::ImportError;
use ctxlog_core::window::CONTEXT_OVERFLOW_ERROR;
use ctxlog_core::{
    CompactionTrigger, Event, FinishReason, MessageError, MessageId, Policy, Role, TokenUsage,
};
use serde_json::Value;

impl Importer<'_> {
    /// A `compact_boundary` line: the compaction requested, its summary to
    /// follow.
    pub(super) fn boundary(&mut self, v: &Value, at: u64) -> Result<(), ImportError> {
        self.finish_group()?;
        let auto = v
            .pointer("/compactMetadata/trigger")
            .and_then(Value::as_str)
            != Some("manual");
        let tokens_before =
            strict::count_at(v, "/compactMetadata/preTokens").map_err(|e| self.err(e))?;
        let overflow = auto && self.reactive(tokens_before);
        if overflow {
            self.implied_refusal(v, at)?;
        }
        let message = self.b.message_id(at)?;
        let part = self.b.part_id(at)?;
        let agent = self.b.decided_by(None);
        self.b.record(
            at,
            Event::CompactionRequested {
                message,
                part,
                auto,
                overflow,
                trigger: CompactionTrigger::Recorded {
                    agent,
                    tokens_before,
                },
                agent: None,
                model: None,
                source_id: v.get("uuid").and_then(Value::as_str).map(str::to_owned),
            },
        )?;
        self.pending_compaction = Some(message);
        self.preserved = preserved_uuids(v);
        Ok(())
    }

    /// The request a reactive compaction answered: Claude Code writes no
    /// line for a request the provider refused as too long, but its
    /// reactive boundary implies one, after the last line before it.
    /// Recorded as a synthetic assistant message with that error (its
    /// source id the boundary's uuid and `#refused`, its text saying it is
    /// inferred), so `simulate` under the preset compacts where Claude
    /// Code did.
    fn implied_refusal(&mut self, v: &Value, at: u64) -> Result<(), ImportError> {
        let boundary = v.get("uuid").and_then(Value::as_str).unwrap_or("boundary");
        let model = self.model_ref();
        let parent = self.last_user;
        let source = Some(format!("{boundary}#refused"));
        let message = self.new_message(at, Role::Assistant, parent, source, model, true)?;
        self.b.record(
            at,
            Event::MessageErrored {
                message,
                error: MessageError {
                    name: CONTEXT_OVERFLOW_ERROR.into(),
                    message: "prompt is too long (inferred: Claude Code writes no line for a \
                              refused request; the reactive compaction that follows implies one)"
                        .into(),
                },
            },
        )
    }

    /// The `isCompactSummary` line after a boundary: the summary of `job`,
    /// started and completed.
    pub(super) fn compaction_summary(
        &mut self,
        job: MessageId,
        content: &Value,
        uuid: Option<String>,
        at: u64,
    ) -> Result<(), ImportError> {
        let text = match content {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => return Err(self.err("field `message.content` is neither a string nor an array")),
        };
        let summary_message = self.b.message_id(at)?;
        let preserved = std::mem::take(&mut self.preserved);
        let tail_start = self.first_message_of(&preserved);
        self.b.record(
            at,
            Event::CompactionStarted {
                job,
                summary_message,
                agent: Some("compaction".into()),
                model: None,
                prompt: None,
                tail_start,
                source_id: uuid,
            },
        )?;
        for reminder in std::mem::take(&mut self.before_summary) {
            self.b.text(at, summary_message, reminder, true)?;
        }
        self.b.text(at, summary_message, text, false)?;
        let part = self.b.part_id(at)?;
        self.b.record(
            at,
            Event::SummaryCompleted {
                job,
                part,
                reason: FinishReason::Stop,
                tokens: TokenUsage::default(),
                redactions: 0,
            },
        )
    }

    /// Whether an automatic compaction with `pre_tokens` was Claude Code
    /// 2.1's reaction to a prompt the provider refused as too long (2.1 records
    /// it as `trigger: "auto"` and leaves the refusal out): the model has
    /// no threshold in 2.1 (its auto-compact window is "auto"), or the
    /// count was under the threshold, which Claude Code would not have
    /// compacted at. Unknown (no count, no window): not reactive.
    fn reactive(&self, pre_tokens: Option<u64>) -> bool {
        // Measured on 2.1; before it, the same boundary was a threshold one.
        if !self.since_2_1 {
            return false;
        }
        let policy = Policy::claude_code_2_1();
        if !policy.checks_model(self.b.model()) {
            return true;
        }
        let threshold = self.b.state().and_then(|s| policy.threshold(&s.limits));
        matches!((pre_tokens, threshold), (Some(count), Some(t)) if count < t)
    }
}

/// The uuids a `compact_boundary` keeps verbatim after its summary
/// (`compactMetadata.preservedMessages.uuids`, else the head of
/// `preservedSegment`); none before Claude Code 2.1.
fn preserved_uuids(boundary: &Value) -> Vec<String> {
    let listed: Vec<String> = boundary
        .pointer("/compactMetadata/preservedMessages/uuids")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|u| u.as_str().map(str::to_owned))
        .collect();
    if !listed.is_empty() {
        return listed;
    }
    boundary
        .pointer("/compactMetadata/preservedSegment/headUuid")
        .and_then(Value::as_str)
        .map(|h| vec![h.to_owned()])
        .unwrap_or_default()
}
