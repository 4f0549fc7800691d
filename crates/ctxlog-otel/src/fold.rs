//! A session's events folded into spans, an event at a time, holding only
//! what is open (the turn, unfinished calls and tool calls, compactions in
//! flight) and the call ids of tool parts: memory does not follow the
//! session's length. Pure: times are the recording's, ids derived from
//! ctxlog's.

use crate::calls::Calls;
use crate::content::Content;
use crate::ids::{span_of, trace_of, Role};
use crate::lifecycle;
use crate::model::{Span, TraceId};
use crate::tools::Tools;
use crate::turn::{Context, Speaker, Turn};
use ctxlog_core::{
    Auditor, Envelope, Event, EventId, MessageId, Role as MessageRole, Seq, SessionId,
};
use std::collections::BTreeMap;

/// The spans of one session, made as its events come.
#[derive(Debug)]
pub struct TraceFold {
    trace: TraceId,
    who: Speaker,
    content: Content,
    auditor: Auditor,
    turn: Option<Turn>,
    calls: Calls,
    tools: Tools,
    /// A compaction completed: every later call's context is compacted.
    compacted: bool,
    /// The user messages since the last compaction's pivot, and their seqs.
    user_messages: Vec<(MessageId, Seq)>,
    /// Each compaction in flight: its marker's seq, the first message kept.
    pivots: BTreeMap<MessageId, (Seq, Option<MessageId>)>,
    /// The last event folded (id, seq, time): where what is still open
    /// ends.
    last: Option<(EventId, Seq, u64)>,
    out: Vec<Span>,
}

impl TraceFold {
    /// A fold for `session`, speaking as `who` (its conversation id is
    /// the recording's own session id when the first event names one).
    pub fn new(session: SessionId, who: Speaker, content: Content) -> TraceFold {
        TraceFold {
            trace: trace_of(session),
            who,
            content,
            auditor: Auditor::beside_state(),
            turn: None,
            calls: Calls::default(),
            tools: Tools::default(),
            compacted: false,
            user_messages: Vec::new(),
            pivots: BTreeMap::new(),
            last: None,
            out: Vec::new(),
        }
    }

    /// Folds the session's next event.
    pub fn push(&mut self, e: &Envelope) {
        self.last = Some((e.id, e.seq, e.recorded_at));
        let had_output = self.tools.had_output(&e.event);
        let line = self.auditor.push_told(e, had_output);
        match &e.event {
            Event::SessionStarted {
                source_id: Some(source),
                ..
            } => self.who.conversation.clone_from(source),
            Event::MessageAppended {
                message,
                role: MessageRole::User,
                synthetic: false,
                ..
            } => {
                self.end_turn();
                let id = span_of(&self.trace, Role::Turn, message.as_bytes());
                self.turn = Some(Turn::new(id, e.recorded_at, e.seq));
            }
            _ => {}
        }
        if self.turn.is_none() && line.is_none() && !in_a_turn(&e.event) {
            return;
        }
        let turn = turn_at(&mut self.turn, &self.trace, e);
        let ctx = Context {
            trace: self.trace,
            who: &self.who,
            content: self.content,
            compacted: self.compacted,
        };
        if let Some(span) = self.calls.push(e, turn, &ctx) {
            self.out.push(span);
        }
        if let Some(span) = self.tools.push(e, turn.id, &ctx) {
            self.out.push(span);
        }
        let full = match line {
            Some(line) => {
                let extra = self.calls.describe(&e.event, &self.tools);
                lifecycle::add_event(turn, e, line, extra, self.content);
                turn.events.len() >= lifecycle::MAX_EVENTS
            }
            None => false,
        };
        self.note_pivot(e);
        if full {
            self.end_turn();
        }
    }

    /// Follows compactions: once one completes, every later call's context
    /// is compacted, and the tool parts before what it kept are forgotten.
    fn note_pivot(&mut self, e: &Envelope) {
        match &e.event {
            Event::MessageAppended {
                message,
                role: MessageRole::User,
                ..
            } => self.user_messages.push((*message, e.seq)),
            Event::CompactionRequested { message, .. } => {
                self.pivots.insert(*message, (e.seq, None));
            }
            Event::CompactionStarted {
                job, tail_start, ..
            } => {
                if let Some(p) = self.pivots.get_mut(job) {
                    p.1 = *tail_start;
                }
            }
            Event::SummaryCompleted { job, .. } => {
                self.compacted = true;
                let Some((marker, tail)) = self.pivots.remove(job) else {
                    return;
                };
                let kept = match tail {
                    Some(t) => self
                        .user_messages
                        .iter()
                        .find(|(m, _)| *m == t)
                        .map(|p| p.1),
                    None => Some(marker),
                };
                if let Some(kept) = kept {
                    self.tools.forget_before(kept);
                    self.user_messages.retain(|(_, seq)| *seq >= kept);
                }
            }
            Event::CompactionFailed { job, .. } => {
                self.pivots.remove(job);
            }
            _ => {}
        }
    }

    /// Ends the turn in progress: its span is made now with what it holds
    /// (calls it began stay open; a later event starts a turn of its own).
    pub fn end_turn(&mut self) {
        if let Some(turn) = self.turn.take() {
            let span = turn.into_span(self.trace, &self.who, self.content);
            self.out.push(span);
        }
    }

    /// The spans made since the last call.
    pub fn drain(&mut self) -> Vec<Span> {
        std::mem::take(&mut self.out)
    }

    /// Whether a turn is in progress (its span not made yet).
    pub fn turn_open(&self) -> bool {
        self.turn.is_some()
    }

    /// The session's events are all folded: calls and tool calls still
    /// open end where the session does (marked open), then the turn.
    pub fn finish(mut self) -> Vec<Span> {
        if self.turn.is_none() && (self.calls.has_open() || self.tools.has_open()) {
            // The last turn was sent (its events were many): what is still
            // open ends in a turn of its own, at the session's last event.
            if let Some((id, seq, at)) = self.last {
                let id = span_of(&self.trace, Role::Turn, id.as_bytes());
                self.turn = Some(Turn::new(id, at, seq));
            }
        }
        if let Some(turn) = self.turn.as_mut() {
            let ctx = Context {
                trace: self.trace,
                who: &self.who,
                content: self.content,
                compacted: self.compacted,
            };
            let calls = self.calls.finish(turn, &ctx);
            let tools = self.tools.finish(turn, &ctx);
            self.out.extend(calls);
            self.out.extend(tools);
        }
        self.end_turn();
        self.out
    }
}

/// Whether `event` is part of what an agent does (else it describes the
/// session: its start, limits, descriptions, imports), and so starts a
/// turn of its own when none is in progress.
fn in_a_turn(event: &Event) -> bool {
    !matches!(
        event,
        Event::SessionStarted { .. }
            | Event::LimitsChanged { .. }
            | Event::PolicyChanged { .. }
            | Event::SourceFields { .. }
            | Event::SessionDescribed { .. }
            | Event::SessionReplaced { .. }
            | Event::ImportStarted { .. }
            | Event::Captured { .. }
    )
}

/// The turn `e` belongs to, started at `e` when there is none (events
/// before a session's first message, or after a turn ended early), made to
/// reach `e`.
fn turn_at<'a>(turn: &'a mut Option<Turn>, trace: &TraceId, e: &Envelope) -> &'a mut Turn {
    let turn = turn.get_or_insert_with(|| {
        let id = span_of(trace, Role::Turn, e.id.as_bytes());
        Turn::new(id, e.recorded_at, e.seq)
    });
    turn.reach(e.recorded_at, e.seq);
    turn
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Kind;
    use ctxlog_core::generate::{generate, GenerateConfig};
    use std::collections::BTreeSet;

    fn spans_of(events: &[Envelope], content: Content) -> Vec<Span> {
        let who = Speaker {
            session: "s".into(),
            conversation: "s".into(),
            agent: Some("opencode".into()),
            version: None,
        };
        let mut fold = TraceFold::new(events[0].session, who, content);
        let mut out = Vec::new();
        for e in events {
            fold.push(e);
            out.extend(fold.drain());
        }
        out.extend(fold.finish());
        out
    }

    #[test]
    fn a_lifecycle_becomes_one_tree_of_unique_spans_the_same_every_time() {
        let cfg = GenerateConfig {
            seed: 5,
            turns: 30,
            ..GenerateConfig::default()
        };
        let events = generate(&cfg).unwrap();
        let spans = spans_of(&events, Content::Off);
        assert_eq!(spans, spans_of(&events, Content::Off), "deterministic");
        let ids: BTreeSet<_> = spans.iter().map(|s| s.id).collect();
        assert_eq!(ids.len(), spans.len(), "span ids are unique");
        for s in &spans {
            assert!(s.end_ns >= s.start_ns, "{}", s.name);
            match s.parent {
                Some(p) => assert!(ids.contains(&p), "{} has its parent", s.name),
                None => assert!(s.name.starts_with("invoke_agent")),
            }
            assert!(s.events.len() <= crate::lifecycle::MAX_EVENTS);
        }
        let steps = events
            .iter()
            .filter(|e| matches!(e.event, Event::StepFinished { .. }))
            .count();
        let summaries = events
            .iter()
            .filter(|e| matches!(e.event, Event::SummaryCompleted { .. }))
            .count();
        let failed = events
            .iter()
            .filter(|e| matches!(e.event, Event::CompactionFailed { .. }))
            .count();
        let chats = spans.iter().filter(|s| s.kind == Kind::Client).count();
        assert!(summaries > 0, "the generator compacts");
        assert!(chats >= steps + summaries && chats <= steps + summaries + failed);
        let compacted = spans.iter().filter(|s| {
            s.attributes
                .iter()
                .any(|(k, _)| *k == crate::semconv::COMPACTED)
        });
        assert!(compacted.count() > 0);
        let text = format!("{spans:?}");
        assert!(
            !text.contains("gen_ai.output.messages"),
            "no content unless asked"
        );
        let with = format!("{:?}", spans_of(&events, Content::Redacted));
        assert!(
            with.contains("gen_ai.output.messages") && with.contains("gen_ai.tool.call.result")
        );
    }
}
