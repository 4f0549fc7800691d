//! A stored session run again under another policy, in memory, and kept
//! in the store beside its recording when asked. A kept simulation is
//! named `<source>@<policy>` ([`ctxlog_engine::simulate::kept_name`]): the
//! one place that name is made is where its ids are seeded.

use crate::catalog::{self, CatalogError};
use ctxlog_core::{Envelope, EventPack};
use ctxlog_engine::simulate::{simulate_recording, SimulateConfig, SimulationReport};
use ctxlog_engine::EngineError;
use ctxlog_store::EventLog;
use thiserror::Error;

/// Why a simulation was not run or not kept.
#[derive(Debug, Error)]
pub enum SimulationError {
    /// The simulation failed.
    #[error("simulation under {policy} failed: {source}")]
    Failed {
        /// The policy.
        policy: String,
        /// Why.
        source: Box<EngineError>,
    },
    /// The simulated session is empty (nothing to keep).
    #[error("keeping {0}: the simulation is empty")]
    Empty(String),
    /// It could not be encoded or stored.
    #[error("keeping {name}: {source}")]
    NotKept {
        /// The kept name.
        name: String,
        /// Why.
        source: Box<CatalogError>,
    },
}

/// Runs `recording` (a stored session's events, seq 1 first) under
/// `config`; `progress` is told how many events were fed.
pub fn run(
    recording: &[Envelope],
    config: SimulateConfig,
    progress: impl FnMut(usize),
) -> Result<SimulationReport, SimulationError> {
    let policy = config.policy.name.clone();
    simulate_recording(recording, config, progress).map_err(|source| SimulationError::Failed {
        policy,
        source: Box::new(source),
    })
}

/// Keeps a simulation made with [`SimulateConfig::keepable`] in `log`,
/// under the name it carries; a simulation kept before under that name
/// (of another build of the recording, or other limits) is marked
/// replaced by this one. Keeping the same simulation again stores
/// nothing. Returns the name.
pub fn keep(log: &impl EventLog, report: &SimulationReport) -> Result<String, SimulationError> {
    let name = report.kept_name().unwrap_or_default().to_owned();
    let not_kept = |source| SimulationError::NotKept {
        name: name.clone(),
        source: Box::new(source),
    };
    let new = report
        .log
        .first()
        .map(|e| e.session)
        .ok_or_else(|| SimulationError::Empty(name.clone()))?;
    let before = match catalog::resolve_session(log, &name) {
        Ok(s) => Some(s),
        Err(CatalogError::NotFound(_) | CatalogError::TooShort { .. }) => None,
        Err(e) => return Err(not_kept(e)),
    };
    let pack = EventPack::try_from(report.log.as_slice())
        .map_err(|e| not_kept(CatalogError::Unreadable(e.to_string())))?;
    catalog::store_recording(log, pack).map_err(not_kept)?;
    if let Some(old) = before.filter(|old| *old != new) {
        catalog::mark_replaced(log, old, new).map_err(not_kept)?;
    }
    Ok(name)
}
