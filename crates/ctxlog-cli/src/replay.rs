//! `replay`: a session's state re-derived from its whole log, with its
//! digest.

use crate::store::resolve_session;
use crate::ui::{self};
use crate::CliError;
use ctxlog_app::logs::Location;
use ctxlog_core::SessionState;
use ctxlog_store::EventLog;
use serde_json::json;

/// `replay SESSION`: re-derives the state from the whole log.
pub fn replay(json: bool, db: &Location, session: &str) -> Result<(), CliError> {
    let store = crate::store::open_existing(db)?;
    let session = resolve_session(&store, db, session)?;
    let fail = |e: ctxlog_store::ReadError| CliError::Failed(e.to_string());
    let head = store.head(session).map_err(fail)?;
    let bar = ui::progress(json, head, ui::PROGRESS_MIN_EVENTS, "replay", false);
    let mut state = SessionState::new();
    let mut events = 0u64;
    for e in store.read(session, 1).map_err(fail)? {
        let e = e.map_err(fail)?;
        state.evolve(&e).map_err(|r| {
            CliError::Failed(format!(
                "session {session} does not replay at event {}: {r}",
                e.seq
            ))
        })?;
        events += 1;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let digest = state.digest().to_string();
    let derived = derived(&state);
    if json {
        println!(
            "{}",
            json!({"ok": true, "session": session.to_string(), "events": events, "head": state.head, "digest": digest, "derived": derived})
        );
    } else {
        println!(
            "{session}: {events} events replayed, head {}, digest {digest}",
            state.head
        );
        let d = &derived;
        println!(
            "re-derived: {} messages ({} user, {} assistant), {} steps; policy {}",
            d["messages"],
            d["user_messages"],
            d["assistant_messages"],
            d["steps"],
            d["policy"].as_str().unwrap_or("-")
        );
        println!(
            "  compactions: {} completed, {} failed, {} pending; {} tool outputs pruned (~{} tokens, kept in the log)",
            d["compactions"]["completed"], d["compactions"]["failed"], d["compactions"]["pending"],
            d["pruned"]["parts"], d["pruned"]["tokens"]
        );
        println!(
            "  window: {} messages, ~{} tokens{}",
            d["window"]["messages"],
            d["window"]["estimated_tokens"],
            if d["window"]["pivot"].is_string() {
                ", starting at the latest compaction"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// What a replay re-derived, as JSON.
fn derived(state: &SessionState) -> serde_json::Value {
    use ctxlog_core::JobStatus;
    let w = ctxlog_core::window(state);
    let jobs = |f: fn(&JobStatus) -> bool| state.jobs.iter().filter(|j| f(&j.status)).count();
    let tally = state.tally();
    json!({
        "policy": state.policy.name,
        "messages": tally.messages,
        "user_messages": tally.user_messages,
        "assistant_messages": tally.assistant_messages,
        "steps": tally.steps,
        "compactions": {
            "completed": jobs(|s| matches!(s, JobStatus::Completed { .. })),
            "failed": jobs(|s| matches!(s, JobStatus::Failed { .. })),
            "pending": state.pending_jobs().count(),
        },
        "pruned": {"parts": tally.pruned_parts, "tokens": tally.pruned_tokens},
        "window": {
            "pivot": w.pivot.map(|p| p.to_string()),
            "messages": w.messages.len(),
            "estimated_tokens": w.estimate(&state.policy.estimator),
        },
    })
}
