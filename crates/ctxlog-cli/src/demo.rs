//! `ctxlog demo`: the Quick start's main command. It imports the built-in
//! OpenCode fixture (a session OpenCode already pruned and compacted) into a
//! throw-away store, prints its audit trail, and simulates the same
//! recording under `opencode-1.17` with pruning switched on and small prune
//! thresholds, so both layers show on a small file.

use crate::audit::print_audit;
use crate::import::once::store_import;
use crate::recording::decoded;
use crate::simulate::print_decisions;
use crate::{temp_dir, CliError};
use ctxlog_core::{audit, Envelope, Policy, SessionState};
use ctxlog_engine::simulate::{simulate_recording, SimulateConfig};
use ctxlog_import::{Format, ImportOptions, Imported};
use ctxlog_sled::SledStore;
use ctxlog_store::EventLog;
use serde_json::json;

/// The embedded default: `fixtures/sessions/opencode/compacted-and-pruned.json`.
pub const FIXTURE: &str =
    include_str!("../../../fixtures/sessions/opencode/compacted-and-pruned.json");
const FIXTURE_NAME: &str = "fixtures/sessions/opencode/compacted-and-pruned.json";

/// `imported` stored in a fresh store for real, and read back from it.
fn stored_and_read_back(imported: &Imported) -> Result<Vec<Envelope>, CliError> {
    let failed = |what: &str, e: &dyn std::fmt::Display| CliError::Failed(format!("{what}: {e}"));
    let dir = temp_dir("demo");
    let result = (|| {
        let store = SledStore::open(&dir).map_err(|e| failed("cannot open a store", &e))?;
        store_import(&store, imported.clone())?;
        store
            .read(imported.session, 1)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| failed("cannot read the session back", &e))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Runs the demo.
pub fn run(json: bool) -> Result<(), CliError> {
    let failed = |what: &str, e: &dyn std::fmt::Display| CliError::Failed(format!("{what}: {e}"));
    let imported = ctxlog_import::import(
        FIXTURE.as_bytes(),
        FIXTURE_NAME,
        Format::OpenCode,
        &ImportOptions::default(),
    )
    .map_err(|e| failed("the embedded fixture does not import", &e))?;

    // Store it for real, then read it back: the audit comes from the log.
    let log = stored_and_read_back(&imported)?;
    let state = SessionState::replay(&log).map_err(|e| failed("replay failed", &e))?;
    let trail = audit(&log);

    let mut policy = Policy::opencode_1_17();
    policy.name = "opencode-1.17+prune".into();
    policy.prune = true;
    policy.prune_protect = 500;
    policy.prune_minimum = 200;
    let report = simulate_recording(
        &decoded(&imported.events)?,
        SimulateConfig::new(policy.clone()),
        |_| {},
    )
    .map_err(|e| failed("simulation failed", &e))?;

    if json {
        println!(
            "{}",
            json!({
                "ok": true,
                "fixture": FIXTURE_NAME,
                "import": {
                    "session": imported.session.to_string(),
                    "format": imported.format.name(),
                    "source_session": imported.source_session,
                    "messages": imported.messages,
                    "tool_calls": imported.tool_calls,
                    "steps": imported.steps,
                    "events": imported.events.len(),
                },
                "audit": trail,
                "digest": state.digest().to_string(),
                "simulation": {
                    "policy": policy.name,
                    "decisions": report.decisions,
                    "final_window_tokens": report.final_window,
                },
            })
        );
        return Ok(());
    }
    println!(
        "imported {FIXTURE_NAME}: {} messages, {} tool calls, {} steps, {} events",
        imported.messages,
        imported.tool_calls,
        imported.steps,
        imported.events.len()
    );
    println!("\naudit of what OpenCode already did (read back from the log):");
    print_audit(&trail, &ctxlog_app::dates::Zone::system());
    println!("\ndigest {}", state.digest());
    println!(
        "\nsimulated under {} (prune protect {}, minimum {}):",
        policy.name, policy.prune_protect, policy.prune_minimum
    );
    print_decisions(&report.decisions);
    println!(
        "\nnext: `ctxlog import --discover`, `ctxlog sessions`, `ctxlog timeline ID`, `ctxlog report ID --out session.html`, `ctxlog --help`"
    );
    Ok(())
}
