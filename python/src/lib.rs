//! `ctxlog._native`: the Rust half of the `ctxlog` Python package. The
//! Python half (`python/ctxlog`) gives these the types and the documented
//! API; every call here releases the GIL while ctxlog works, so threads
//! and event loops go on meanwhile.
//!
//! A store is opened once per path per process (sled locks its directory)
//! and shared by every `Store` and session that names the path; a
//! `":memory:"` path is a log of its own, in memory, for each opener.
//!
//! Files:
//! - `views_py.rs`: What `Store` returns, as Python objects built from the
//!   Rust values of `ctxlog-app` (the same values the CLI prints).

use ctxlog_app::catalog::{resolve_session, CatalogError};
use ctxlog_app::sessions::{self, Filter, Listed, SortBy};
use ctxlog_app::views::{self, At, WindowView};
use ctxlog_app::{pages, simulation};
use ctxlog_core::{timeline, FinishReason, ModelLimits, Policy, SessionId, TokenUsage};
use ctxlog_engine::simulate::SimulateConfig;
use ctxlog_engine::summarize::{
    ExtractiveSummarizer, SummarizeError, Summarizer, SummaryOutput, SummaryRequest,
};
use ctxlog_engine::{Engine, EngineBuilder, MemoryLog, SledStore};
use ctxlog_openai_agents::{AgentError, AgentStore, ItemView, NewItem, Settings};
use ctxlog_postgres::PgLog;
use ctxlog_store::EventLog;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

mod views_py;
use views_py::{PyAuditEntry, PySessionInfo, PySimulation, PyStep, PyWindow};

create_exception!(
    _native,
    CtxlogError,
    PyException,
    "A ctxlog operation failed; the message is the one the CLI prints. Nothing was written."
);

/// An error as Python sees it: its message is the CLI's.
fn py_err(e: impl std::fmt::Display) -> PyErr {
    CtxlogError::new_err(e.to_string())
}

/// The sessions of one log, on disk or in memory, and their summarizers.
enum Backend {
    Disk(AgentStore<SledStore>, Arc<Summarizers>),
    Memory(AgentStore<MemoryLog>, Arc<Summarizers>),
    /// A PostgreSQL log, shared with other processes and hosts.
    Postgres(AgentStore<PgLog>, Arc<Summarizers>),
}

impl Backend {
    fn summarizers(&self) -> &Summarizers {
        match self {
            Backend::Disk(_, s) | Backend::Memory(_, s) | Backend::Postgres(_, s) => s,
        }
    }
}

/// The summarizer of a store's sessions: a session's own Python callable
/// when it was given one, else ctxlog's extractive summarizer (no network).
#[derive(Default)]
struct Summarizers {
    own: Mutex<BTreeMap<SessionId, Py<PyAny>>>,
    extractive: ExtractiveSummarizer,
}

impl Summarizer for Summarizers {
    fn name(&self) -> &str {
        "python"
    }

    fn summarize(&self, request: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        let own = Python::attach(|py| {
            self.own
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&request.session)
                .map(|f| f.clone_ref(py))
        });
        let Some(f) = own else {
            return self.extractive.summarize(request);
        };
        let messages = serde_json::Value::from(ctxlog_providers::openai::summary_messages(request))
            .to_string();
        Python::attach(|py| {
            let loads = py.import("json")?.getattr("loads")?;
            let text: String = f.call1(py, (loads.call1((messages,))?,))?.extract(py)?;
            Ok::<_, PyErr>(text)
        })
        .map(|text| SummaryOutput {
            text,
            tokens: TokenUsage::default(),
            finish: FinishReason::Stop,
            redacted: 0,
        })
        .map_err(|e| SummarizeError::Failed(format!("the session's summarizer raised {e}")))
    }
}

/// Runs `$body` with `$s` bound to the backend's `AgentStore`, whichever
/// log it is over.
macro_rules! on_store {
    ($backend:expr, $s:ident => $body:expr) => {
        match &*$backend {
            Backend::Disk($s, _) => $body,
            Backend::Memory($s, _) => $body,
            Backend::Postgres($s, _) => $body,
        }
    };
}

/// The stores this process holds open, by canonical path (or connection
/// string). Weak: a store closes when its last `Store` and session are
/// gone.
static OPEN: Mutex<BTreeMap<OsString, Weak<Backend>>> = Mutex::new(BTreeMap::new());

/// The store at `path`, opened once per process.
fn backend(path: &str) -> PyResult<Arc<Backend>> {
    let summarizers = Arc::new(Summarizers::default());
    let builder = EngineBuilder::new().summarizer(summarizers.clone());
    if path == ":memory:" {
        let engine = builder.in_memory().map_err(py_err)?;
        return Ok(Arc::new(Backend::Memory(
            AgentStore::new(engine),
            summarizers,
        )));
    }
    if ctxlog_postgres::is_postgres_target(path) {
        // No canonical path begins so: the key cannot name a directory.
        let key = OsString::from(format!("postgresql-url:{path}"));
        let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(b) = open.get(&key).and_then(Weak::upgrade) {
            return Ok(b);
        }
        let log = PgLog::open(path).map_err(py_err)?;
        let engine = builder.build(log).map_err(py_err)?;
        let b = Arc::new(Backend::Postgres(AgentStore::new(engine), summarizers));
        open.insert(key, Arc::downgrade(&b));
        return Ok(b);
    }
    std::fs::create_dir_all(path).map_err(|e| py_err(format!("{path}: {e}")))?;
    let key = std::fs::canonicalize(path).map_err(|e| py_err(format!("{path}: {e}")))?;
    let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(b) = open.get(key.as_os_str()).and_then(Weak::upgrade) {
        return Ok(b);
    }
    let engine = builder.open(&key).map_err(py_err)?;
    let b = Arc::new(Backend::Disk(AgentStore::new(engine), summarizers));
    open.insert(key.into_os_string(), Arc::downgrade(&b));
    Ok(b)
}

/// A policy preset by name, as `--policy` takes it.
fn preset(name: &str) -> PyResult<Policy> {
    Policy::named(name).map_err(py_err)
}

/// A store: its sessions and what ctxlog derives from them.
#[pyclass(module = "ctxlog._native", frozen)]
struct NativeStore {
    backend: Arc<Backend>,
    path: String,
}

#[pymethods]
impl NativeStore {
    #[new]
    fn new(py: Python<'_>, path: String) -> PyResult<Self> {
        let backend = py.detach(|| backend(&path))?;
        // A connection string is kept and shown without its password.
        let path = if ctxlog_postgres::is_postgres_target(&path) {
            ctxlog_postgres::without_password(&path)
        } else {
            path
        };
        Ok(NativeStore { backend, path })
    }

    /// The path it was opened with (a connection string without its
    /// password).
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Every session, as `ctxlog sessions --json` lists them; a session
    /// that does not read raises, naming it.
    fn sessions(&self, py: Python<'_>) -> PyResult<Vec<PySessionInfo>> {
        let listing = py.detach(|| {
            on_store!(self.backend, s => {
                sessions::list(s.engine().store(), &Filter::default(), SortBy::Date, false)
                    .map_err(py_err)
            })
        })?;
        let unreadable = listing.unreadable();
        if !unreadable.is_empty() {
            return Err(py_err(unreadable.join("; ")));
        }
        listing
            .rows
            .into_iter()
            .filter_map(|r| match r {
                Listed::Row(row) => Some(PySessionInfo::new(py, *row)),
                Listed::Unreadable(_) => None,
            })
            .collect()
    }

    /// A session's per-step timeline.
    fn timeline(&self, py: Python<'_>, session: &str) -> PyResult<Vec<PyStep>> {
        let t = py.detach(|| {
            on_store!(self.backend, s => {
                let events = events_of(s.engine(), &self.path, session)?;
                timeline(&events).map_err(py_err)
            })
        })?;
        t.steps.iter().map(|row| PyStep::new(py, row)).collect()
    }

    /// A session's audit trail.
    fn audit(&self, py: Python<'_>, session: &str) -> PyResult<Vec<PyAuditEntry>> {
        let lines = py.detach(|| {
            on_store!(self.backend, s => {
                let id = resolve(s.engine(), &self.path, session)?;
                views::audit_lines(s.engine().store(), id).map_err(py_err)
            })
        })?;
        Ok(lines.into_iter().map(PyAuditEntry::from).collect())
    }

    /// The model input after step `step` (1-based, as the timeline counts
    /// them), or at the head.
    #[pyo3(signature = (session, step=None))]
    fn window(&self, py: Python<'_>, session: &str, step: Option<u64>) -> PyResult<PyWindow> {
        let view = py.detach(|| {
            on_store!(self.backend, s => {
                let id = resolve(s.engine(), &self.path, session)?;
                let events = views::events(s.engine().store(), id).map_err(py_err)?;
                let at = step.map_or(At::Head, At::Step);
                let (state, seq) = views::state_at(id, &events, at).map_err(py_err)?;
                let w = ctxlog_core::window::window(&state);
                Ok::<_, PyErr>(WindowView::of(&state, &w, seq, step))
            })
        })?;
        PyWindow::new(py, &view)
    }

    /// A session run again under `policy` (a preset name) in memory, with
    /// `context_limit` instead of the recorded limit when given; as JSON.
    #[pyo3(signature = (session, policy, context_limit=None))]
    fn simulate(
        &self,
        py: Python<'_>,
        session: &str,
        policy: &str,
        context_limit: Option<u64>,
    ) -> PyResult<PySimulation> {
        let name = policy.to_owned();
        let policy = preset(policy)?;
        let report = py.detach(|| {
            on_store!(self.backend, s => {
                let events = events_of(s.engine(), &self.path, session)?;
                let mut config = SimulateConfig::new(policy);
                config.limits = context_limit.map(|context| ModelLimits {
                    context,
                    ..ModelLimits::default()
                });
                simulation::run(&events, config, |_| {}).map_err(py_err)
            })
        })?;
        PySimulation::new(py, &name, &report)
    }

    /// Writes the HTML report of a session to `out`; returns its size.
    fn report(&self, py: Python<'_>, session: &str, out: PathBuf) -> PyResult<usize> {
        py.detach(|| {
            on_store!(self.backend, s => {
                let id = resolve(s.engine(), &self.path, session)?;
                let page = pages::report(s.engine().store(), &[id], false).map_err(py_err)?;
                let html = page.text;
                write_file(&out, &html)?;
                Ok(html.len())
            })
        })
    }

    /// Opens (starting it when new) the Agents SDK session named `name`;
    /// `summarizer`, a callable from the summary request's chat messages to
    /// the summary text, summarizes its compactions (the last one given for
    /// a name wins).
    #[pyo3(signature = (name, policy=None, context_limit=None, summarizer=None))]
    fn open_session(
        &self,
        py: Python<'_>,
        name: String,
        policy: Option<String>,
        context_limit: Option<u64>,
        summarizer: Option<Py<PyAny>>,
    ) -> PyResult<NativeSession> {
        let settings = Settings {
            policy: policy.as_deref().map(preset).transpose()?,
            limits: context_limit.map(|context| ModelLimits {
                context,
                ..ModelLimits::default()
            }),
        };
        let backend = self.backend.clone();
        let id =
            py.detach(|| on_store!(backend, s => s.open(&name, &settings).map_err(agent_err)))?;
        let mut own = backend
            .summarizers()
            .own
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match summarizer {
            Some(f) => own.insert(id, f),
            None => own.remove(&id),
        };
        drop(own);
        Ok(NativeSession { backend, id, name })
    }
}

/// One Agents SDK session of a store.
#[pyclass(module = "ctxlog._native", frozen)]
struct NativeSession {
    backend: Arc<Backend>,
    id: SessionId,
    name: String,
}

/// An item as Python gives it: `(kind, raw, text, call_id, name,
/// template)` (see [`NewItem`]).
type ItemTuple = (
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// An item as Python gets it back: `(raw, cleared, role, text)`: `raw` set
/// for an item the agent added (with `text`, the `output` to put back in
/// it), `role` and `text` for one ctxlog wrote.
type ViewTuple = (Option<String>, bool, Option<&'static str>, Option<String>);

fn view_tuple(v: ItemView) -> ViewTuple {
    match v {
        ItemView::Recorded {
            raw,
            cleared,
            output,
        } => (Some(raw), cleared, None, output),
        ItemView::Written { role, text } => (None, false, Some(role.as_str()), Some(text)),
    }
}

fn agent_err(e: AgentError) -> PyErr {
    py_err(e)
}

#[pymethods]
impl NativeSession {
    /// The SDK's session id: the stored session's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The stored session's ctxlog id.
    #[getter]
    fn id(&self) -> String {
        self.id.to_string()
    }

    /// Records items (classified by the Python side) in one append.
    fn add_items(&self, py: Python<'_>, items: Vec<ItemTuple>) -> PyResult<()> {
        let mut new = Vec::with_capacity(items.len());
        for (i, (kind, raw, text, call_id, name, template)) in items.into_iter().enumerate() {
            let kind = ctxlog_openai_agents::parse_kind(&kind)
                .ok_or_else(|| py_err(format!("item {i}: unknown kind {kind:?}")))?;
            new.push(NewItem {
                kind,
                raw,
                text,
                call_id,
                name,
                template,
            });
        }
        py.detach(|| on_store!(self.backend, s => s.add_items(self.id, &new).map_err(agent_err)))
    }

    /// The items the model should see, the latest `limit` when given.
    #[pyo3(signature = (limit=None))]
    fn get_items(&self, py: Python<'_>, limit: Option<usize>) -> PyResult<Vec<ViewTuple>> {
        let views = py.detach(
            || on_store!(self.backend, s => s.get_items(self.id, limit).map_err(agent_err)),
        )?;
        Ok(views.into_iter().map(view_tuple).collect())
    }

    /// Takes back the last item; `None` when there is none.
    fn pop_item(&self, py: Python<'_>) -> PyResult<Option<ViewTuple>> {
        let view =
            py.detach(|| on_store!(self.backend, s => s.pop_item(self.id).map_err(agent_err)))?;
        Ok(view.map(view_tuple))
    }

    /// Withdraws every item; returns how many messages.
    fn clear(&self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| on_store!(self.backend, s => s.clear(self.id).map_err(agent_err)))
    }

    /// Ends a turn: the step's usage `(input, output, cached, reasoning)`
    /// when the run reported it, the overflow check, compaction, prune.
    /// Returns what it did, as a dict.
    #[pyo3(signature = (usage=None, force=false))]
    fn compact(
        &self,
        py: Python<'_>,
        usage: Option<(u64, u64, u64, u64)>,
        force: bool,
    ) -> PyResult<Py<PyAny>> {
        let usage = usage.map(|(input, output, cached, reasoning)| TokenUsage {
            total: None,
            // OpenCode's convention, which the policies follow: `input`
            // is the uncached part of the prompt.
            input: input.saturating_sub(cached),
            output: output.saturating_sub(reasoning),
            reasoning,
            cache_read: cached,
            cache_write: 0,
        });
        let done = py.detach(
            || on_store!(self.backend, s => s.compact(self.id, usage, force).map_err(agent_err)),
        )?;
        views_py::serde_to_py(py, &done)
    }
}

/// The session `text` names (a name, a ctxlog id, a unique prefix) in the
/// store at `path`; not found, the CLI's message.
fn resolve<L: EventLog>(engine: &Engine<L>, path: &str, text: &str) -> PyResult<SessionId> {
    resolve_session(engine.store(), text).map_err(|e| match e {
        CatalogError::NotFound(_) => py_err(format!("{e} in {path}")),
        e => py_err(e),
    })
}

/// The events of the session `text` names, read whole.
fn events_of<L: EventLog>(
    engine: &Engine<L>,
    path: &str,
    text: &str,
) -> PyResult<Vec<ctxlog_core::Envelope>> {
    let id = resolve(engine, path, text)?;
    views::events(engine.store(), id).map_err(py_err)
}

fn write_file(out: &Path, text: &str) -> PyResult<()> {
    std::fs::write(out, text).map_err(|e| py_err(format!("{}: {e}", out.display())))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeStore>()?;
    m.add_class::<NativeSession>()?;
    m.add_class::<PySessionInfo>()?;
    m.add_class::<PyAuditEntry>()?;
    m.add_class::<PyStep>()?;
    m.add_class::<PyWindow>()?;
    m.add_class::<PySimulation>()?;
    m.add("CtxlogError", m.py().get_type::<CtxlogError>())?;
    Ok(())
}
