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
use crate::import::once::How;
use crate::import::once::ImportArgs;
use crate::import::once::Outcome;
use crate::recording::Input;
use crate::store::open_store;
use crate::CliError;
use ctxlog_import::discover::Layout;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// What a file looked like when it was read: length and modification time.
type Stamp = Vec<Option<(u64, SystemTime)>>;

/// `import --follow`: never returns but with an error that ends it.
pub(crate) fn follow(json: bool, db: &Path, a: &ImportArgs, how: How) -> Result<(), CliError> {
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
        for input in inputs(a)? {
            let name = input.name();
            let now = stamp(&input);
            if seen.get(&name) == Some(&now) {
                continue;
            }
            let outcome = import_input(db, &mut store, &input, &how)?;
            report(json, &name, &outcome);
            seen.insert(name, now);
        }
        std::thread::sleep(interval);
    }
}

/// The stamps of the files `input` is read from.
fn stamp(input: &Input) -> Stamp {
    let of = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .and_then(|m| Some((m.len(), m.modified().ok()?)))
    };
    match input {
        Input::File(p) => vec![of(p)],
        Input::Stdin => vec![None],
        Input::Found(f) => match f.layout {
            Layout::File => vec![of(&f.path)],
            // Messages are files of their own, in a directory by session.
            Layout::OpenCodeStorage => {
                let messages = f
                    .path
                    .parent()
                    .and_then(Path::parent)
                    .and_then(Path::parent);
                let session = f.path.file_stem().map(|s| s.to_owned());
                let dir = messages
                    .zip(session)
                    .map(|(storage, s)| storage.join("message").join(s));
                vec![of(&f.path), dir.as_deref().and_then(of)]
            }
            Layout::OpenCodeDatabase => {
                let mut wal = f.path.clone().into_os_string();
                wal.push("-wal");
                vec![of(&f.path), of(Path::new(&wal))]
            }
        },
    }
}

/// A line for what changed: imported, extended, replaced or refused
/// (unchanged and waiting inputs are quiet).
fn report(json: bool, name: &str, outcome: &Outcome) {
    let result = outcome.result();
    if matches!(result, "unchanged" | "waiting") {
        return;
    }
    let (detail, doc) = match outcome {
        Outcome::Imported(i, stored, replaced) => (
            match replaced {
                Some(old) => format!("{} (replaces {old})", i.session),
                None if stored.grew => format!("+{} events, {}", stored.new_events, i.session),
                None => format!("{} events, {}", stored.events, i.session),
            },
            json!({
                "file": name,
                "result": result,
                "session": i.session.to_string(),
                "events": stored.events,
                "new_events": stored.new_events,
                "replaced": replaced.map(|s| s.to_string()),
            }),
        ),
        Outcome::Refused(why) => (
            why.clone(),
            json!({"file": name, "result": result, "error": why}),
        ),
        Outcome::NothingYet => return,
    };
    if json {
        println!("{doc}");
    } else {
        println!("{result:<9} {name}: {detail}");
    }
}
