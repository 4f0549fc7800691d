//! [`decide`]: every decision of the compaction lifecycle, made in one place.
//!
//! `decide(state, command, context) → Decided` is pure: it reads the state,
//! the command, the loop guard and the ids and time the caller supplies
//! ([`Context`]), and returns the events to record ([`Draft`]s, each with its
//! event id already drawn) plus, for the lifecycle's reactions, the command
//! to decide next once those events are applied ([`Decided::then`]). The
//! caller (the engine, the [`crate::Recorder`], the generator, `simulate`
//! through the engine) only records and loops:
//!
//! ```text
//! step finished ─► CheckOverflow ─► marker queued (auto, overflow, not paused, none pending)
//! Refused ─► marker flagged `overflow` (policy compacts on provider overflow) or the error
//! StartJob ─► CompactionStarted (with the tail the policy keeps)
//! Attempt ─► CompactionAttempted (the fallback plan is `crate::fallback`)
//! CompleteJob ─► summary text, SummaryCompleted, replay or continue (auto only) ─► CheckGuard
//! FailJob ─► CompactionFailed ─► CheckGuard (auto only)
//! CheckGuard ─► AutoCompactionPaused when the compaction did not help or fired too often
//! EndTurn ─► PartsPruned when the policy prunes and the plan applies
//! ```
//!
//! The reducer ([`SessionState::evolve`]) refuses events that break an
//! invariant; `decide` refuses only commands it cannot turn into events at
//! all (a job that is not pending or not running: it needs the job's kind or
//! its summary message to decide).
//!
//! Events an agent already recorded (an imported session's messages, and its
//! own compactions and prunes) are not decisions: importers store them as
//! they are; a whole compaction read from one place goes through
//! [`Command::RecordCompaction`] so its ids are drawn the one way.

use crate::error::{RefusedCommand, Violation};
use crate::event::{CompactionTrigger, Event, FinishReason, MessageError, ModelRef, PartBody};
use crate::event::{PromptRecord, PrunedPart, Role, ToolState};
use crate::guard::LoopGuard;
use crate::ids::{EventId, IdSource, MessageId, PartId, TimestampMs};
use crate::policy::{ContinueMessage, OverflowCheckAt, ProviderOverflow};
use crate::policy::{ModelLimits, OverflowCheck, Policy, TokenUsage};
use crate::prune::plan_prune;
use crate::replay::{replay_of, replay_parts};
use crate::state::{JobStatus, SessionState};
use crate::tail::select_tail;
use crate::window::{estimate_window, CONTEXT_OVERFLOW_ERROR, CONTINUE_TEXT};
use crate::window::{CONTINUE_TEXT_OPENCODE, OVERFLOW_CONTINUE_PREFIX};
use uuid::Uuid;

/// What the caller supplies to a decision: ids, the time, and the loop guard.
pub struct Context<'a> {
    /// Where every new id comes from (message, part and event ids).
    pub ids: &'a mut dyn IdSource,
    /// The time of the decision, ms; every drafted event carries it.
    pub at: TimestampMs,
    /// When automatic compaction stops itself.
    pub guard: LoopGuard,
}

/// An event decided, with its id and time; the caller gives it a seq.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// The event's id.
    pub id: EventId,
    /// When it was decided, ms.
    pub at: TimestampMs,
    /// The event.
    pub event: Event,
}

/// One finished model call: an assistant message, its parts and its usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The user message it answers.
    pub parent: MessageId,
    /// Its content (text, reasoning, tool calls...), in order.
    pub parts: Vec<PartBody>,
    /// The usage the provider reported.
    pub tokens: TokenUsage,
    /// Why the call stopped.
    pub finish: FinishReason,
    /// The model that answered.
    pub model: Option<ModelRef>,
    /// The agent (`build`, `plan`...).
    pub agent: Option<String>,
    /// Cost in micro-units, when known.
    pub cost_micros: Option<u64>,
    /// Id of the message in a recorded source.
    pub source_id: Option<String>,
}

impl Step {
    /// A step answering `parent` that stopped on its own, with no parts yet.
    pub fn new(parent: MessageId) -> Self {
        Step {
            parent,
            parts: Vec::new(),
            tokens: TokenUsage::default(),
            finish: FinishReason::Stop,
            model: None,
            agent: None,
            cost_micros: None,
            source_id: None,
        }
    }

    /// Adds a text part.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.parts.push(PartBody::Text {
            text: text.into(),
            synthetic: false,
            time: None,
        });
        self
    }

    /// Adds any part.
    pub fn part(mut self, body: PartBody) -> Self {
        self.parts.push(body);
        self
    }

    /// Sets the reported usage.
    pub fn tokens(mut self, tokens: TokenUsage) -> Self {
        self.tokens = tokens;
        self
    }

    /// Sets the finish reason.
    pub fn finish(mut self, finish: FinishReason) -> Self {
        self.finish = finish;
        self
    }

    /// Sets the model.
    pub fn model(mut self, model: ModelRef) -> Self {
        self.model = Some(model);
        self
    }
}

/// A compaction the recording already did (marker, summary, completion).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCompaction {
    /// Triggered automatically.
    pub auto: bool,
    /// Caused by the provider refusing a request as too large (or an
    /// answer whose input exceeded the window).
    pub overflow: bool,
    /// The summary text (a placeholder is written when it is blank).
    pub text: String,
    /// First message kept verbatim after the summary.
    pub tail_start: Option<MessageId>,
    /// Source id of the marker.
    pub marker_source: Option<String>,
    /// Source id of the summary message.
    pub summary_source: Option<String>,
    /// The agent that decided it (see [`CompactionTrigger::Recorded`]).
    pub decided_by: String,
    /// The context's tokens before it, as the agent recorded them.
    pub tokens_before: Option<u64>,
}

/// What the summarizer produced for a job.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryText {
    /// The (already redacted) summary.
    pub text: String,
    /// Why the summary call stopped.
    pub finish: FinishReason,
    /// Its usage.
    pub tokens: TokenUsage,
    /// Secrets redacted from it.
    pub redactions: u32,
}

/// Everything that can be asked of a session.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Starts the session (the first event).
    Start {
        /// The policy in force.
        policy: Policy,
        /// The model's limits.
        limits: ModelLimits,
        /// Title.
        title: Option<String>,
        /// Id of the recorded source session.
        source_id: Option<String>,
    },
    /// A user message with one text part; `synthetic` when the runtime wrote it.
    UserMessage {
        /// The text.
        text: String,
        /// Written by the runtime.
        synthetic: bool,
        /// Id in a recorded source.
        source_id: Option<String>,
    },
    /// A whole finished step, in one append; then the overflow check.
    Step(Step),
    /// An assistant message with no parts (a step built part by part).
    AssistantMessage {
        /// The user message it answers.
        parent: MessageId,
        /// The model.
        model: Option<ModelRef>,
    },
    /// A part appended to a message.
    AppendPart {
        /// The message.
        message: MessageId,
        /// The content.
        body: PartBody,
    },
    /// A part's content replaced (a tool going pending → running → done).
    UpdatePart {
        /// The part.
        part: PartId,
        /// Its new content.
        body: PartBody,
    },
    /// The step of a message built part by part finished; then the overflow check.
    FinishStep {
        /// The assistant message.
        message: MessageId,
        /// Why it stopped.
        reason: FinishReason,
        /// Its usage.
        tokens: TokenUsage,
    },
    /// The provider refused the request of assistant message `message` as
    /// too large (its error text): under [`ProviderOverflow::Compact`] an
    /// automatic compaction flagged `overflow` is queued (it replays the
    /// refused prompt after the summary); otherwise, or when automatic
    /// compaction is off, paused or already pending, the error is recorded
    /// on the message.
    Refused {
        /// The assistant message of the refused request (no finished step).
        message: MessageId,
        /// The provider's words.
        error: String,
    },
    /// An error recorded on a message.
    ErrorMessage {
        /// The message.
        message: MessageId,
        /// The error.
        error: MessageError,
    },
    /// Events decided elsewhere (a recording), recorded as they are; a batch
    /// ending with a finished step is followed by the overflow check.
    Record(Vec<Event>),
    /// A compaction the recording already did.
    RecordCompaction(RecordedCompaction),
    /// A compaction asked for by hand (no continue message after it).
    RequestCompaction,
    /// Starts (or restarts, after a crash) a pending job: the summary message,
    /// with the recent tail the policy keeps.
    StartJob {
        /// The job (marker message).
        job: MessageId,
        /// The model that summarises.
        model: Option<ModelRef>,
        /// The prompt used (hash and size).
        prompt: Option<PromptRecord>,
    },
    /// One attempt at a compaction request (see `crate::fallback`).
    Attempt {
        /// The job.
        job: MessageId,
        /// The strategy's name.
        strategy: String,
        /// Estimated tokens of the request.
        request_tokens: u64,
        /// The budget it was checked against.
        limit: Option<u64>,
        /// Whether it fits.
        fits: bool,
    },
    /// The running job's summary arrived.
    CompleteJob {
        /// The job.
        job: MessageId,
        /// The summary.
        summary: SummaryText,
    },
    /// The job failed; history stays as it was.
    FailJob {
        /// The job.
        job: MessageId,
        /// Why.
        error: String,
    },
    /// The turn ended: prune when the policy says so.
    EndTurn,
    /// Pruned parts restored (an undo).
    Restore {
        /// The parts.
        parts: Vec<PartId>,
        /// Why.
        reason: String,
    },
    /// The policy changes from now on.
    ChangePolicy(Policy),
    /// The model's limits change from now on.
    ChangeLimits(ModelLimits),
    /// The agent is about to send its next model request: under a policy
    /// that checks then ([`OverflowCheckAt::BeforeRequest`]), queue an
    /// automatic compaction when the last answer's count plus the estimate
    /// of what came after it reaches the threshold. Nothing under the
    /// other policies (they check after each step).
    BeforeRequest,
    /// Reaction after a finished step: queue an automatic compaction on overflow.
    CheckOverflow {
        /// The step's message.
        step: MessageId,
    },
    /// Reaction after an automatic compaction: the loop guard.
    CheckGuard {
        /// Estimated window before the compaction (`None` after a failure).
        window_before: Option<u64>,
    },
}

/// What a command decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decided {
    /// The events to record, in order, in one atomic append.
    pub events: Vec<Draft>,
    /// The reaction to decide once these events are applied, if any.
    pub then: Option<Command>,
    /// The overflow check, for [`Command::CheckOverflow`].
    pub overflow: Option<OverflowCheck>,
}

/// Every event drafted by `decided` (a command and its reactions), in order.
pub fn drafted(decided: &[Decided]) -> impl Iterator<Item = &Event> {
    decided.iter().flat_map(|d| &d.events).map(|d| &d.event)
}

/// The first message `decided` appended (a compaction marker counts): the
/// user message, the step, or the continue message after a summary.
pub fn first_message(decided: &[Decided]) -> Option<MessageId> {
    drafted(decided).find_map(|e| match e {
        Event::MessageAppended { message, .. } | Event::CompactionRequested { message, .. } => {
            Some(*message)
        }
        _ => None,
    })
}

/// The compaction job (marker) `decided` queued, if any.
pub fn queued(decided: &[Decided]) -> Option<MessageId> {
    drafted(decided).find_map(|e| match e {
        Event::CompactionRequested { message, .. } => Some(*message),
        _ => None,
    })
}

/// The parts `decided` pruned and their tokens in all, if it pruned.
pub fn pruned(decided: &[Decided]) -> Option<(&[PrunedPart], u64)> {
    drafted(decided).find_map(|e| match e {
        Event::PartsPruned {
            parts,
            total_tokens,
            ..
        } => Some((parts.as_slice(), *total_tokens)),
        _ => None,
    })
}

/// Why the loop guard paused automatic compaction in `decided`, if it did.
pub fn paused(decided: &[Decided]) -> Option<&str> {
    drafted(decided).find_map(|e| match e {
        Event::AutoCompactionPaused { reason, .. } => Some(reason.as_str()),
        _ => None,
    })
}

/// Decides `command` on `state`; see the module documentation.
pub fn decide(
    state: &SessionState,
    command: Command,
    context: &mut Context<'_>,
) -> Result<Decided, RefusedCommand> {
    let name = command.name();
    decide_inner(state, command, context).map_err(|violation| RefusedCommand {
        command: name,
        violation,
    })
}

impl Command {
    /// The command's name, snake case (in errors).
    pub fn name(&self) -> &'static str {
        match self {
            Command::Start { .. } => "start",
            Command::UserMessage { .. } => "user_message",
            Command::Step(_) => "step",
            Command::AssistantMessage { .. } => "assistant_message",
            Command::AppendPart { .. } => "append_part",
            Command::UpdatePart { .. } => "update_part",
            Command::FinishStep { .. } => "finish_step",
            Command::Refused { .. } => "refused",
            Command::ErrorMessage { .. } => "error_message",
            Command::Record(_) => "record",
            Command::RecordCompaction(_) => "record_compaction",
            Command::RequestCompaction => "request_compaction",
            Command::StartJob { .. } => "start_job",
            Command::Attempt { .. } => "attempt",
            Command::CompleteJob { .. } => "complete_job",
            Command::FailJob { .. } => "fail_job",
            Command::EndTurn => "end_turn",
            Command::Restore { .. } => "restore",
            Command::ChangePolicy(_) => "change_policy",
            Command::ChangeLimits(_) => "change_limits",
            Command::CheckOverflow { .. } => "check_overflow",
            Command::BeforeRequest => "before_request",
            Command::CheckGuard { .. } => "check_guard",
        }
    }
}

fn decide_inner(
    state: &SessionState,
    command: Command,
    context: &mut Context<'_>,
) -> Result<Decided, Violation> {
    let mut d = Drafter {
        context,
        out: Decided::default(),
    };
    match command {
        Command::Start {
            policy,
            limits,
            title,
            source_id,
        } => d.push(Event::SessionStarted {
            policy,
            limits,
            title,
            source_id,
        }),
        Command::UserMessage {
            text,
            synthetic,
            source_id,
        } => d.user_message(text, synthetic, source_id),
        Command::Step(step) => d.step(step),
        Command::AssistantMessage { parent, model } => {
            let message = d.message();
            d.push(Event::MessageAppended {
                message,
                role: Role::Assistant,
                agent: None,
                model,
                synthetic: false,
                parent: Some(parent),
                source_id: None,
            });
        }
        Command::AppendPart { message, body } => d.append(message, body),
        Command::UpdatePart { part, body } => d.push(Event::PartUpdated { part, body }),
        Command::FinishStep {
            message,
            reason,
            tokens,
        } => {
            let part = d.part();
            d.push(Event::StepFinished {
                message,
                part,
                reason,
                tokens,
                cost_micros: None,
            });
            d.out.then = Some(Command::CheckOverflow { step: message });
        }
        Command::Refused { message, error } => d.refused(state, message, error)?,
        Command::ErrorMessage { message, error } => {
            d.push(Event::MessageErrored { message, error })
        }
        Command::Record(events) => {
            if let Some(Event::StepFinished { message, .. }) = events.last() {
                d.out.then = Some(Command::CheckOverflow { step: *message });
            }
            for event in events {
                d.push(event);
            }
        }
        Command::RecordCompaction(c) => d.recorded_compaction(c),
        Command::RequestCompaction => d.marker(false, false, CompactionTrigger::Manual),
        Command::StartJob { job, model, prompt } => {
            pending_job(state, job)?;
            let summary_message = d.message();
            d.push(Event::CompactionStarted {
                job,
                summary_message,
                agent: Some("compaction".into()),
                model,
                prompt,
                tail_start: select_tail(state, &state.policy, job),
                source_id: None,
            });
        }
        Command::Attempt {
            job,
            strategy,
            request_tokens,
            limit,
            fits,
        } => d.push(Event::CompactionAttempted {
            job,
            strategy,
            request_tokens,
            limit,
            fits,
        }),
        Command::CompleteJob { job, summary } => d.complete(state, job, summary)?,
        Command::FailJob { job, error } => {
            let auto = pending_job(state, job)?;
            d.push(Event::CompactionFailed { job, error });
            if auto {
                d.out.then = Some(Command::CheckGuard {
                    window_before: None,
                });
            }
        }
        Command::EndTurn => {
            // A policy that does not prune never walks the history (the walk
            // is O(history); doing it every turn would be quadratic).
            if state.policy.prune {
                if let Some(event) = plan_prune(state, &state.policy).to_event(&state.policy) {
                    d.push(event);
                }
            }
        }
        Command::Restore { parts, reason } => d.push(Event::PartsRestored { parts, reason }),
        Command::ChangePolicy(policy) => d.push(Event::PolicyChanged { policy }),
        Command::ChangeLimits(limits) => d.push(Event::LimitsChanged { limits }),
        Command::BeforeRequest => {
            let OverflowCheckAt::BeforeRequest { prompts } = state.policy.check_at else {
                return Ok(d.out);
            };
            let Some(last) = state.last_finished.as_ref().filter(|l| !l.summary) else {
                return Ok(d.out);
            };
            let step = last.message;
            if !state.policy.checks_model(model_of(state, step)) {
                return Ok(d.out);
            }
            let count = state
                .policy
                .count(&last.tokens)
                .saturating_add(pending_tokens(state, step, prompts));
            let check = state.policy.check_count(&state.limits, count);
            d.out.overflow = Some(check);
            if check.overflow
                && state.auto_paused.is_none()
                && state.pending_jobs().next().is_none()
            {
                d.marker(true, false, CompactionTrigger::Overflow { step, check });
            }
        }
        Command::CheckOverflow { step } => {
            if !checks_after(state, step) {
                return Ok(d.out);
            }
            let check = state.overflow();
            d.out.overflow = check;
            if let Some(check) = check.filter(|c| c.overflow) {
                if state.auto_paused.is_none() && state.pending_jobs().next().is_none() {
                    d.marker(true, false, CompactionTrigger::Overflow { step, check });
                }
            }
        }
        Command::CheckGuard { window_before } => {
            if let Some(paused) = d.context.guard.check(state, window_before) {
                d.push(paused);
            }
        }
    }
    Ok(d.out)
}

/// Whether the policy's overflow predicate runs after `step` (see
/// [`OverflowCheckAt`]): under `RunEnd`, not after a step that stopped for
/// tool calls (the run goes on).
fn checks_after(state: &SessionState, step: MessageId) -> bool {
    if !state.policy.checks_model(model_of(state, step)) {
        return false;
    }
    match state.policy.check_at {
        OverflowCheckAt::EveryStep => true,
        OverflowCheckAt::BeforeRequest { .. } => false,
        OverflowCheckAt::RunEnd => !state
            .message(step)
            .is_some_and(|m| m.finish.as_ref() == Some(&FinishReason::ToolCalls)),
    }
}

/// The model id that answered `step`, when recorded.
fn model_of(state: &SessionState, step: MessageId) -> Option<&str> {
    state
        .message(step)
        .and_then(|m| m.model.as_deref())
        .map(|m| m.model.as_str())
}

/// Estimated tokens of what the window holds after the answer of `step`
/// (for [`Command::BeforeRequest`]): the results of its tool calls as sent,
/// and every later message sent (user messages only when `prompts`).
/// `step` is the last finished step, after the latest pivot, so what
/// follows it in the log is what follows it in the window: this costs the
/// messages after it, not the window.
fn pending_tokens(state: &SessionState, step: MessageId, prompts: bool) -> u64 {
    let Some(at) = state.message_index(step) else {
        return 0;
    };
    let e = &state.policy.estimator;
    let results: u64 = state.messages[at]
        .parts
        .iter()
        .filter_map(|p| match p.content()? {
            PartBody::Tool { state: tool, .. } => Some(match tool {
                ToolState::Completed { .. } if p.pruned.is_some() => {
                    e.estimate(crate::window::PRUNED_PLACEHOLDER)
                }
                ToolState::Completed { output, .. } => e.estimate(output),
                ToolState::Error { error, .. } => e.estimate(error),
                ToolState::Pending { .. } | ToolState::Running { .. } => 0,
            }),
            _ => None,
        })
        .sum();
    let later: u64 = (at + 1..state.messages.len())
        .filter(|&i| {
            let m = &state.messages[i];
            crate::window::is_sent(state, m) && (prompts || m.role != Role::User)
        })
        .map(|i| state.message_tokens(i))
        .sum();
    results.saturating_add(later)
}

/// The continue message after an automatic compaction under `policy`
/// (`overflow`: it was caused by a provider overflow and has nothing to replay).
pub fn continue_text(policy: &Policy, overflow: bool) -> String {
    match policy.continue_message {
        ContinueMessage::Seed => CONTINUE_TEXT.into(),
        ContinueMessage::OpenCode if overflow => {
            format!("{OVERFLOW_CONTINUE_PREFIX}{CONTINUE_TEXT_OPENCODE}")
        }
        ContinueMessage::OpenCode => CONTINUE_TEXT_OPENCODE.into(),
        ContinueMessage::None => String::new(),
    }
}

/// Whether `job` is pending (requested or running), and if so whether it is
/// automatic.
fn pending_job(state: &SessionState, job: MessageId) -> Result<bool, Violation> {
    let j = state.job(job).ok_or(Violation::UnknownJob(job))?;
    if !j.status.is_pending() {
        return Err(Violation::JobState {
            job,
            status: j.status.name(),
            expected: "requested or running",
        });
    }
    Ok(j.auto)
}

/// Draws ids in the order events are decided and collects the drafts.
struct Drafter<'c, 'a> {
    context: &'c mut Context<'a>,
    out: Decided,
}

impl Drafter<'_, '_> {
    fn uuid(&mut self) -> Uuid {
        self.context.ids.next_uuid(self.context.at)
    }

    fn message(&mut self) -> MessageId {
        MessageId(self.uuid())
    }

    fn part(&mut self) -> PartId {
        PartId(self.uuid())
    }

    fn push(&mut self, event: Event) {
        let id = EventId(self.uuid());
        self.out.events.push(Draft {
            id,
            at: self.context.at,
            event,
        });
    }

    /// A new part on `message` (its id drawn now).
    fn append(&mut self, message: MessageId, body: PartBody) {
        let part = self.part();
        self.push(Event::PartAppended {
            message,
            part,
            body,
            source_id: None,
        });
    }

    fn text(&mut self, message: MessageId, text: String, synthetic: bool) {
        let body = PartBody::Text {
            text,
            synthetic,
            time: None,
        };
        self.append(message, body);
    }

    fn user_message(&mut self, text: String, synthetic: bool, source_id: Option<String>) {
        let message = self.message();
        self.push(Event::MessageAppended {
            message,
            role: Role::User,
            agent: None,
            model: None,
            synthetic,
            parent: None,
            source_id,
        });
        self.text(message, text, synthetic);
    }

    fn step(&mut self, step: Step) {
        let message = self.message();
        self.push(Event::MessageAppended {
            message,
            role: Role::Assistant,
            agent: step.agent,
            model: step.model,
            synthetic: false,
            parent: Some(step.parent),
            source_id: step.source_id,
        });
        for body in step.parts {
            self.append(message, body);
        }
        let part = self.part();
        self.push(Event::StepFinished {
            message,
            part,
            reason: step.finish,
            tokens: step.tokens,
            cost_micros: step.cost_micros,
        });
        self.out.then = Some(Command::CheckOverflow { step: message });
    }

    fn marker(&mut self, auto: bool, overflow: bool, trigger: CompactionTrigger) {
        let (message, part) = (self.message(), self.part());
        self.push(Event::CompactionRequested {
            message,
            part,
            auto,
            overflow,
            trigger,
            agent: None,
            model: None,
            source_id: None,
        });
    }

    fn complete(
        &mut self,
        state: &SessionState,
        job: MessageId,
        summary: SummaryText,
    ) -> Result<(), Violation> {
        let j = state.job(job).ok_or(Violation::UnknownJob(job))?;
        let (JobStatus::Running, Some(summary_message)) = (&j.status, j.summary) else {
            return Err(Violation::JobState {
                job,
                status: j.status.name(),
                expected: "running",
            });
        };
        // The running summary is not sent, so this is the window before the job.
        let window_before = j.auto.then(|| estimate_window(state));
        self.text(summary_message, summary.text, false);
        let part = self.part();
        self.push(Event::SummaryCompleted {
            job,
            part,
            reason: summary.finish,
            tokens: summary.tokens,
            redactions: summary.redactions,
        });
        if j.auto {
            // Only an automatic compaction continues on its own: with the
            // refused prompt again, or with the continue message.
            match replay_of(state, job) {
                // The agent sends the refused request again as it was.
                Some(_) if state.policy.provider_overflow == ProviderOverflow::Retry => {}
                Some(prompt) => self.replay(state, prompt),
                None if state.policy.continue_message == ContinueMessage::None => {}
                None => {
                    let text = continue_text(&state.policy, j.overflow);
                    self.user_message(text, true, None);
                }
            }
            self.out.then = Some(Command::CheckGuard { window_before });
        }
        Ok(())
    }

    fn refused(
        &mut self,
        state: &SessionState,
        message: MessageId,
        error: String,
    ) -> Result<(), Violation> {
        let m = state
            .message(message)
            .ok_or(Violation::UnknownMessage(message))?;
        if m.role != Role::Assistant || m.summary || m.finish.is_some() {
            return Err(Violation::NotARequest(message));
        }
        let compact = matches!(
            state.policy.provider_overflow,
            ProviderOverflow::Compact | ProviderOverflow::Retry
        ) && state.policy.auto
            && state.auto_paused.is_none()
            && state.pending_jobs().next().is_none();
        if compact {
            self.marker(true, true, CompactionTrigger::ProviderOverflow { error });
        } else {
            self.push(Event::MessageErrored {
                message,
                error: MessageError {
                    name: CONTEXT_OVERFLOW_ERROR.into(),
                    message: error,
                },
            });
        }
        Ok(())
    }

    /// The refused prompt as a new user message (OpenCode copies its agent,
    /// model and parts; media become a text note).
    fn replay(&mut self, state: &SessionState, prompt: MessageId) {
        let original = state.message(prompt);
        let message = self.message();
        self.push(Event::MessageAppended {
            message,
            role: Role::User,
            agent: original.and_then(|m| m.agent.as_deref().map(String::from)),
            model: original.and_then(|m| m.model.as_deref().cloned()),
            synthetic: false,
            parent: None,
            source_id: None,
        });
        for body in replay_parts(state, prompt) {
            self.append(message, body);
        }
    }

    /// The ids are drawn in the order the importers always drew them, so
    /// sessions imported before this function existed re-import unchanged.
    fn recorded_compaction(&mut self, c: RecordedCompaction) {
        let (job, part) = (self.message(), self.part());
        self.push(Event::CompactionRequested {
            message: job,
            part,
            auto: c.auto,
            overflow: c.overflow,
            trigger: CompactionTrigger::Recorded {
                agent: c.decided_by,
                tokens_before: c.tokens_before,
            },
            agent: None,
            model: None,
            source_id: c.marker_source,
        });
        let summary_message = self.message();
        self.push(Event::CompactionStarted {
            job,
            summary_message,
            agent: Some("compaction".into()),
            model: None,
            prompt: None,
            tail_start: c.tail_start,
            source_id: c.summary_source,
        });
        let text = if c.text.trim().is_empty() {
            "(the recording holds no summary text)".to_owned()
        } else {
            c.text
        };
        self.text(summary_message, text, false);
        let part = self.part();
        self.push(Event::SummaryCompleted {
            job,
            part,
            reason: FinishReason::Stop,
            tokens: TokenUsage::default(),
            redactions: 0,
        });
    }
}
