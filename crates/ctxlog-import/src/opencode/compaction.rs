//! Compactions: a user message's compaction part (the marker), the summary
//! message that answers it and the job's outcome, and the pruned marks of
//! tool outputs, placed before the first message created after them.

use super::fields::{part_fields, ASSISTANT_INFO, USER_INFO};
use super::values::{str_at, user_model};
use super::{Importer, Marker};
use crate::build::Builder;
use crate::opencode_names::finish_name;
use crate::ImportError;
use ctxlog_core::{
    CompactionTrigger, Event, FinishReason, MessageError, MessageId, ModelRef, PartId, PrunedPart,
    SourceTarget,
};
use serde_json::Value;

impl Importer<'_> {
    /// Records the compaction marker `info` (message `id`), whose
    /// compaction part `c` is at `ppath`.
    pub(super) fn marker(
        &mut self,
        ppath: &str,
        info: &Value,
        id: String,
        c: &Value,
        at: u64,
    ) -> Result<(), ImportError> {
        let agent = str_at(info, "agent").map(str::to_owned);
        let model = user_model(info);
        let message = self.b.message_id(at)?;
        let part = self.b.part_id(at)?;
        let version = self.info.as_ref().and_then(|i| str_at(i, "version"));
        let decided_by = self.b.decided_by(version);
        let tail = match str_at(c, "tail_start_id") {
            Some(t) => Some(*self.ids.get(t).ok_or_else(|| {
                self.err(
                    format!("{ppath}.tail_start_id"),
                    format!("names no earlier message: {t:?}"),
                )
            })?),
            None => None,
        };
        self.b.record(
            at,
            Event::CompactionRequested {
                message,
                part,
                auto: c.get("auto").and_then(Value::as_bool).unwrap_or(false),
                overflow: c.get("overflow").and_then(Value::as_bool).unwrap_or(false),
                trigger: CompactionTrigger::Recorded {
                    agent: decided_by,
                    tokens_before: None,
                },
                agent,
                model,
                source_id: Some(id.clone()),
            },
        )?;
        self.ids.insert(id, message);
        self.markers.insert(message, Marker { tail });
        self.keep_source(at, SourceTarget::Message(message), info, USER_INFO)?;
        self.keep_part(at, part, c, part_fields("compaction"), false)
    }

    /// Records the summary message `info` (message `id`) of the pending
    /// job `job`: its start, its text and reasoning, and the job's outcome.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn summary(
        &mut self,
        path: &str,
        info: &Value,
        id: String,
        parts: &[Value],
        at: u64,
        job: MessageId,
        model: Option<ModelRef>,
        agent: Option<String>,
        finish: Option<FinishReason>,
        error: Option<MessageError>,
    ) -> Result<(), ImportError> {
        let summary_message = self.b.message_id(at)?;
        let tail_start = self.markers.get(&job).and_then(|m| m.tail);
        self.b.record(
            at,
            Event::CompactionStarted {
                job,
                summary_message,
                agent,
                model,
                prompt: None,
                tail_start,
                source_id: Some(id.clone()),
            },
        )?;
        self.ids.insert(id, summary_message);
        self.keep_source(
            at,
            SourceTarget::Message(summary_message),
            info,
            ASSISTANT_INFO,
        )?;
        self.parts(path, summary_message, parts, at, true, None)?;
        let completed = self
            .count(info, "/time/completed", || format!("{path}.info"))?
            .unwrap_or(at);
        let fail = |b: &mut Builder, error: String| {
            b.record(completed, Event::CompactionFailed { job, error })
        };
        match error {
            // A superseded attempt (ctxlog's own export): the job goes on.
            Some(e) if e.name == "CompactionRestarted" => return Ok(()),
            // ctxlog's own failed job: its error text as it was.
            Some(e) if e.name == "CompactionFailed" => return fail(&mut self.b, e.message),
            Some(e) => return fail(&mut self.b, format!("{}: {}", e.name, e.message)),
            None => {}
        }
        let Some(reason) = finish else {
            return Ok(()); // interrupted: the job stays running, as in OpenCode
        };
        let has_text = self
            .b
            .state()
            .and_then(|s| s.message(summary_message))
            .is_some_and(|m| m.parts.iter().any(ctxlog_core::Part::is_nonblank_text));
        if reason == FinishReason::Error || !has_text {
            return fail(
                &mut self.b,
                format!(
                    "the summary finished ({}) without {}",
                    finish_name(&reason),
                    if has_text { "success" } else { "text" }
                ),
            );
        }
        self.summary_completed(path, info, parts, job, reason, completed)
    }

    /// Records the summary's `SummaryCompleted` at `completed`, with the
    /// usage of its last step-finish (else of its `info`), and keeps what
    /// ctxlog does not model of that step-finish.
    fn summary_completed(
        &mut self,
        path: &str,
        info: &Value,
        parts: &[Value],
        job: MessageId,
        reason: FinishReason,
        completed: u64,
    ) -> Result<(), ImportError> {
        let step_finish = parts
            .iter()
            .rev()
            .find(|p| str_at(p, "type") == Some("step-finish"));
        let tokens = match step_finish.filter(|p| p.get("tokens").is_some()) {
            Some(p) => self.usage(p, &format!("{path}.parts"))?.0,
            None => self.usage(info, &format!("{path}.info"))?.0,
        };
        let part = self.b.part_id(completed)?;
        self.b.record(
            completed,
            Event::SummaryCompleted {
                job,
                part,
                reason,
                tokens,
                redactions: 0,
            },
        )?;
        match step_finish {
            // `SummaryCompleted` keeps no cost.
            Some(p) => self.keep_part(completed, part, p, &["reason", "tokens"], false),
            None => Ok(()),
        }
    }

    /// Places the prune marks whose time has come before a message created at `at`.
    pub(super) fn flush_prunes(&mut self, before: Option<u64>) -> Result<(), ImportError> {
        let mut due: Vec<(u64, PartId, u64)> = Vec::new();
        self.prunes.retain(|p| {
            let is_due = before.is_none_or(|t| p.0 < t);
            if is_due {
                due.push(*p);
            }
            !is_due
        });
        due.sort_by_key(|p| p.0);
        let mut i = 0;
        while i < due.len() {
            let t = due[i].0;
            let group: Vec<_> = due[i..].iter().take_while(|p| p.0 == t).copied().collect();
            i += group.len();
            let parts: Vec<PrunedPart> = group
                .iter()
                .map(|&(_, part, tokens)| PrunedPart { part, tokens })
                .collect();
            let total_tokens = parts.iter().map(|p| p.tokens).sum();
            self.b.record(
                t,
                Event::PartsPruned {
                    parts,
                    total_tokens,
                    policy: "imported".into(),
                },
            )?;
        }
        Ok(())
    }
}
