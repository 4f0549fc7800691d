//! `copy FROM TO`: a whole store into another (`ctxlog_app::copying`).

use crate::store::{open_existing, open_store};
use crate::ui;
use crate::CliError;
use ctxlog_app::copying::{copy_log, CopyError};
use ctxlog_app::logs::Location;
use ctxlog_store::EventLog;
use serde_json::json;

pub(crate) fn copy(json: bool, from: &Location, to: &Location) -> Result<(), CliError> {
    let source = open_existing(from)?;
    let target = open_store(to)?;
    let total: u64 = source
        .sessions()
        .map_err(|e| CliError::Failed(format!("{from}: {e}")))?
        .iter()
        .map(|(_, head)| head)
        .sum();
    let bar = ui::progress(json, total, 10_000, "copy", false);
    let done = copy_log(&source, &target, |n| bar.set_position(n)).map_err(|e| match e {
        e @ CopyError::Diverged { .. } => CliError::BadInput(format!("{to}: {e}")),
        e => CliError::Failed(format!("copy from {from} to {to}: {e}")),
    });
    bar.finish_and_clear();
    let done = done?;
    target
        .flush()
        .map_err(|e| CliError::Failed(format!("{to}: {e}")))?;
    if json {
        let mut doc = serde_json::to_value(&done).map_err(|e| CliError::Failed(e.to_string()))?;
        doc["from"] = json!(from.to_string());
        doc["to"] = json!(to.to_string());
        doc["ok"] = json!(true);
        println!("{doc}");
    } else {
        println!(
            "copied {} streams, {} events ({} appended now) from {from} to {to}; read back equal, digest {}",
            done.streams, done.events, done.appended, done.digest
        );
    }
    Ok(())
}
