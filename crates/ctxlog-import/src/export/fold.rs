//! The events replayed: the session's state, and what the export needs
//! that the state does not keep ([`Extra`]: step finish times and costs,
//! continue messages, the OpenCode fields an import kept).

use super::error::ExportError;
use crate::json::merge;
use ctxlog_core::{Envelope, Event, MessageId, PartId, SessionState, SourceTarget, TimestampMs};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Per-message facts the state does not keep: step finish times and costs,
/// and which messages continue an automatic compaction.
#[derive(Default)]
pub(super) struct Extra {
    pub(super) completed: BTreeMap<MessageId, TimestampMs>,
    pub(super) step_cost: BTreeMap<PartId, (Option<u64>, TimestampMs)>,
    /// Synthetic user messages appended right after an automatic summary
    /// (their continue text is marked `compaction_continue`, as OpenCode does).
    pub(super) continues: BTreeSet<MessageId>,
    /// The OpenCode fields an import kept that ctxlog does not model.
    pub(super) source: Source,
}

/// The OpenCode fields of the session, its messages and parts that ctxlog
/// does not model, as an import kept them (`Event::SourceFields`).
#[derive(Default)]
pub(super) struct Source {
    pub(super) session: Option<Value>,
    pub(super) messages: BTreeMap<MessageId, Value>,
    pub(super) parts: BTreeMap<PartId, Value>,
}

impl Source {
    /// Keeps `fields` of `target`: the session's replace what an earlier
    /// import kept (each is the whole of its `info` then), a message's or
    /// part's complete what was kept before.
    fn keep(&mut self, target: SourceTarget, fields: Value) {
        let slot = match target {
            SourceTarget::Session => self.session.insert(Value::Null),
            SourceTarget::Message(m) => self.messages.entry(m).or_insert(Value::Null),
            SourceTarget::Part(p) => self.parts.entry(p).or_insert(Value::Null),
        };
        merge(slot, fields);
    }

    /// The source id a part without one of its own was kept with.
    pub(super) fn part_id(&self, part: PartId) -> Option<&str> {
        self.parts.get(&part)?.get("id")?.as_str()
    }
}

/// Replays the events: the state, the facts it does not keep, and the time
/// of the last event that is not a description (when a description was
/// stored depends on when the recording was imported, not on the session).
pub(super) fn fold<B: std::borrow::Borrow<Envelope>>(
    events: impl IntoIterator<Item = Result<B, ExportError>>,
) -> Result<(SessionState, Extra, TimestampMs), ExportError> {
    let mut state = SessionState::keeping_history();
    let mut extra = Extra::default();
    let mut updated = 0;
    let mut after_auto_summary = false;
    for e in events {
        let e = e?;
        let e = e.borrow();
        state.evolve(e)?;
        if !e.event.is_description() {
            updated = e.recorded_at;
        }
        if let Event::MessageAppended {
            message,
            role,
            synthetic,
            ..
        } = &e.event
        {
            if std::mem::take(&mut after_auto_summary) && role.is_input() && *synthetic {
                extra.continues.insert(*message);
            }
        }
        match &e.event {
            Event::StepFinished {
                message,
                part,
                cost_micros,
                ..
            } => {
                extra.completed.insert(*message, e.recorded_at);
                extra.step_cost.insert(*part, (*cost_micros, e.recorded_at));
            }
            Event::SummaryCompleted { job, part, .. } => {
                if let Some(s) = state.job(*job).and_then(|j| j.summary) {
                    extra.completed.insert(s, e.recorded_at);
                }
                after_auto_summary = state.job(*job).is_some_and(|j| j.auto);
                extra.step_cost.insert(*part, (None, e.recorded_at));
            }
            Event::CompactionFailed { job, .. } => {
                if let Some(s) = state.job(*job).and_then(|j| j.summary) {
                    extra.completed.insert(s, e.recorded_at);
                }
            }
            Event::SourceFields {
                format,
                target,
                fields,
            } if format == "opencode" => {
                if let Ok(v) = serde_json::to_value(fields) {
                    extra.source.keep(*target, v);
                }
            }
            _ => {}
        }
    }
    Ok((state, extra, updated))
}
