//! The projection: what each event of a session puts in the search index.
//! Pure: an event in, the changes out, nothing read from anywhere else.
//!
//! Two kinds of entries come out. An [`Item`] is something a person or an
//! agent may look for: a message (its role and the agent's own id) or a
//! part with text (a prompt, an answer, reasoning, a tool call with its
//! input and output, a summary's text). A [`Mark`] is a lifecycle event that
//! changes what an item's status is now: a prune, a restore, a compaction's
//! marker, start and completion (the pivot), a withdrawal. An item's status
//! is not stored with it: it is worked out when a hit is shown, from the
//! marks of its session ([`crate::status`]), so a later prune or
//! compaction never has to rewrite what was indexed before.

use ctxlog_core::{Envelope, Event, MessageId, PartBody, PartId, Role, ToolState};

/// One change to the index.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A message was appended: its role, and the ids the agent gave it.
    Message(MessageItem),
    /// A part with searchable text was appended or replaced; an item with
    /// the same part id is replaced. Its message is `None` for a
    /// [`Event::PartUpdated`], which does not name it (the indexer finds it
    /// from the part's first version).
    Part(PartItem),
    /// A lifecycle mark.
    Mark(Mark),
}

impl Mark {
    /// Its kind: `pruned`, `restored`, `withdrawn`, `started`, `pivot`
    /// (a session's compactions are read by it).
    pub fn kind(&self) -> &'static str {
        match self {
            Mark::Pruned(_) => "pruned",
            Mark::Restored(_) => "restored",
            Mark::Withdrawn(_) => "withdrawn",
            Mark::Started { .. } => "started",
            Mark::Pivot { .. } => "pivot",
        }
    }

    /// The parts (a prune, a restore) or messages (a withdrawal) it names:
    /// an item's status reads only the marks that name it.
    pub fn names(&self) -> Vec<uuid::Uuid> {
        match self {
            Mark::Pruned(parts) | Mark::Restored(parts) => parts.iter().map(|p| p.0).collect(),
            Mark::Withdrawn(messages) => messages.iter().map(|m| m.0).collect(),
            Mark::Started { .. } | Mark::Pivot { .. } => Vec::new(),
        }
    }
}

/// A message, as the index keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageItem {
    /// The message.
    pub message: MessageId,
    /// User or assistant.
    pub role: Role,
    /// What it is beyond its role.
    pub flavor: MessageFlavor,
    /// The agent's own id for it, when recorded.
    pub source_id: Option<String>,
}

/// What a message is beyond its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageFlavor {
    /// A message of the conversation.
    Plain,
    /// Written by the runtime (a continue message, ...).
    Synthetic,
    /// A compaction marker (the job's message).
    Marker,
    /// A compaction's summary.
    Summary,
}

impl MessageFlavor {
    /// Its name in the index.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageFlavor::Plain => "plain",
            MessageFlavor::Synthetic => "synthetic",
            MessageFlavor::Marker => "marker",
            MessageFlavor::Summary => "summary",
        }
    }

    /// The flavor a name in the index stands for.
    pub fn parse(s: &str) -> MessageFlavor {
        match s {
            "synthetic" => MessageFlavor::Synthetic,
            "marker" => MessageFlavor::Marker,
            "summary" => MessageFlavor::Summary,
            _ => MessageFlavor::Plain,
        }
    }
}

/// A part with text, as the index keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct PartItem {
    /// The part.
    pub part: PartId,
    /// Its message, when the event names it.
    pub message: Option<MessageId>,
    /// `text`, `reasoning`, `tool` or `file`.
    pub kind: &'static str,
    /// The tool's name, for a tool part.
    pub tool: Option<String>,
    /// The provider's call id, for a tool part.
    pub call_id: Option<String>,
    /// The agent's own id for the part, when recorded.
    pub source_id: Option<String>,
    /// What is searched: see [`searchable_text`].
    pub text: String,
}

/// A lifecycle mark.
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    /// Tool outputs were cleared from the model's input.
    Pruned(Vec<PartId>),
    /// Cleared outputs were given back.
    Restored(Vec<PartId>),
    /// Messages were taken back for good.
    Withdrawn(Vec<MessageId>),
    /// A compaction job began: its summary message, and the first message
    /// of the tail it keeps verbatim (none: the window will start at the
    /// marker).
    Started {
        /// The job (its marker message).
        job: MessageId,
        /// The summary message.
        summary: MessageId,
        /// The first message kept after the summary.
        tail_start: Option<MessageId>,
    },
    /// A compaction's summary completed: the window now starts at the job's
    /// tail, else its marker; everything before is compacted away.
    Pivot {
        /// The job.
        job: MessageId,
    },
}

/// What event `e` changes in the index, in order.
pub fn changes(e: &Envelope) -> Vec<Change> {
    match &e.event {
        Event::MessageAppended {
            message,
            role,
            synthetic,
            source_id,
            ..
        } => vec![Change::Message(MessageItem {
            message: *message,
            role: *role,
            flavor: if *synthetic {
                MessageFlavor::Synthetic
            } else {
                MessageFlavor::Plain
            },
            source_id: source_id.clone(),
        })],
        Event::PartAppended {
            message,
            part,
            body,
            source_id,
        } => part_item(*part, Some(*message), body, source_id.clone())
            .map(Change::Part)
            .into_iter()
            .collect(),
        Event::PartUpdated { part, body } => part_item(*part, None, body, None)
            .map(Change::Part)
            .into_iter()
            .collect(),
        Event::CompactionRequested {
            message, source_id, ..
        } => vec![Change::Message(MessageItem {
            message: *message,
            role: Role::User,
            flavor: MessageFlavor::Marker,
            source_id: source_id.clone(),
        })],
        Event::CompactionStarted {
            job,
            summary_message,
            tail_start,
            source_id,
            ..
        } => vec![
            Change::Message(MessageItem {
                message: *summary_message,
                role: Role::Assistant,
                flavor: MessageFlavor::Summary,
                source_id: source_id.clone(),
            }),
            Change::Mark(Mark::Started {
                job: *job,
                summary: *summary_message,
                tail_start: *tail_start,
            }),
        ],
        Event::SummaryCompleted { job, .. } => vec![Change::Mark(Mark::Pivot { job: *job })],
        Event::PartsPruned { parts, .. } => vec![Change::Mark(Mark::Pruned(
            parts.iter().map(|p| p.part).collect(),
        ))],
        Event::PartsRestored { parts, .. } => vec![Change::Mark(Mark::Restored(parts.clone()))],
        Event::MessagesWithdrawn { messages, .. } => {
            vec![Change::Mark(Mark::Withdrawn(messages.clone()))]
        }
        _ => Vec::new(),
    }
}

/// The item of a part, when it has anything to search.
fn part_item(
    part: PartId,
    message: Option<MessageId>,
    body: &PartBody,
    source_id: Option<String>,
) -> Option<PartItem> {
    let text = searchable_text(body)?;
    let (tool, call_id) = match body {
        PartBody::Tool { call_id, tool, .. } => (Some(tool.clone()), Some(call_id.clone())),
        _ => (None, None),
    };
    Some(PartItem {
        part,
        message,
        kind: body.kind(),
        tool,
        call_id,
        source_id,
        text,
    })
}

/// The text a part is found by, and its snippets are cut from: a text or
/// reasoning part's text; a tool call's name, input (as JSON) and output
/// or error, one per line; a file's name and type. `None` for parts with
/// nothing to search (step boundaries, markers, parts ctxlog does not
/// model).
pub fn searchable_text(body: &PartBody) -> Option<String> {
    match body {
        PartBody::Text { text, .. } | PartBody::Reasoning { text, .. } => Some(text.clone()),
        PartBody::Tool { tool, state, .. } => {
            let mut text = format!("{tool} {}", state.input().to_json_string());
            match state {
                ToolState::Completed { output, .. } => {
                    text.push('\n');
                    text.push_str(output);
                }
                ToolState::Error { error, .. } => {
                    text.push('\n');
                    text.push_str(error);
                }
                ToolState::Pending { .. } | ToolState::Running { .. } => {}
            }
            Some(text)
        }
        PartBody::File(a) => Some(format!(
            "{} {}",
            a.filename.as_deref().unwrap_or_default(),
            a.mime
        )),
        PartBody::StepStart { .. }
        | PartBody::StepFinish { .. }
        | PartBody::Compaction { .. }
        | PartBody::Other { .. } => None,
    }
}
