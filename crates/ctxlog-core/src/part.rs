//! A part as the state holds it: its content in memory while the part can
//! still be sent to the model, and only a [`Sketch`] once it cannot.
//!
//! The window starts at the latest completed pivot (or its recorded tail)
//! and that start only moves forward (the reducer refuses a tail before
//! it), so the parts of every message before it are never rendered again
//! as model input. The reducer *seals* them: their content stays in the log
//! (at [`Part::seq`]), and the state keeps what its checks, the prune walk
//! and the estimates need. A view that shows history (a report, a
//! transcript) reads sealed content back through [`Contents`].

use crate::event::{Envelope, Event, PartBody, ToolState};
use crate::ids::{PartId, Seq, TimestampMs};
use crate::policy::{utf16_len, TokenUsage};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// A pruning mark on a tool part: its output is hidden from the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneMark {
    /// The `PartsPruned` event's seq.
    pub seq: Seq,
    /// When, ms (the event's recorded time).
    pub at: TimestampMs,
    /// The policy that fired.
    pub policy: String,
    /// Estimated tokens hidden.
    pub tokens: u64,
}

/// A part as the state holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// Its id.
    pub id: PartId,
    /// Seq of the event that gave it its current content (the log holds it
    /// there).
    pub seq: Seq,
    /// Its content, or its sketch once sealed.
    pub body: Body,
    /// Id in the recorded source (boxed: no spare capacity; encoded as a
    /// string).
    pub source_id: Option<Box<str>>,
    /// Set while the part is pruned (boxed: most parts never are).
    pub pruned: Option<Box<PruneMark>>,
}

/// A part's content: held, or left in the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Body {
    /// In memory (every part the window can still send).
    Held(Box<PartBody>),
    /// In the log only; the state keeps this much of it.
    Sealed(Sketch),
}

/// What the state keeps of a sealed part: its kind, what the reducer's
/// checks and the prune walk read, and the lengths its token estimate is
/// computed from (in UTF-16 units, under any estimator).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Sketch {
    /// Text of this many units; `blank` when it is only whitespace.
    Text {
        /// Its length.
        units: u64,
        /// Only whitespace.
        blank: bool,
    },
    /// Reasoning of this many units.
    Reasoning {
        /// Its length.
        units: u64,
    },
    /// A file whose URL has this many units.
    File {
        /// The URL's length.
        url_units: u64,
    },
    /// A tool call.
    Tool(Box<ToolSketch>),
    /// Start of a model call.
    StepStart,
    /// End of a model call, with its usage.
    StepFinish(Box<TokenUsage>),
    /// A compaction marker's part.
    Compaction,
    /// A part type ctxlog does not model.
    Other,
}

/// What the state keeps of a sealed tool part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSketch {
    /// Provider call id (boxed: no spare capacity; encoded as a string).
    pub call_id: Box<str>,
    /// Tool name.
    pub tool: Box<str>,
    /// Where the call is in its lifecycle.
    pub stage: ToolStage,
    /// Length of its arguments as JSON.
    pub input_units: u64,
    /// Length of its output (completed) or error text (error); 0 otherwise.
    pub result_units: u64,
}

/// A tool call's lifecycle state without its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolStage {
    /// Called, not started.
    Pending,
    /// Executing.
    Running,
    /// Finished with an output.
    Completed,
    /// Finished with an error.
    Error,
}

impl ToolStage {
    /// The stage of `state`.
    pub fn of(state: &ToolState) -> ToolStage {
        match state {
            ToolState::Pending { .. } => ToolStage::Pending,
            ToolState::Running { .. } => ToolStage::Running,
            ToolState::Completed { .. } => ToolStage::Completed,
            ToolState::Error { .. } => ToolStage::Error,
        }
    }

    /// Its name, as [`ToolState::status`] gives it.
    pub fn name(self) -> &'static str {
        match self {
            ToolStage::Pending => "pending",
            ToolStage::Running => "running",
            ToolStage::Completed => "completed",
            ToolStage::Error => "error",
        }
    }
}

impl Sketch {
    /// The sketch of `body`.
    pub fn of(body: &PartBody) -> Sketch {
        match body {
            PartBody::Text { text, .. } => Sketch::Text {
                units: utf16_len(text),
                blank: text.trim().is_empty(),
            },
            PartBody::Reasoning { text, .. } => Sketch::Reasoning {
                units: utf16_len(text),
            },
            PartBody::File(a) => Sketch::File {
                url_units: utf16_len(&a.url),
            },
            PartBody::Tool {
                call_id,
                tool,
                state,
            } => Sketch::Tool(Box::new(ToolSketch {
                call_id: call_id.as_str().into(),
                tool: tool.as_str().into(),
                stage: ToolStage::of(state),
                input_units: state.input().json_utf16_len(),
                result_units: match state {
                    ToolState::Completed { output, .. } => utf16_len(output),
                    ToolState::Error { error, .. } => utf16_len(error),
                    ToolState::Pending { .. } | ToolState::Running { .. } => 0,
                },
            })),
            PartBody::StepStart { .. } => Sketch::StepStart,
            PartBody::StepFinish { tokens, .. } => Sketch::StepFinish(Box::new(*tokens)),
            PartBody::Compaction { .. } => Sketch::Compaction,
            PartBody::Other { .. } => Sketch::Other,
        }
    }

    /// Short kind name, as [`PartBody::kind`] gives it.
    pub fn kind(&self) -> &'static str {
        match self {
            Sketch::Text { .. } => "text",
            Sketch::Reasoning { .. } => "reasoning",
            Sketch::Tool(_) => "tool",
            Sketch::File { .. } => "file",
            Sketch::StepStart => "step-start",
            Sketch::StepFinish(_) => "step-finish",
            Sketch::Compaction => "compaction",
            Sketch::Other => "other",
        }
    }
}

impl Part {
    /// A part holding `body`, given by the event at `seq`.
    pub fn held(id: PartId, seq: Seq, body: PartBody, source_id: Option<String>) -> Part {
        Part {
            id,
            seq,
            body: Body::Held(Box::new(body)),
            source_id: source_id.map(String::into_boxed_str),
            pruned: None,
        }
    }

    /// Its content when the state holds it; `None` once sealed (read it
    /// with [`Part::body_in`]).
    pub fn content(&self) -> Option<&PartBody> {
        match &self.body {
            Body::Held(b) => Some(b),
            Body::Sealed(_) => None,
        }
    }

    /// Whether its content is left in the log.
    pub fn is_sealed(&self) -> bool {
        matches!(self.body, Body::Sealed(_))
    }

    /// Leaves its content in the log, keeping its sketch.
    pub fn seal(&mut self) {
        if let Body::Held(b) = &self.body {
            self.body = Body::Sealed(Sketch::of(b));
        }
    }

    /// Its content, held or read back from `log`.
    pub fn body_in<'a, L: Contents + ?Sized>(
        &'a self,
        log: &L,
    ) -> Result<Cow<'a, PartBody>, ContentError> {
        match &self.body {
            Body::Held(b) => Ok(Cow::Borrowed(b)),
            Body::Sealed(_) => {
                let env = log.event_at(self.seq)?;
                body_from_event(&env.event, self.id).map(Cow::Owned).ok_or(
                    ContentError::NotInEvent {
                        seq: self.seq,
                        part: self.id,
                    },
                )
            }
        }
    }

    /// Short kind name.
    pub fn kind(&self) -> &'static str {
        match &self.body {
            Body::Held(b) => b.kind(),
            Body::Sealed(s) => s.kind(),
        }
    }

    /// The call id and tool name, for a tool part.
    pub fn tool_call(&self) -> Option<(&str, &str)> {
        match &self.body {
            Body::Held(b) => match &**b {
                PartBody::Tool { call_id, tool, .. } => Some((call_id, tool)),
                _ => None,
            },
            Body::Sealed(Sketch::Tool(t)) => Some((&t.call_id, &t.tool)),
            Body::Sealed(_) => None,
        }
    }

    /// The status name of a tool part ([`ToolState::status`]).
    pub fn tool_status(&self) -> Option<&'static str> {
        match &self.body {
            Body::Held(b) => match &**b {
                PartBody::Tool { state, .. } => Some(state.status()),
                _ => None,
            },
            Body::Sealed(Sketch::Tool(t)) => Some(t.stage.name()),
            Body::Sealed(_) => None,
        }
    }

    /// The tool name, for a tool part.
    pub fn tool_name(&self) -> Option<&str> {
        self.tool_call().map(|(_, tool)| tool)
    }

    /// The output length in UTF-16 units of a completed tool part (what
    /// its token estimate is computed from).
    pub fn completed_output_units(&self) -> Option<u64> {
        match &self.body {
            Body::Held(b) => match &**b {
                PartBody::Tool {
                    state: ToolState::Completed { output, .. },
                    ..
                } => Some(utf16_len(output)),
                _ => None,
            },
            Body::Sealed(Sketch::Tool(t)) if t.stage == ToolStage::Completed => {
                Some(t.result_units)
            }
            Body::Sealed(_) => None,
        }
    }

    /// The output text of a completed tool part, when held.
    pub fn completed_output(&self) -> Option<&str> {
        match self.content()? {
            PartBody::Tool {
                state: ToolState::Completed { output, .. },
                ..
            } => Some(output),
            _ => None,
        }
    }

    /// A text part with something besides whitespace.
    pub fn is_nonblank_text(&self) -> bool {
        match &self.body {
            Body::Held(b) => matches!(&**b, PartBody::Text { text, .. } if !text.trim().is_empty()),
            Body::Sealed(s) => matches!(s, Sketch::Text { blank: false, .. }),
        }
    }

    /// The usage of a step-finish part.
    pub fn step_tokens(&self) -> Option<&TokenUsage> {
        match &self.body {
            Body::Held(b) => match &**b {
                PartBody::StepFinish { tokens, .. } => Some(tokens),
                _ => None,
            },
            Body::Sealed(Sketch::StepFinish(t)) => Some(t),
            Body::Sealed(_) => None,
        }
    }
}

/// The content of part `part` that `event` gives it, if it gives it one:
/// the single place that says which events carry a part's content (the
/// reducer builds parts with it too).
pub fn body_from_event(event: &Event, part: PartId) -> Option<PartBody> {
    match event {
        Event::PartAppended { part: p, body, .. } | Event::PartUpdated { part: p, body }
            if *p == part =>
        {
            Some(body.clone())
        }
        Event::StepFinished {
            part: p,
            reason,
            tokens,
            cost_micros,
            ..
        } if *p == part => Some(PartBody::StepFinish {
            reason: reason.clone(),
            tokens: *tokens,
            cost_micros: *cost_micros,
        }),
        Event::SummaryCompleted {
            part: p,
            reason,
            tokens,
            ..
        } if *p == part => Some(PartBody::StepFinish {
            reason: reason.clone(),
            tokens: *tokens,
            cost_micros: None,
        }),
        Event::CompactionRequested {
            part: p,
            auto,
            overflow,
            ..
        } if *p == part => Some(PartBody::Compaction {
            auto: *auto,
            overflow: *overflow,
        }),
        _ => None,
    }
}

/// Where sealed content is read back from: one session's log.
pub trait Contents {
    /// The event at `seq`.
    fn event_at(&self, seq: Seq) -> Result<Cow<'_, Envelope>, ContentError>;
}

/// Events in log order (a session's, from seq 1 or any later seq on).
impl Contents for [Envelope] {
    fn event_at(&self, seq: Seq) -> Result<Cow<'_, Envelope>, ContentError> {
        self.binary_search_by_key(&seq, |e| e.seq)
            .map(|i| Cow::Borrowed(&self[i]))
            .map_err(|_| ContentError::Missing { seq })
    }
}

impl Contents for Vec<Envelope> {
    fn event_at(&self, seq: Seq) -> Result<Cow<'_, Envelope>, ContentError> {
        self.as_slice().event_at(seq)
    }
}

/// Sealed content could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    /// The log has no event at that seq.
    #[error("the log has no event at seq {seq}")]
    Missing {
        /// The seq asked for.
        seq: Seq,
    },
    /// The event at that seq does not give the part its content (the log
    /// and the state disagree).
    #[error("event {seq} does not hold the content of part {part}")]
    NotInEvent {
        /// The seq asked for.
        seq: Seq,
        /// The part.
        part: PartId,
    },
    /// Reading the log failed.
    #[error("reading seq {seq}: {detail}")]
    Read {
        /// The seq asked for.
        seq: Seq,
        /// What went wrong.
        detail: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Json;

    #[test]
    fn a_sketch_keeps_what_the_estimate_needs() {
        let body = PartBody::Tool {
            call_id: "c1".into(),
            tool: "read".into(),
            state: ToolState::Completed {
                input: Json::Object(vec![("path".into(), Json::String("a.rs".into()))]),
                output: "日本語 😀".into(),
                title: None,
                metadata: Json::Null,
                start: 1,
                end: 2,
                attachments: Vec::new(),
            },
        };
        let mut p = Part::held(PartId(uuid::Uuid::nil()), 7, body.clone(), None);
        assert_eq!(p.completed_output_units(), Some(6));
        p.seal();
        assert!(p.is_sealed());
        assert_eq!(p.completed_output_units(), Some(6));
        assert_eq!(p.tool_call(), Some(("c1", "read")));
        assert_eq!(p.kind(), "tool");
    }
}
