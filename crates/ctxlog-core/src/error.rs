//! Typed errors for refused events.

use crate::ids::{EventId, MessageId, PartId, Seq, SessionId};
use thiserror::Error;

/// An event the reducer refused, naming the event. The state is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("event #{seq} ({kind}, id {id}) refused: {violation}")]
pub struct RefusedEvent {
    /// The event's sequence number.
    pub seq: Seq,
    /// The event's id.
    pub id: EventId,
    /// The event's kind name.
    pub kind: &'static str,
    /// The invariant it breaks.
    pub violation: Violation,
}

/// The invariant an event breaks.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Violation {
    /// The sequence number is not the head + 1.
    #[error("sequence gap: expected seq {expected}, got {got}")]
    SequenceGap {
        /// head + 1
        expected: Seq,
        /// the event's seq
        got: Seq,
    },
    /// The event belongs to another session.
    #[error("event of session {got} applied to session {expected}")]
    WrongSession {
        /// This state's session.
        expected: SessionId,
        /// The event's session.
        got: SessionId,
    },
    /// The first event must be `SessionStarted`.
    #[error("session not started: the first event must be session_started")]
    NotStarted,
    /// `SessionStarted` after the first event.
    #[error("session already started")]
    AlreadyStarted,
    /// A message id used twice.
    #[error("message {0:?} already exists")]
    DuplicateMessage(MessageId),
    /// A message that does not exist.
    #[error("unknown message {0:?}")]
    UnknownMessage(MessageId),
    /// A part id used twice.
    #[error("part {0:?} already exists")]
    DuplicatePart(PartId),
    /// A part that does not exist.
    #[error("unknown part {0:?}")]
    UnknownPart(PartId),
    /// A part kind that has its own event.
    #[error("a {kind} part can only be created by {event}")]
    DedicatedEventRequired {
        /// The part kind.
        kind: &'static str,
        /// The event that creates it.
        event: &'static str,
    },
    /// A part kind that may not change.
    #[error("a {0} part cannot be updated")]
    ImmutablePart(&'static str),
    /// An update that changes a part's kind or a tool's identity.
    #[error("update changes part {part:?} from {from} to {to}")]
    KindChanged {
        /// The part.
        part: PartId,
        /// Its kind (or tool/call) before.
        from: String,
        /// The update's kind (or tool/call).
        to: String,
    },
    /// A part kind placed on a message of the wrong role.
    #[error("a {kind} part cannot be placed on a {role} message {message:?}")]
    WrongRole {
        /// The part kind.
        kind: &'static str,
        /// The role of the message.
        role: &'static str,
        /// The message.
        message: MessageId,
    },
    /// A call to reopen whose part is not a completed tool call.
    #[error("part {0:?} is not a completed tool call: only a call's output can be taken back")]
    NotACompletedCall(PartId),
    /// A refusal of something that is not an open request.
    #[error("message {0:?} is not an assistant message whose step is still open: only a request can be refused")]
    NotARequest(MessageId),
    /// A step finished on a summary message.
    #[error("message {0:?} is a compaction summary: its step ends with summary_completed")]
    StepOnSummary(MessageId),
    /// A pruned part was updated.
    #[error("part {0:?} is pruned: restore it before updating it")]
    PartPruned(PartId),
    /// A compaction event for a job that does not exist.
    #[error("no compaction job {0:?}")]
    UnknownJob(MessageId),
    /// A compaction event for a job in the wrong state.
    #[error("compaction job {job:?} is {status}, expected {expected}")]
    JobState {
        /// The job.
        job: MessageId,
        /// Its status.
        status: &'static str,
        /// What the event needs.
        expected: &'static str,
    },
    /// A summary that would replace history with nothing.
    #[error("summary of job {0:?} has no text")]
    EmptySummary(MessageId),
    /// A summary whose finish reason is an error.
    #[error("summary of job {0:?} finished with an error: record compaction_failed instead")]
    SummaryFinishedWithError(MessageId),
    /// The recent tail must start before the marker.
    #[error("tail start {tail:?} is not a message before marker {marker:?}")]
    BadTailStart {
        /// The tail start.
        tail: MessageId,
        /// The marker.
        marker: MessageId,
    },
    /// A summary whose recorded tail starts before the window it would
    /// replace: the window never moves back to history an earlier
    /// compaction already summarized.
    #[error("job {job:?}: its tail starts at message {tail:?}, before the window's start {start:?} (the history before it was already summarized)")]
    TailBeforeWindow {
        /// The job.
        job: MessageId,
        /// Its tail start.
        tail: MessageId,
        /// The first message of the current window.
        start: MessageId,
    },
    /// A prune of something that is not a completed tool output.
    #[error("part {0:?} is not a completed tool part")]
    NotPrunable(PartId),
    /// A part pruned twice.
    #[error("part {0:?} is already pruned")]
    AlreadyPruned(PartId),
    /// A restore of a part that is not pruned.
    #[error("part {0:?} is not pruned")]
    NotPruned(PartId),
    /// The same part twice in one event.
    #[error("part {0:?} listed twice")]
    RepeatedPart(PartId),
    /// An event other than a description in a description stream.
    #[error("{0} is not a description: a description stream holds only descriptions")]
    NotADescription(&'static str),
    /// Source fields that are not a JSON object.
    #[error("source_fields: fields must be a JSON object")]
    SourceFieldsNotAnObject,
    /// A session replaced by itself.
    #[error("a session cannot be replaced by itself")]
    ReplacedByItself,
    /// An empty prune or restore.
    #[error("no parts listed")]
    NoParts,
    /// An empty withdrawal.
    #[error("no messages listed")]
    NoMessages,
    /// The same message twice in one event.
    #[error("message {0:?} listed twice")]
    RepeatedMessage(MessageId),
    /// A message withdrawn a second time.
    #[error("message {0:?} is already withdrawn")]
    AlreadyWithdrawn(MessageId),
    /// A prune total that does not add up.
    #[error("total_tokens {stated} differs from the sum of the parts {sum}")]
    TokenSumMismatch {
        /// What the event states.
        stated: u64,
        /// The sum of its parts.
        sum: u64,
    },
    /// An error recorded directly on a summary message.
    #[error("message {0:?} is a compaction summary: record compaction_failed for its job instead")]
    SummaryErrorNeedsJobEvent(MessageId),
    /// A part added to or changed on a marker or a finished summary.
    #[error("message {message:?} is closed: {why}")]
    ClosedMessage {
        /// The message.
        message: MessageId,
        /// Why.
        why: &'static str,
    },
    /// A policy that cannot work.
    #[error("invalid policy: {0}")]
    InvalidPolicy(&'static str),
}

/// A command [`crate::decide()`] cannot turn into events (nothing was decided).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("command {command} refused: {violation}")]
pub struct RefusedCommand {
    /// The command's name.
    pub command: &'static str,
    /// Why.
    pub violation: Violation,
}

/// Why a command was not carried out: refused as a command, or one of the
/// events it decided was refused by the reducer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Refused {
    /// `decide` refused the command.
    #[error(transparent)]
    Command(#[from] RefusedCommand),
    /// The reducer refused an event.
    #[error(transparent)]
    Event(#[from] RefusedEvent),
}
