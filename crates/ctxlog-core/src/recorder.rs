//! [`Recorder`]: an in-memory event log for one session that checks every
//! event against the reducer before keeping it. It is how tests, the demo
//! and the generator write sessions; the durable store does the same thing
//! on disk. Pure: times and ids come from the caller.

use crate::decide::{decide, queued, Command, Context, Decided, Draft, SummaryText, TailChoice};
use crate::error::{Refused, RefusedCommand, RefusedEvent, Violation};
use crate::event::{CompactionTrigger, Envelope, Event, FinishReason, PartBody, Role, ToolState};
use crate::guard::LoopGuard;
use crate::ids::{EventId, IdSource, MessageId, PartId, SessionId, TimestampMs};
use crate::json::Json;
use crate::policy::{ModelLimits, Policy, TokenUsage};
use crate::state::SessionState;
use uuid::Uuid;

/// An append-only, validated, in-memory session log.
#[derive(Debug, Clone)]
pub struct Recorder<I: IdSource> {
    session: SessionId,
    state: SessionState,
    events: Vec<Envelope>,
    ids: I,
    /// Correlation id stamped on the following events.
    pub correlation: Option<Uuid>,
}

impl<I: IdSource> Recorder<I> {
    /// Starts a session: records `SessionStarted` as event 1.
    pub fn start(
        session: SessionId,
        ids: I,
        at: TimestampMs,
        policy: Policy,
        limits: ModelLimits,
    ) -> Result<Self, RefusedEvent> {
        Self::start_from(session, ids, at, policy, limits, None, None)
    }

    /// Starts a session imported from a recording whose own id is
    /// `source_id`, with its title when it has one.
    pub fn start_from(
        session: SessionId,
        ids: I,
        at: TimestampMs,
        policy: Policy,
        limits: ModelLimits,
        title: Option<String>,
        source_id: Option<String>,
    ) -> Result<Self, RefusedEvent> {
        let mut r = Recorder {
            session,
            state: SessionState::new(),
            events: Vec::new(),
            ids,
            correlation: None,
        };
        r.record(
            at,
            Event::SessionStarted {
                policy,
                limits,
                title,
                source_id,
            },
        )?;
        Ok(r)
    }

    /// The session id.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// The state after every recorded event.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// The recorded events, in order.
    pub fn events(&self) -> &[Envelope] {
        &self.events
    }

    /// Consumes the recorder, returning its events.
    pub fn into_events(self) -> Vec<Envelope> {
        self.events
    }

    /// Hands over the events recorded so far and keeps recording (the state
    /// stays): how a large session is generated without holding its log.
    pub fn drain_events(&mut self) -> Vec<Envelope> {
        std::mem::take(&mut self.events)
    }

    /// Hands over the first `count` events recorded since the last hand-over
    /// (all when fewer), keeping the buffer: how an importer moves events
    /// into an [`crate::EventPack`] as it goes.
    pub fn take_events(&mut self, count: usize) -> std::vec::Drain<'_, Envelope> {
        let count = count.min(self.events.len());
        self.events.drain(..count)
    }

    /// A fresh id from the injected source.
    pub fn uuid(&mut self, at: TimestampMs) -> Uuid {
        self.ids.next_uuid(at)
    }

    /// A fresh message id.
    pub fn message_id(&mut self, at: TimestampMs) -> MessageId {
        MessageId(self.uuid(at))
    }

    /// A fresh part id.
    pub fn part_id(&mut self, at: TimestampMs) -> PartId {
        PartId(self.uuid(at))
    }

    /// Wraps `event` in the next envelope and applies it; a refused event is
    /// not kept and the state is unchanged.
    pub fn record(&mut self, at: TimestampMs, event: Event) -> Result<&Envelope, RefusedEvent> {
        let env = Envelope {
            session: self.session,
            seq: self.state.head + 1,
            id: EventId(self.ids.next_uuid(at)),
            recorded_at: at,
            causation: self.state.last_event,
            correlation: self.correlation,
            event,
        };
        self.state.evolve(&env)?;
        self.events.push(env);
        Ok(&self.events[self.events.len() - 1])
    }

    /// Decides `command` on the current state and records what it decided,
    /// then every reaction it leads to (the overflow check after a step, the
    /// loop guard after an automatic compaction), under `guard`. Returns the
    /// decisions in order. A refused event stops the run; the events before
    /// it stay recorded, as in a log.
    pub fn run(
        &mut self,
        at: TimestampMs,
        command: Command,
        guard: LoopGuard,
    ) -> Result<Vec<Decided>, Refused> {
        let mut decisions = Vec::new();
        let mut next = Some(command);
        while let Some(command) = next {
            let decided = self.decide(at, command, guard)?;
            for draft in &decided.events {
                self.record_draft(draft.clone())?;
            }
            next = decided.then.clone();
            decisions.push(decided);
        }
        Ok(decisions)
    }

    /// [`decide`] on the current state, with this recorder's ids.
    fn decide(
        &mut self,
        at: TimestampMs,
        command: Command,
        guard: LoopGuard,
    ) -> Result<Decided, RefusedCommand> {
        let mut context = Context {
            ids: &mut self.ids,
            at,
            guard,
        };
        decide(&self.state, command, &mut context)
    }

    /// Records a decided event with its own id and time.
    pub fn record_draft(&mut self, draft: Draft) -> Result<&Envelope, RefusedEvent> {
        let env = Envelope {
            session: self.session,
            seq: self.state.head + 1,
            id: draft.id,
            recorded_at: draft.at,
            causation: self.state.last_event,
            correlation: self.correlation,
            event: draft.event,
        };
        self.state.evolve(&env)?;
        self.events.push(env);
        Ok(&self.events[self.events.len() - 1])
    }

    /// Appends a message with no parts.
    pub fn message(
        &mut self,
        at: TimestampMs,
        role: Role,
        parent: Option<MessageId>,
        synthetic: bool,
    ) -> Result<MessageId, RefusedEvent> {
        let message = self.message_id(at);
        self.record(
            at,
            Event::MessageAppended {
                message,
                role,
                agent: None,
                model: None,
                synthetic,
                parent,
                source_id: None,
            },
        )?;
        Ok(message)
    }

    /// Appends a part to `message`.
    pub fn part(
        &mut self,
        at: TimestampMs,
        message: MessageId,
        body: PartBody,
    ) -> Result<PartId, RefusedEvent> {
        let part = self.part_id(at);
        self.record(
            at,
            Event::PartAppended {
                message,
                part,
                body,
                source_id: None,
            },
        )?;
        Ok(part)
    }

    /// Appends a user message with one text part.
    pub fn user_text(
        &mut self,
        at: TimestampMs,
        text: &str,
        synthetic: bool,
    ) -> Result<MessageId, RefusedEvent> {
        let m = self.message(at, Role::User, None, synthetic)?;
        self.part(
            at,
            m,
            PartBody::Text {
                text: text.into(),
                synthetic,
                time: None,
            },
        )?;
        Ok(m)
    }

    /// Appends a completed tool call to an assistant message.
    pub fn tool(
        &mut self,
        at: TimestampMs,
        message: MessageId,
        tool: &str,
        input: Json,
        output: &str,
    ) -> Result<PartId, RefusedEvent> {
        let call: String = self
            .uuid(at)
            .simple()
            .to_string()
            .chars()
            .take(12)
            .collect();
        self.part(
            at,
            message,
            PartBody::Tool {
                call_id: format!("call_{call}"),
                tool: tool.into(),
                state: ToolState::Completed {
                    input,
                    output: output.into(),
                    title: None,
                    metadata: Json::Null,
                    start: at,
                    end: at,
                    attachments: Vec::new(),
                },
            },
        )
    }

    /// Finishes a model step on `message`.
    pub fn finish_step(
        &mut self,
        at: TimestampMs,
        message: MessageId,
        reason: FinishReason,
        tokens: TokenUsage,
    ) -> Result<PartId, RefusedEvent> {
        let part = self.part_id(at);
        self.record(
            at,
            Event::StepFinished {
                message,
                part,
                reason,
                tokens,
                cost_micros: None,
            },
        )?;
        Ok(part)
    }

    /// Queues a compaction marker through [`decide`]
    /// ([`Command::QueueCompaction`]); returns the job (marker message) id.
    pub fn request_compaction(
        &mut self,
        at: TimestampMs,
        auto: bool,
        trigger: CompactionTrigger,
    ) -> Result<MessageId, Refused> {
        let decided = self.run_once(at, Command::QueueCompaction { auto, trigger })?;
        queued(std::slice::from_ref(&decided)).ok_or(Refused::Command(RefusedCommand {
            command: "queue_compaction",
            violation: Violation::NotStarted,
        }))
    }

    /// Starts job `job` keeping the tail from `tail_start` and completes it
    /// with `summary`, through [`decide`] as the engine does
    /// ([`Command::StartJob`], [`Command::CompleteJob`]): an automatic job
    /// is followed by its continue message; the loop guard is not checked
    /// (the caller writes what follows). Returns the summary message id.
    pub fn summarize(
        &mut self,
        at: TimestampMs,
        job: MessageId,
        summary: &str,
        tail_start: Option<MessageId>,
        tokens: TokenUsage,
    ) -> Result<MessageId, Refused> {
        let start = Command::StartJob {
            job,
            model: None,
            prompt: None,
            tail: TailChoice::From(tail_start),
        };
        self.run_once(at, start)?;
        let summary_message =
            self.state
                .job(job)
                .and_then(|j| j.summary)
                .ok_or(Refused::Command(RefusedCommand {
                    command: "start_job",
                    violation: Violation::UnknownJob(job),
                }))?;
        let summary = SummaryText {
            text: summary.into(),
            finish: FinishReason::Stop,
            tokens,
            redactions: 0,
        };
        self.run_once(at, Command::CompleteJob { job, summary })?;
        Ok(summary_message)
    }

    /// Decides `command` and records what it decided, without the
    /// reactions it leads to (the caller writes what follows).
    fn run_once(&mut self, at: TimestampMs, command: Command) -> Result<Decided, Refused> {
        let decided = self.decide(at, command, LoopGuard::default())?;
        for draft in &decided.events {
            self.record_draft(draft.clone())?;
        }
        Ok(decided)
    }
}
