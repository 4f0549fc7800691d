//! `audit`: every prune, restore, withdrawal and compaction step of a
//! session, read from the log an event at a time and written a line at a
//! time (the table in two passes: the first measures it), so a long
//! session's trail is never held whole.

use crate::store::stored_session;
use crate::{ui, Cli, CliError};
use ctxlog_app::dates::Zone;
use ctxlog_app::views::{each_audit_line, AuditLine};
use ctxlog_core::{AuditEntry, SessionId};
use ctxlog_store::EventLog;
use serde_json::json;

/// `audit SESSION`: the session as it is when the command starts (a writer
/// may go on appending).
pub(crate) fn show_audit(cli: &Cli, session: &str) -> Result<(), CliError> {
    let (store, session) = stored_session(cli, session)?;
    let head = store
        .head(session)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let each = |f: &mut dyn FnMut(AuditLine)| {
        each_audit_line(&store, session, head, f).map_err(|e| CliError::Failed(e.to_string()))
    };
    if cli.json {
        return print_audit_json(session, each);
    }
    let zone = cli.zone();
    let mut measured = ui::Measured::with_headers(&HEADERS);
    let mut first = None;
    let mut last = None;
    each(&mut |l| {
        first.get_or_insert(l.entry.at);
        last = Some(l.entry.at);
        measured.add(&audit_row(&l.entry, &zone));
    })?;
    let (Some(first), Some(last)) = (first, last) else {
        println!("nothing was pruned or compacted in {session}");
        return Ok(());
    };
    let time = format!("TIME ({})", zone.offsets_of([first, last]));
    let names = ["SEQ", &time, "KIND", "TOKENS", "WHAT"];
    measured.fit_headers(&names);
    let columns = ui::plain_columns(&names, &measured);
    let mut table = ui::Table::fitted(&columns, &measured, ui::terminal_width());
    table.print_header();
    each(&mut |l| table.print_row(&audit_row(&l.entry, &zone)))?;
    Ok(())
}

/// `audit --json`: `{"entries": [...], "ok": true, "session": ...}`, each
/// entry with `date` beside `at`, written an entry at a time.
fn print_audit_json(
    session: SessionId,
    each: impl Fn(&mut dyn FnMut(AuditLine)) -> Result<(), CliError>,
) -> Result<(), CliError> {
    crate::write_stdout(format_args!("{{\"entries\":["));
    let utc = Zone::utc();
    let mut failed = None;
    let mut first = true;
    each(&mut |l| {
        let mut entry = match serde_json::to_value(&l) {
            Ok(entry) => entry,
            Err(e) => {
                failed.get_or_insert(e);
                return;
            }
        };
        entry["date"] = json!(utc.rfc3339(l.entry.at));
        let comma = if first { "" } else { "," };
        first = false;
        crate::write_stdout(format_args!("{comma}{entry}"));
    })?;
    if let Some(e) = failed {
        return Err(CliError::Failed(format!("cannot serialize the audit: {e}")));
    }
    let rest = json!({"ok": true, "session": session.to_string()}).to_string();
    println!("],{}", rest.strip_prefix('{').unwrap_or(&rest));
    Ok(())
}

/// The columns' headers as measured (the time's is named with its zone's
/// offset once the first entry's time is known).
const HEADERS: [&str; 5] = ["SEQ", "TIME", "KIND", "TOKENS", "WHAT"];

/// One entry's row.
fn audit_row(e: &AuditEntry, zone: &Zone) -> Vec<String> {
    vec![
        e.seq.to_string(),
        zone.second(e.at),
        e.kind.clone(),
        e.tokens.map_or("-".into(), |t| t.to_string()),
        e.what.clone(),
    ]
}

/// The audit trail as a table.
pub(crate) fn print_audit(entries: &[AuditEntry], zone: &Zone) {
    let rows: Vec<Vec<String>> = entries.iter().map(|e| audit_row(e, zone)).collect();
    if !entries.is_empty() {
        let time = format!("TIME ({})", zone.offsets_of(entries.iter().map(|e| e.at)));
        ui::table(&["SEQ", &time, "KIND", "TOKENS", "WHAT"], &rows);
    }
}
