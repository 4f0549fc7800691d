//! `sessions`: the stored sessions as a table (or JSON), from
//! `ctxlog_app::sessions`.

use crate::selection::Selection;
use crate::ui::{self};
use crate::CliError;
use ctxlog_app::catalog::{self};
use ctxlog_app::dates::Zone;
use ctxlog_app::logs::Location;
use ctxlog_app::sessions::{Filter, Listed, Listing, SessionRow, SortBy};
use serde_json::json;

/// `sessions`' filters and order.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SessionsArgs {
    /// List the kept simulations (`simulate --keep`) instead of the
    /// recordings and native sessions.
    #[arg(long)]
    pub simulations: bool,
    #[command(flatten)]
    pub select: Selection,
    /// The order of the rows.
    #[arg(long, value_enum, default_value_t = SortBy::Date)]
    pub sort: SortBy,
    /// Largest first (newest first for dates).
    #[arg(long)]
    pub desc: bool,
}

/// The shortest prefix of each of `names`, at least 8 characters, that no
/// other name of `universe` (every stored session's, filtered or not)
/// starts with, as git shortens hashes; a kept simulation keeps its
/// `@policy`. `resolve_session` takes each back to its session.
fn short_names(names: &[String], universe: &[String]) -> Vec<String> {
    let base = |n: &str| n.split_once('@').map_or(n, |(b, _)| b).to_owned();
    let mut bases: Vec<String> = universe.iter().chain(names).map(|n| base(n)).collect();
    bases.sort_unstable();
    bases.dedup();
    let lcp = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    names
        .iter()
        .map(|n| {
            let b = base(n);
            // In sorted order the longest shared prefix is with a neighbour.
            let i = bases.binary_search(&b).unwrap_or(0);
            let before = i.checked_sub(1).map_or(0, |j| lcp(&b, &bases[j]));
            let after = bases.get(i + 1).map_or(0, |o| lcp(&b, o));
            let len = (before.max(after) + 1).max(8).min(b.chars().count());
            let short: String = b.chars().take(len).collect();
            match n.split_once('@') {
                Some((_, p)) => format!("{short}@{p}"),
                None => short,
            }
        })
        .collect()
}

/// `sessions`.
pub fn sessions(json: bool, zone: &Zone, db: &Location, a: &SessionsArgs) -> Result<(), CliError> {
    let (since, until) = a.select.span(zone)?;
    let filter = Filter {
        simulations: Some(a.simulations),
        agent: a.select.agent.clone(),
        project: a.select.project.clone(),
        since,
        until,
        text: None,
    };
    // A new user's store is made by the first import: until then there
    // are no sessions, which is said with what to run (a store named by
    // hand that does not exist is a mistyped path, refused below).
    let default = crate::default_store();
    if let Some(dir) = db.dir().filter(|d| !d.exists() && *d == default) {
        if json {
            println!("{}", json!({ "ok": true, "sessions": [] }));
        } else {
            println!("no sessions yet: {}", crate::store::no_store_yet(dir));
        }
        return Ok(());
    }
    let store = crate::store::open_existing(db)?;
    let listing = ctxlog_app::sessions::list(&store, &filter, a.sort, a.desc)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let unreadable = listing.unreadable();
    let outcome = if unreadable.is_empty() {
        Ok(())
    } else {
        Err(CliError::Reported(unreadable.len()))
    };
    if json {
        println!(
            "{}",
            json!({ "ok": unreadable.is_empty(), "sessions": listing.rows })
        );
        return outcome;
    }
    if listing.rows.is_empty() {
        let filtered = if filter.is_set() {
            " match the filters"
        } else {
            ""
        };
        let what = if a.simulations {
            "kept simulations"
        } else {
            "sessions"
        };
        println!("no {what} in {db}{filtered}");
        return outcome;
    }
    print_sessions(&listing, zone, a.sort);
    for u in &unreadable {
        println!("error: {u}");
    }
    for w in crate::hooks::failing_hooks(zone) {
        eprintln!("warning: {w}");
    }
    outcome
}

/// The list as a table: the shortest unique name of each session, its
/// date, agent, model and numbers, and a title that says what it is.
fn print_sessions(listing: &Listing, zone: &Zone, sort: SortBy) {
    let shown = shown_names(listing);
    let table: Vec<Vec<String>> = listing
        .rows
        .iter()
        .zip(shown)
        .map(|(r, name)| match r {
            Listed::Row(r) => session_line(name, r, zone),
            Listed::Unreadable(_) => {
                let mut line = vec![name];
                line.extend(std::iter::repeat_n(
                    "-".to_owned(),
                    SESSION_COLUMNS.len() - 2,
                ));
                line.push("UNREADABLE (below)".into());
                line
            }
        })
        .collect();
    let mut columns: Vec<ui::Column<'_>> = SESSION_COLUMNS.to_vec();
    // The column the rows are sorted by is never left out to fit.
    let sorted = match sort {
        SortBy::Agent => Some("AGENT"),
        SortBy::Peak => Some("PEAK"),
        SortBy::Steps => Some("STEPS"),
        SortBy::Title => Some("TITLE"),
        SortBy::Date | SortBy::Events => None,
    };
    for c in columns.iter_mut().filter(|c| Some(c.header) == sorted) {
        c.rank = None;
    }
    let started = listing.rows.iter().filter_map(|r| match r {
        Listed::Row(r) => Some(r.started_at),
        Listed::Unreadable(_) => None,
    });
    let date = match listing.rows.first() {
        Some(Listed::Row(_)) => format!("DATE ({})", zone.offsets_of(started)),
        _ => "DATE".to_owned(),
    };
    columns[1].header = &date;
    ui::print_table(&columns, &table, ui::terminal_width());
}

/// The name each row is shown by: the shortest unique prefix of its
/// recording's id, else of its ctxlog id.
fn shown_names(listing: &Listing) -> Vec<String> {
    let name = |r: &Listed| match r {
        Listed::Row(r) => r
            .source_session
            .clone()
            .unwrap_or_else(|| r.session.clone()),
        Listed::Unreadable(u) => u.session.clone(),
    };
    let names: Vec<String> = listing.rows.iter().map(name).collect();
    // A session without a source id is named by its ctxlog id, which must
    // not be the prefix of another session's either.
    let with_ids: Vec<String> = listing
        .all_names
        .iter()
        .chain(&listing.all_ids)
        .cloned()
        .collect();
    let by_source = short_names(&names, &listing.all_names);
    let by_id = short_names(&names, &with_ids);
    // Rows whose recording ids are the same (versions of one recording,
    // two copies compacted by hand) keep that name for the newest version,
    // which it names; the others are named by their ctxlog ids: a prefix
    // of it, or, for a copy (which no prefix names), all of it.
    let own_ids: Vec<String> = listing
        .rows
        .iter()
        .map(|r| match r {
            Listed::Row(r) => r.session.clone(),
            Listed::Unreadable(u) => u.session.clone(),
        })
        .collect();
    let by_own_id = short_names(&own_ids, &listing.all_ids);
    let mut shown_times: std::collections::BTreeMap<&str, usize> = Default::default();
    for name in &by_source {
        *shown_times.entry(name.as_str()).or_default() += 1;
    }
    let shared = |i: usize| shown_times[by_source[i].as_str()] > 1;
    listing
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| match r {
            Listed::Row(r)
                if r.source_session.is_some() && shared(i) && r.replaced_by.is_some() =>
            {
                let copy = r.source_session.as_deref().is_some_and(|s| s.contains('@'));
                if copy {
                    r.session.clone()
                } else {
                    by_own_id[i].clone()
                }
            }
            Listed::Row(r) if r.source_session.is_some() => by_source[i].clone(),
            Listed::Row(_) | Listed::Unreadable(_) => by_id[i].clone(),
        })
        .collect()
}

/// The columns of `sessions`.
const SESSION_COLUMNS: [ui::Column<'static>; 11] = [
    ui::keep("ID"),
    ui::keep("DATE"),
    ui::text("AGENT").optional(6),
    ui::text("MODEL").optional(3),
    ui::text("PROJECT").at_least(8).optional(5),
    ui::number("STEPS"),
    ui::number("PEAK").optional(4),
    ui::number("COST"),
    ui::number("COMP").optional(2),
    ui::number("PRUNE").optional(1),
    ui::text("TITLE").at_least(20),
];

/// One session's line of the table, named `id`.
fn session_line(id: String, r: &SessionRow, zone: &Zone) -> Vec<String> {
    let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let mut title = text(&r.title);
    if r.replaced_by.is_some() {
        title = format!("(replaced) {title}");
    }
    if r.interrupted {
        title = format!("(import interrupted: import it again) {title}");
    }
    if r.live {
        title = format!("(live) {title}");
    }
    if let Some((_, catalog::MANUAL)) = r.source_session.as_deref().and_then(|s| s.split_once('@'))
    {
        title = format!("(ctxlog's work on it) {title}");
    }
    vec![
        id,
        zone.minute(r.started_at),
        without_version(&text(&r.agent)).to_owned(),
        without_date(&text(&r.model)).to_owned(),
        text(&r.project),
        r.steps.to_string(),
        ui::tokens(r.peak_tokens),
        r.cost_usd.map_or("-".into(), ui::dollars),
        r.compactions.to_string(),
        r.pruned_parts.to_string(),
        title,
    ]
}

/// `claude-code-2.0.5` → `claude-code` (the version is in `--json`).
fn without_version(agent: &str) -> &str {
    match agent.rsplit_once('-') {
        Some((name, v)) if v.starts_with(|c: char| c.is_ascii_digit()) => name,
        _ => agent,
    }
}

/// `anthropic/claude-sonnet-4-5-20250929` → `claude-sonnet-4-5` (the whole
/// id is in `--json`).
fn without_date(model: &str) -> &str {
    let model = model.rsplit('/').next().unwrap_or(model);
    match model.rsplit_once('-') {
        Some((name, d)) if d.len() == 8 && d.chars().all(|c| c.is_ascii_digit()) => name,
        _ => model,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_unique_prefixes_of_eight_or_more() {
        let names: Vec<String> = [
            "0199812e-64f0-7f73",
            "0199812e-64f0-aaaa",
            "01998190-fba6",
            "01998190-fba6@codex",
            "ses_0a3f9c1e",
            "abc",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            short_names(&names, &names),
            [
                "0199812e-64f0-7",
                "0199812e-64f0-a",
                "01998190",
                "01998190@codex",
                "ses_0a3f",
                "abc"
            ]
        );
        assert_eq!(without_version("claude-code-2.0.5"), "claude-code");
        assert_eq!(without_version("pi"), "pi");
        assert_eq!(
            without_date("anthropic/claude-sonnet-4-5-20250929"),
            "claude-sonnet-4-5"
        );
        assert_eq!(without_date("gpt-5-codex"), "gpt-5-codex");
    }
}
