//! Naming sessions: the sessions of a log, a session's recording id, and
//! the session a text names (a ctxlog id, a recording's id, a prefix).

use super::error::CatalogError;
use super::replaced::replaced_by;
use ctxlog_core::{is_description_stream, Event, SessionId};
use ctxlog_store::{EventLog, ReadError};

/// Every session of the log with its head, in session-id order: the log's
/// streams but the description streams ([`ctxlog_core::description_stream`]).
pub fn sessions(log: &impl EventLog) -> Result<Vec<(SessionId, u64)>, ReadError> {
    let mut all = log.sessions()?;
    all.retain(|(s, _)| !is_description_stream(*s));
    Ok(all)
}

/// The recording's own id, from a session's first event.
pub fn source_of(log: &impl EventLog, session: SessionId) -> Result<Option<String>, ReadError> {
    let first = log.read(session, 1)?.next().transpose()?;
    Ok(match first.map(|e| e.event) {
        Some(Event::SessionStarted { source_id, .. }) => source_id,
        _ => None,
    })
}

/// How a session's names match a text: exactly (its source id), by a
/// prefix of its source id, or by a prefix of its ctxlog id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Match {
    Exact,
    SourcePrefix,
    IdPrefix,
}

/// How `text` names a session with ctxlog id `id` and source id `source`,
/// if it does. A prefix is at least [`MIN_PREFIX`] characters; `<prefix>@<policy>`
/// names a kept simulation by a prefix of its recording's id, and a prefix
/// without `@` never names a simulation (whose ctxlog id starts like its
/// recording's: both are UUID v7 of the recording's first time), which its
/// whole ctxlog id still does.
fn matches(text: &str, id: &str, source: Option<&str>) -> Option<Match> {
    if source == Some(text) {
        return Some(Match::Exact);
    }
    let (base, policy) = split_policy(text);
    if base.chars().count() < MIN_PREFIX {
        return None;
    }
    if let Some(source) = source {
        let (source_base, source_policy) = split_policy(source);
        if source_base.starts_with(base) && source_policy == policy {
            return Some(Match::SourcePrefix);
        }
    }
    let simulation = source.is_some_and(|s| s.contains('@'));
    (policy.is_none() && !simulation && id.starts_with(base)).then_some(Match::IdPrefix)
}

/// `<id>@<policy>` → (id, policy).
fn split_policy(name: &str) -> (&str, Option<&str>) {
    match name.split_once('@') {
        Some((base, policy)) => (base, Some(policy)),
        None => (name, None),
    }
}

/// The shortest prefix [`resolve_session`] accepts.
pub const MIN_PREFIX: usize = 4;

/// The session `text` names: a ctxlog id, or a recording's own session id
/// (`<id>@<policy>` for a simulation kept beside it), or a unique prefix of
/// either of at least [`MIN_PREFIX`] characters (`0199812e`,
/// `0199812e@codex`). An exact name wins over a source-id prefix, which
/// wins over a ctxlog-id prefix. Of the versions of one recording, the
/// newest. A kept simulation is found by its preset's alias too
/// (`…@claude-code` for `…@claude-code-2.1`, its name).
pub fn resolve_session(log: &impl EventLog, text: &str) -> Result<SessionId, CatalogError> {
    let (base, policy) = split_policy(text);
    let not_found = match resolve_named(log, text) {
        Err(CatalogError::NotFound(_)) if base.chars().count() < MIN_PREFIX => {
            CatalogError::TooShort {
                text: text.to_owned(),
                min: MIN_PREFIX,
            }
        }
        Err(CatalogError::NotFound(_)) => CatalogError::NotFound(text.to_owned()),
        found => return found,
    };
    let preset = policy.and_then(|p| {
        ctxlog_core::Policy::preset_aliases()
            .iter()
            .find(|(alias, _)| *alias == p)
            .map(|(_, preset)| *preset)
    });
    match preset {
        Some(preset) => match resolve_named(log, &format!("{base}@{preset}")) {
            Err(CatalogError::NotFound(_)) => Err(not_found),
            found => found,
        },
        None => Err(not_found),
    }
}

/// [`resolve_session`] of `text` as it is written.
pub(super) fn resolve_named(log: &impl EventLog, text: &str) -> Result<SessionId, CatalogError> {
    if let Ok(u) = uuid::Uuid::parse_str(text) {
        let s = SessionId(u);
        if !is_description_stream(s) && log.head(s)? > 0 {
            return Ok(s);
        }
    }
    let mut best: Option<Match> = None;
    let mut found: Vec<(SessionId, Option<String>)> = Vec::new();
    for (s, _) in sessions(log)? {
        let source = source_of(log, s)?;
        let Some(m) = matches(text, &s.to_string(), source.as_deref()) else {
            continue;
        };
        if best.is_some_and(|b| m > b) {
            continue;
        }
        if best.is_some_and(|b| m < b) {
            found.clear();
        }
        best = Some(m);
        found.push((s, source));
    }
    // Of the versions of one recording (all found share its source id),
    // the newest: the others were replaced by it and stay readable by
    // their ctxlog ids.
    let one_recording = found.windows(2).all(|w| w[0].1 == w[1].1);
    let mut found: Vec<SessionId> = found.into_iter().map(|(s, _)| s).collect();
    if found.len() > 1 && one_recording {
        let mut current = Vec::new();
        for s in &found {
            if replaced_by(log, *s)?.is_none() {
                current.push(*s);
            }
        }
        if !current.is_empty() {
            found = current;
        }
    }
    match found.as_slice() {
        [s] => Ok(*s),
        [] => Err(CatalogError::NotFound(text.to_owned())),
        _ => Err(CatalogError::Ambiguous {
            text: text.to_owned(),
            sessions: found,
        }),
    }
}

/// The most names [`closest`] gives.
const MAX_CLOSEST: usize = 3;

/// The stored names closest to `text`, a name that names no session (a
/// mistyped id): each session's recording id (else its ctxlog id) whose
/// start is at most one character in four away from `text`, nearest first,
/// cut to `text`'s length when longer (at least 8 characters), at most
/// [`MAX_CLOSEST`].
pub fn closest(log: &impl EventLog, text: &str) -> Result<Vec<String>, ReadError> {
    let wanted: Vec<char> = text.chars().collect();
    if wanted.len() < MIN_PREFIX {
        return Ok(Vec::new());
    }
    let allowed = (wanted.len() / 4).max(1);
    let mut near: Vec<(usize, String)> = Vec::new();
    for (s, _) in sessions(log)? {
        let name = source_of(log, s)?.unwrap_or_else(|| s.to_string());
        let start: Vec<char> = name.chars().take(wanted.len()).collect();
        let distance = edit_distance(&wanted, &start);
        if distance <= allowed {
            let shown: String = name.chars().take(wanted.len().max(8)).collect();
            near.push((distance, shown));
        }
    }
    near.sort();
    near.dedup_by(|a, b| a.1 == b.1);
    Ok(near.into_iter().take(MAX_CLOSEST).map(|(_, n)| n).collect())
}

/// The Levenshtein distance between `a` and `b`.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distances() {
        let d = |a: &str, b: &str| {
            edit_distance(
                &a.chars().collect::<Vec<_>>(),
                &b.chars().collect::<Vec<_>>(),
            )
        };
        assert_eq!(d("7f1c2d3f", "7f1c2d3e"), 1);
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("abc", "abc"), 0);
    }
}
