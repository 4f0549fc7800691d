//! The audit trail: every prune, restore, withdrawal, compaction request, start,
//! attempt, summary, failure, pause and synthetic continue of a session, with
//! its seq, time, the parts or messages concerned, tokens and the policy in
//! force. A pure fold over the events, so it is the same in any process.

use crate::event::{
    CompactionTrigger, Envelope, Event, PartBody, PromptRecord, PrunedPart, ToolState,
};
use crate::ids::{MessageId, PartId, Seq, TimestampMs};
use crate::policy::{BudgetRule, ModelLimits, Policy, TokenUsage, FULL_THRESHOLD};
use crate::state::SessionState;
use crate::window::is_continue_text;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One line of the audit trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// The event's seq.
    pub seq: Seq,
    /// When it was recorded, ms.
    pub at: TimestampMs,
    /// The event kind (`parts_pruned`, `compaction_requested`, ..., or
    /// `continue` for the synthetic continue message).
    pub kind: String,
    /// The messages or parts concerned (ids as text).
    pub ids: Vec<String>,
    /// The agent's own id of each of `ids`, where the recording had one: a
    /// tool part's call id, a message's or part's id in the source.
    pub source_ids: Vec<Option<String>>,
    /// Tokens involved (pruned tokens, the overflow count, summary output...).
    pub tokens: Option<u64>,
    /// The name of the policy in force; for a compaction a recording's
    /// agent decided, that agent (`claude-code`, `opencode-1.18.33`, ...).
    pub policy: String,
    /// What happened, in words.
    pub what: String,
}

/// The audit trail of one session's events.
pub fn audit(events: &[Envelope]) -> Vec<AuditEntry> {
    let mut auditor = Auditor::default();
    events.iter().filter_map(|e| auditor.push(e)).collect()
}

/// The audit trail folded an event at a time (what [`audit`] does over a
/// slice), for a session read as a stream.
///
/// The default auditor remembers every id's source id and every tool output
/// it saw, which grows with the session. One made [`Auditor::beside_state`]
/// holds nothing that grows: it names no source ids and is told by the
/// caller, who folds the session's state beside it, whether a tool part
/// had an output ([`had_output`]).
#[derive(Debug)]
pub struct Auditor {
    policy: Option<Policy>,
    limits: ModelLimits,
    continue_messages: BTreeSet<MessageId>,
    /// The tool parts with an output (`None`: the caller says).
    completed_tools: Option<BTreeSet<PartId>>,
    /// Each id's source id (`None`: not named).
    sources: Option<BTreeMap<String, String>>,
    /// The last text appended: a summary's, when a summary completes.
    last_text: String,
}

impl Default for Auditor {
    fn default() -> Self {
        Auditor {
            policy: None,
            limits: ModelLimits::default(),
            continue_messages: BTreeSet::new(),
            completed_tools: Some(BTreeSet::new()),
            sources: Some(BTreeMap::new()),
            last_text: String::new(),
        }
    }
}

/// Whether the tool part `e` appends or updates had an output (completed
/// or failed) in `before`, the session's state before `e`: what an
/// [`Auditor::beside_state`] is told. A part the state no longer holds (a
/// pivot dropped its message) had none as far as the audit knows.
pub fn had_output(before: &SessionState, e: &Event) -> bool {
    let Some((part, ..)) = e.tool_call() else {
        return false;
    };
    before
        .part(part)
        .and_then(|(_, p)| p.tool_status())
        .is_some_and(|s| s == "completed" || s == "error")
}

/// The agent's own id of the message or part `id` names in `state` (a tool
/// part's call id, else the source id recorded with it), as a default
/// auditor remembers it; `None` for any other id, and for one the state no
/// longer holds.
pub fn source_in(state: &SessionState, id: &str) -> Option<String> {
    let uuid = uuid::Uuid::parse_str(id).ok()?;
    if let Some((_, part)) = state.part(PartId(uuid)) {
        return match part.tool_call() {
            Some((call_id, _)) => Some(call_id.to_owned()),
            None => part.source_id.as_deref().map(str::to_owned),
        };
    }
    let message = state.message(MessageId(uuid))?;
    message.source_id.as_deref().map(str::to_owned)
}

impl Auditor {
    /// An auditor whose memory does not grow with the session: it names no
    /// source ids (each is `None`; [`source_in`] finds them in the state),
    /// and is given events by [`Auditor::push_told`].
    pub fn beside_state() -> Auditor {
        Auditor {
            completed_tools: None,
            sources: None,
            ..Auditor::default()
        }
    }

    /// The audit line of `e`, the next event of the session, if it is one.
    pub fn push(&mut self, e: &Envelope) -> Option<AuditEntry> {
        self.push_told(e, false)
    }

    /// [`Auditor::push`], told by the caller whether the tool part `e`
    /// appends or updates had an output ([`had_output`]); a default auditor
    /// remembers it itself and is not told.
    pub fn push_told(&mut self, e: &Envelope, had_output: bool) -> Option<AuditEntry> {
        if let Some(sources) = &mut self.sources {
            note_source(&e.event, sources);
        }
        if let Event::PartAppended {
            body: PartBody::Text { text, .. },
            ..
        } = &e.event
        {
            self.last_text.clone_from(text);
        }
        let line = self.line_of(&e.event, had_output);
        let l = line?;
        let decided_by = recorded_agent(&e.event);
        let source_ids = l
            .ids
            .iter()
            .map(|id| self.sources.as_ref().and_then(|s| s.get(id).cloned()))
            .collect();
        Some(AuditEntry {
            seq: e.seq,
            at: e.recorded_at,
            kind: l.kind.into(),
            source_ids,
            ids: l.ids,
            tokens: l.tokens,
            policy: decided_by.unwrap_or_else(|| {
                self.policy
                    .as_ref()
                    .map(|p| p.name.clone())
                    .unwrap_or_default()
            }),
            what: l.what,
        })
    }

    /// The audit line `event` makes, the auditor's own memory updated
    /// (policy, limits, continue messages, tool outputs).
    fn line_of(&mut self, event: &Event, had_output: bool) -> Option<Line> {
        match event {
            Event::SessionStarted {
                policy: p, limits, ..
            } => {
                self.policy = Some(p.clone());
                self.limits = limits.clone();
                None
            }
            Event::LimitsChanged { limits } => {
                self.limits = limits.clone();
                None
            }
            Event::PolicyChanged { policy: p } => {
                let line = policy_changed(self.policy.as_ref(), p, &self.limits);
                self.policy = Some(p.clone());
                Some(line)
            }
            Event::MessageAppended {
                message,
                synthetic: true,
                ..
            } => {
                self.continue_messages.insert(*message);
                None
            }
            Event::PartAppended {
                message,
                body: PartBody::Text { text, .. },
                ..
            } if self.continue_messages.remove(message) && is_continue_text(text) => Some(Line {
                kind: "continue",
                ids: vec![message.to_string()],
                tokens: None,
                what: format!("synthetic user message: {text}"),
            }),
            Event::PartAppended {
                part,
                body: PartBody::Tool { state, .. },
                ..
            }
            | Event::PartUpdated {
                part,
                body: PartBody::Tool { state, .. },
            } => {
                let had = match &mut self.completed_tools {
                    Some(completed) => remember_output(*part, state, completed),
                    None => had_output,
                };
                output_taken_back(*part, state, had)
            }
            event => describe(event, &self.last_text),
        }
    }
}

/// The agent that decided the compaction `event` requests, when a recording
/// says so.
fn recorded_agent(event: &Event) -> Option<String> {
    match event {
        Event::CompactionRequested {
            trigger: CompactionTrigger::Recorded { agent, .. },
            ..
        } => Some(agent.clone()),
        _ => None,
    }
}

/// Notes in `completed` whether tool part `part` has an output now that it
/// is in `state`; whether it had one before.
fn remember_output(part: PartId, state: &ToolState, completed: &mut BTreeSet<PartId>) -> bool {
    match state {
        ToolState::Completed { .. } | ToolState::Error { .. } => !completed.insert(part),
        ToolState::Pending { .. } | ToolState::Running { .. } => completed.remove(&part),
    }
}

/// The line of a tool part whose output was taken back (it `had` one, and
/// its call waits again: the Agents SDK's `pop_item` of an output).
fn output_taken_back(part: PartId, state: &ToolState, had: bool) -> Option<Line> {
    let waits = matches!(state, ToolState::Pending { .. } | ToolState::Running { .. });
    (had && waits).then(|| Line {
        kind: "output_withdrawn",
        ids: vec![part.to_string()],
        tokens: None,
        what: "took back a tool output: the call waits for one again".into(),
    })
}

/// Notes the agent's own id of a message or part `event` appends: a tool
/// part's call id, else the source id recorded with it.
fn note_source(event: &Event, sources: &mut BTreeMap<String, String>) {
    match event {
        Event::MessageAppended {
            message,
            source_id: Some(s),
            ..
        }
        | Event::CompactionRequested {
            message,
            source_id: Some(s),
            ..
        }
        | Event::CompactionStarted {
            summary_message: message,
            source_id: Some(s),
            ..
        } => {
            sources.insert(message.to_string(), s.clone());
        }
        Event::PartAppended {
            part,
            body,
            source_id,
            ..
        } => {
            let own = match body {
                PartBody::Tool { call_id, .. } => Some(call_id),
                _ => source_id.as_ref(),
            };
            if let Some(s) = own {
                sources.insert(part.to_string(), s.clone());
            }
        }
        _ => {}
    }
}

/// One audit line before its seq, time and policy are attached.
struct Line {
    kind: &'static str,
    ids: Vec<String>,
    tokens: Option<u64>,
    what: String,
}

/// The line of a compaction or pruning event; `None` for other events.
/// `last_text` is the last text appended (a summary's, when it completes).
fn describe(event: &Event, last_text: &str) -> Option<Line> {
    Some(match event {
        Event::CompactionRequested {
            message,
            auto,
            trigger,
            ..
        } => compaction_requested(*message, *auto, trigger),
        Event::CompactionStarted {
            job,
            summary_message,
            prompt,
            ..
        } => compaction_started(*job, *summary_message, prompt.as_ref()),
        Event::CompactionAttempted {
            job,
            strategy,
            request_tokens,
            limit,
            fits,
        } => compaction_attempted(*job, strategy, *request_tokens, *limit, *fits),
        Event::SummaryCompleted {
            job,
            tokens,
            redactions,
            ..
        } => summary_completed(*job, tokens, *redactions, last_text),
        Event::CompactionFailed { job, error } => compaction_failed(*job, error),
        Event::PartsPruned {
            parts,
            total_tokens,
            policy: fired,
        } => parts_pruned(parts, *total_tokens, fired),
        Event::PartsRestored { parts, reason } => parts_restored(parts, reason),
        Event::MessagesWithdrawn { messages, reason } => messages_withdrawn(messages, reason),
        Event::AutoCompactionPaused {
            reason,
            window_before,
            window_after,
        } => auto_compaction_paused(reason, *window_before, *window_after),
        _ => return None,
    })
}

/// The line of a policy change: to another policy, or the same one with
/// another threshold (what an import infers from a recording, such as a
/// Codex limit its automatic compactions show: the compaction that follows
/// is the evidence, its count the new threshold).
fn policy_changed(before: Option<&Policy>, after: &Policy, limits: &ModelLimits) -> Line {
    let what = match before.filter(|b| b.name == after.name) {
        Some(b) => {
            let at = |p: &Policy| {
                p.threshold(limits)
                    .map_or("never".to_owned(), |t| format!("at {t} tokens"))
            };
            // An absolute limit under the preset's share: the form an
            // import gives the limit a recording's compaction shows.
            let inferred = after.threshold_percent == FULL_THRESHOLD
                && b.threshold(limits) > after.threshold(limits)
                && matches!(
                    after.overflow.budget,
                    BudgetRule::ContextLess { output_cap: 0, buffer } if buffer > 0
                );
            format!(
                "policy {} compacts {} from here (was {}){}",
                after.name,
                at(after),
                at(b),
                if inferred {
                    ": the limit inferred from the recording, whose automatic compaction that follows came at that count"
                } else {
                    ""
                }
            )
        }
        None => format!("policy changed to {}", after.name),
    };
    Line {
        kind: "policy_changed",
        ids: vec![],
        tokens: after.threshold(limits),
        what,
    }
}

/// The line of a compaction attempt's start, with its prompt's size and hash.
fn compaction_started(
    job: MessageId,
    summary_message: MessageId,
    prompt: Option<&PromptRecord>,
) -> Line {
    let prompt = prompt.map_or(String::new(), |p| {
        format!(", prompt {} bytes sha256 {}", p.bytes, p.sha256)
    });
    Line {
        kind: "compaction_started",
        ids: vec![job.to_string(), summary_message.to_string()],
        tokens: None,
        what: format!("summary started{prompt}"),
    }
}

/// The line of one attempt the fallback plan made, and whether it fits.
fn compaction_attempted(
    job: MessageId,
    strategy: &str,
    request_tokens: u64,
    limit: Option<u64>,
    fits: bool,
) -> Line {
    let limit = limit.map_or("unlimited".into(), |l| l.to_string());
    let verdict = if fits { "fits" } else { "does not fit" };
    Line {
        kind: "compaction_attempted",
        ids: vec![job.to_string()],
        tokens: Some(request_tokens),
        what: format!("{strategy} request of ~{request_tokens} tokens {verdict} ({limit} usable)"),
    }
}

/// The line of a completed summary: the window pivots. A summary whose
/// call reported no usage (pi records none) says its tokens are not
/// recorded, never 0.
fn summary_completed(
    job: MessageId,
    tokens: &TokenUsage,
    redactions: u32,
    last_text: &str,
) -> Line {
    let recorded = tokens != &TokenUsage::default();
    let output = if recorded {
        format!("{} output tokens", tokens.output)
    } else {
        "its tokens not recorded".to_owned()
    };
    Line {
        kind: "summary_completed",
        ids: vec![job.to_string()],
        tokens: recorded.then_some(tokens.output),
        what: format!(
            "summary completed ({output}, {}): the window pivots here",
            redactions_by_kind(redactions, last_text)
        ),
    }
}

/// The line of a failed compaction.
fn compaction_failed(job: MessageId, error: &str) -> Line {
    Line {
        kind: "compaction_failed",
        ids: vec![job.to_string()],
        tokens: None,
        what: format!("compaction failed: {error}; history kept"),
    }
}

/// The line of a prune.
fn parts_pruned(parts: &[PrunedPart], total_tokens: u64, fired: &str) -> Line {
    Line {
        kind: "parts_pruned",
        ids: parts.iter().map(|p| p.part.to_string()).collect(),
        tokens: Some(total_tokens),
        what: format!(
            "pruned {}, ~{total_tokens} tokens (policy {fired})",
            tool_outputs(parts.len())
        ),
    }
}

/// The line of a restore.
fn parts_restored(parts: &[PartId], reason: &str) -> Line {
    Line {
        kind: "parts_restored",
        ids: parts.iter().map(|p| p.to_string()).collect(),
        tokens: None,
        what: format!("restored {}: {reason}", tool_outputs(parts.len())),
    }
}

/// `1 tool output`, `3 tool outputs`.
fn tool_outputs(n: usize) -> String {
    if n == 1 {
        "1 tool output".to_owned()
    } else {
        format!("{n} tool outputs")
    }
}

/// The line of a withdrawal.
fn messages_withdrawn(messages: &[MessageId], reason: &str) -> Line {
    Line {
        kind: "messages_withdrawn",
        ids: messages.iter().map(|m| m.to_string()).collect(),
        tokens: None,
        what: format!(
            "withdrew {} message{}: {reason}",
            messages.len(),
            if messages.len() == 1 { "" } else { "s" }
        ),
    }
}

/// The line of the loop guard's pause.
fn auto_compaction_paused(reason: &str, window_before: u64, window_after: u64) -> Line {
    Line {
        kind: "auto_compaction_paused",
        ids: vec![],
        tokens: Some(window_after),
        what: format!(
            "automatic compaction paused until the next user message: {reason} (window ~{window_before} → ~{window_after})"
        ),
    }
}

/// The line of a queued compaction, with what set it off.
fn compaction_requested(message: MessageId, auto: bool, trigger: &CompactionTrigger) -> Line {
    let (tokens, why) = match trigger {
        CompactionTrigger::Overflow { step, check } => (
            Some(check.count),
            format!(
                "overflow after step {step}: {} tokens against {} usable",
                check.count,
                check.usable.map_or("unlimited".into(), |u| u.to_string())
            ),
        ),
        CompactionTrigger::ProviderOverflow { error } => {
            (None, format!("provider overflow: {error}"))
        }
        CompactionTrigger::Manual => (None, "requested by hand".into()),
        CompactionTrigger::Imported => (None, "imported from a recorded session".into()),
        CompactionTrigger::Recorded {
            agent,
            tokens_before,
        } => (
            *tokens_before,
            match tokens_before {
                Some(t) => format!("decided by {agent} at {t} tokens (recorded)"),
                None => format!("decided by {agent} (recorded)"),
            },
        ),
    };
    let mode = if auto { "automatic" } else { "manual" };
    Line {
        kind: "compaction_requested",
        ids: vec![message.to_string()],
        tokens,
        what: format!("{mode} compaction queued: {why}"),
    }
}

/// `n secrets redacted`, with the count of each kind whose marker the
/// summary text holds (`3 secrets redacted: 2 github-token, 1 private-key`).
fn redactions_by_kind(total: u32, summary: &str) -> String {
    let noun = if total == 1 { "secret" } else { "secrets" };
    if total == 0 {
        return format!("0 {noun} redacted");
    }
    let kinds: Vec<String> = crate::redact::count_markers(summary)
        .into_iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    if kinds.is_empty() {
        format!("{total} {noun} redacted")
    } else {
        format!("{total} {noun} redacted: {}", kinds.join(", "))
    }
}
