//! Which store a command works on: `--db`, `$CTXLOG_DB`, else the user's
//! data directory.

use ctxlog_app::logs::Location;
use std::path::PathBuf;

/// The store when neither `--db` nor `$CTXLOG_DB` names one: the user's
/// data directory (`$XDG_DATA_HOME/ctxlog`, else `~/.local/share/ctxlog`,
/// as the XDG base directory specification has it), the same from any
/// directory; `./ctxlog-data` only when there is no home.
pub(crate) fn default_store() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).map(PathBuf::from);
    var("XDG_DATA_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| {
            var("HOME")
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".local/share"))
        })
        .map_or_else(|| PathBuf::from("ctxlog-data"), |d| d.join("ctxlog"))
}

/// Parses `--db` (a directory, or a PostgreSQL URL whose password is never
/// shown).
#[derive(Clone)]
pub(crate) struct LocationParser;

impl clap::builder::TypedValueParser for LocationParser {
    type Value = Location;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Location, clap::Error> {
        Location::parse(value).map_err(|e| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("--db: {e}\n"),
            )
            .with_cmd(cmd)
        })
    }
}
