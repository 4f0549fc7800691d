//! What the engine's tests share.
#![allow(dead_code)] // each test file uses some of it

use ctxlog_core::ModelLimits;

/// A 100k context with an 8k output cap: usable = 100k − min(8k, 32k) =
/// 92k.
pub fn limits() -> ModelLimits {
    ModelLimits {
        context: 100_000,
        input: None,
        output: Some(8_000),
    }
}

/// Every event of `session` in its engine's log, in order.
pub fn events<L: ctxlog_store::EventLog>(
    session: &ctxlog_engine::Session<'_, L>,
) -> Vec<ctxlog_core::Envelope> {
    let log = session.engine().store();
    let events = log.read(session.id(), 1).expect("the log reads");
    events.map(|e| e.expect("an event reads")).collect()
}
