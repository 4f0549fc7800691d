//! One session's page, folded an event at a time ([`PageFold`]) after a
//! first pass has surveyed it ([`Survey`]): the page's memory holds the
//! state the next decision needs and what the page shows, never the
//! session's events.
//!
//! A session of at most [`PAGE_STEPS`] steps is shown whole: every step,
//! with its window. A longer one is shown in about [`SAMPLED_STEPS`] runs of
//! consecutive steps: each run by its peak step (the one that reported the
//! most tokens) and that step's window, with every lifecycle event of the
//! run (its prunes merged into one line), so the chart keeps the peaks
//! before each compaction and the page stays the same size however long the
//! session ran. `ctxlog window --at SEQ` shows any step's window.

use crate::data::{
    self, message_json, step_json, Removal, SessionData, SummarySeen, Versions, WindowChange,
};
use crate::messages::Messages;
use crate::ReportError;
use ctxlog_core::window::{render_message, window_order};
use ctxlog_core::{
    Envelope, Event, Json, MessageId, SessionState, SourceTarget, StepEvent, StepRow, Timeline,
    TimelineFold,
};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// The most steps of one session a page shows one by one (shared by the
/// sessions of a page).
pub const PAGE_STEPS: usize = 10_000;

/// How many runs of steps a page shows of a session longer than
/// [`PAGE_STEPS`] (shared by the sessions of a page).
pub const SAMPLED_STEPS: usize = 500;

/// How long a part's text may be on a page of runs: its beginning.
pub const SAMPLED_PART_CHARS: usize = 120;

/// What a first pass over a session's events learns for its page: how many
/// steps and texts it has, and each step's total (to pick each run's peak).
#[derive(Debug, Default, Clone)]
pub struct Survey {
    /// The total each step reported, in order (8 bytes a step).
    totals: Vec<u64>,
    /// The events that can add a text.
    texts: usize,
}

impl Survey {
    /// Counts `e`.
    pub fn see(&mut self, e: &Envelope) {
        match &e.event {
            Event::StepFinished { tokens, .. } => self.totals.push(tokens.shown_total()),
            Event::PartAppended { .. }
            | Event::PartUpdated { .. }
            | Event::SummaryCompleted { .. } => self.texts += 1,
            _ => {}
        }
    }

    /// How many steps each run shown holds on a page of `sessions`
    /// sessions: 1 up to [`PAGE_STEPS`] steps, else enough for about
    /// [`SAMPLED_STEPS`] runs.
    pub fn stride(&self, sessions: usize) -> usize {
        let sessions = sessions.max(1);
        let steps = self.totals.len();
        if steps <= PAGE_STEPS / sessions {
            1
        } else {
            steps.div_ceil((SAMPLED_STEPS / sessions).max(1))
        }
    }

    /// How long a part's text may be on a page that holds at most
    /// `budget_chars` of this session's texts: the budget shared by the
    /// events that can add a text, within [`data::MIN_PART_CHARS`] and
    /// [`data::MAX_PART_CHARS`]; a sampled page shows each part's beginning.
    pub fn part_chars(&self, budget_chars: usize, stride: usize) -> usize {
        if stride > 1 {
            return SAMPLED_PART_CHARS;
        }
        (budget_chars / self.texts.max(1)).clamp(data::MIN_PART_CHARS, data::MAX_PART_CHARS)
    }

    /// The step each run of `stride` steps is shown by (1-based): its
    /// first step that reported the most tokens.
    fn peaks(&self, stride: usize) -> Vec<u64> {
        self.totals
            .chunks(stride.max(1))
            .enumerate()
            .map(|(run, totals)| {
                let mut best = 0;
                for (i, t) in totals.iter().enumerate() {
                    if *t > totals[best] {
                        best = i;
                    }
                }
                (run * stride + best + 1) as u64
            })
            .collect()
    }
}

/// Folds `events` (one session's, seq 1 first) into what the page shows,
/// each part's text cut at `part_chars`, every step shown: the
/// fold of a session already in memory.
pub fn session_data(
    label: &str,
    events: &[Envelope],
    part_chars: usize,
) -> Result<SessionData, ReportError> {
    let survey = Survey::default();
    let mut fold = PageFold::new(label, &survey, 1, part_chars);
    for e in events {
        fold.push(e)?;
    }
    fold.finish()
}

/// A page's fold of one session: feed it the session's events in order
/// ([`PageFold::push`]), then [`PageFold::finish`].
pub struct PageFold {
    fold: TimelineFold,
    sheet: Sheet,
}

/// Everything a [`PageFold`] keeps but the timeline's fold.
struct Sheet {
    label: String,
    part_chars: usize,
    stride: usize,
    /// The step each run is shown by, when `stride` > 1.
    peaks: Vec<u64>,
    versions: Versions,
    renders: BTreeMap<(MessageId, u64), usize>,
    messages: Messages,
    /// Windows rendered at steps whose rows are not handed out yet, by
    /// step number.
    waiting: BTreeMap<u64, (Option<String>, Vec<usize>)>,
    /// The steps folded so far, and the rows handed out.
    steps: u64,
    rows: u64,
    runs: Vec<Run>,
    open: Option<Run>,
    streamed: BTreeSet<MessageId>,
    /// Each compaction's summary, by job, as last seen held.
    summaries: BTreeMap<MessageId, SummarySeen>,
    counts: BTreeMap<String, usize>,
}

/// A run of consecutive steps, as the page shows it.
struct Run {
    /// Its index (step `n` is in run `(n - 1) / stride`).
    index: u64,
    first: u64,
    /// The step it is shown by: its number, row and window.
    shown: Option<(u64, StepRow, Option<String>, Vec<usize>)>,
    /// Its last row, in case its shown step never came.
    last: Option<(u64, StepRow)>,
    /// The lifecycle events of all its steps.
    events: Vec<StepEvent>,
    /// How many prunes its merged prune line stands for.
    prunes: u64,
}

impl PageFold {
    /// A fold for the session labelled `label`, surveyed as `survey`,
    /// each run holding `stride` steps, each part's text cut at
    /// `part_chars`.
    pub fn new(label: &str, survey: &Survey, stride: usize, part_chars: usize) -> PageFold {
        let stride = stride.max(1);
        PageFold {
            fold: TimelineFold::new(),
            sheet: Sheet {
                label: label.to_owned(),
                part_chars,
                stride,
                peaks: if stride > 1 {
                    survey.peaks(stride)
                } else {
                    Vec::new()
                },
                versions: Versions::default(),
                renders: BTreeMap::new(),
                messages: Messages::default(),
                waiting: BTreeMap::new(),
                steps: 0,
                rows: 0,
                runs: Vec::new(),
                open: None,
                streamed: BTreeSet::new(),
                summaries: BTreeMap::new(),
                counts: BTreeMap::new(),
            },
        }
    }

    /// A fold for the session labelled `label`, surveyed as `survey`, on a
    /// page of `sessions` sessions: its runs and each part's cut as the
    /// page's limits share them ([`Survey::stride`],
    /// [`Survey::part_chars`] of [`crate::PAGE_TEXT_CHARS`]).
    pub fn for_page(label: &str, survey: &Survey, sessions: usize) -> PageFold {
        let stride = survey.stride(sessions);
        let part_chars = survey.part_chars(crate::PAGE_TEXT_CHARS / sessions.max(1), stride);
        PageFold::new(label, survey, stride, part_chars)
    }

    /// Folds the session's next event.
    pub fn push(&mut self, e: &Envelope) -> Result<(), ReportError> {
        let before = data::touched(&e.event, self.fold.state());
        self.sheet.versions.count(&before);
        let sheet = &mut self.sheet;
        let pushed = self
            .fold
            .push_with(e, &mut |state, row| sheet.at_step(state, row));
        let row = pushed.map_err(|r| ReportError::refused(&self.sheet.label, r))?;
        let state = self.fold.state();
        let after: Vec<MessageId> = data::touched(&e.event, state)
            .into_iter()
            .filter(|m| !before.contains(m))
            .collect();
        self.sheet.versions.count(&after);
        self.sheet.see(e, state);
        if let Some(row) = row {
            self.sheet.take_row(row);
        }
        Ok(())
    }

    /// What the page shows of the session.
    pub fn finish(self) -> Result<SessionData, ReportError> {
        let PageFold { fold, mut sheet } = self;
        let end = fold.finish_with(&mut |state, row| sheet.at_step(state, row));
        for row in end.rows {
            sheet.take_row(row);
        }
        if let Some(run) = sheet.open.take() {
            sheet.runs.push(run);
        }
        for job in &end.state.jobs {
            sheet.note_summary(&end.state, job.marker);
        }
        // The session as it ends: what left the window after the last
        // step shown.
        let (_, end_window) = sheet.window(&end.state);
        let mut rows = Vec::with_capacity(sheet.runs.len());
        let mut windows = Vec::with_capacity(sheet.runs.len());
        let mut numbers = Vec::with_capacity(sheet.runs.len());
        for run in std::mem::take(&mut sheet.runs) {
            let (number, mut row, pivot, window) = match (run.shown, run.last) {
                (Some(shown), _) => shown,
                (None, Some((n, row))) => (n, row, None, Vec::new()),
                (None, None) => continue,
            };
            row.events = run.events;
            row.error = end.errors.get(&row.message).cloned();
            windows.push((pivot, window));
            numbers.push((run.first, number));
            rows.push(row);
        }
        let (steps_json, removals) = sheet.steps_json(&rows, windows, &numbers, end_window);
        let estimator = end.state.policy.estimator;
        let summaries = data::summaries(&end.state, &sheet.summaries, &estimator, sheet.part_chars);
        let title = data::title(&end.state);
        let json = json!({
            "label": sheet.label,
            "session": end.session.map(|s| s.to_string()),
            "source": end.state.source_id,
            "title": title,
            "policy": end.state.policy,
            "limits": end.limits,
            "total_steps": sheet.steps,
        });
        Ok(SessionData {
            title,
            timeline: Timeline {
                session: end.session,
                policy: end.policy,
                limits: end.limits,
                steps: rows,
            },
            numbers,
            total_steps: sheet.steps,
            counts: sheet.counts,
            steps_json,
            removals,
            messages: sheet.messages,
            summaries,
            json,
        })
    }
}

impl Sheet {
    /// The page's steps as a JSON array's text, each row with its window
    /// (the run's, from `windows`) as a change of the one before, and what
    /// left the window before the next row (after the last: before
    /// `end_window`, the session's as it ends); and each row's removal.
    fn steps_json(
        &self,
        rows: &[StepRow],
        windows: Vec<(Option<String>, Vec<usize>)>,
        numbers: &[(u64, u64)],
        end_window: Vec<usize>,
    ) -> (String, Vec<Removal>) {
        let mut out = String::from("[");
        let mut removals = Vec::with_capacity(rows.len());
        let mut previous: Vec<usize> = Vec::new();
        let mut windows = windows.into_iter().peekable();
        let mut i = 0;
        while let Some((pivot, window)) = windows.next() {
            let next = windows.peek().map_or(&end_window, |(_, w)| w);
            let (removed, removal) = data::removed(&window, next, &self.messages.shown);
            removals.push(removal);
            let keep = previous
                .iter()
                .zip(&window)
                .take_while(|(a, b)| a == b)
                .count();
            let change = WindowChange {
                pivot,
                keep,
                add: window[keep..].to_vec(),
                size: window.len(),
                removed,
            };
            let row = &rows[i];
            let mut step = step_json(row, change, self.streamed.contains(&row.message));
            if self.stride > 1 {
                let (first, number) = numbers[i];
                step["step"] = json!(number);
                step["first"] = json!(first);
            }
            if i > 0 {
                out.push(',');
            }
            out.push_str(&step.to_string());
            previous = window;
            i += 1;
        }
        out.push(']');
        out.shrink_to_fit();
        (out, removals)
    }

    /// The run step `n` is in.
    fn run_of(&self, n: u64) -> u64 {
        (n - 1) / self.stride as u64
    }

    /// Whether the page shows step `n`'s window.
    fn shows(&self, n: u64) -> bool {
        if self.stride == 1 {
            return true;
        }
        let run = self.run_of(n);
        match self.peaks.get(run as usize) {
            Some(&peak) => peak == n,
            // A step the survey did not count (a step still open at the
            // end): its run is shown by its first step.
            None => (n - 1).is_multiple_of(self.stride as u64),
        }
    }

    /// At step `n` (the state right after it): its window, when shown.
    fn at_step(&mut self, state: &SessionState, _row: &StepRow) {
        self.steps += 1;
        let n = self.steps;
        if self.shows(n) {
            let window = self.window(state);
            self.waiting.insert(n, window);
        }
    }

    /// The row of the next step, handed out once the steps after it began.
    fn take_row(&mut self, mut row: StepRow) {
        self.rows += 1;
        let n = self.rows;
        let index = self.run_of(n);
        if self.open.as_ref().is_some_and(|r| r.index != index) {
            self.runs.extend(self.open.take());
        }
        let stride = self.stride;
        let run = self.open.get_or_insert_with(|| Run {
            index,
            first: n,
            shown: None,
            last: None,
            events: Vec::new(),
            prunes: 0,
        });
        for e in std::mem::take(&mut row.events) {
            *self.counts.entry(e.kind.clone()).or_insert(0) += 1;
            if stride > 1 && e.kind == "parts_pruned" {
                run.prunes += 1;
                merge_prune(&mut run.events, e, run.prunes);
            } else {
                run.events.push(e);
            }
        }
        match self.waiting.remove(&n) {
            Some((pivot, window)) => run.shown = Some((n, row, pivot, window)),
            None => run.last = Some((n, row)),
        }
    }

    /// Notes what `e` says that the rows do not: Claude Code's streamed
    /// output counts, and each summary's text while it is held.
    fn see(&mut self, e: &Envelope, state: &SessionState) {
        match &e.event {
            Event::SourceFields {
                format,
                target: SourceTarget::Message(m),
                fields,
            } => match fields.get("stop_reason") {
                Some(Json::Null) if format == "claude-code" => {
                    self.streamed.insert(*m);
                }
                Some(_) => {
                    self.streamed.remove(m);
                }
                None => {}
            },
            Event::SummaryCompleted { job, .. } => {
                self.note_summary(state, *job);
                self.forget_dropped(state);
            }
            Event::CompactionFailed { job, .. } => self.note_summary(state, *job),
            // A summary's call may finish after its job does.
            Event::StepFinished { message, .. }
                if state.message(*message).is_some_and(|m| m.summary) =>
            {
                let jobs: Vec<MessageId> = state
                    .jobs
                    .iter()
                    .filter(|j| j.summary == Some(*message))
                    .map(|j| j.marker)
                    .collect();
                for job in jobs {
                    self.note_summary(state, job);
                }
            }
            _ => {}
        }
    }

    /// Forgets the versions and renderings of the messages `state` no
    /// longer holds (a pivot dropped them for good): what the fold keeps
    /// does not grow with the session's history.
    fn forget_dropped(&mut self, state: &SessionState) {
        let held = |m: &MessageId| state.message(*m).is_some();
        self.versions.retain(held);
        self.renders.retain(|(m, _), _| held(m));
    }

    /// Keeps the text of `job`'s summary, when the state holds it.
    fn note_summary(&mut self, state: &SessionState, job: MessageId) {
        let Some(summary) = state.job(job).and_then(|j| j.summary) else {
            return;
        };
        let Some(m) = state.message(summary) else {
            return;
        };
        let texts: Vec<&str> = m
            .parts
            .iter()
            .filter_map(|p| match p.content() {
                Some(ctxlog_core::PartBody::Text { text, .. }) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let output_tokens = m
            .tokens
            .as_deref()
            .filter(|t| **t != ctxlog_core::TokenUsage::default())
            .map(|t| t.output);
        self.summaries.insert(
            job,
            SummarySeen {
                text: texts.join("\n"),
                output_tokens,
            },
        );
    }

    /// The window at `state` as references into the messages, rendering
    /// only messages touched since they were last rendered.
    fn window(&mut self, state: &SessionState) -> (Option<String>, Vec<usize>) {
        let (pivot, order) = window_order(state);
        let estimator = state.policy.estimator;
        let mut refs = Vec::with_capacity(order.len());
        for i in order {
            let Some(m) = state.messages.get(i) else {
                continue;
            };
            let key = (m.id, self.versions.of(m.id));
            if let Some(&r) = self.renders.get(&key) {
                refs.push(r);
                continue;
            }
            let Some(rendered) = render_message(state, m) else {
                continue;
            };
            let json = message_json(m, &rendered, &estimator, self.part_chars);
            let r = self.messages.push(m.id, &json);
            self.renders.insert(key, r);
            refs.push(r);
        }
        debug_assert!(refs.iter().all(|&r| r < self.messages.len()));
        (pivot.map(|p| p.to_string()), refs)
    }
}

/// Adds prune `e`, the run's `prunes`th, to its one merged prune line.
fn merge_prune(events: &mut Vec<StepEvent>, e: StepEvent, prunes: u64) {
    let Some(merged) = events.iter_mut().find(|m| m.kind == "parts_pruned") else {
        events.push(e);
        return;
    };
    merged.parts += e.parts;
    merged.tokens = match (merged.tokens, e.tokens) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    merged.seq = e.seq;
    merged.what = format!(
        "{prunes} prunes in these steps cleared {} tool outputs{} (the last at seq {}; `ctxlog audit` lists each)",
        merged.parts,
        merged.tokens.map(|t| format!(", ~{t} tokens")).unwrap_or_default(),
        merged.seq
    );
}
