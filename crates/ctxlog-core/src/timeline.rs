//! The timeline: one row per model step of a session, with the tokens the
//! provider reported, how much of the usable context they used, the window
//! estimate right after the step, and what the lifecycle did after it
//! (prunes, compactions, summaries, continues, stalls). A pure fold over the
//! events, like the audit it draws its events from.

use crate::audit::{had_output, AuditEntry, Auditor};
use crate::event::{Envelope, Event};
use crate::ids::{MessageId, Seq, SessionId, TimestampMs};
use crate::policy::{ModelLimits, TokenUsage};
use crate::state::SessionState;
use crate::window::estimate_window;
use crate::RefusedEvent;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A session's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// The session.
    pub session: Option<SessionId>,
    /// The name of the policy in force at the end.
    pub policy: String,
    /// The model's limits at the end (each step has its own usable budget).
    pub limits: ModelLimits,
    /// One row per model step, in log order.
    pub steps: Vec<StepRow>,
}

impl Timeline {
    /// How many lifecycle events of `kind` (an audit kind) the steps hold.
    pub fn count(&self, kind: &str) -> usize {
        self.steps
            .iter()
            .flat_map(|s| &s.events)
            .filter(|e| e.kind == kind)
            .count()
    }

    /// The highest total any step reported (0 without steps).
    pub fn peak(&self) -> u64 {
        self.steps.iter().map(|s| s.tokens.total).max().unwrap_or(0)
    }
}

/// One model step (a `StepFinished` on an agent's assistant message, or
/// the last step of a session whose end is not recorded yet, `open`; the
/// summarizer's calls are events of the step they follow).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    /// The `StepFinished` event's seq (of an open step: the session's head).
    pub seq: Seq,
    /// When it finished, ms since the epoch (of an open step: the session's
    /// last event's time).
    pub time: TimestampMs,
    /// The assistant message.
    pub message: MessageId,
    /// The tokens as the provider reported them.
    pub tokens: StepTokens,
    /// The number the policy's overflow predicate compares with
    /// `threshold` (its own sum of the tokens: the seed's leaves out cache
    /// writes).
    pub count: u64,
    /// The usable input budget at this step (`None`: no context limit).
    pub usable: Option<u64>,
    /// `tokens.total` (what the context held) as a percentage of `usable`,
    /// to 0.01 (`None` without a limit).
    pub percent: Option<f64>,
    /// The policy's threshold at this step: where automatic compaction
    /// fires (`None`: it never does after this step's model, or there is
    /// no context limit).
    pub threshold: Option<u64>,
    /// Whether the policy's overflow check fired on this step (`count`
    /// reached `threshold` as the policy compares, with `auto` on).
    pub overflow: bool,
    /// The estimated tokens of the window right after the step.
    pub window_estimate: u64,
    /// What the lifecycle did after this step, up to the next one (entries
    /// before the first step belong to the first step).
    pub events: Vec<StepEvent>,
    /// The step's end is not recorded yet (the last row only): its usage
    /// is what the model reported so far ([`Event::UsageReported`]), no
    /// overflow check has run on it, and the row is the session as it
    /// ends.
    #[serde(default)]
    pub open: bool,
    /// The step reported no usage at all (an aborted or interrupted call):
    /// its tokens and percent say nothing of the context, which a chart
    /// leaves as a gap.
    #[serde(default)]
    pub no_usage: bool,
    /// The error its message ended with (`MessageAbortedError`), if any.
    #[serde(default)]
    pub error: Option<String>,
}

/// A step's tokens, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepTokens {
    /// Prompt tokens not read from the cache.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Reasoning tokens (reported apart from output by some providers).
    pub reasoning: u64,
    /// Prompt tokens read from the cache.
    pub cache_read: u64,
    /// Prompt tokens written to the cache.
    pub cache_write: u64,
    /// The provider's total, or, when the recording has none, the sum of the
    /// five counts above (what the agents compute).
    pub total: u64,
    /// Whether `total` was reported (else computed).
    pub total_reported: bool,
}

impl StepTokens {
    /// The reported usage as a row shows it.
    pub fn of(t: &TokenUsage) -> Self {
        StepTokens {
            input: t.input,
            output: t.output,
            reasoning: t.reasoning,
            cache_read: t.cache_read,
            cache_write: t.cache_write,
            total: t.shown_total(),
            total_reported: t.total.is_some_and(|v| v > 0),
        }
    }
}

/// One thing the lifecycle did: an audit entry, shortened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepEvent {
    /// The event's seq.
    pub seq: Seq,
    /// The audit kind (`parts_pruned`, `compaction_requested`,
    /// `compaction_started`, `summary_completed`, `compaction_failed`,
    /// `continue`, `auto_compaction_paused`, ...).
    pub kind: String,
    /// The parts or messages concerned (pruned parts: how many).
    pub parts: usize,
    /// The tokens involved, as the audit has them.
    pub tokens: Option<u64>,
    /// What happened, in words.
    pub what: String,
}

impl From<&AuditEntry> for StepEvent {
    fn from(e: &AuditEntry) -> Self {
        StepEvent {
            seq: e.seq,
            kind: e.kind.clone(),
            parts: e.ids.len(),
            tokens: e.tokens,
            what: e.what.clone(),
        }
    }
}

/// The timeline of one session's events.
pub fn timeline(events: &[Envelope]) -> Result<Timeline, RefusedEvent> {
    timeline_with(events, |_, _| {})
}

/// [`timeline`], calling `at_step` with the state right after each step and
/// its row (the report renders the window there).
pub fn timeline_with(
    events: &[Envelope],
    at_step: impl FnMut(&SessionState, &StepRow),
) -> Result<Timeline, RefusedEvent> {
    Ok(collect(TimelineFold::new(), events, at_step)?.0)
}

/// [`timeline_with`], also returning the state at the end of the events,
/// keeping its history (the fold that made the timeline made it too).
pub fn timeline_and_state(
    events: &[Envelope],
    at_step: impl FnMut(&SessionState, &StepRow),
) -> Result<(Timeline, SessionState), RefusedEvent> {
    collect(TimelineFold::keeping_history(), events, at_step)
}

/// Folds `events` with `fold`, every row kept and given the error its
/// message was last given.
fn collect(
    mut fold: TimelineFold,
    events: &[Envelope],
    mut at_step: impl FnMut(&SessionState, &StepRow),
) -> Result<(Timeline, SessionState), RefusedEvent> {
    let mut steps = Vec::new();
    for e in events {
        steps.extend(fold.push_with(e, &mut at_step)?);
    }
    let end = fold.finish_with(&mut at_step);
    steps.extend(end.rows);
    for row in &mut steps {
        row.error = end.errors.get(&row.message).cloned();
    }
    let timeline = Timeline {
        session: end.session,
        policy: end.policy,
        limits: end.limits,
        steps,
    };
    Ok((timeline, end.state))
}

/// A timeline folded an event at a time, for a session read as a stream:
/// each row is handed out once the next step begins (the lifecycle events
/// after a step are its), so neither the events nor the rows are ever held
/// together.
#[derive(Debug)]
pub struct TimelineFold {
    state: SessionState,
    /// The last usage reported of a step not finished yet.
    open: Option<(MessageId, TokenUsage)>,
    /// The seq and time of the last event.
    last: Option<(Seq, TimestampMs)>,
    auditor: Auditor,
    /// The lifecycle events before the first step (the first step takes
    /// them).
    early: Vec<StepEvent>,
    /// The latest step's row, taking the lifecycle events after it until
    /// the next step.
    latest: Option<StepRow>,
    /// The error each message was last given (`errors_set_by`), also
    /// after a pivot dropped the message from the state: an agent records
    /// an error after the step it ends.
    errors: BTreeMap<MessageId, String>,
}

/// What a [`TimelineFold`] leaves at the end of the events.
#[derive(Debug)]
pub struct TimelineEnd {
    /// The rows not handed out yet, in order: the last finished step's,
    /// and a step still open at the end.
    pub rows: Vec<StepRow>,
    /// The session.
    pub session: Option<SessionId>,
    /// The name of the policy in force at the end.
    pub policy: String,
    /// The model's limits at the end.
    pub limits: ModelLimits,
    /// The error each message was last given: a row's `error` is the one
    /// known when it was handed out, and an error recorded later (after a
    /// later step of the same message) is only here.
    pub errors: BTreeMap<MessageId, String>,
    /// The state at the end.
    pub state: SessionState,
}

impl Default for TimelineFold {
    fn default() -> Self {
        TimelineFold::new()
    }
}

impl TimelineFold {
    /// A fold whose state holds what the next decision needs.
    pub fn new() -> TimelineFold {
        TimelineFold::over(SessionState::new())
    }

    /// A fold whose state keeps its history (for views of all of it).
    pub fn keeping_history() -> TimelineFold {
        TimelineFold::over(SessionState::keeping_history())
    }

    fn over(state: SessionState) -> TimelineFold {
        TimelineFold {
            state,
            open: None,
            last: None,
            auditor: Auditor::beside_state(),
            early: Vec::new(),
            latest: None,
            errors: BTreeMap::new(),
        }
    }

    /// The state after the events folded so far.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// Folds the session's next event; the row it completed, if any.
    pub fn push(&mut self, e: &Envelope) -> Result<Option<StepRow>, RefusedEvent> {
        self.push_with(e, &mut |_, _| {})
    }

    /// [`TimelineFold::push`], calling `at_step` with the state right
    /// after a step and its row.
    pub fn push_with(
        &mut self,
        e: &Envelope,
        at_step: &mut impl FnMut(&SessionState, &StepRow),
    ) -> Result<Option<StepRow>, RefusedEvent> {
        let errors = self.state.errors_set_by(&e.event);
        let had_output = had_output(&self.state, &e.event);
        self.state.evolve(e)?;
        for (message, error) in errors {
            self.errors.insert(message, error.name);
        }
        self.last = Some((e.seq, e.recorded_at));
        let entry = self.auditor.push_told(e, had_output);
        let (message, tokens) = match &e.event {
            Event::UsageReported { message, tokens } => {
                self.open = Some((*message, *tokens));
                self.take_entry(entry);
                return Ok(None);
            }
            Event::StepFinished {
                message, tokens, ..
            } => (*message, tokens),
            _ => {
                self.take_entry(entry);
                return Ok(None);
            }
        };
        if self.open.is_some_and(|(m, _)| m == message) {
            self.open = None;
        }
        let row = step_row(&self.state, (e.seq, e.recorded_at), message, tokens, false);
        at_step(&self.state, &row);
        let done = self.begin(row);
        self.take_entry(entry);
        Ok(done.map(|row| self.with_error(row)))
    }

    /// Makes `row` the latest (the first takes the events before it); the
    /// row it follows, now complete.
    fn begin(&mut self, mut row: StepRow) -> Option<StepRow> {
        if self.latest.is_none() {
            row.events = std::mem::take(&mut self.early);
        }
        self.latest.replace(row)
    }

    /// Gives the lifecycle event an event made, if any, to the latest step
    /// (before the first step: to the first step, when it comes).
    fn take_entry(&mut self, entry: Option<AuditEntry>) {
        let Some(entry) = entry else { return };
        let to = match &mut self.latest {
            Some(row) => &mut row.events,
            None => &mut self.early,
        };
        to.push(StepEvent::from(&entry));
    }

    /// `row` with the error its message was last given so far.
    fn with_error(&self, mut row: StepRow) -> StepRow {
        row.error = self.errors.get(&row.message).cloned();
        row
    }

    /// The rows not handed out yet and the session as it ends.
    pub fn finish(self) -> TimelineEnd {
        self.finish_with(&mut |_, _| {})
    }

    /// [`TimelineFold::finish`], calling `at_step` for a step still open
    /// at the end.
    pub fn finish_with(mut self, at_step: &mut impl FnMut(&SessionState, &StepRow)) -> TimelineEnd {
        // A step still open at the end: a row of the session as it ends,
        // with the usage reported so far; the lifecycle events of the last
        // event are its.
        let mut rows = Vec::with_capacity(2);
        if let (Some((message, tokens)), Some(last)) = (self.open, self.last) {
            let unfinished = self
                .state
                .message(message)
                .is_some_and(|m| m.finish.is_none());
            if unfinished {
                let mut row = step_row(&self.state, last, message, &tokens, true);
                at_step(&self.state, &row);
                row.events = match &mut self.latest {
                    Some(latest) => {
                        let at = latest.events.partition_point(|e| e.seq < row.seq);
                        latest.events.split_off(at)
                    }
                    None => std::mem::take(&mut self.early),
                };
                rows.extend(self.latest.replace(row));
            }
        }
        rows.extend(self.latest.take());
        let rows = rows.into_iter().map(|r| self.with_error(r)).collect();
        TimelineEnd {
            rows,
            session: self.state.session,
            policy: self.state.policy.name.clone(),
            limits: self.state.limits.clone(),
            errors: self.errors,
            state: self.state,
        }
    }
}

/// The row of the step of `message` with `tokens` at the event at (`seq`,
/// `time`), in `state` (the state right after it): it finished the step, or, `open`, is the last
/// event of a session whose last step's end is not recorded yet (no
/// overflow check ran on it).
fn step_row(
    state: &SessionState,
    (seq, time): (Seq, TimestampMs),
    message: MessageId,
    tokens: &TokenUsage,
    open: bool,
) -> StepRow {
    let check = state.policy.check_overflow(&state.limits, tokens);
    let reported = StepTokens::of(tokens);
    let no_usage = reported.total == 0;
    // A policy that never checks after this step's model (Claude Code 2.1
    // on the models whose window it resolves to "auto") has no threshold
    // here: nothing compacts on one.
    let model = state
        .message(message)
        .and_then(|m| m.model.as_deref())
        .map(|m| m.model.as_str());
    let checked = state.policy.checks_model(model);
    StepRow {
        seq,
        time,
        message,
        tokens: reported,
        count: check.count,
        usable: check.usable,
        percent: check
            .usable
            .filter(|_| !no_usage)
            .map(|u| percent(reported.total, u)),
        threshold: state.policy.threshold(&state.limits).filter(|_| checked),
        overflow: check.overflow && !open && checked,
        window_estimate: estimate_window(state),
        events: Vec::new(),
        open,
        no_usage,
        error: None,
    }
}

/// `count / usable` in percent, rounded half up to 0.01 (integer
/// arithmetic, so every process prints the same digits).
pub fn percent(count: u64, usable: u64) -> f64 {
    if usable == 0 {
        return 0.0;
    }
    let hundredths = (u128::from(count) * 20_000 + u128::from(usable)) / (2 * u128::from(usable));
    hundredths as f64 / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::event::{CompactionTrigger, FinishReason, Role};
    use crate::ids::SeededIds;
    use crate::policy::{ModelLimits, Policy};
    use crate::recorder::Recorder;

    /// Entries before the first step go to the first row; each later one to
    /// the last step at or before it.
    #[test]
    fn each_entry_goes_to_the_step_before_it() {
        let limits = ModelLimits {
            context: 10_000,
            input: None,
            output: Some(1_000),
        };
        let mut r = Recorder::start(
            crate::ids::SessionId(uuid::Uuid::from_u128(7)),
            SeededIds::new(7),
            1_000,
            Policy::opencode_seed(),
            limits,
        )
        .unwrap();
        let u = r.user_text(1_001, "hello", false).unwrap();
        // A manual compaction before any step.
        let job = r
            .request_compaction(1_002, false, CompactionTrigger::Manual)
            .unwrap();
        r.summarize(1_003, job, "summary", None, TokenUsage::default())
            .unwrap();
        let step = |r: &mut Recorder<SeededIds>, at: u64, total: u64| {
            let m = r.message(at, Role::Assistant, Some(u), false).unwrap();
            r.finish_step(
                at,
                m,
                FinishReason::Stop,
                TokenUsage {
                    input: total,
                    ..TokenUsage::default()
                },
            )
            .unwrap();
        };
        step(&mut r, 1_010, 5_000);
        let between = r
            .request_compaction(1_011, false, CompactionTrigger::Manual)
            .unwrap();
        step(&mut r, 1_020, 9_500);
        let t = timeline(r.events()).unwrap();
        assert_eq!(t.steps.len(), 2);
        let kinds =
            |i: usize| -> Vec<&str> { t.steps[i].events.iter().map(|e| e.kind.as_str()).collect() };
        assert_eq!(
            kinds(0),
            [
                "compaction_requested",
                "compaction_started",
                "summary_completed",
                "compaction_requested"
            ]
        );
        assert!(t.steps[0].events[3].seq > t.steps[0].seq);
        assert!(kinds(1).is_empty());
        assert_eq!(
            t.steps[0].events[3].seq,
            r.events()[t.steps[0].seq as usize].seq
        );
        assert!(r.state().job(between).is_some());
        // usable = 10,000 − 1,000; the second step overflows (> 9,000).
        assert_eq!(t.steps[1].usable, Some(9_000));
        assert_eq!(t.steps[1].percent, Some(105.56));
        assert!(t.steps[1].overflow && !t.steps[0].overflow);
    }

    #[test]
    fn percent_rounds_half_up_to_hundredths() {
        assert_eq!(percent(1, 3), 33.33);
        assert_eq!(percent(2, 3), 66.67);
        assert_eq!(percent(50, 100), 50.0);
        assert_eq!(percent(150, 100), 150.0);
        assert_eq!(percent(1, 0), 0.0);
        assert_eq!(percent(u64::MAX, 1), u64::MAX as f64 * 100.0);
    }

    #[test]
    fn a_reported_total_is_kept_and_a_missing_one_computed() {
        let t = TokenUsage {
            total: Some(100),
            input: 10,
            output: 5,
            reasoning: 1,
            cache_read: 20,
            cache_write: 3,
        };
        let s = StepTokens::of(&t);
        assert_eq!((s.total, s.total_reported), (100, true));
        let s = StepTokens::of(&TokenUsage { total: None, ..t });
        assert_eq!((s.total, s.total_reported), (39, false));
        let s = StepTokens::of(&TokenUsage {
            total: Some(0),
            ..t
        });
        assert_eq!((s.total, s.total_reported), (39, false));
    }
}
