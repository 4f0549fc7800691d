//! `search` and `index`: every session's history searched, the index
//! brought up to the log first (in this process, or by another that is
//! doing it), each hit told with its session, its place, who wrote it, a
//! snippet and what became of it.

use crate::selection::Selection;
use crate::{ui, Cli, CliError};
use ctxlog_app::history::{self, SessionLabel};
use ctxlog_app::logs::{AnyLog, Location};
use ctxlog_app::search_index::{self, Index};
use ctxlog_app::sessions::Filter;
use ctxlog_search::{Found, Hit, Remade, SearchRequest};
use ctxlog_store::EventLog;
use serde_json::json;
use std::collections::BTreeMap;

/// `search`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct SearchArgs {
    /// What to look for: words (all of them), `"a phrase"`, `prefix*`,
    /// `-excluded`, `OR` between alternatives.
    #[arg(allow_hyphen_values = true)]
    pub query: String,
    /// Only this session (a ctxlog id, the recording's own id, or a unique
    /// prefix of either).
    #[arg(long, add = crate::completion::sessions())]
    pub session: Option<String>,
    #[command(flatten)]
    pub select: Selection,
    /// Only what the model no longer sees whole: cleared by a prune,
    /// compacted away, withdrawn.
    #[arg(long)]
    pub dropped: bool,
    /// Hits to show.
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
}

/// `index`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct IndexArgs {
    /// Make the index again from the log, whatever it holds.
    #[arg(long)]
    pub rebuild: bool,
}

/// A store opened with its index brought up to date.
pub(crate) struct Indexed {
    pub store: AnyLog,
    pub index: Index,
    /// Another process was bringing the index up to date: the newest
    /// events may be missing from it.
    pub lagging: bool,
}

/// Opens the store at `db` and its index, brought up to the log.
pub(crate) fn indexed(cli: &Cli) -> Result<Indexed, CliError> {
    let store = crate::store::open_existing(&cli.db)?;
    let index = open_index(&cli.db, &store, false)?;
    let lagging = catch_up(cli.json, &store, &index)?;
    Ok(Indexed {
        store,
        index,
        lagging,
    })
}

/// The index of the store at `db`, made anew when `rebuild`.
pub(crate) fn open_index(db: &Location, store: &AnyLog, rebuild: bool) -> Result<Index, CliError> {
    let failed = |e: ctxlog_search::SearchError| CliError::Failed(e.to_string());
    let (index, remade) = Index::open(db, store, rebuild).map_err(failed)?;
    match remade {
        Some(Remade::Damaged(why)) => eprintln!(
            "ctxlog: the search index at {} did not open ({why}); it is made again from the log",
            index.name()
        ),
        Some(Remade::OtherSchema(v)) => eprintln!(
            "ctxlog: the search index at {} was written by another version (schema {v}); it is made again from the log",
            index.name()
        ),
        Some(Remade::Missing) | None => {}
    }
    Ok(index)
}

/// Brings `index` up to `store`, showing progress when that takes long;
/// whether it lags (another process is doing it).
fn catch_up(json: bool, store: &AnyLog, index: &Index) -> Result<bool, CliError> {
    let failed = |e: ctxlog_search::SearchError| CliError::Failed(e.to_string());
    let marks = index.watermarks().map_err(failed)?;
    let sessions = store
        .sessions()
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let behind: u64 = sessions
        .iter()
        .filter(|(s, _)| !ctxlog_core::is_description_stream(*s))
        .map(|(s, head)| head.saturating_sub(marks.of(*s)))
        .sum();
    let bar = ui::progress(json, behind, 200_000, "indexing", false);
    let done = search_index::bring_up_to_date(index, store, &mut |n| bar.set_position(n));
    bar.finish_and_clear();
    match done.map_err(failed)? {
        Some(_) => Ok(false),
        None => {
            eprintln!(
                "ctxlog: another process is bringing the search index up to date; the newest events may be missing"
            );
            Ok(true)
        }
    }
}

/// Brings the index of the store at `db` up to `store` after an import
/// wrote to it, so that the next search answers at once; a failure is only
/// a warning (the index is derived, and the next search catches up).
pub(crate) fn index_after_import(json: bool, db: &Location, store: &AnyLog) {
    // Another user's store (root writing through its holder) is left to
    // its owner's next search; a PostgreSQL log's index is in it.
    if db.dir().is_some_and(|d| !search_index::owns(d)) {
        return;
    }
    let done = open_index(db, store, false).and_then(|index| catch_up(json, store, &index));
    if let Err(e) = done {
        eprintln!("ctxlog: warning: the search index was not brought up to date: {e}");
    }
}

/// `search QUERY`.
pub(crate) fn search(cli: &Cli, a: &SearchArgs) -> Result<(), CliError> {
    let (since, until) = a.select.span(&cli.zone())?;
    let Indexed {
        store,
        index,
        lagging,
    } = indexed(cli)?;
    let sessions = match &a.session {
        Some(s) => Some(vec![crate::store::resolve_session(&store, &cli.db, s)?]),
        None => {
            let filter = Filter {
                simulations: Some(false),
                agent: a.select.agent.clone(),
                project: a.select.project.clone(),
                since: None,
                until: None,
                text: None,
            };
            history::sessions_kept(&store, &filter).map_err(|e| CliError::Failed(e.to_string()))?
        }
    };
    let request = SearchRequest {
        query: a.query.clone(),
        sessions,
        since,
        until,
        dropped: a.dropped,
        limit: a.limit.max(1),
        skip: 0,
    };
    let found = ctxlog_search::search(&index, &store, &request).map_err(|e| match e {
        e @ ctxlog_search::SearchError::Query { .. } => CliError::BadInput(e.to_string()),
        e => CliError::Failed(e.to_string()),
    })?;
    let labels = history::labels(&store, found.hits.iter().map(|h| h.session));
    if cli.json {
        print_json(&a.query, &found, &labels, lagging);
    } else {
        print_hits(cli, &a.query, &found, &labels);
    }
    Ok(())
}

fn print_json(
    query: &str,
    found: &Found,
    labels: &BTreeMap<ctxlog_core::SessionId, SessionLabel>,
    lagging: bool,
) {
    let hits = history::labelled_hits(found, labels);
    println!(
        "{}",
        json!({ "ok": true, "query": query, "hits": hits, "more": found.more, "lagging": lagging })
    );
}

/// Who wrote an item: the author, and the tool and call for a tool part.
pub(crate) fn writer_words(author: &str, tool: Option<&str>, call: Option<&str>) -> String {
    match (tool, call) {
        (Some(tool), Some(call)) => format!("{author} · tool {tool} (call {call})"),
        (Some(tool), None) => format!("{author} · tool {tool}"),
        _ => author.to_owned(),
    }
}

/// A session's name in a heading: its title, agent and project.
pub(crate) fn label_words(label: Option<&SessionLabel>, session: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let Some(l) = label else {
        return vec![session.to_owned()];
    };
    parts.push(ui::cut(l.title.as_deref().unwrap_or("(untitled)"), 60));
    parts.extend(l.agent.clone());
    parts.extend(l.project.clone());
    parts.push(
        l.source_session
            .clone()
            .unwrap_or_else(|| session.to_owned()),
    );
    parts
}

fn print_hits(
    cli: &Cli,
    query: &str,
    found: &Found,
    labels: &BTreeMap<ctxlog_core::SessionId, SessionLabel>,
) {
    if found.hits.is_empty() {
        println!("nothing matches {query:?} in {}", cli.db);
        return;
    }
    let zone = cli.zone();
    let width = ui::terminal_width().unwrap_or(100).max(40);
    for (i, h) in found.hits.iter().enumerate() {
        let mut heading = label_words(labels.get(&h.session), &h.session.to_string());
        heading[0] = format!("{}. {}", i + 1, heading[0]);
        ui::print_heading(&heading);
        ui::print_heading(&[
            format!("   seq {}", h.seq),
            zone.minute(h.time),
            writer_words(&h.author, h.tool.as_deref(), h.call_id.as_deref()),
            history::status_words(&h.status),
            format!("recall {}", recall_id(h)),
        ]);
        for line in snippet_lines(h, width - 4) {
            ui_snippet_line(&line, h);
        }
        println!();
    }
    if found.more {
        println!("more hits follow: --limit {}", found.hits.len() * 2);
    }
}

/// The id `recall` takes for a hit: the call id of a tool part, else the
/// part's id.
pub(crate) fn recall_id(h: &Hit) -> String {
    h.call_id.clone().unwrap_or_else(|| h.part.to_string())
}

/// The snippet on lines of at most `width` columns, its line breaks shown
/// as `↵`.
fn snippet_lines(h: &Hit, width: usize) -> Vec<String> {
    let flat = h.snippet.trim().replace("\r\n", "\n").replace('\n', " ↵ ");
    let mut lines = ui::wrap(&flat, width);
    lines.truncate(4);
    lines
}

/// Prints a line of a snippet, indented, its matched words in bold when
/// stdout is a terminal that takes colour.
fn ui_snippet_line(line: &str, h: &Hit) {
    if !ui::color() {
        println!("    {line}");
        return;
    }
    let words: Vec<&str> = h
        .highlights
        .iter()
        .filter_map(|&(a, b)| h.snippet.get(a..b))
        .collect();
    let mut out = String::from("    ");
    let mut rest = line;
    while !rest.is_empty() {
        let next = words
            .iter()
            .filter(|w| !w.is_empty())
            .filter_map(|w| rest.find(*w).map(|at| (at, w.len())))
            .min();
        match next {
            Some((at, len)) => {
                out.push_str(&crate::output::inert(&rest[..at], false));
                out.push_str("\x1b[1m");
                out.push_str(&crate::output::inert(&rest[at..at + len], false));
                out.push_str("\x1b[0m");
                rest = &rest[at + len..];
            }
            None => {
                out.push_str(&crate::output::inert(rest, false));
                rest = "";
            }
        }
    }
    out.push('\n');
    crate::write_stdout_raw(&out);
}

/// `index`: brings the index up to the log (or makes it again) and says
/// what it holds.
pub(crate) fn index(cli: &Cli, a: &IndexArgs) -> Result<(), CliError> {
    let store = crate::store::open_existing(&cli.db)?;
    let index = open_index(&cli.db, &store, a.rebuild)?;
    let started = std::time::Instant::now();
    let lagging = catch_up(cli.json, &store, &index)?;
    let failed = |e: ctxlog_search::SearchError| CliError::Failed(e.to_string());
    let marks = index.watermarks().map_err(failed)?;
    let events: u64 = marks.sessions.values().sum();
    let index_bytes = index.disk_bytes().map_err(failed)?;
    // A PostgreSQL log's size is the database's business.
    let log_bytes = cli
        .db
        .dir()
        .map(|d| ctxlog_search::bytes_under(d).saturating_sub(index_bytes));
    if cli.json {
        println!(
            "{}",
            json!({ "ok": true, "sessions": marks.sessions.len(), "events": events,
                    "index_bytes": index_bytes, "log_bytes": log_bytes, "lagging": lagging,
                    "rebuilt": a.rebuild, "seconds": started.elapsed().as_secs_f64() })
        );
    } else {
        let beside = log_bytes.map_or_else(String::new, |b| {
            format!(" beside the log's {}", ui::size(b))
        });
        println!(
            "{}: {} and {} events indexed; the index takes {}{beside}",
            index.name(),
            ui::counted(marks.sessions.len(), "session"),
            ui::grouped(events),
            ui::size(index_bytes),
        );
    }
    Ok(())
}
