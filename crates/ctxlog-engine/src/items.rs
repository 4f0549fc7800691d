//! The commands of a session an agent runtime keeps item by item (the
//! OpenAI Agents SDK's session protocol, through `ctxlog-openai-agents`): each
//! is decided by [`ctxlog_core::decide()`] like every other change.

use crate::commands::step_outcome;
use crate::error::EngineError;
use crate::outcome::StepOutcome;
use crate::Session;
use ctxlog_core::decide::drafted;
use ctxlog_core::{AgentItem, Command, Event, ModelLimits, PartId, Policy, SessionAbout};
use ctxlog_core::{MessageId, TokenUsage};
use ctxlog_store::EventLog;

impl<L: EventLog> Session<'_, L> {
    /// Describes the session (title, agent...) for listings.
    pub fn describe(&self, about: SessionAbout) -> Result<(), EngineError> {
        self.command(Command::Record(vec![Event::SessionDescribed { about }]))
            .map(drop)
    }

    /// Records each of `policy` and `limits` that differs from the
    /// session's as a change.
    pub fn settle(
        &self,
        policy: Option<Policy>,
        limits: Option<ModelLimits>,
    ) -> Result<(), EngineError> {
        self.command(Command::Settle { policy, limits }).map(drop)
    }

    /// Records `items` in one atomic append (see [`Command::AddItems`]).
    pub fn add_items(&self, items: Vec<AgentItem>) -> Result<(), EngineError> {
        if items.is_empty() {
            return Ok(());
        }
        self.command(Command::AddItems(items)).map(drop)
    }

    /// Withdraws `messages`: they leave every view of the model input; the
    /// log keeps them.
    pub fn withdraw(&self, messages: Vec<MessageId>, reason: &str) -> Result<(), EngineError> {
        let reason = reason.into();
        self.command(Command::Record(vec![Event::MessagesWithdrawn {
            messages,
            reason,
        }]))
        .map(drop)
    }

    /// Withdraws every message not withdrawn yet; returns how many.
    pub fn withdraw_all(&self, reason: &str) -> Result<usize, EngineError> {
        let reason = reason.into();
        let decided = self.command(Command::WithdrawAll { reason })?.decided;
        Ok(drafted(&decided)
            .map(|e| match e {
                Event::MessagesWithdrawn { messages, .. } => messages.len(),
                _ => 0,
            })
            .sum())
    }

    /// Takes back the output of the completed call `part`: the call waits
    /// for its output again (restored first when a prune cleared it).
    pub fn reopen_call(&self, part: PartId, reason: &str) -> Result<(), EngineError> {
        let reason = reason.into();
        self.command(Command::ReopenCall { part, reason }).map(drop)
    }

    /// Finishes the step of the last message sent, when it is an
    /// assistant's still open, with `tokens` (the window's estimate when
    /// `None`), then runs the overflow check; `None` when no step was open.
    pub fn finish_open_step(
        &self,
        tokens: Option<TokenUsage>,
    ) -> Result<Option<StepOutcome>, EngineError> {
        let ran = self.command(Command::FinishOpenStep { tokens })?;
        let finished = drafted(&ran.decided).find_map(|e| match e {
            Event::StepFinished { message, .. } => Some(*message),
            _ => None,
        });
        Ok(finished.map(|message| step_outcome(message, &ran)))
    }
}
