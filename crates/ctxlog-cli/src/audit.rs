//! `audit`: every prune, restore, withdrawal and compaction step of a
//! session.

use crate::store::stored_session;
use crate::{ui, Cli, CliError};
use serde_json::json;

pub(crate) fn show_audit(cli: &Cli, session: &str) -> Result<(), CliError> {
    let (store, session) = stored_session(cli, session)?;
    let lines = ctxlog_app::views::audit_lines(&store, session)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    if cli.json {
        let mut doc = json!({"ok": true, "session": session.to_string(), "entries": lines});
        // Beside each `at` (ms), the same as RFC 3339.
        let utc = ctxlog_app::dates::Zone::utc();
        for e in doc["entries"].as_array_mut().into_iter().flatten() {
            if let Some(at) = e["at"].as_u64() {
                e["date"] = json!(utc.rfc3339(at));
            }
        }
        println!("{doc}");
        return Ok(());
    }
    let entries: Vec<_> = lines.into_iter().map(|l| l.entry).collect();
    print_audit(&entries, &cli.zone());
    if entries.is_empty() {
        println!("nothing was pruned or compacted in {session}");
    }
    Ok(())
}

/// The audit trail as a table.
pub(crate) fn print_audit(entries: &[ctxlog_core::AuditEntry], zone: &ctxlog_app::dates::Zone) {
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            vec![
                e.seq.to_string(),
                zone.second(e.at),
                e.kind.clone(),
                e.tokens.map_or("-".into(), |t| t.to_string()),
                e.what.clone(),
            ]
        })
        .collect();
    if let Some(first) = entries.first() {
        let time = format!("TIME ({})", zone.offset(first.at));
        ui::table(&["SEQ", &time, "KIND", "TOKENS", "WHAT"], &rows);
    }
}
