//! A capture: the session a hook names imported incrementally (what the
//! store holds already is not written again) and the moment recorded
//! beside it ([`ctxlog_core::Event::Captured`]).

use super::payload::{HookAgent, HookCall};
use crate::catalog::{self, CatalogError};
use crate::importing::{self, Request, VersionError};
use crate::inputs::{self, Input, InputError};
use ctxlog_core::{AgentProcess, Capture, SessionId, TimestampMs};
use ctxlog_import::discover::{Found, Layout, Places};
use ctxlog_import::ImportOptions;
use ctxlog_store::EventLog;
use thiserror::Error;

/// What a capture did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Captured {
    /// The session is stored up to `head`, `new_events` of it now, and the
    /// moment recorded.
    Stored {
        /// The stored session.
        session: SessionId,
        /// Its head.
        head: u64,
        /// Events written now (to the session and its descriptions).
        new_events: usize,
    },
    /// The agent has written no recording yet (pi writes its file after
    /// the first answer; a session's start comes before it): nothing to
    /// store, nothing recorded; a later call brings it in.
    NothingYet,
}

/// Why a capture failed.
#[derive(Debug, Error)]
pub enum CaptureError {
    /// The call names no recording to read.
    #[error("{0} names no recording (no transcript_path)")]
    NoRecording(String),
    /// The recording does not read, or the store refused it.
    #[error("{0}")]
    Refused(String),
    /// The store failed.
    #[error("{0}")]
    Store(#[from] CatalogError),
}

/// What the call names: its recording, or for OpenCode its session in
/// OpenCode's database (found at `places`).
pub fn input_of(call: &HookCall, places: &Places) -> Result<Input, CaptureError> {
    if call.agent == HookAgent::OpenCode {
        return Ok(Input::Found(Found {
            path: call
                .recording
                .clone()
                .unwrap_or_else(|| places.opencode_database()),
            format: call.agent.format(),
            layout: Layout::OpenCodeDatabase,
            session: call.session.clone(),
        }));
    }
    let path = call
        .recording
        .clone()
        .ok_or_else(|| CaptureError::NoRecording(call.hook.clone()))?;
    Ok(Input::Found(Found {
        path,
        format: call.agent.format(),
        layout: Layout::File,
        session: None,
    }))
}

/// Imports the session `call` names into `log` and records the moment,
/// at `at`, with the agent's `process`.
pub fn capture(
    log: &impl EventLog,
    call: &HookCall,
    places: &Places,
    process: Option<AgentProcess>,
    at: TimestampMs,
) -> Result<Captured, CaptureError> {
    let input = input_of(call, places)?;
    let request = Request {
        format: Some(call.agent.format()),
        options: ImportOptions::default(),
        replace: false,
    };
    let imported = match inputs::read(&input, request.format, &request.options, &()) {
        Ok(Some(imported)) => imported,
        Ok(None) => return Ok(Captured::NothingYet),
        Err(InputError::Open { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Captured::NothingYet)
        }
        Err(e) => return Err(CaptureError::Refused(e.to_string())),
    };
    let stored = match importing::store_input(log, &input, imported, &request) {
        Ok(v) => v,
        Err(VersionError::Catalog(e)) => return Err(CaptureError::Store(e)),
        Err(e) => return Err(CaptureError::Refused(format!("{}: {e}", input.name()))),
    };
    let session = stored.imported.session;
    let head = log.head(session).map_err(CatalogError::from)?;
    let capture = Capture {
        agent: call.agent.name().to_owned(),
        hook: call.hook.clone(),
        moment: call.moment,
        trigger: call.trigger.clone(),
        head,
        process,
    };
    catalog::record_capture(log, session, capture, at)?;
    Ok(Captured::Stored {
        session,
        head,
        new_events: stored.stored.new_events,
    })
}
