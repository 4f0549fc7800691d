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
//! AddItems ─► a message per item; an output completes its waiting call
//! Withdraw / WithdrawAll / ReopenCall ─► MessagesWithdrawn / PartsRestored + PartUpdated
//! FinishOpenStep ─► StepFinished of the open step ─► CheckOverflow
//! ```
//!
//! Files: `command` (the commands and their values), `drafter` (ids and
//! drafts, the message and job decisions), `checks` (what the overflow
//! checks and the job commands read of a state), `overflow` (the drafter's
//! overflow checks, on those readings), `items` (a session an agent runtime
//! keeps item by item), `inputs` (what a command's inputs must be).
//!
//! The reducer ([`SessionState::evolve`]) refuses events that break an
//! invariant; `decide` refuses a command whose inputs would make it refuse
//! one (`inputs`), and one it cannot turn into events at all (a job that is
//! not pending or not running). So the reducer never refuses an event
//! `decide` made; only the events of `Record` and `RecordCompaction`, made
//! elsewhere ([`records_events`]), are bad input it may refuse.
//!
//! Events an agent already recorded (an imported session's messages, and its
//! own compactions and prunes) are not decisions: importers store them as
//! they are; a whole compaction read from one place goes through
//! [`Command::RecordCompaction`] so its ids are drawn the one way.

mod checks;
mod command;
mod drafter;
mod inputs;
mod items;
mod overflow;

pub use checks::continue_text;
pub use command::{Command, RecordedCompaction, Step, SummaryText, TailChoice};
pub use inputs::records_events;
pub use items::{AgentItem, ItemKind};
pub use overflow::{count_before_request, overflow_check};

use crate::error::{RefusedCommand, Violation};
use crate::event::PrunedPart;
use crate::event::{CompactionTrigger, Event};
use crate::guard::LoopGuard;
use crate::ids::{EventId, IdSource, MessageId, TimestampMs};
use crate::state::SessionState;
use drafter::Drafter;

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

/// What a command decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decided {
    /// The events to record, in order, in one atomic append.
    pub events: Vec<Draft>,
    /// The reaction to decide once these events are applied, if any.
    pub then: Option<Command>,
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

fn decide_inner(
    state: &SessionState,
    command: Command,
    context: &mut Context<'_>,
) -> Result<Decided, Violation> {
    inputs::check_inputs(state, &command)?;
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
        Command::AssistantMessage { parent, model } => d.assistant_message(parent, model),
        Command::AppendPart { message, body } => d.append(message, body),
        Command::FinishStep {
            message,
            reason,
            tokens,
        } => d.finish_step(message, reason, tokens),
        Command::Refused { message, error } => d.refused(state, message, error)?,
        Command::Record(events) => d.record(events),
        Command::RecordCompaction(c) => d.recorded_compaction(c),
        Command::RequestCompaction => d.marker(false, false, CompactionTrigger::Manual),
        Command::QueueCompaction { auto, trigger } => d.marker(auto, false, trigger),
        Command::StartJob {
            job,
            model,
            prompt,
            tail,
        } => d.start_job(state, job, model, prompt, tail)?,
        Command::CompleteJob { job, summary } => d.complete(state, job, summary)?,
        Command::FailJob { job, error } => d.fail_job(state, job, error)?,
        Command::EndTurn => d.end_turn(state),
        Command::Settle { policy, limits } => d.settle(state, policy, limits),
        Command::AddItems(items) => d.add_items(state, items),
        Command::WithdrawAll { reason } => d.withdraw_all(state, reason),
        Command::ReopenCall { part, reason } => d.reopen_call(state, part, reason)?,
        Command::FinishOpenStep { tokens } => d.finish_open_step(state, tokens),
        Command::BeforeRequest => d.before_request(state),
        Command::CheckOverflow { step } => d.check_overflow(state, step),
        Command::CheckGuard { window_before } => {
            if let Some(paused) = d.context.guard.check(state, window_before) {
                d.push(paused);
            }
        }
    }
    Ok(d.out)
}
