//! Views of one stored session over time: `timeline` (a row per step) and
//! `report` (the HTML page).

use crate::redaction::outputs;
use crate::redaction::plural;
use crate::redaction::redaction_json;
use crate::redaction::redaction_line;
use crate::redaction::write_page;
use crate::store::stored_session;
use crate::{ui, Cli, CliError};
use ctxlog_core::{timeline, Envelope, StepEvent, StepRow, Timeline};
use ctxlog_import::time::format_rfc3339_ms;
use serde_json::json;
use std::path::Path;

/// The timeline of `events`; a log the reducer refuses is a failure that
/// names the session and seq.
pub(crate) fn timeline_of(events: &[Envelope]) -> Result<Timeline, CliError> {
    timeline(events).map_err(|r| {
        let at = events.iter().find(|e| e.seq == r.seq).map(|e| e.session);
        CliError::Failed(format!(
            "session {} does not replay at seq {}: {r}",
            at.map_or("-".into(), |s| s.to_string()),
            r.seq
        ))
    })
}

/// `timeline SESSION`.
pub(crate) fn show_timeline(cli: &Cli, session: &str) -> Result<(), CliError> {
    let (store, session) = stored_session(cli, session)?;
    let events = crate::store::read_log(&store, session)?;
    let t = timeline_of(&events)?;
    if cli.json {
        println!("{}", timeline_json(&t)?);
        return Ok(());
    }
    print_timeline(&t);
    Ok(())
}

/// `timeline --json`: the timeline as serialized, the session as text.
pub(crate) fn timeline_json(t: &Timeline) -> Result<serde_json::Value, CliError> {
    let mut doc = serde_json::to_value(t)
        .map_err(|e| CliError::Failed(format!("cannot serialize the timeline: {e}")))?;
    doc["session"] = json!(t.session.map(|s| s.to_string()));
    Ok(doc)
}

/// The timeline as a table of at most 100 columns, with a bar of the
/// context used.
pub(crate) fn print_timeline(t: &Timeline) {
    let limits = &t.limits;
    let last = t.steps.last();
    let day = |ms: u64| {
        format_rfc3339_ms(ms)
            .get(..10)
            .unwrap_or_default()
            .to_owned()
    };
    let days = match (t.steps.first(), last) {
        (Some(a), Some(b)) if day(a.time) != day(b.time) => {
            format!(" · {} to {}", day(a.time), day(b.time))
        }
        (Some(a), _) => format!(" · {}", day(a.time)),
        _ => String::new(),
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
        .map(|s| {
            vec![
                s.seq.to_string(),
                clock(s.time),
                ui::tokens(s.tokens.input),
                ui::tokens(s.tokens.output),
                ui::tokens(s.tokens.cache_read),
                ui::tokens(s.tokens.total),
                s.percent.map_or("-".into(), |p| format!("{p:.0}%")),
                bar(s, peak),
                ui::tokens(s.window_estimate),
                match (s.open, what(&s.events)) {
                    (true, w) if w.is_empty() => "open (its end is not recorded yet)".into(),
                    (true, w) => format!("open, {w}"),
                    (false, w) => w,
                },
            ]
        })
        .collect();
    ui::table_fit(
        &[
            "SEQ", "TIME", "INPUT", "OUTPUT", "CACHED", "TOTAL", "USED", "CONTEXT", "WINDOW",
            "WHAT",
        ],
        &rows,
        ui::MAX_TABLE_WIDTH,
    );
    let compactions = t.count("summary_completed");
    let prunes = t.count("parts_pruned");
    println!(
        "{} · peak {peak} tokens · {} · {} (`ctxlog window SESSION --at SEQ` shows the input after a step)",
        plural(t.steps.len(), "step"),
        plural(compactions, "compaction"),
        plural(prunes, "prune"),
    );
}

/// `HH:MM:SS` of a time (the date is in the header of a day's rows).
fn clock(ms: u64) -> String {
    let full = format_rfc3339_ms(ms);
    full.get(11..19).unwrap_or(&full).to_owned()
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
                "summary_completed" => format!(
                    "summary{}",
                    tokens.map(|t| format!(" {t}")).unwrap_or_default()
                ),
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
            json!({"out": out.display().to_string(), "bytes": html.len(), "sessions": page.sessions, "redacted": page.redacted.as_ref().map(redaction_json)})
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
