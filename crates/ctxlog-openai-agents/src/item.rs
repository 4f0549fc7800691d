//! One Agents SDK item as ctxlog records it, and as `get_items` gives it
//! back.

pub use ctxlog_core::ItemKind;
use ctxlog_core::{AgentItem, Json, Role, SessionId};
use sha2::{Digest, Sha256};

/// The source format of the [`ctxlog_core::Event::SourceFields`] that keep each item as
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

/// The kind the binding names (`input`, `assistant`, `reasoning`, `call`,
/// `output`, `other`).
pub fn parse_kind(name: &str) -> Option<ItemKind> {
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

impl NewItem {
    /// The item as core's decisions take it: its JSON text kept as the
    /// fields of format [`FORMAT`]; an output's template (without its
    /// output) kept instead when it completes its call.
    pub(crate) fn to_agent_item(&self) -> AgentItem {
        let arguments = match self.kind {
            ItemKind::Call => serde_json::from_str::<Json>(&self.text)
                .unwrap_or_else(|_| Json::String(self.text.clone())),
            _ => Json::Null,
        };
        AgentItem {
            kind: self.kind,
            text: self.text.clone(),
            arguments,
            call_id: self.call_id.clone(),
            name: self.name.clone(),
            format: FORMAT.into(),
            fields: Json::Object(vec![(ITEM_KEY.into(), Json::String(self.raw.clone()))]),
            fields_completing: self.template.as_ref().map(|template| {
                Json::Object(vec![
                    (ITEM_KEY.into(), Json::String(template.clone())),
                    (OUTPUT_IN_PART_KEY.into(), Json::Bool(true)),
                ])
            }),
        }
    }
}
