//! Helpers shared by the core's integration tests.
#![allow(dead_code)]

use ctxlog_core::*;

/// A session under construction with a running clock.
pub struct S {
    pub r: Recorder<SeededIds>,
    pub t: u64,
}

pub fn limits() -> ModelLimits {
    ModelLimits {
        context: 200_000,
        input: None,
        output: Some(64_000),
    }
}

impl S {
    pub fn new() -> Self {
        Self::with(Policy::opencode_seed(), limits())
    }

    pub fn with(policy: Policy, limits: ModelLimits) -> Self {
        let mut ids = SeededIds::new(42);
        let session = SessionId(ids.next_uuid(1_000));
        S {
            r: Recorder::start(session, ids, 1_000, policy, limits).unwrap(),
            t: 1_000,
        }
    }

    pub fn tick(&mut self) -> u64 {
        self.t += 1;
        self.t
    }

    pub fn user(&mut self, text: &str) -> MessageId {
        let t = self.tick();
        self.r.user_text(t, text, false).unwrap()
    }

    pub fn assistant(&mut self, parent: MessageId) -> MessageId {
        let t = self.tick();
        self.r
            .message(t, Role::Assistant, Some(parent), false)
            .unwrap()
    }

    pub fn text(&mut self, m: MessageId, text: &str) -> PartId {
        let t = self.tick();
        self.r
            .part(
                t,
                m,
                PartBody::Text {
                    text: text.into(),
                    synthetic: false,
                    time: None,
                },
            )
            .unwrap()
    }

    /// A completed tool part whose output estimates to exactly `tokens`.
    pub fn tool_tokens(&mut self, m: MessageId, tool: &str, tokens: u64) -> PartId {
        let t = self.tick();
        let out = "x".repeat(tokens as usize * 4);
        self.r
            .tool(
                t,
                m,
                tool,
                Json::Object(vec![("path".into(), "a.rs".into())]),
                &out,
            )
            .unwrap()
    }

    pub fn step(&mut self, m: MessageId, input: u64) -> PartId {
        let t = self.tick();
        self.r
            .finish_step(
                t,
                m,
                FinishReason::ToolCalls,
                TokenUsage {
                    input,
                    ..Default::default()
                },
            )
            .unwrap()
    }

    /// A turn: user message, one assistant message with tools of the given
    /// token sizes (oldest first), finished.
    pub fn turn(&mut self, tools: &[u64]) -> (MessageId, MessageId, Vec<PartId>) {
        let u = self.user("do it");
        let a = self.assistant(u);
        let parts = tools
            .iter()
            .map(|&n| self.tool_tokens(a, "read", n))
            .collect();
        self.text(a, "done");
        self.step(a, 1_000);
        (u, a, parts)
    }

    /// A manual compaction, summarized (no continue message after it).
    pub fn compact(&mut self, summary: &str) -> (MessageId, MessageId) {
        let t = self.tick();
        let job = self
            .r
            .request_compaction(t, false, CompactionTrigger::Manual)
            .unwrap();
        let t = self.tick();
        let s = self
            .r
            .summarize(t, job, summary, None, TokenUsage::default())
            .unwrap();
        (job, s)
    }

    pub fn record(&mut self, event: Event) -> Result<(), RefusedEvent> {
        let t = self.tick();
        self.r.record(t, event).map(|_| ())
    }

    pub fn state(&self) -> &SessionState {
        self.r.state()
    }

    /// An envelope with the next seq (or a chosen one) that is not recorded.
    pub fn envelope(&mut self, seq: Seq, event: Event) -> Envelope {
        let t = self.tick();
        Envelope {
            session: self.r.session(),
            seq,
            id: EventId(self.r.uuid(t)),
            recorded_at: t,
            causation: None,
            correlation: None,
            event,
        }
    }
}

/// Texts of a window, flattened for assertions.
pub fn window_texts(state: &SessionState) -> Vec<String> {
    window(state)
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .map(|p| match p {
            WindowPart::Text(t) => t.clone(),
            WindowPart::Reasoning(t) => format!("reasoning:{t}"),
            WindowPart::File(a) => format!("file:{}", a.url),
            WindowPart::Tool { tool, result, .. } => match result {
                ctxlog_core::window::ToolResult::Output { text, .. } => {
                    format!("{tool}:{}", short(text))
                }
                ctxlog_core::window::ToolResult::Error(e) => format!("{tool}!{e}"),
            },
        })
        .collect()
}

fn short(s: &str) -> String {
    if s.len() > 32 {
        format!(
            "{}…({} chars)",
            s.chars().take(10).collect::<String>(),
            s.len()
        )
    } else {
        s.to_string()
    }
}
