//! The export use case: the sessions asked for (or all of them), each
//! read as a stream and folded into spans, sent in batches to a sink (an
//! OTLP/HTTP endpoint, an OTLP JSON file). Memory holds one batch and what
//! each fold keeps open, whatever a session's length.

use crate::content::Content;
use crate::fold::TraceFold;
use crate::model::Span;
use crate::otlp;
use crate::send::{Delivered, Patience, SendError, Sender};
use crate::turn::Speaker;
use ctxlog_app::catalog::{self, CatalogError};
use ctxlog_app::usage::without_version;
use ctxlog_core::{description_stream, Event, SessionId};
use ctxlog_store::{EventLog, ReadError};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use std::io::Write;

/// The most spans one request carries.
pub const BATCH_SPANS: usize = 1000;

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The log could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The catalog could not be read.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The endpoint did not take a batch.
    #[error(transparent)]
    Send(#[from] SendError),
    /// The live export's sending thread stopped.
    #[error("the thread sending spans stopped")]
    SenderGone,
    /// The file could not be written.
    #[error("cannot write {path}: {error}")]
    Write {
        /// The file.
        path: String,
        /// What went wrong.
        error: std::io::Error,
    },
}

impl ExportError {
    /// The output was closed by its reader (`--file -` piped into `head`):
    /// not a failure of the export.
    pub fn is_closed_output(&self) -> bool {
        matches!(self, ExportError::Write { error, .. } if error.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// Where requests go.
pub trait Sink {
    /// Takes one request of `spans` spans.
    fn put(&mut self, request: &ExportTraceServiceRequest, spans: usize)
        -> Result<(), ExportError>;
}

/// What an export did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exported {
    /// Sessions exported.
    pub sessions: u64,
    /// Spans sent.
    pub spans: u64,
    /// Requests sent.
    pub requests: u64,
    /// Spans the endpoint said it rejected.
    pub rejected: i64,
}

/// An OTLP/HTTP endpoint as a sink.
pub struct HttpSink<'a> {
    /// The sender.
    pub sender: Sender,
    /// How long a batch is retried.
    pub patience: Patience,
    /// Hears of retries and partial successes.
    pub note: &'a mut dyn FnMut(&str),
    /// Spans rejected so far (partial successes).
    pub rejected: i64,
}

impl Sink for HttpSink<'_> {
    fn put(
        &mut self,
        request: &ExportTraceServiceRequest,
        spans: usize,
    ) -> Result<(), ExportError> {
        let Delivered {
            rejected, message, ..
        } = self.sender.send(request, self.patience, self.note)?;
        if rejected > 0 {
            (self.note)(&format!(
                "{}: {rejected} of {spans} spans rejected: {message}",
                self.sender.url()
            ));
            self.rejected += rejected;
        }
        Ok(())
    }
}

/// An OTLP JSON file (one request per line, what a collector's
/// `otlpjsonfile` receiver reads) as a sink.
pub struct FileSink<W: Write> {
    /// Where lines go.
    pub out: W,
    /// Its name, for errors.
    pub path: String,
}

impl<W: Write> Sink for FileSink<W> {
    fn put(&mut self, request: &ExportTraceServiceRequest, _: usize) -> Result<(), ExportError> {
        let line = otlp::json_line(request).map_err(|e| ExportError::Write {
            path: self.path.clone(),
            error: std::io::Error::other(e),
        })?;
        writeln!(self.out, "{line}")
            .and_then(|()| self.out.flush())
            .map_err(|error| ExportError::Write {
                path: self.path.clone(),
                error,
            })
    }
}

/// Spans gathered into requests of at most [`BATCH_SPANS`].
pub struct Batcher<'a> {
    resource: Vec<(String, String)>,
    spans: Vec<Span>,
    sink: &'a mut dyn Sink,
    /// What was sent so far.
    pub exported: Exported,
}

impl<'a> Batcher<'a> {
    /// Batches for `sink`, from `resource`.
    pub fn new(resource: Vec<(String, String)>, sink: &'a mut dyn Sink) -> Batcher<'a> {
        Batcher {
            resource,
            spans: Vec::new(),
            sink,
            exported: Exported::default(),
        }
    }

    /// Adds spans; full batches go out.
    pub fn add(&mut self, spans: Vec<Span>) -> Result<(), ExportError> {
        self.spans.extend(spans);
        while self.spans.len() >= BATCH_SPANS {
            let rest = self.spans.split_off(BATCH_SPANS);
            let batch = std::mem::replace(&mut self.spans, rest);
            self.put(batch)?;
        }
        Ok(())
    }

    /// Sends what is gathered.
    pub fn flush(&mut self) -> Result<(), ExportError> {
        let batch = std::mem::take(&mut self.spans);
        if batch.is_empty() {
            return Ok(());
        }
        self.put(batch)
    }

    fn put(&mut self, batch: Vec<Span>) -> Result<(), ExportError> {
        let n = batch.len();
        let request = otlp::request(&self.resource, batch);
        self.sink.put(&request, n)?;
        self.exported.spans += n as u64;
        self.exported.requests += 1;
        Ok(())
    }
}

/// Who speaks in `session`'s spans: its recording's agent (from its
/// description stream) and ids.
pub fn speaker_of(log: &impl EventLog, session: SessionId) -> Result<Speaker, ReadError> {
    let mut agent = None;
    for e in log.read(description_stream(session), 1)? {
        if let Event::SessionDescribed { about } = e?.event {
            if about.agent.is_some() {
                agent = about.agent;
            }
        }
    }
    let (name, version) = match agent.as_deref() {
        Some(a) => {
            let name = without_version(a);
            let version = a.strip_prefix(name).map(|v| v.trim_start_matches('-'));
            (
                Some(name.to_owned()),
                version.filter(|v| !v.is_empty()).map(str::to_owned),
            )
        }
        None => (None, None),
    };
    Ok(Speaker {
        session: session.to_string(),
        conversation: session.to_string(),
        agent: name,
        version,
    })
}

/// The sessions an export without names takes: every session but those
/// ctxlog derived (kept simulations, `@manual` copies: their calls were
/// never made) and versions of a recording a newer one replaced, whose
/// last event is at or after `since` (ms).
pub fn exportable(log: &impl EventLog, since: Option<u64>) -> Result<Vec<SessionId>, ExportError> {
    let mut out = Vec::new();
    for (session, head) in catalog::sessions(log)? {
        if exportable_one(log, session, head, since)? {
            out.push(session);
        }
    }
    Ok(out)
}

/// Whether [`exportable`] takes `session`, whose head is `head`.
pub fn exportable_one(
    log: &impl EventLog,
    session: SessionId,
    head: u64,
    since: Option<u64>,
) -> Result<bool, ExportError> {
    if head == 0 || catalog::source_of(log, session)?.is_some_and(|s| s.contains('@')) {
        return Ok(false);
    }
    if let Some(since) = since {
        let last = log.read(session, head)?.next().transpose()?;
        if last.is_none_or(|e| e.recorded_at < since) {
            return Ok(false);
        }
    }
    Ok(catalog::replaced_by(log, session)?.is_none())
}

/// Exports `sessions` of `log` through `batcher`, each as one trace;
/// `progress` hears of each session done.
pub fn export(
    log: &impl EventLog,
    sessions: &[SessionId],
    content: Content,
    batcher: &mut Batcher,
    progress: &mut dyn FnMut(SessionId),
) -> Result<(), ExportError> {
    for &session in sessions {
        let mut fold = TraceFold::new(session, speaker_of(log, session)?, content);
        for e in log.read(session, 1)? {
            fold.push(&e?);
            batcher.add(fold.drain())?;
        }
        batcher.add(fold.finish())?;
        batcher.exported.sessions += 1;
        progress(session);
    }
    batcher.flush()
}
