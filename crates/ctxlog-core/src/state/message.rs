//! [`Message`]: a message as the state holds it.

use crate::event::{Envelope, FinishReason, MessageError, ModelRef, PartBody, Role};
use crate::ids::{MessageId, Seq, TimestampMs};
use crate::part::{ContentError, Contents, Part};
use crate::policy::TokenUsage;
use serde::{Deserialize, Serialize};

/// A message as the state holds it. Its larger optional fields (model,
/// usage, error) are boxed: a long session holds hundreds of thousands of
/// messages, and boxing keeps each at a third of its inline size (the
/// encoding is the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Its id.
    pub id: MessageId,
    /// User or assistant.
    pub role: Role,
    /// Agent name (boxed strings here and below: no spare capacity;
    /// encoded as strings).
    pub agent: Option<Box<str>>,
    /// Model.
    pub model: Option<Box<ModelRef>>,
    /// Written by the runtime.
    pub synthetic: bool,
    /// The message it answers.
    pub parent: Option<MessageId>,
    /// Id in the recorded source.
    pub source_id: Option<Box<str>>,
    /// A compaction summary (assistant, created by `CompactionStarted`).
    pub summary: bool,
    /// A compaction marker (user, created by `CompactionRequested`).
    pub marker: bool,
    /// Seq of the event that created it.
    pub created_seq: Seq,
    /// When it was created, ms.
    pub created_at: TimestampMs,
    /// Finish reason of its last step.
    pub finish: Option<FinishReason>,
    /// Usage of its last step (overwritten by each step, as OpenCode does).
    pub tokens: Option<Box<TokenUsage>>,
    /// Error recorded on it.
    pub error: Option<Box<MessageError>>,
    /// Taken back by the agent
    /// ([`Event::MessagesWithdrawn`](crate::event::Event::MessagesWithdrawn)):
    /// never sent again, never pruned.
    pub withdrawn: bool,
    /// Its parts, in order.
    pub parts: Vec<Part>,
}

/// The messages a prune walk visits, newest first, with their positions in
/// `messages`: past the `protect_turns` most recent user turns (counting
/// the user message that completes them), skipping withdrawn messages that
/// are not summaries (no turn, nothing the model sees; a withdrawn summary
/// still ends the walk). The walk itself ([`crate::plan_prune`]) and what a
/// pivot keeps for it (`close.rs`) both go through here.
pub(crate) fn prune_walk(
    messages: &[Message],
    protect_turns: u32,
) -> impl Iterator<Item = (usize, &Message)> {
    let mut turns = 0u32;
    messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| !m.withdrawn || m.summary)
        .filter(move |(_, m)| {
            if m.role.is_input() {
                turns += 1;
            }
            turns >= protect_turns
        })
}

/// Whether a prune walk ends at `m` (a compaction summary).
pub(crate) fn ends_prune_walk(m: &Message) -> bool {
    m.role == Role::Assistant && m.summary
}

impl Message {
    /// The texts of its text parts, in order, read back from `log` where
    /// sealed.
    pub fn texts_in<L: Contents + ?Sized>(&self, log: &L) -> Result<Vec<String>, ContentError> {
        let mut texts = Vec::new();
        for p in &self.parts {
            if p.kind() != "text" {
                continue;
            }
            if let PartBody::Text { text, .. } = &*p.body_in(log)? {
                texts.push(text.clone());
            }
        }
        Ok(texts)
    }

    /// The message `env` creates with id `id`: no parts, no flag set; the
    /// reducer fills in what the event says.
    pub(super) fn blank(env: &Envelope, id: MessageId, role: Role) -> Message {
        Message {
            id,
            role,
            agent: None,
            model: None,
            synthetic: false,
            parent: None,
            source_id: None,
            summary: false,
            marker: false,
            created_seq: env.seq,
            created_at: env.recorded_at,
            finish: None,
            tokens: None,
            error: None,
            withdrawn: false,
            parts: Vec::new(),
        }
    }
}
