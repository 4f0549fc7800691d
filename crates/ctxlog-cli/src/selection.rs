//! Which sessions (and when) `sessions` and `usage` look at: the filters
//! both take, read one way.

use crate::CliError;
use ctxlog_app::dates::Zone;

/// `--agent`, `--project`, `--since`, `--until`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Selection {
    /// Only sessions whose agent contains this text (`claude`, `codex`,
    /// `opencode`, `pi`).
    #[arg(long)]
    pub agent: Option<String>,
    /// Only sessions whose directory contains this text.
    #[arg(long)]
    pub project: Option<String>,
    /// From this day or time on (`2026-11-26`, `20261126`, `today`,
    /// `yesterday`, `7d`, RFC 3339): sessions started then (`sessions`),
    /// calls made then (`usage`).
    #[arg(long)]
    pub since: Option<String>,
    /// Up to the end of this day (or to this time).
    #[arg(long)]
    pub until: Option<String>,
}

impl Selection {
    /// `--since` and `--until` in ms since the epoch, days in `zone`,
    /// relative dates from now; a date that is not one is bad input.
    pub fn span(&self, zone: &Zone) -> Result<(Option<u64>, Option<u64>), CliError> {
        let now = crate::now_ms();
        let bound = |t: &Option<String>, end: bool, flag: &str| {
            t.as_deref()
                .map(|t| zone.parse(t, end, now))
                .transpose()
                .map_err(|e| CliError::BadInput(format!("--{flag} {e}")))
        };
        Ok((
            bound(&self.since, false, "since")?,
            bound(&self.until, true, "until")?,
        ))
    }
}
