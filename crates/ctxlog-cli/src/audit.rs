//! `audit`: every prune, restore, withdrawal and compaction step of a
//! session.

use crate::store::read_log;
use crate::store::stored_session;
use crate::{ui, Cli, CliError};
use serde_json::json;

pub(crate) fn show_audit(cli: &Cli, session: &str) -> Result<(), CliError> {
    let (store, session) = stored_session(cli, session)?;
    let lines = ctxlog_app::views::audit_lines(&read_log(&store, session)?);
    if cli.json {
        println!(
            "{}",
            json!({"session": session.to_string(), "entries": lines})
        );
        return Ok(());
    }
    let entries: Vec<_> = lines.into_iter().map(|l| l.entry).collect();
    print_audit(&entries);
    if entries.is_empty() {
        println!("nothing was pruned or compacted in {session}");
    }
    Ok(())
}

/// The audit trail as a table.
pub(crate) fn print_audit(entries: &[ctxlog_core::AuditEntry]) {
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            vec![
                e.seq.to_string(),
                ctxlog_import::time::format_rfc3339_ms(e.at),
                e.kind.clone(),
                e.tokens.map_or("-".into(), |t| t.to_string()),
                e.what.clone(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        ui::table(&["SEQ", "TIME", "KIND", "TOKENS", "WHAT"], &rows);
    }
}
