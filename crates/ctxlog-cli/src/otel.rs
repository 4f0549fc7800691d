//! `otel export`: sessions as OpenTelemetry GenAI traces (`ctxlog-otel`),
//! to an OTLP/HTTP endpoint or an OTLP JSON file, once or live; this file
//! only reads the arguments and the standard `OTEL_*` variables and says
//! what was sent.

use crate::{Cli, CliError};
use ctxlog_otel::{Content, Endpoint, Patience, Sender};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// `otel`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct OtelArgs {
    #[command(subcommand)]
    pub action: OtelAction,
}

/// What `otel` does.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum OtelAction {
    /// Send sessions as traces: one trace per session (its id the
    /// session's), an `invoke_agent` span per turn, a `chat` span per model
    /// call (the summarizer's too) with its model, tokens and finish
    /// reason, an `execute_tool` span per tool call, and each compaction
    /// and prune as a `ctxlog.*` event of its turn. The same session
    /// exported twice gives the same spans.
    #[command(
        after_help = "Example:\n  ctxlog otel export --endpoint http://localhost:6006/v1/traces\n  ctxlog otel export --since 7d --file traces.jsonl\n  OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 ctxlog otel export --follow"
    )]
    Export(ExportArgs),
}

/// `otel export`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct ExportArgs {
    /// The sessions (a ctxlog id, a recording's id, or a prefix of
    /// either); none: every session but simulations and copies.
    pub sessions: Vec<String>,
    /// Instead of naming sessions: those with events from this day or
    /// time on (`7d`, `2026-11-26`, `today`, RFC 3339).
    #[arg(long, conflicts_with = "sessions")]
    pub since: Option<String>,
    /// The full traces URL (as OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); else
    /// that variable, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, else
    /// http://localhost:4318/v1/traces.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Write OTLP JSON here instead (one request per line, what a
    /// collector's otlpjsonfile receiver reads; `-`: standard output).
    #[arg(long, conflicts_with_all = ["endpoint", "follow"])]
    pub file: Option<PathBuf>,
    /// Send message texts, tool arguments and results too (the
    /// conventions' opt-in), with recorded secrets replaced by markers.
    #[arg(long)]
    pub content: bool,
    /// With --content: texts as recorded, secrets included.
    #[arg(long, requires = "content")]
    pub no_redact: bool,
    /// Keep going: send each new step as it is stored, until stopped.
    #[arg(long)]
    pub follow: bool,
    /// With --follow: a session quiet this many seconds has its turn sent.
    #[arg(long, default_value_t = 30, requires = "follow")]
    pub idle: u64,
    /// How many seconds to keep retrying a batch the endpoint does not
    /// take (--follow retries for as long as it runs).
    #[arg(long, default_value_t = 120)]
    pub retry_for: u64,
}

/// `otel`.
pub(crate) fn otel(cli: &Cli, a: &OtelArgs) -> Result<(), CliError> {
    match &a.action {
        OtelAction::Export(e) => export(cli, e),
    }
}

fn export(cli: &Cli, a: &ExportArgs) -> Result<(), CliError> {
    let content = match (a.content, a.no_redact) {
        (false, _) => Content::Off,
        (true, false) => Content::Redacted,
        (true, true) => Content::Verbatim,
    };
    let vars = |name: &str| std::env::var(name).ok();
    let since = match &a.since {
        Some(t) => Some(
            cli.zone()
                .parse(t, false, crate::now_ms())
                .map_err(|e| CliError::BadInput(format!("--since {e}")))?,
        ),
        None => None,
    };
    let endpoint = match &a.file {
        Some(_) => None,
        None => Some(
            Endpoint::from_env(a.endpoint.as_deref(), &vars)
                .map_err(|e| CliError::BadInput(e.to_string()))?,
        ),
    };
    let store = crate::store::open_existing_scanning(&cli.db)?;
    let mut sessions = Vec::new();
    for s in &a.sessions {
        sessions.push(crate::store::resolve_session(&store, &cli.db, s)?);
    }
    let resource = ctxlog_otel::endpoint::resource(&vars);
    let job = Exporting {
        store: &store,
        content,
        resource,
    };
    match endpoint {
        Some(endpoint) if a.follow => {
            let options = ctxlog_otel::follow::FollowOptions {
                content,
                idle: Duration::from_secs(a.idle),
                poll: Duration::from_millis(500),
                queue: 64,
                sessions: (!sessions.is_empty()).then_some(sessions),
                since,
            };
            follow(cli, job, endpoint, &options)
        }
        _ => {
            if sessions.is_empty() {
                sessions = ctxlog_otel::exportable(&store, since).map_err(failed)?;
            }
            once(a, job, endpoint, &sessions)
        }
    }
}

/// What every export of this run shares.
struct Exporting<'a> {
    store: &'a ctxlog_app::logs::AnyLog,
    content: Content,
    resource: Vec<(String, String)>,
}

fn failed(e: ctxlog_otel::ExportError) -> CliError {
    CliError::Failed(e.to_string())
}

/// `--follow`: until stopped.
fn follow(
    cli: &Cli,
    job: Exporting,
    endpoint: Endpoint,
    options: &ctxlog_otel::follow::FollowOptions,
) -> Result<(), CliError> {
    eprintln!("ctxlog otel: following {} → {}", cli.db, endpoint.url);
    let note: Arc<dyn Fn(&str) + Send + Sync> = Arc::new(|m: &str| {
        let _ = writeln!(std::io::stderr(), "ctxlog otel: {m}");
    });
    let sender = Sender::new(endpoint);
    ctxlog_otel::follow::follow(job.store, options, sender, job.resource, note).map_err(failed)
}

/// The sessions once, to the file or the endpoint; says what was sent.
fn once(
    a: &ExportArgs,
    job: Exporting,
    endpoint: Option<Endpoint>,
    sessions: &[ctxlog_core::SessionId],
) -> Result<(), CliError> {
    let bar = crate::ui::progress(false, sessions.len() as u64, 2, "exporting", false);
    let mut tick = |_| bar.inc(1);
    let (exported, to) = match (&a.file, endpoint) {
        (Some(path), _) => {
            let mut sink = file_sink(path)?;
            let mut batcher = ctxlog_otel::Batcher::new(job.resource, &mut sink);
            match ctxlog_otel::export(job.store, sessions, job.content, &mut batcher, &mut tick) {
                // Its reader closed standard output: it has what it wanted.
                Err(e) if e.is_closed_output() => {
                    bar.finish_and_clear();
                    return Ok(());
                }
                other => other.map_err(failed)?,
            }
            (batcher.exported, path.display().to_string())
        }
        (None, Some(endpoint)) => {
            let url = endpoint.url.clone();
            let mut note = |m: &str| bar.suspend(|| eprintln!("ctxlog otel: {m}"));
            let mut sink = ctxlog_otel::HttpSink {
                sender: Sender::new(endpoint),
                patience: Patience {
                    give_up_ms: Some(a.retry_for.saturating_mul(1000)),
                    ..Patience::default()
                },
                note: &mut note,
                rejected: 0,
            };
            let mut batcher = ctxlog_otel::Batcher::new(job.resource, &mut sink);
            ctxlog_otel::export(job.store, sessions, job.content, &mut batcher, &mut tick)
                .map_err(failed)?;
            let mut exported = batcher.exported;
            exported.rejected = sink.rejected;
            (exported, url)
        }
        (None, None) => return Err(CliError::BadInput("no endpoint and no --file".into())),
    };
    bar.finish_and_clear();
    let rejected = match exported.rejected {
        0 => String::new(),
        n => format!(", {n} rejected"),
    };
    eprintln!(
        "ctxlog otel: {} ({} spans{rejected}) in {} to {to}",
        crate::ui::counted(exported.sessions as usize, "session"),
        exported.spans,
        crate::ui::counted(exported.requests as usize, "request"),
    );
    Ok(())
}

/// What a hook's detached import sends once it stored `session` up to
/// `head` (`ends`: the session ended): the spans made final since the
/// session's previous capture, to the endpoint the standard variables
/// name, retried for at most 30 s; what it did, for the hooks' log.
pub(crate) fn after_capture(
    log: &ctxlog_app::logs::AnyLog,
    session: ctxlog_core::SessionId,
    head: u64,
    ends: bool,
) -> String {
    let vars = |name: &str| std::env::var(name).ok();
    let endpoint = match Endpoint::from_env(None, &vars) {
        Ok(e) => e,
        Err(e) => return format!("not sent: {e}"),
    };
    // How far the calls before saw: the furthest head another capture
    // recorded up to this one's (hooks run detached and may overlap, so
    // the captures are not in head order; this call's own is one of those
    // at `head`).
    let since = match ctxlog_app::catalog::captures(log, session) {
        Ok(all) => {
            let mut heads: Vec<u64> = all.iter().map(|(_, c)| c.head).collect();
            if let Some(own) = heads.iter().rposition(|h| *h == head) {
                heads.remove(own);
            }
            heads.into_iter().filter(|h| *h <= head).max().unwrap_or(0)
        }
        Err(e) => return format!("not sent: {e}"),
    };
    let url = endpoint.url.clone();
    let mut note = |_: &str| {};
    let mut sink = ctxlog_otel::HttpSink {
        sender: Sender::new(endpoint),
        patience: Patience {
            give_up_ms: Some(30_000),
            ..Patience::default()
        },
        note: &mut note,
        rejected: 0,
    };
    let resource = ctxlog_otel::endpoint::resource(&vars);
    let mut batcher = ctxlog_otel::Batcher::new(resource, &mut sink);
    let sent =
        ctxlog_otel::hooked::send_new(log, session, since, head, ends, Content::Off, &mut batcher);
    let spans = crate::ui::counted(batcher.exported.spans as usize, "span");
    let rejected = match sink.rejected {
        0 => String::new(),
        n => format!(" ({n} rejected)"),
    };
    match sent {
        Ok(()) => format!("sent {spans} to {url}{rejected}"),
        Err(e) => format!("sent {spans}{rejected}, then failed: {e}"),
    }
}

/// The OTLP JSON file (`-`: standard output), made readable by its owner
/// only: it holds what the sessions did.
fn file_sink(path: &PathBuf) -> Result<ctxlog_otel::FileSink<Box<dyn Write>>, CliError> {
    let out: Box<dyn Write> = if path.as_os_str() == "-" {
        Box::new(std::io::BufWriter::new(std::io::stdout()))
    } else {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| CliError::BadInput(format!("--file {}: {e}", path.display())))?;
        // A file that was there keeps its mode when opened: made private
        // before anything is written to it (a device such as /dev/null is
        // left as it is).
        if file.metadata().is_ok_and(|m| m.is_file()) {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|e| CliError::BadInput(format!("--file {}: {e}", path.display())))?;
        }
        Box::new(std::io::BufWriter::new(file))
    };
    Ok(ctxlog_otel::FileSink {
        out,
        path: path.display().to_string(),
    })
}
