//! The Agents SDK mapping on a memory log: items given back exactly and in
//! the order they were added, outputs a prune cleared, a summary pivot,
//! pops and clears as withdrawals, and the items folded again from the log
//! by a second store equal to what the first one kept.

use ctxlog_core::window::{COMPACTION_QUESTION, CONTINUE_TEXT};
use ctxlog_core::{audit, ModelLimits, Policy, Role, SessionId, TokenUsage};
use ctxlog_engine::{EngineBuilder, MemoryLog};
use ctxlog_openai_agents::{AgentStore, ItemKind, ItemView, NewItem, Settings};
use ctxlog_store::EventLog;

fn store(log: &MemoryLog) -> AgentStore<MemoryLog> {
    AgentStore::new(EngineBuilder::new().build(log.clone()).unwrap())
}

fn item(kind: ItemKind, raw: &str, text: &str, call: Option<&str>) -> NewItem {
    NewItem {
        kind,
        raw: raw.into(),
        text: text.into(),
        call_id: call.map(Into::into),
        name: call.map(|_| "read".into()),
        template: None,
    }
}

fn user(n: usize) -> NewItem {
    let raw = format!(r#"{{"role": "user", "content": "prompt {n}"}}"#);
    item(ItemKind::Input, &raw, &format!("prompt {n}"), None)
}

fn call(id: &str) -> NewItem {
    let raw = format!(
        r#"{{"type": "function_call", "call_id": "{id}", "name": "read", "arguments": "{{}}"}}"#
    );
    item(ItemKind::Call, &raw, "{}", Some(id))
}

fn output(id: &str, text: &str) -> NewItem {
    let raw =
        format!(r#"{{"type": "function_call_output", "call_id": "{id}", "output": "{text}"}}"#);
    item(ItemKind::Output, &raw, text, Some(id))
}

/// An output whose text the tool part keeps (stored once): its template
/// has `output` as `null`.
fn output_in_part(id: &str, text: &str) -> NewItem {
    let template =
        format!(r#"{{"type": "function_call_output", "call_id": "{id}", "output": null}}"#);
    NewItem {
        template: Some(template),
        ..output(id, text)
    }
}

fn answer(n: usize) -> NewItem {
    let raw = format!(r#"{{"role": "assistant", "content": "answer {n}"}}"#);
    item(ItemKind::Assistant, &raw, &format!("answer {n}"), None)
}

fn raws(views: &[ItemView]) -> Vec<String> {
    views
        .iter()
        .map(|v| match v {
            ItemView::Recorded {
                raw,
                cleared,
                output,
            } => {
                // The test's texts need no escaping.
                let raw = match output {
                    Some(text) => raw.replace("null", &format!("\"{text}\"")),
                    None => raw.clone(),
                };
                format!("{raw}{}", if *cleared { " (cleared)" } else { "" })
            }
            ItemView::Written { role, text } => format!("{role:?}: {text}"),
        })
        .collect()
}

fn open(s: &AgentStore<MemoryLog>, name: &str, policy: &str, context: u64) -> SessionId {
    let settings = Settings {
        policy: Policy::preset(policy),
        limits: Some(ModelLimits {
            context,
            input: None,
            output: Some(4_000),
        }),
    };
    s.open(name, &settings).unwrap()
}

#[test]
fn items_come_back_exactly_in_the_order_they_were_added() {
    let log = MemoryLog::default();
    let s = store(&log);
    let id = open(&s, "order", "opencode-seed", 0);
    // Two calls, then their outputs: the outputs complete earlier parts,
    // yet come back where they were added.
    let items = vec![
        user(0),
        call("a"),
        call("b"),
        output("a", "A"),
        output("b", "B"),
        answer(0),
    ];
    s.add_items(id, &items).unwrap();
    let want: Vec<String> = items.iter().map(|i| i.raw.clone()).collect();
    assert_eq!(raws(&s.get_items(id, None).unwrap()), want);
    assert_eq!(raws(&s.get_items(id, Some(2)).unwrap()), want[4..]);
    // A second store over the same log folds the same items from it.
    let again = store(&log);
    let id2 = open(&again, "order", "opencode-seed", 0);
    assert_eq!(id2, id);
    assert_eq!(raws(&again.get_items(id, None).unwrap()), want);
}

#[test]
fn pop_takes_back_the_last_item_and_clear_everything_as_events() {
    let log = MemoryLog::default();
    let s = store(&log);
    let id = open(&s, "pop", "opencode-seed", 0);
    let items = vec![user(0), call("a"), output("a", "A")];
    s.add_items(id, &items).unwrap();
    // The output: the call waits again, and takes a new output.
    let popped = s.pop_item(id).unwrap().unwrap();
    assert_eq!(raws(&[popped]), [items[2].raw.clone()]);
    assert_eq!(s.get_items(id, None).unwrap().len(), 2);
    s.add_items(id, &[output("a", "A2")]).unwrap();
    let got = raws(&s.get_items(id, None).unwrap());
    assert_eq!(got[2], output("a", "A2").raw);
    // The new output, then the call's message.
    let popped = s.pop_item(id).unwrap().unwrap();
    assert_eq!(raws(&[popped]), [output("a", "A2").raw]);
    let popped = s.pop_item(id).unwrap().unwrap();
    assert_eq!(raws(&[popped]), [items[1].raw.clone()]);
    assert_eq!(
        raws(&s.get_items(id, None).unwrap()),
        [items[0].raw.clone()]
    );
    s.add_items(id, &[user(1), answer(1)]).unwrap();
    assert_eq!(s.clear(id).unwrap(), 3);
    assert!(s.get_items(id, None).unwrap().is_empty());
    assert!(s.pop_item(id).unwrap().is_none());
    assert_eq!(s.clear(id).unwrap(), 0);
    // Nothing was deleted: every item is still in the log, and the audit
    // names each withdrawal.
    let events: Vec<_> = log.read(id, 1).unwrap().map(Result::unwrap).collect();
    let kinds: Vec<String> = audit(&events).into_iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            "output_withdrawn",
            "output_withdrawn",
            "messages_withdrawn",
            "messages_withdrawn"
        ]
    );
    let text = format!("{events:?}");
    for raw in [&items[0].raw, &items[2].raw, &user(1).raw] {
        assert!(text.contains(&format!("{raw:?}")), "{raw} is in the log");
    }
}

#[test]
fn a_prune_clears_old_outputs_and_an_overflow_pivots() {
    let log = MemoryLog::default();
    let s = store(&log);
    let id = open(&s, "pivot", "opencode-seed", 200_000);
    let big = "x".repeat(120_000);
    for t in 0..4 {
        let call_id = format!("c{t}");
        s.add_items(
            id,
            &[user(t), call(&call_id), output(&call_id, &big), answer(t)],
        )
        .unwrap();
        let c = s.compact(id, None, false).unwrap();
        assert!(c.step.is_some(), "turn {t} finished its step");
        assert!(c.jobs.is_empty());
    }
    // The oldest output is cleared (two turns protected, 40k tokens kept).
    let views = s.get_items(id, None).unwrap();
    let cleared: Vec<_> = raws(&views)
        .into_iter()
        .filter(|r| r.ends_with("(cleared)"))
        .collect();
    assert_eq!(cleared.len(), 1);
    assert!(cleared[0].contains("\"c0\""));
    // A step over the budget: a compaction, and the window pivots.
    s.add_items(id, &[user(4), answer(4)]).unwrap();
    let usage = TokenUsage {
        input: 199_000,
        ..TokenUsage::default()
    };
    let c = s.compact(id, Some(usage), false).unwrap();
    assert!(c.overflow.is_some());
    assert_eq!(c.jobs.len(), 1);
    let views = s.get_items(id, None).unwrap();
    assert_eq!(
        views[0],
        ItemView::Written {
            role: Role::User,
            text: COMPACTION_QUESTION.into()
        }
    );
    assert!(
        matches!(&views[1], ItemView::Written { role: Role::Assistant, text } if !text.is_empty())
    );
    assert_eq!(
        views.last(),
        Some(&ItemView::Written {
            role: Role::User,
            text: CONTINUE_TEXT.into()
        })
    );
    // A forced compaction when nothing overflows.
    let c = s.compact(id, None, true).unwrap();
    assert_eq!(c.jobs.len(), 1);
}

#[test]
fn an_output_the_tool_part_holds_is_stored_once_and_given_back_whole() {
    let log = MemoryLog::default();
    let s = store(&log);
    let id = open(&s, "once", "opencode-seed", 0);
    let big = "y".repeat(50_000);
    s.add_items(id, &[user(0), call("a"), output_in_part("a", &big)])
        .unwrap();
    let got = raws(&s.get_items(id, None).unwrap());
    assert_eq!(got[2], output("a", &big).raw);
    // The output is in the log once: in the tool part.
    let events: Vec<_> = log.read(id, 1).unwrap().map(Result::unwrap).collect();
    assert_eq!(format!("{events:?}").matches(&big).count(), 1);
    // Folded again by a second store, and popped as it was given.
    let again = store(&log);
    open(&again, "once", "opencode-seed", 0);
    assert_eq!(raws(&again.get_items(id, None).unwrap()), got);
    let popped = again.pop_item(id).unwrap().unwrap();
    assert_eq!(raws(&[popped]), [output("a", &big).raw]);
}
