//! One Agents SDK item as ctxlog records it, and as `get_items` gives it
//! back.

use ctxlog_core::{Event, Json, MessageId, PartBody, PartId, Role, SourceTarget, ToolState};
use ctxlog_core::{SessionId, TimestampMs};
use sha2::{Digest, Sha256};

/// The source format of the [`Event::SourceFields`] that keep each item as
/// the agent wrote it.
pub const FORMAT: &str = "openai-agents";

/// The key of the item's JSON text in those fields.
pub const ITEM_KEY: &str = "item";

/// The key that says an output item's text has its `output` left out (as
/// `null`): the tool part it completed holds it, so it is stored once.
pub const OUTPUT_IN_PART_KEY: &str = "output_in_part";

/// The session an Agents SDK `session_id` names: derived from the name, so
/// every process finds the same session without a lookup.
pub fn session_id_for(name: &str) -> SessionId {
    let mut h = Sha256::new();
    h.update(b"ctxlog openai-agents session\0");
    h.update(name.as_bytes());
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    SessionId(uuid::Builder::from_custom_bytes(bytes).into_uuid())
}

/// What an item is to ctxlog. The binding classifies the SDK's items
/// (`ctxlog/agents.py`); ctxlog only needs these distinctions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// An input message (`user`, `system` or `developer` role): a user
    /// message, a turn.
    Input,
    /// An assistant output message.
    Assistant,
    /// A reasoning item.
    Reasoning,
    /// A function or custom tool call: a tool part waiting for its output.
    Call,
    /// The output of a call: completes the call's tool part, which a prune
    /// may clear later.
    Output,
    /// Any other item (hosted tool calls, references, ...): kept and given
    /// back, never measured.
    Other,
}

impl ItemKind {
    /// The kind the binding names.
    pub fn parse(name: &str) -> Option<ItemKind> {
        Some(match name {
            "input" => ItemKind::Input,
            "assistant" => ItemKind::Assistant,
            "reasoning" => ItemKind::Reasoning,
            "call" => ItemKind::Call,
            "output" => ItemKind::Output,
            "other" => ItemKind::Other,
            _ => return None,
        })
    }
}

/// One item to add, classified by the binding.
#[derive(Debug, Clone, PartialEq)]
pub struct NewItem {
    /// What it is.
    pub kind: ItemKind,
    /// Its JSON text, exactly as it is to be given back.
    pub raw: String,
    /// The text the model reads of it (for estimates, the summary and the
    /// CLI's views); for a call, its arguments; for an output, the output.
    pub text: String,
    /// A call's or an output's call id.
    pub call_id: Option<String>,
    /// A call's tool name; the type name of an `Other` item.
    pub name: Option<String>,
    /// For an output whose `output` is exactly `text`: its JSON text with
    /// `output` as `null`, kept instead of `raw` when the output completes
    /// its call (the part then holds the output, which is stored once).
    pub template: Option<String>,
}

/// One item of the session as the model should see it.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemView {
    /// An item the agent added, as it wrote it (`raw`); `cleared` when it
    /// is a tool output a prune cleared, to be given with its output
    /// replaced by [`ctxlog_core::window::PRUNED_PLACEHOLDER`].
    Recorded {
        /// The JSON text the agent gave (with `output` as `null` when
        /// `output` is given).
        raw: String,
        /// Its output is cleared.
        cleared: bool,
        /// The output to put back in `raw`'s `output` (kept in the tool
        /// part, not twice).
        output: Option<String>,
    },
    /// A message ctxlog wrote (the compaction question, the summary, the
    /// continue message), as a plain message.
    Written {
        /// Its role.
        role: Role,
        /// Its text.
        text: String,
    },
}

/// The events that record `item` as a new message (every kind but an
/// output that completes a call).
pub(crate) fn message_events(
    item: &NewItem,
    message: MessageId,
    part: PartId,
    parent: Option<MessageId>,
) -> Vec<Event> {
    let role = match item.kind {
        ItemKind::Input => Role::User,
        _ => Role::Assistant,
    };
    let body = match item.kind {
        ItemKind::Input | ItemKind::Assistant => PartBody::Text {
            text: item.text.clone(),
            synthetic: false,
            time: None,
        },
        ItemKind::Reasoning => PartBody::Reasoning {
            text: item.text.clone(),
            time: None,
        },
        ItemKind::Call => PartBody::Tool {
            call_id: item.call_id.clone().unwrap_or_default(),
            tool: item.name.clone().unwrap_or_default(),
            state: pending(&item.text),
        },
        ItemKind::Output | ItemKind::Other => PartBody::Other {
            kind: item.name.clone().unwrap_or_else(|| "item".into()),
            data: Json::Null,
        },
    };
    vec![
        Event::MessageAppended {
            message,
            role,
            agent: None,
            model: None,
            synthetic: false,
            parent: if role == Role::Assistant {
                parent
            } else {
                None
            },
            source_id: None,
        },
        Event::PartAppended {
            message,
            part,
            body,
            source_id: item.call_id.clone(),
        },
        kept(SourceTarget::Message(message), &item.raw),
    ]
}

/// The events that complete tool part `part` (call `call_id` of `tool`,
/// with `input`) with output `item`.
pub(crate) fn output_events(
    item: &NewItem,
    part: PartId,
    call: (&str, &str, &Json),
    at: TimestampMs,
) -> Vec<Event> {
    let (call_id, tool, input) = call;
    vec![
        Event::PartUpdated {
            part,
            body: PartBody::Tool {
                call_id: call_id.into(),
                tool: tool.into(),
                state: ToolState::Completed {
                    input: input.clone(),
                    output: item.text.clone(),
                    title: None,
                    metadata: Json::Null,
                    start: at,
                    end: at,
                    attachments: Vec::new(),
                },
            },
        },
        match &item.template {
            Some(template) => Event::SourceFields {
                format: FORMAT.into(),
                target: SourceTarget::Part(part),
                fields: Json::Object(vec![
                    (ITEM_KEY.into(), Json::String(template.clone())),
                    (OUTPUT_IN_PART_KEY.into(), Json::Bool(true)),
                ]),
            },
            None => kept(SourceTarget::Part(part), &item.raw),
        },
    ]
}

/// A call waiting for its output, with its arguments (`text`): parsed when
/// they are JSON, else kept as a string.
pub(crate) fn pending(arguments: &str) -> ToolState {
    let input =
        serde_json::from_str::<Json>(arguments).unwrap_or_else(|_| Json::String(arguments.into()));
    ToolState::Pending {
        input,
        raw: arguments.into(),
    }
}

/// The fields that keep an item's JSON text for `target`.
fn kept(target: SourceTarget, raw: &str) -> Event {
    Event::SourceFields {
        format: FORMAT.into(),
        target,
        fields: Json::Object(vec![(ITEM_KEY.into(), Json::String(raw.into()))]),
    }
}
