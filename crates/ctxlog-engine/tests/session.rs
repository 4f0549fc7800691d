//! The `Session` handle, the one way to run a session's commands: one
//! scenario drives every command through it; each leaves its event, and
//! the same commands from the same seed and clock give the same log.

mod common;

use ctxlog_core::*;
use ctxlog_engine::*;
use ctxlog_store::{EventLog, MemoryLog, SessionStates};
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
fn the_handle_offers_every_command_and_each_is_recorded() {
    let e = engine();
    let (id, answers) = through_the_handle(&e);
    let kinds: Vec<&str> = e
        .store()
        .read(id, 1)
        .unwrap()
        .map(|ev| ev.unwrap().event.kind())
        .collect();
    // Each command left its event, in the order it was given.
    let wanted = [
        "session_started",
        "message_appended",
        "part_updated",
        "step_finished",
        "session_described",
        "policy_changed",
        "compaction_requested",
        "summary_completed",
        "messages_withdrawn",
    ];
    let mut rest = kinds.iter();
    for kind in wanted {
        assert!(rest.any(|k| *k == kind), "{kind} in order: {kinds:?}");
    }
    // The same commands on another engine from the same seed: the same
    // log, the same answers.
    let again = engine();
    let (id_again, answers_again) = through_the_handle(&again);
    assert_eq!((id, &answers), (id_again, &answers_again));
    // A handle opened by id reads what the first one wrote.
    let opened = e.session(id).unwrap();
    let other = again.session(id).unwrap();
    assert_eq!(
        opened.state().unwrap().digest(),
        other.state().unwrap().digest()
    );
    assert_eq!(opened.window().unwrap(), other.window().unwrap());
    assert!(matches!(
        e.session(SessionId(uuid::Uuid::nil())),
        Err(EngineError::UnknownSession(_))
    ));
}

#[test]
fn a_bad_input_is_refused_by_decide_and_the_log_stays_as_it_was() {
    let e = engine();
    let s = e.create_session(NewSession::new(common::limits())).unwrap();
    let ask = s.user("go").unwrap();
    let marker = s.request_compaction().unwrap();
    let unknown = MessageId(uuid::Uuid::from_u128(7));
    let nameless = Policy {
        name: String::new(),
        ..Policy::default()
    };
    let compaction_part = PartBody::Compaction {
        auto: false,
        overflow: false,
    };
    let mut fieldless = items("k9");
    fieldless[1].fields = Json::Null;
    let head = |e: &Engine<MemoryLog>| e.store().head(s.id()).unwrap();
    let before = head(&e);
    // Each is refused as a command (by `decide`, before any event is made;
    // the engine asserts the reducer never refuses one of decide's own).
    let refusals: Vec<(&str, Result<(), EngineError>)> = vec![
        (
            "unknown parent",
            s.step(Step::new(unknown).text("x")).map(drop),
        ),
        (
            "a compaction part in a step",
            s.step(Step::new(ask).part(compaction_part.clone()))
                .map(drop),
        ),
        (
            "a part on a marker",
            s.append_part(
                marker,
                tool_part(ToolState::Pending {
                    input: Json::Null,
                    raw: String::new(),
                }),
            )
            .map(drop),
        ),
        (
            "a user message's step",
            s.finish_step(ask, TokenUsage::default(), FinishReason::Stop)
                .map(drop),
        ),
        (
            "an unknown parent",
            s.assistant_message(unknown, None).map(drop),
        ),
        ("a nameless policy", s.settle(Some(nameless), None)),
        ("item fields not an object", s.add_items(fieldless)),
    ];
    for (what, refused) in refusals {
        assert!(
            matches!(refused, Err(EngineError::RefusedCommand(_))),
            "{what}: {refused:?}"
        );
    }
    assert!(matches!(
        e.create_session(NewSession::new(common::limits()).id(s.id())),
        Err(EngineError::RefusedCommand(_))
    ));
    assert_eq!(head(&e), before, "nothing was appended");
    assert_eq!(
        s.state().unwrap().digest(),
        e.store().replay(s.id()).unwrap().digest()
    );
}
