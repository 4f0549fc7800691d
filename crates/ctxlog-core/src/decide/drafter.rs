//! [`Drafter`]: draws ids in the order events are decided and collects
//! the drafts of one decision.

use super::checks::{continue_text, pending_job};
use super::{Command, Context, Decided, Draft, RecordedCompaction, Step, SummaryText, TailChoice};
use crate::error::Violation;
use crate::event::Role;
use crate::event::{CompactionTrigger, Event, FinishReason, MessageError, PartBody};
use crate::event::{ModelRef, PromptRecord};
use crate::ids::{EventId, MessageId, PartId};
use crate::policy::TokenUsage;
use crate::policy::{ContinueMessage, ProviderOverflow};
use crate::prune::plan_prune;
use crate::replay::{replay_of, replay_parts};
use crate::state::{JobStatus, SessionState};
use crate::tail::select_tail;
use crate::window::{estimate_window, CONTEXT_OVERFLOW_ERROR};
use uuid::Uuid;

/// Draws ids in the order events are decided and collects the drafts.
pub(super) struct Drafter<'c, 'a> {
    pub(super) context: &'c mut Context<'a>,
    pub(super) out: Decided,
}

impl Drafter<'_, '_> {
    pub(super) fn uuid(&mut self) -> Uuid {
        self.context.ids.next_uuid(self.context.at)
    }

    pub(super) fn message(&mut self) -> MessageId {
        MessageId(self.uuid())
    }

    pub(super) fn part(&mut self) -> PartId {
        PartId(self.uuid())
    }

    pub(super) fn push(&mut self, event: Event) {
        // Doubling from one: a `Draft` is large, and a list's usual first
        // growth (to four) took glibc's slow path (`malloc_consolidate`)
        // on every command of one event.
        let events = &mut self.out.events;
        if events.len() == events.capacity() {
            events.reserve_exact(events.capacity().max(1));
        }
        let id = EventId(self.uuid());
        self.out.events.push(Draft {
            id,
            at: self.context.at,
            event,
        });
    }

    /// [`Command::AssistantMessage`]: an assistant message with no parts.
    pub(super) fn assistant_message(&mut self, parent: MessageId, model: Option<ModelRef>) {
        let message = self.message();
        self.push(Event::MessageAppended {
            message,
            role: Role::Assistant,
            agent: None,
            model,
            synthetic: false,
            parent: Some(parent),
            source_id: None,
        });
    }

    /// [`Command::FinishStep`]: the step finishes, then the overflow check.
    pub(super) fn finish_step(
        &mut self,
        message: MessageId,
        reason: FinishReason,
        tokens: TokenUsage,
    ) {
        let part = self.part();
        self.push(Event::StepFinished {
            message,
            part,
            reason,
            tokens,
            cost_micros: None,
        });
        self.out.then = Some(Command::CheckOverflow { step: message });
    }

    /// [`Command::Record`]: events decided elsewhere, as they are; the
    /// overflow check after a finished step.
    pub(super) fn record(&mut self, events: Vec<Event>) {
        if let Some(Event::StepFinished { message, .. }) = events.last() {
            self.out.then = Some(Command::CheckOverflow { step: *message });
        }
        self.out.events.reserve_exact(events.len());
        for event in events {
            self.push(event);
        }
    }

    /// [`Command::StartJob`]: the summary message, with the tail the
    /// policy keeps.
    pub(super) fn start_job(
        &mut self,
        state: &SessionState,
        job: MessageId,
        model: Option<ModelRef>,
        prompt: Option<PromptRecord>,
        tail: TailChoice,
    ) -> Result<(), Violation> {
        pending_job(state, job)?;
        let tail_start = match tail {
            TailChoice::Policy => select_tail(state, &state.policy, job),
            TailChoice::From(start) => start,
        };
        let summary_message = self.message();
        self.push(Event::CompactionStarted {
            job,
            summary_message,
            agent: Some("compaction".into()),
            model,
            prompt,
            tail_start,
            source_id: None,
        });
        Ok(())
    }

    /// [`Command::FailJob`]: history stays; the loop guard after an
    /// automatic job.
    pub(super) fn fail_job(
        &mut self,
        state: &SessionState,
        job: MessageId,
        error: String,
    ) -> Result<(), Violation> {
        let auto = pending_job(state, job)?;
        self.push(Event::CompactionFailed { job, error });
        if auto {
            self.out.then = Some(Command::CheckGuard {
                window_before: None,
            });
        }
        Ok(())
    }

    /// [`Command::EndTurn`]: prune when the policy says so. A policy that
    /// does not prune never walks the history (the walk is O(history);
    /// doing it every turn would be quadratic).
    pub(super) fn end_turn(&mut self, state: &SessionState) {
        if state.policy.prune {
            if let Some(event) = plan_prune(state, &state.policy).to_event(&state.policy) {
                self.push(event);
            }
        }
    }

    /// A new part on `message` (its id drawn now).
    pub(super) fn append(&mut self, message: MessageId, body: PartBody) {
        let part = self.part();
        self.push(Event::PartAppended {
            message,
            part,
            body,
            source_id: None,
        });
    }

    pub(super) fn text(&mut self, message: MessageId, text: String, synthetic: bool) {
        let body = PartBody::Text {
            text,
            synthetic,
            time: None,
        };
        self.append(message, body);
    }

    pub(super) fn user_message(
        &mut self,
        text: String,
        synthetic: bool,
        source_id: Option<String>,
    ) {
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

    pub(super) fn step(&mut self, step: Step) {
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

    pub(super) fn marker(&mut self, auto: bool, overflow: bool, trigger: CompactionTrigger) {
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

    pub(super) fn complete(
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

    pub(super) fn refused(
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
    pub(super) fn replay(&mut self, state: &SessionState, prompt: MessageId) {
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
    pub(super) fn recorded_compaction(&mut self, c: RecordedCompaction) {
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
            tokens: c.tokens.unwrap_or_default(),
            redactions: 0,
        });
    }
}
