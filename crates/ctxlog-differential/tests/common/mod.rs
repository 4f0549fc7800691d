//! Checks shared by the differential tests of the JSONL agents.

use ctxlog_core::Envelope;
use ctxlog_import::{import, Format, ImportOptions};
use std::path::Path;

/// What happened: the events that do not describe the session.
fn happened(events: Vec<Envelope>) -> Vec<Envelope> {
    events
        .into_iter()
        .filter(|e| !e.event.is_description())
        .collect()
}

/// The recording the agent wrote, imported `live` at every line end while
/// it grew, gives a prefix of what the whole file gives: an import made
/// while the agent is still writing never stores what a later one
/// contradicts. Returns how many prefixes were imported.
pub fn check_every_prefix(path: &Path, format: Format) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let name = path.display().to_string();
    let whole = import(&bytes[..], &name, format, &ImportOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let whole = happened(whole.events.to_vec().unwrap());
    let live = ImportOptions {
        live: true,
        ..ImportOptions::default()
    };
    let mut imported = 0;
    for (cut, _) in bytes.iter().enumerate().filter(|(_, b)| **b == b'\n') {
        let part = match import(&bytes[..=cut], &name, format, &live) {
            Err(e) if e.holds_no_session() => continue,
            Err(e) => panic!("{name} cut after byte {cut}: refused: {e}"),
            Ok(a) => happened(a.events.to_vec().unwrap()),
        };
        assert!(
            part.len() <= whole.len() && part[..] == whole[..part.len()],
            "{name} cut after byte {cut}: its {} events are not a prefix of the whole file's",
            part.len()
        );
        imported += 1;
    }
    imported
}
