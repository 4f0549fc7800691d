//! Shell completion: `ctxlog completions SHELL` prints a script that asks
//! ctxlog itself what completes the word at the cursor (clap's
//! `COMPLETE=SHELL ctxlog -- WORDS…` protocol), so that stored sessions and
//! preset names complete as commands and options do.

use crate::Cli;
use clap::CommandFactory;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::EnvCompleter;
use ctxlog_app::logs::{AnyLog, Location};
use ctxlog_sled::SharedStore;

/// The variable the completion script sets when it asks.
const VAR: &str = "COMPLETE";

/// When the shell asks what completes a word (`COMPLETE` set), answers and
/// exits; otherwise returns.
pub(crate) fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(VAR)
        .complete();
}

/// `completions SHELL`: the script that makes `shell` ask this binary.
pub(crate) fn print_script(shell: clap_complete::Shell) {
    let completer: &dyn EnvCompleter = match shell {
        clap_complete::Shell::Bash => &clap_complete::env::Bash,
        clap_complete::Shell::Zsh => &clap_complete::env::Zsh,
        clap_complete::Shell::Fish => &clap_complete::env::Fish,
        clap_complete::Shell::Elvish => &clap_complete::env::Elvish,
        _ => &clap_complete::env::Powershell,
    };
    // The binary that answers: this one, wherever it was run from.
    let this = std::env::current_exe()
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned))
        .unwrap_or_else(|| "ctxlog".to_owned());
    let mut out = Vec::new();
    if let Err(e) = completer.write_registration(VAR, "ctxlog", "ctxlog", &this, &mut out) {
        crate::stdout_failed(&e);
    }
    crate::write_stdout_raw(&String::from_utf8_lossy(&out));
}

/// What completes a SESSION: the names of the sessions of the store
/// `CTXLOG_DB` (else the default one) names, as `sessions` shows them in
/// full (the recording's id, else the ctxlog id; `<id>@<policy>` for a
/// kept simulation). Nothing when there is no store yet: completing never
/// makes one.
pub(crate) fn sessions() -> ArgValueCandidates {
    ArgValueCandidates::new(|| {
        session_names()
            .into_iter()
            .map(CompletionCandidate::new)
            .collect()
    })
}

fn session_names() -> Vec<String> {
    let name = std::env::var_os("CTXLOG_DB")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| crate::default_store().into_os_string());
    let log = match Location::parse(name) {
        Ok(Location::Dir(dir)) if dir.join("db").is_file() => {
            SharedStore::open(&dir).map(AnyLog::Shared).ok()
        }
        Ok(Location::Postgres(target)) => crate::store::open_postgres(&target).ok(),
        _ => None,
    };
    let Some(log) = log else {
        return Vec::new();
    };
    let mut names: Vec<String> = ctxlog_app::catalog::sessions(&log)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(s, _)| {
            let source = ctxlog_app::catalog::source_of(&log, s).ok()?;
            Some(source.unwrap_or_else(|| s.to_string()))
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// What completes a preset's name: the presets and their aliases.
pub(crate) fn presets() -> ArgValueCandidates {
    ArgValueCandidates::new(|| {
        let presets = ctxlog_core::Policy::preset_names().iter().copied();
        let aliases = ctxlog_core::Policy::preset_aliases()
            .iter()
            .map(|(alias, _)| *alias);
        presets
            .chain(aliases)
            .map(CompletionCandidate::new)
            .collect()
    })
}
