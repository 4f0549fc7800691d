//! `import --follow`: import, then keep importing what the recordings add
//! while their agents write them, until interrupted.
//!
//! Every `--interval` the inputs are listed anew (a directory's new files,
//! `--discover`'s new sessions, a database's new sessions) and each whose
//! file changed since it was last read (length or modification time; for
//! OpenCode's database, of the database and its write-ahead log) is imported
//! again as a live recording, which appends only what is new. Each append is
//! atomic and durable before the next is read, so killing the follower at
//! any moment leaves a consistent store; the next import goes on from it.
//! The store is held throughout: read commands are served by it meanwhile.

use crate::import::once::import_input;
use crate::import::once::inputs;
use crate::import::once::ImportArgs;
use crate::store::open_store;
use crate::CliError;
use ctxlog_app::importing::{InputReport, Outcome, Request};
use ctxlog_app::inputs::Stamp;
use ctxlog_app::logs::Location;
use std::collections::BTreeMap;
use std::time::Duration;

/// `import --follow`: never returns but with an error that ends it.
pub(crate) fn follow(
    json: bool,
    db: &Location,
    a: &ImportArgs,
    request: Request,
) -> Result<(), CliError> {
    if a.files.iter().any(|f| f.as_os_str() == "-") {
        return Err(CliError::BadInput(
            "--follow reads files as they grow, not standard input".into(),
        ));
    }
    let interval = Duration::from_millis(a.interval);
    // Opened at once and held: readers are served while it follows.
    let mut store = Some(open_store(db)?);
    let mut seen: BTreeMap<String, Stamp> = BTreeMap::new();
    loop {
        let mut changed = false;
        for input in inputs(a)? {
            let name = input.name();
            let now: Stamp = input.stamp();
            if seen.get(&name) == Some(&now) {
                continue;
            }
            let outcome = import_input(db, &mut store, &input, &request)?;
            report(json, &name, &outcome);
            seen.insert(name, now);
            changed = true;
        }
        // What changed is searchable before the next round.
        if let (true, Some(store)) = (changed, &store) {
            crate::search::index_after_import(json, db, store);
        }
        std::thread::sleep(interval);
    }
}

/// A line for what changed: imported, extended, replaced or refused
/// (unchanged and waiting inputs are quiet).
fn report(json: bool, name: &str, outcome: &Outcome) {
    let detail = match outcome {
        Outcome::Imported(v) => match v.replaced {
            Some(old) => format!("{} (replaces {old})", v.imported.session),
            None if v.stored.grew => {
                format!("+{} events, {}", v.stored.new_events, v.imported.session)
            }
            None => format!("{} events, {}", v.stored.events, v.imported.session),
        },
        Outcome::Refused(why) => why.clone(),
        Outcome::NothingYet => return,
    };
    let result = outcome.word();
    if result == "unchanged" {
        return;
    }
    if json {
        let report = InputReport::new(name.to_owned(), outcome);
        match serde_json::to_string(&report) {
            Ok(line) => println!("{line}"),
            Err(e) => eprintln!("ctxlog: {name}: {e}"),
        }
    } else {
        println!("{result:<9} {name}: {detail}");
    }
}
