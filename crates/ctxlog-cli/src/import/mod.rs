//! `import`: recordings into the store, once or following them as they
//! grow.
//!
//! Files:
//! - `follow.rs`: `import --follow`.
//! - `once.rs`: Importing recordings once.

pub(crate) mod follow;
pub(crate) mod once;

pub(crate) use once::*;

use crate::import::once::import_many;
use crate::import::once::import_one;
use crate::recording::preset;
use crate::recording::Input;
use crate::CliError;
use ctxlog_app::logs::Location;
use ctxlog_import::ImportOptions;

/// `import FILE…`: one file as before; several, a directory, standard
/// input or `--discover`, each on its own with a summary table.
pub fn import(json: bool, db: &Location, a: &ImportArgs) -> Result<(), CliError> {
    let policy = a.policy.as_deref();
    let options = ImportOptions {
        policy: preset(policy.unwrap_or(ctxlog_core::policy::PRESET_OPENCODE_SEED))?,
        detect_policy: policy.is_none(),
        limits: a.limits.overrides(),
        max_line_bytes: a.max_line_bytes,
        version: 0,
    };
    let inputs = inputs(a)?;
    let request = ctxlog_app::importing::Request {
        format: a.format.format(),
        options,
        replace: a.replace,
    };
    if a.follow {
        return crate::import::follow::follow(json, db, a, request);
    }
    match inputs.as_slice() {
        [Input::File(file)] if !a.discover && a.files.len() == 1 && !a.files[0].is_dir() => {
            import_one(json, db, file, &request)
        }
        _ => import_many(json, db, &inputs, &request, a.discover),
    }
}
