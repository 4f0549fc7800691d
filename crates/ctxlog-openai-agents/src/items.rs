//! [`Items`]: what the log says of a session's Agents SDK items, folded
//! from its events. Derived like every other view: rebuilt by reading the
//! session again.

use crate::item::{FORMAT, ITEM_KEY, OUTPUT_IN_PART_KEY};
use ctxlog_core::Json;
use ctxlog_core::{Envelope, Event, MessageId, PartBody, PartId, Seq, SourceTarget, ToolState};
use std::collections::BTreeMap;

/// The JSON text of each message's item and of each tool part's current
/// output, with the seq that recorded the output.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Items {
    messages: BTreeMap<MessageId, Box<str>>,
    outputs: BTreeMap<PartId, Output>,
}

/// A tool part's output item.
#[derive(Debug, Clone, PartialEq)]
struct Output {
    /// The seq that recorded it.
    seq: Seq,
    /// Its JSON text.
    raw: Box<str>,
    /// `raw` has `output` as `null`: the part holds it.
    in_part: bool,
}

impl Items {
    /// No items.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds one event of the session.
    pub fn evolve(&mut self, e: &Envelope) {
        match &e.event {
            Event::SourceFields {
                format,
                target,
                fields,
            } if format == FORMAT => {
                let Some(raw) = fields.get(ITEM_KEY).and_then(|v| v.as_str()) else {
                    return;
                };
                match target {
                    SourceTarget::Message(m) => {
                        self.messages.insert(*m, raw.into());
                    }
                    SourceTarget::Part(p) => {
                        let in_part = fields.get(OUTPUT_IN_PART_KEY) == Some(&Json::Bool(true));
                        let output = Output {
                            seq: e.seq,
                            raw: raw.into(),
                            in_part,
                        };
                        self.outputs.insert(*p, output);
                    }
                    SourceTarget::Session => {}
                }
            }
            // A call's output taken back: the call waits again.
            Event::PartUpdated {
                part,
                body:
                    PartBody::Tool {
                        state: ToolState::Pending { .. } | ToolState::Running { .. },
                        ..
                    },
            } => {
                self.outputs.remove(part);
            }
            _ => {}
        }
    }

    /// The item that created `message`, when the agent added it.
    pub fn message(&self, message: MessageId) -> Option<&str> {
        self.messages.get(&message).map(|r| &**r)
    }

    /// The current output item of tool part `part`, the seq that recorded
    /// it, and whether its `output` is left out (`null`: the part holds it).
    pub fn output(&self, part: PartId) -> Option<(Seq, &str, bool)> {
        self.outputs.get(&part).map(|o| (o.seq, &*o.raw, o.in_part))
    }
}
