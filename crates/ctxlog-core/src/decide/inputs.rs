//! What `decide` checks of a command's inputs before it drafts anything, so
//! that the reducer never refuses an event `decide` made (the engine asserts
//! it): the session is started (not yet, for `Start`); a policy is valid;
//! the messages a caller names exist and can take what the command does to
//! them; a new part's body is one a part may carry; an item's source fields
//! are an object; a job's chosen tail is before its marker; a summary is
//! neither blank nor an error. The events of `Record` and
//! `RecordCompaction` were made elsewhere (a recording's): the reducer
//! checks them, and may refuse them.

use super::command::{Command, TailChoice};
use crate::error::Violation;
use crate::event::{CompactionTrigger, Role};
use crate::state::{check_fields_object, check_new_body, validate_policy, SessionState};

/// Whether `command`'s events were made by the caller (a recording), not
/// by `decide`: the reducer alone checks them.
pub fn records_events(command: &Command) -> bool {
    matches!(command, Command::Record(_) | Command::RecordCompaction(_))
}

/// Refuses `command` when an input would make the reducer refuse an event
/// drafted from it.
pub(super) fn check_inputs(state: &SessionState, command: &Command) -> Result<(), Violation> {
    if records_events(command) {
        return Ok(());
    }
    match (command, state.session) {
        (Command::Start { .. }, Some(_)) => return Err(Violation::AlreadyStarted),
        (Command::Start { .. }, None) => {}
        (_, None) => return Err(Violation::NotStarted),
        (_, Some(_)) => {}
    }
    match command {
        Command::Start { policy, .. }
        | Command::Settle {
            policy: Some(policy),
            ..
        } => validate_policy(policy),
        Command::Step(step) => {
            state.check_parent(step.parent)?;
            // The step's message is a new assistant's (not drafted yet: an
            // assistant's part is never refused for its role, so no error
            // names it).
            let message = step.parent;
            step.parts
                .iter()
                .try_for_each(|body| check_new_body(Role::Assistant, message, body))
        }
        Command::AssistantMessage { parent, .. } => state.check_parent(*parent),
        Command::AppendPart { message, body } => state.check_new_part_on(*message, body),
        Command::FinishStep { message, .. } => state.check_step_on(*message),
        Command::AddItems(items) => items.iter().try_for_each(|item| {
            check_fields_object(&item.fields)?;
            item.fields_completing
                .as_ref()
                .map_or(Ok(()), check_fields_object)
        }),
        Command::StartJob {
            job,
            tail: TailChoice::From(Some(tail)),
            ..
        } => state.check_tail(*job, *tail),
        Command::CompleteJob { job, summary } => {
            state.check_completion(*job, &summary.text, &summary.finish)
        }
        Command::QueueCompaction {
            trigger: CompactionTrigger::Overflow { step, .. },
            ..
        } => state.check_parent(*step),
        _ => Ok(()),
    }
}
