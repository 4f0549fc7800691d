//! `recall`: one item given back whole, as recorded (a part, a message, a
//! pruned tool output), or everything one compaction replaced with the
//! summary beside it.

use crate::search::{indexed, label_words, writer_words, Indexed};
use crate::{ui, Cli, CliError};
use ctxlog_app::history;
use ctxlog_core::{PartBody, SessionId};
use ctxlog_search::{Recalled, RecalledMessage, RecalledPart, Replaced, SearchError, Which};
use serde_json::json;

/// `recall`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct RecallArgs {
    /// What to give back: a ctxlog part or message id, a tool call id, or
    /// the agent's own message or part id; with `--compaction`, the
    /// session.
    pub id: String,
    /// Only in this session.
    #[arg(long, add = crate::completion::sessions())]
    pub session: Option<String>,
    /// Everything one compaction of the session replaced: `last`, `-2`
    /// (the one before), or any seq of its events (as `search` and `audit`
    /// show them).
    #[arg(long, value_name = "SEQ|last|-N", allow_hyphen_values = true)]
    pub compaction: Option<String>,
}

/// `recall`.
pub(crate) fn recall(cli: &Cli, a: &RecallArgs) -> Result<(), CliError> {
    let Indexed { store, index, .. } = indexed(cli)?;
    let failed = |e: SearchError| match e {
        e @ SearchError::NotFound(_) => CliError::BadInput(format!("{e} in {}", cli.db)),
        e => CliError::Failed(e.to_string()),
    };
    if let Some(which) = &a.compaction {
        let session = crate::store::resolve_session(&store, &cli.db, &a.id)?;
        let which = parse_which(which)?;
        let Some(r) = ctxlog_search::replaced(&index, &store, session, which).map_err(failed)?
        else {
            let n = ctxlog_search::compactions(&index, session)
                .map_err(failed)?
                .len();
            return Err(CliError::BadInput(format!(
                "session {session} has no such compaction ({}); `ctxlog audit {session}` lists them",
                ui::counted(n, "compaction")
            )));
        };
        let labels = history::labels(&store, [session]);
        if cli.json {
            println!(
                "{}",
                json!({ "ok": true, "compaction": r, "label": labels.get(&session) })
            );
        } else {
            print_replaced(cli, &r, &labels);
        }
        return Ok(());
    }
    let sessions = match &a.session {
        Some(s) => Some(vec![crate::store::resolve_session(&store, &cli.db, s)?]),
        None => None,
    };
    let items =
        ctxlog_search::recall(&index, &store, &a.id, sessions.as_deref()).map_err(failed)?;
    let labels = history::labels(
        &store,
        items.iter().map(|i| match i {
            Recalled::Part(p) => p.session,
            Recalled::Message(m) => m.session,
        }),
    );
    if cli.json {
        let labelled: Vec<_> = items
            .iter()
            .map(|i| {
                let mut v = serde_json::to_value(i).unwrap_or_default();
                let s = match i {
                    Recalled::Part(p) => p.session,
                    Recalled::Message(m) => m.session,
                };
                v["label"] = serde_json::to_value(labels.get(&s)).unwrap_or_default();
                v
            })
            .collect();
        println!("{}", json!({ "ok": true, "items": labelled }));
        return Ok(());
    }
    let zone = cli.zone();
    let (first, others) = items
        .split_first()
        .ok_or_else(|| failed(SearchError::NotFound(a.id.clone())))?;
    match first {
        Recalled::Part(p) => print_part(&zone, p, &labels, true),
        Recalled::Message(m) => print_message(&zone, m, &labels, true),
    }
    if !others.is_empty() {
        println!();
        println!(
            "{} more with this id (the newest is shown); --session or --json tells them apart",
            others.len()
        );
    }
    Ok(())
}

/// `--compaction`'s value.
fn parse_which(text: &str) -> Result<Which, CliError> {
    let bad = || {
        CliError::BadInput(format!(
            "--compaction {text:?}: give `last`, `-N` (the N-th from the last) or a seq"
        ))
    };
    match text {
        "last" => Ok(Which::FromLast(1)),
        t if t.starts_with('-') => t[1..]
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .map(Which::FromLast)
            .ok_or_else(bad),
        t => t.parse().map(Which::At).map_err(|_| bad()),
    }
}

type Labels = std::collections::BTreeMap<SessionId, ctxlog_app::history::SessionLabel>;

fn print_part(zone: &ctxlog_app::dates::Zone, p: &RecalledPart, labels: &Labels, heading: bool) {
    if heading {
        ui::print_heading(&label_words(labels.get(&p.session), &p.session.to_string()));
    }
    ui::print_heading(&[
        format!("part {}", p.part),
        format!("seq {}", p.seq),
        zone.minute(p.time),
        writer_words(&p.author, p.tool.as_deref(), p.call_id.as_deref()),
        history::status_words(&p.status),
    ]);
    println!();
    print_body(&p.body);
}

/// A part's content, whole and as recorded.
fn print_body(body: &PartBody) {
    println!("{}", history::body_text(body));
}

fn print_message(
    zone: &ctxlog_app::dates::Zone,
    m: &RecalledMessage,
    labels: &Labels,
    heading: bool,
) {
    if heading {
        ui::print_heading(&label_words(labels.get(&m.session), &m.session.to_string()));
    }
    let bytes: usize = m.parts.iter().map(|p| body_bytes(&p.body)).sum();
    ui::print_heading(&[
        format!("{} message {}", m.author, m.message),
        format!("seq {}", m.seq),
        ui::size(bytes as u64),
        history::status_words(&m.status),
    ]);
    for p in &m.parts {
        println!();
        print_part(zone, p, labels, false);
    }
}

/// The bytes of a part's content.
fn body_bytes(body: &PartBody) -> usize {
    ctxlog_search::project::searchable_text(body).map_or(0, |t| t.len())
}

fn print_replaced(cli: &Cli, r: &Replaced, labels: &Labels) {
    let zone = cli.zone();
    ui::print_heading(&label_words(labels.get(&r.session), &r.session.to_string()));
    let bytes: usize = r
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(|p| body_bytes(&p.body))
        .sum();
    println!(
        "compaction {} (summary completed at seq {}) replaced {} ({}):",
        r.number,
        r.pivot.at,
        ui::counted(r.messages.len(), "message"),
        ui::size(bytes as u64)
    );
    for m in &r.messages {
        println!();
        println!("──────");
        print_message(&zone, m, labels, false);
    }
    println!();
    println!("══════ the summary that replaced them");
    match &r.summary {
        Some(s) => print_message(&zone, s, labels, false),
        None => println!("(its summary message is not in the index)"),
    }
}
