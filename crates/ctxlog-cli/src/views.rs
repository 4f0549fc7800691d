//! Views of one stored session over time: `timeline` (a row per step) and
//! `report` (the HTML page).

use crate::redaction::outputs;
use crate::redaction::plural;
use crate::redaction::redaction_json;
use crate::redaction::redaction_line;
use crate::redaction::write_page;
use crate::store::stored_session;
use crate::{ui, Cli, CliError};
use ctxlog_app::dates::Zone;
use ctxlog_core::{
    timeline, Envelope, MessageId, RefusedEvent, SessionId, StepEvent, StepRow, Timeline,
    TimelineFold,
};
use ctxlog_store::EventLog;
use serde_json::json;
use std::collections::BTreeSet;
use std::path::Path;

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

/// The timeline of `session` read from `store` an event at a time (a
/// session's events are never held together), and its head.
fn streamed_timeline(
    store: &impl EventLog,
    session: SessionId,
) -> Result<(Timeline, u64), CliError> {
    let read_failed = |e: ctxlog_store::ReadError| CliError::Failed(e.to_string());
    let mut fold = TimelineFold::new();
    let mut head = 0;
    for e in store.read(session, 1).map_err(read_failed)? {
        let e = e.map_err(read_failed)?;
        fold.push(&e).map_err(|r| refused(Some(session), &r))?;
        head = e.seq;
    }
    Ok((fold.finish().0, head))
}

/// `timeline SESSION`.
pub(crate) fn show_timeline(cli: &Cli, session: &str) -> Result<(), CliError> {
    let (store, session) = stored_session(cli, session)?;
    let (t, head) = streamed_timeline(&store, session)?;
    let descriptions = ctxlog_app::catalog::descriptions_after(&store, session, head)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let streamed = ctxlog_app::views::streamed_outputs(&descriptions);
    if cli.json {
        println!("{}", timeline_json(&t, &streamed)?);
        return Ok(());
    }
    print_timeline(&t, &streamed, &cli.zone());
    Ok(())
}

/// `timeline --json`: the timeline as serialized, the session as text,
/// and `output_streamed` on each step whose output count is a streaming
/// placeholder.
pub(crate) fn timeline_json(
    t: &Timeline,
    streamed: &BTreeSet<MessageId>,
) -> Result<serde_json::Value, CliError> {
    let mut doc = serde_json::to_value(t)
        .map_err(|e| CliError::Failed(format!("cannot serialize the timeline: {e}")))?;
    doc["session"] = json!(t.session.map(|s| s.to_string()));
    doc["ok"] = json!(true);
    let utc = ctxlog_app::dates::Zone::utc();
    if let Some(rows) = doc["steps"].as_array_mut() {
        for (row, step) in rows.iter_mut().zip(&t.steps) {
            row["output_streamed"] = json!(streamed.contains(&step.message));
            // Beside `time` (ms), the same as RFC 3339.
            row["date"] = json!(utc.rfc3339(step.time));
        }
    }
    Ok(doc)
}

/// The timeline as a table fitted to the terminal, with a bar of the
/// context used; times in `zone`.
pub(crate) fn print_timeline(t: &Timeline, streamed: &BTreeSet<MessageId>, zone: &Zone) {
    let limits = &t.limits;
    let last = t.steps.last();
    let day = |ms: u64| zone.day(ms);
    let days = match (t.steps.first(), last) {
        (Some(a), Some(b)) if day(a.time) != day(b.time) => {
            format!(" · {} to {}", day(a.time), day(b.time))
        }
        (Some(a), _) => format!(" · {}", day(a.time)),
        _ => String::new(),
    };
    let days = match t.steps.first() {
        Some(a) => format!("{days} ({})", zone.offset(a.time)),
        None => days,
    };
    println!(
        "session {}{days} · policy {} · context {} · usable {} · threshold {}",
        t.session.map_or("-".into(), |s| s.to_string()),
        t.policy,
        if limits.context == 0 {
            "unlimited".into()
        } else {
            limits.context.to_string()
        },
        last.and_then(|s| s.usable)
            .map_or("-".into(), |u| u.to_string()),
        last.and_then(|s| s.threshold)
            .map_or("-".into(), |u| u.to_string()),
    );
    if t.steps.is_empty() {
        println!("no model steps recorded");
        return;
    }
    let peak = t.peak();
    let rows: Vec<Vec<String>> = t
        .steps
        .iter()
        .map(|s| step_line(s, peak, streamed.contains(&s.message), zone))
        .collect();
    ui::print_table(&TIMELINE_COLUMNS, &rows, ui::terminal_width());
    if t.steps.iter().any(|s| streamed.contains(&s.message)) {
        println!("* output as streamed: the recording has no final count for this step (Claude Code wrote only its placeholder)");
    }
    let compactions = t.count("summary_completed");
    let prunes = t.count("parts_pruned");
    println!(
        "{} · peak {peak} tokens · {} · {} (`ctxlog window SESSION --at SEQ` shows the input after a step)",
        plural(t.steps.len(), "step"),
        plural(compactions, "compaction"),
        plural(prunes, "prune"),
    );
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
    ui::text("WHAT").at_least(16),
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
                "policy_changed" => e.what.clone(),
                _ => return None,
            })
        })
        .collect();
    words.join(", ")
}

/// `report SESSION [--with SESSION]... --out FILE`.
pub(crate) fn write_report(
    cli: &Cli,
    session: &str,
    with: &[String],
    out: &Path,
    redact: bool,
) -> Result<(), CliError> {
    let store = crate::store::open_existing(&cli.db)?;
    let ids = std::iter::once(session)
        .chain(with.iter().map(String::as_str))
        .map(|text| crate::store::resolve_session(&store, &cli.db, text))
        .collect::<Result<Vec<_>, _>>()?;
    let page = ctxlog_app::pages::report(&store, &ids, redact)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let html = &page.text;
    write_page(out, html)?;
    if cli.json {
        println!(
            "{}",
            json!({"ok": true, "out": out.display().to_string(), "bytes": html.len(), "sessions": page.sessions, "redacted": page.redacted.as_ref().map(redaction_json)})
        );
    } else {
        if let Some(redacted) = &page.redacted {
            eprintln!("{}", redaction_line(redacted));
        }
        println!(
            "wrote {} ({} bytes): {}",
            out.display(),
            html.len(),
            page.sessions
                .iter()
                .map(|s| format!("{} ({})", s.label, s.session))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}
