//! The `Session` handle offers every command of a session, and each does
//! what the engine's command by session id does: one scenario driven both
//! ways, from the same seed and clock, gives the same log (digest and
//! event kinds), and each answer is the same.

mod common;

use ctxlog_core::*;
use ctxlog_engine::*;
use ctxlog_store::{EventLog, MemoryLog};
use std::sync::Arc;

/// An engine over a fresh memory log, ids from seed 5, a manual clock.
fn engine() -> Engine<MemoryLog> {
    EngineBuilder::new()
        .ids(SeededIds::new(5))
        .clock(Arc::new(ManualClock::new(1_780_000_000_000)))
        .in_memory()
        .unwrap()
}

/// A call item and its output, as an agent runtime adds them.
fn items(call: &str) -> Vec<AgentItem> {
    let item = |kind, text: &str| AgentItem {
        kind,
        text: text.into(),
        arguments: Json::Null,
        call_id: Some(call.into()),
        name: Some("bash".into()),
        format: "test".into(),
        fields: Json::Object(vec![("item".into(), Json::String(text.into()))]),
        fields_completing: None,
    };
    vec![item(ItemKind::Call, "{}"), item(ItemKind::Output, "done")]
}

fn tool_part(state: ToolState) -> PartBody {
    PartBody::Tool {
        call_id: "c1".into(),
        tool: "read".into(),
        state,
    }
}

/// What a run answered, in order, as text: both ways must answer alike.
type Answers = Vec<String>;

/// The scenario through the handle.
fn through_the_handle(engine: &Engine<MemoryLog>) -> (SessionId, Answers) {
    let s = engine
        .create_session(NewSession::new(common::limits()))
        .unwrap();
    let mut out = Answers::new();
    let ask = s.user("read the file").unwrap();
    out.push(format!("{:?}", s.before_request().unwrap().overflow));
    let answer = s.assistant_message(ask, None).unwrap();
    let part = s
        .append_part(
            answer,
            tool_part(ToolState::Pending {
                input: Json::Null,
                raw: String::new(),
            }),
        )
        .unwrap();
    s.update_part(
        part,
        tool_part(ToolState::Error {
            input: Json::Null,
            error: "gone".into(),
            start: 1,
            end: 2,
        }),
    )
    .unwrap();
    let usage = TokenUsage {
        input: 1_000,
        output: 10,
        ..TokenUsage::default()
    };
    out.push(format!(
        "{:?}",
        s.finish_step(answer, usage, FinishReason::ToolCalls)
            .unwrap()
            .queued
    ));
    let refused = s.assistant_message(ask, None).unwrap();
    out.push(format!(
        "{:?}",
        s.refused(refused, "prompt is too long").unwrap().is_some()
    ));
    s.describe(SessionAbout {
        title: Some("t".into()),
        ..SessionAbout::default()
    })
    .unwrap();
    s.settle(Some(Policy::opencode_1_17()), None).unwrap();
    s.add_items(items("k1")).unwrap();
    out.push(format!(
        "{:?}",
        s.finish_open_step(None).unwrap().map(|o| o.queued)
    ));
    let call = s.query(last_tool_part).unwrap();
    s.reopen_call(call, "asked again").unwrap();
    s.request_compaction().unwrap();
    out.push(format!("{}", s.has_pending().unwrap()));
    out.push(format!("{}", s.run_pending().unwrap().len()));
    let first = s
        .query(|state| state.messages.first().map(|m| m.id))
        .unwrap();
    s.withdraw(first.into_iter().collect(), "taken back")
        .unwrap();
    out.push(format!("{}", s.withdraw_all("all back").unwrap()));
    out.push(format!("{}", s.state_at(3).unwrap().digest()));
    (s.id(), out)
}

/// The same scenario through the engine's commands by session id.
fn through_the_engine(e: &Engine<MemoryLog>) -> (SessionId, Answers) {
    let s = e
        .create_session(NewSession::new(common::limits()))
        .unwrap()
        .id();
    let mut out = Answers::new();
    let ask = e.user_message(s, "read the file").unwrap();
    out.push(format!("{:?}", e.before_request(s).unwrap().overflow));
    let answer = e.assistant_message(s, ask, None).unwrap();
    let part = e
        .append_part(
            s,
            answer,
            tool_part(ToolState::Pending {
                input: Json::Null,
                raw: String::new(),
            }),
        )
        .unwrap();
    e.update_part(
        s,
        part,
        tool_part(ToolState::Error {
            input: Json::Null,
            error: "gone".into(),
            start: 1,
            end: 2,
        }),
    )
    .unwrap();
    let usage = TokenUsage {
        input: 1_000,
        output: 10,
        ..TokenUsage::default()
    };
    out.push(format!(
        "{:?}",
        e.finish_step(s, answer, usage, FinishReason::ToolCalls)
            .unwrap()
            .queued
    ));
    let refused = e.assistant_message(s, ask, None).unwrap();
    out.push(format!(
        "{:?}",
        e.refused(s, refused, "prompt is too long")
            .unwrap()
            .is_some()
    ));
    e.describe(
        s,
        SessionAbout {
            title: Some("t".into()),
            ..SessionAbout::default()
        },
    )
    .unwrap();
    e.settle(s, Some(Policy::opencode_1_17()), None).unwrap();
    e.add_items(s, items("k1")).unwrap();
    out.push(format!(
        "{:?}",
        e.finish_open_step(s, None).unwrap().map(|o| o.queued)
    ));
    let call = e.query(s, last_tool_part).unwrap();
    e.reopen_call(s, call, "asked again").unwrap();
    e.request_compaction(s).unwrap();
    out.push(format!("{}", e.has_pending(s).unwrap()));
    out.push(format!("{}", e.run_pending(s).unwrap().len()));
    let first = e
        .query(s, |state| state.messages.first().map(|m| m.id))
        .unwrap();
    e.withdraw(s, first.into_iter().collect(), "taken back")
        .unwrap();
    out.push(format!("{}", e.withdraw_all(s, "all back").unwrap()));
    out.push(format!("{}", e.state_at(s, 3).unwrap().digest()));
    (s, out)
}

/// The newest completed tool call of the session (the item call's).
fn last_tool_part(state: &SessionState) -> PartId {
    state
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| p.tool_status() == Some("completed"))
        .map(|p| p.id)
        .next_back()
        .expect("a completed call")
}

#[test]
fn the_handle_offers_every_command_and_each_does_what_the_engines_does() {
    let (by_handle, by_engine) = (engine(), engine());
    let (a, answers_a) = through_the_handle(&by_handle);
    let (b, answers_b) = through_the_engine(&by_engine);
    assert_eq!(a, b, "the same seed gives the same session id");
    assert_eq!(answers_a, answers_b);
    let kinds = |e: &Engine<MemoryLog>| -> Vec<&'static str> {
        let events = e.store().read(a, 1).unwrap();
        events.map(|ev| ev.unwrap().event.kind()).collect()
    };
    assert_eq!(kinds(&by_handle), kinds(&by_engine));
    assert!(kinds(&by_handle).len() > 20, "{:?}", kinds(&by_handle));
    let handle = by_handle.session(a).unwrap();
    assert_eq!(
        handle.state().unwrap().digest(),
        by_engine.state(b).unwrap().digest()
    );
    assert_eq!(handle.window().unwrap(), by_engine.window(b).unwrap());
}
