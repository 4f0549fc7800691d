//! `ctxlog timeline`: a row per model step of a stored session, read in
//! two passes an event at a time. The first learns what every row needs
//! before the first is printed (the error each message ends with, the
//! highest total, the columns' widths); the second prints each row as its
//! step completes. Neither holds the session's events or its rows, so a
//! year-long session prints in the memory of a replay.

use crate::redaction::{outputs, plural};
use crate::store::stored_session;
use crate::{ui, Cli, CliError};
use ctxlog_app::dates::Zone;
use ctxlog_core::{
    timeline, Capture, Envelope, Event, MessageId, RefusedEvent, Seq, SessionId, StepEvent,
    StepRow, Timeline, TimelineEnd, TimelineFold,
};
use ctxlog_store::EventLog;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// The timeline of `events`; a log the reducer refuses is a failure that
/// names the session and seq.
pub(crate) fn timeline_of(events: &[Envelope]) -> Result<Timeline, CliError> {
    timeline(events).map_err(|r| {
        let at = events.iter().find(|e| e.seq == r.seq).map(|e| e.session);
        refused(at, &r)
    })
}

/// A log the reducer refuses at `r.seq` of `session`.
fn refused(session: Option<SessionId>, r: &RefusedEvent) -> CliError {
    CliError::Failed(format!(
        "session {} does not replay at seq {}: {r}",
        session.map_or("-".into(), |s| s.to_string()),
        r.seq
    ))
}

/// Folds `session`'s events up to `head` from `store` an event at a time,
/// handing `each` every row (with the error its message was given so far,
/// and the `captures` made between its step and the next);
/// the session as it ends.
fn fold_rows(
    store: &impl EventLog,
    session: SessionId,
    head: Seq,
    captures: &[(u64, Capture)],
    each: impl FnMut(StepRow),
) -> Result<TimelineEnd, CliError> {
    let read_failed = |e: ctxlog_store::ReadError| CliError::Failed(e.to_string());
    let mut rows = WithCaptures::new(captures.to_vec(), head, each);
    let mut fold = TimelineFold::new();
    for e in store.read(session, 1).map_err(read_failed)? {
        let e = e.map_err(read_failed)?;
        if e.seq > head {
            break;
        }
        if let Some(row) = fold.push(&e).map_err(|r| refused(Some(session), &r))? {
            rows.push(row);
        }
    }
    let mut end = fold.finish();
    for row in std::mem::take(&mut end.rows) {
        rows.push(row);
    }
    rows.finish();
    Ok(end)
}

/// Hands on rows a step late, each with the captures made between it and
/// the next ([`ctxlog_core::Capture`], by the session's head they held):
/// "captured at PreCompact (auto)" on the step that filled the context.
struct WithCaptures<F: FnMut(StepRow)> {
    /// The captures not yet on a row, by head, latest first.
    captures: Vec<(u64, Capture)>,
    held: Option<StepRow>,
    each: F,
}

impl<F: FnMut(StepRow)> WithCaptures<F> {
    fn new(captures: Vec<(u64, Capture)>, head: Seq, each: F) -> Self {
        let mut captures: Vec<_> = captures
            .into_iter()
            .filter(|(_, c)| c.head <= head)
            .collect();
        captures.sort_by_key(|(at, c)| (std::cmp::Reverse(c.head), std::cmp::Reverse(*at)));
        WithCaptures {
            captures,
            held: None,
            each,
        }
    }

    fn push(&mut self, row: StepRow) {
        let next = row.seq;
        if let Some(held) = self.held.replace(row) {
            self.hand_on(held, Some(next));
        }
    }

    fn finish(mut self) {
        if let Some(held) = self.held.take() {
            self.hand_on(held, None);
        }
    }

    /// Hands on `row` with the captures before `next`'s seq (all: the last).
    fn hand_on(&mut self, mut row: StepRow, next: Option<Seq>) {
        while let Some((_, c)) = self.captures.last() {
            if next.is_some_and(|n| c.head >= n) {
                break;
            }
            row.events.push(StepEvent {
                seq: c.head,
                kind: "captured".into(),
                parts: 0,
                tokens: None,
                what: c.words(),
            });
            self.captures.pop();
        }
        (self.each)(row);
    }
}

/// `timeline SESSION`: the session as it is when the command starts (a
/// writer may go on appending).
pub(crate) fn show_timeline(cli: &Cli, session: &str) -> Result<(), CliError> {
    let (store, session) = stored_session(cli, session)?;
    let head = store
        .head(session)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let descriptions = ctxlog_app::catalog::descriptions_after(&store, session, head)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let streamed = ctxlog_app::views::streamed_outputs(&descriptions);
    let captures: Vec<(u64, Capture)> = descriptions
        .into_iter()
        .filter_map(|e| match e.event {
            Event::Captured { capture } => Some((e.recorded_at, capture)),
            _ => None,
        })
        .collect();
    if cli.json {
        return print_timeline_json(&store, session, head, &streamed, &captures);
    }
    let zone = cli.zone();
    let mut survey = Survey::new(&streamed, &zone);
    let end = fold_rows(&store, session, head, &captures, |row| survey.add(row))?;
    let survey = survey.finish(&end.errors);
    print_heading(&end, &survey, &zone);
    if survey.steps == 0 {
        println!("no model steps recorded");
        return Ok(());
    }
    let mut table = ui::Table::fitted(&TIMELINE_COLUMNS, &survey.measured, ui::terminal_width());
    table.print_header();
    fold_rows(&store, session, head, &captures, |mut row| {
        row.error = end.errors.get(&row.message).cloned();
        let shown = streamed.contains(&row.message);
        table.print_row(&step_line(&row, survey.peak, shown, &zone));
    })?;
    if survey.any_streamed {
        println!("* output as streamed: the recording has no final count for this step (Claude Code wrote only its placeholder)");
    }
    println!(
        "{} · peak {} tokens · {} · {} (`ctxlog window SESSION --at SEQ` shows the input after a step)",
        plural(survey.steps, "step"),
        survey.peak,
        plural(survey.compactions, "compaction"),
        plural(survey.prunes, "prune"),
    );
    Ok(())
}

/// What the first pass learns of the rows.
struct Survey<'a> {
    streamed: &'a BTreeSet<MessageId>,
    zone: &'a Zone,
    steps: usize,
    compactions: usize,
    prunes: usize,
    /// The highest total a step reported.
    peak: u64,
    /// The first step's time.
    first: Option<u64>,
    /// The last step's time, usable budget and threshold.
    last: Option<(u64, Option<u64>, Option<u64>)>,
    any_streamed: bool,
    measured: ui::Measured,
    /// Steps that reported no usage: their row names their message's
    /// error, known only at the end (an agent records it after the step).
    /// Such steps are few (aborted calls).
    no_usage: Vec<StepRow>,
}

impl<'a> Survey<'a> {
    fn new(streamed: &'a BTreeSet<MessageId>, zone: &'a Zone) -> Survey<'a> {
        Survey {
            streamed,
            zone,
            steps: 0,
            compactions: 0,
            prunes: 0,
            peak: 0,
            first: None,
            last: None,
            any_streamed: false,
            measured: ui::Measured::new(&TIMELINE_COLUMNS),
            no_usage: Vec::new(),
        }
    }

    fn add(&mut self, row: StepRow) {
        self.steps += 1;
        let kinds = |kind: &str| row.events.iter().filter(|e| e.kind == kind).count();
        self.compactions += kinds("summary_completed");
        self.prunes += kinds("parts_pruned");
        self.peak = self.peak.max(row.tokens.total);
        self.first.get_or_insert(row.time);
        self.last = Some((row.time, row.usable, row.threshold));
        let streamed = self.streamed.contains(&row.message);
        self.any_streamed |= streamed;
        if row.no_usage {
            self.no_usage.push(row);
        } else {
            // The bar's width does not depend on the peak.
            let line = step_line(&row, 0, streamed, self.zone);
            self.measured.add(&line);
        }
    }

    /// The survey once every message's error is known.
    fn finish(mut self, errors: &BTreeMap<MessageId, String>) -> Survey<'a> {
        for mut row in std::mem::take(&mut self.no_usage) {
            row.error = errors.get(&row.message).cloned();
            let streamed = self.streamed.contains(&row.message);
            let line = step_line(&row, 0, streamed, self.zone);
            self.measured.add(&line);
        }
        self
    }
}

/// The line above the table: the session, its days, its policy and
/// limits.
fn print_heading(end: &TimelineEnd, survey: &Survey, zone: &Zone) {
    let day = |ms: u64| zone.day(ms);
    let limits = &end.limits;
    let last = survey.last;
    let mut parts = vec![format!(
        "session {}",
        end.session.map_or("-".into(), |s| s.to_string())
    )];
    if let (Some(a), Some((b, ..))) = (survey.first, survey.last) {
        parts.push(if day(a) != day(b) {
            format!("{} to {} ({})", day(a), day(b), zone.offsets_of([a, b]))
        } else {
            format!("{} ({})", day(a), zone.offset(a))
        });
    } else if let Some(a) = survey.first {
        parts.push(format!("{} ({})", day(a), zone.offset(a)));
    }
    parts.push(format!("policy {}", end.policy));
    parts.push(format!(
        "context {}",
        if limits.context == 0 {
            "unlimited".into()
        } else {
            limits.context.to_string()
        }
    ));
    parts.push(format!(
        "usable {}",
        last.and_then(|(_, usable, _)| usable)
            .map_or("-".into(), |u| u.to_string())
    ));
    parts.push(format!(
        "threshold {}",
        last.and_then(|(_, _, threshold)| threshold)
            .map_or("never".into(), |u| u.to_string())
    ));
    ui::print_heading(&parts);
}

/// `timeline --json`: the timeline as serialized, the session as text,
/// and on each step `output_streamed` (its output count is a streaming
/// placeholder) and `date`; written a row at a time (`steps` is the
/// document's last key, as it sorts).
fn print_timeline_json(
    store: &impl EventLog,
    session: SessionId,
    head: Seq,
    streamed: &BTreeSet<MessageId>,
    captures: &[(u64, Capture)],
) -> Result<(), CliError> {
    let end = fold_rows(store, session, head, captures, |_| {})?;
    let doc = json!({
        "limits": end.limits,
        "ok": true,
        "policy": end.policy,
        "session": end.session.map(|s| s.to_string()),
    });
    let doc = doc.to_string();
    let open = doc.strip_suffix('}').unwrap_or(&doc);
    crate::write_stdout(format_args!("{open},\"steps\":["));
    let utc = Zone::utc();
    let mut failed = None;
    let mut first = true;
    fold_rows(store, session, head, captures, |mut step| {
        step.error = end.errors.get(&step.message).cloned();
        let mut row = match serde_json::to_value(&step) {
            Ok(row) => row,
            Err(e) => {
                failed.get_or_insert(e);
                return;
            }
        };
        row["output_streamed"] = json!(streamed.contains(&step.message));
        // Beside `time` (ms), the same as RFC 3339.
        row["date"] = json!(utc.rfc3339(step.time));
        let comma = if first { "" } else { "," };
        first = false;
        crate::write_stdout(format_args!("{comma}{row}"));
    })?;
    if let Some(e) = failed {
        return Err(CliError::Failed(format!(
            "cannot serialize the timeline: {e}"
        )));
    }
    println!("]}}");
    Ok(())
}

/// The columns of `timeline`.
const TIMELINE_COLUMNS: [ui::Column<'static>; 12] = [
    ui::keep("SEQ"),
    ui::keep("TIME"),
    ui::number("INPUT"),
    ui::number("OUTPUT"),
    ui::number("REASONING").optional(2),
    ui::number("CACHE READ").optional(4),
    ui::number("CACHE WRITE").optional(3),
    ui::number("TOTAL"),
    ui::number("USED"),
    ui::keep("CONTEXT").optional(0),
    ui::number("WINDOW").optional(1),
    ui::text("WHAT").at_least(16).wrapped(),
];

/// One step's row of the timeline; a step that reported no usage shows
/// `-` and says so, never zeros.
fn step_line(s: &StepRow, peak: u64, streamed: bool, zone: &Zone) -> Vec<String> {
    let count = |n: u64| {
        if s.no_usage {
            "-".into()
        } else {
            ui::tokens(n)
        }
    };
    let mut what = what(&s.events);
    if s.no_usage {
        let why = match s.error.as_deref() {
            Some("MessageAbortedError") => " (aborted)".to_owned(),
            Some(e) => format!(" ({e})"),
            None => String::new(),
        };
        what = join(&format!("no usage recorded{why}"), &what);
    }
    if s.open {
        what = join("open (its end is not recorded yet)", &what);
    }
    vec![
        s.seq.to_string(),
        zone.clock(s.time),
        count(s.tokens.input),
        if streamed {
            format!("{}*", ui::tokens(s.tokens.output))
        } else {
            count(s.tokens.output)
        },
        count(s.tokens.reasoning),
        count(s.tokens.cache_read),
        count(s.tokens.cache_write),
        count(s.tokens.total),
        s.percent.map_or("-".into(), |p| format!("{p:.0}%")),
        if s.no_usage {
            String::new()
        } else {
            bar(s, peak)
        },
        ui::tokens(s.window_estimate),
        what,
    ]
}

/// `a, b`, or `a` alone when `b` is empty.
fn join(a: &str, b: &str) -> String {
    if b.is_empty() {
        a.to_owned()
    } else {
        format!("{a}, {b}")
    }
}

/// Ten cells of the usable context the step's total used (of the peak when
/// there is no limit); `!` where the policy's overflow check fired.
fn bar(s: &StepRow, peak: u64) -> String {
    const CELLS: u64 = 10;
    let (num, den) = match s.usable {
        Some(u) if u > 0 => (s.tokens.total, u),
        _ => (s.tokens.total, peak.max(1)),
    };
    let filled = (num.saturating_mul(CELLS) + den / 2) / den;
    let mut out: String = (0..CELLS)
        .map(|i| if i < filled { '█' } else { '·' })
        .collect();
    if s.overflow {
        out.pop();
        out.push('!');
    }
    out
}

/// What the lifecycle did after a step, in a few words.
fn what(events: &[StepEvent]) -> String {
    let words: Vec<String> = events
        .iter()
        .filter_map(|e| {
            let tokens = e.tokens.map(ui::tokens);
            Some(match e.kind.as_str() {
                "parts_pruned" => format!(
                    "prune {} ~{}",
                    outputs(e.parts),
                    tokens.unwrap_or_else(|| "?".into())
                ),
                "parts_restored" => format!("restore {}", outputs(e.parts)),
                "compaction_requested" => "compaction".into(),
                "summary_completed" => match tokens {
                    Some(t) => format!("summary {t}"),
                    None => "summary (tokens not recorded)".into(),
                },
                "compaction_failed" => "compaction FAILED".into(),
                "continue" => "continue".into(),
                "auto_compaction_paused" => "STALL".into(),
                "policy_changed" | "captured" => e.what.clone(),
                _ => return None,
            })
        })
        .collect();
    words.join(", ")
}
