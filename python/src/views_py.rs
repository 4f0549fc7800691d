//! What `Store` returns, as Python objects built from the Rust values of
//! `ctxlog-app` (the same values the CLI prints): each class mirrors one
//! Rust struct field by field, so a renamed field fails to compile here,
//! not at run time in Python. Values without a fixed shape (a step's
//! tokens, a window's messages, a simulation's decisions) become plain
//! dicts and lists, converted from their serde form, never from JSON text.

use ctxlog_app::sessions::SessionRow;
use ctxlog_app::views::{AuditLine, WindowView};
use ctxlog_core::StepRow;
use ctxlog_engine::simulate::SimulationReport;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString};
use serde::Serialize;
use serde_json::Value;

/// A serde value as a Python object: dicts, lists, str, int, float,
/// bool, None.
pub(crate) fn to_py(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.into_pyobject(py)?.into_any().unbind(),
            (None, Some(i)) => i.into_pyobject(py)?.into_any().unbind(),
            (None, None) => n
                .as_f64()
                .unwrap_or(f64::NAN)
                .into_pyobject(py)?
                .into_any()
                .unbind(),
        },
        Value::String(s) => PyString::new(py, s).into_any().unbind(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for x in items {
                list.append(to_py(py, x)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(fields) => {
            let dict = PyDict::new(py);
            for (k, x) in fields {
                dict.set_item(k, to_py(py, x)?)?;
            }
            dict.into_any().unbind()
        }
    })
}

/// Any serializable value as a Python object (see [`to_py`]).
pub(crate) fn serde_to_py(py: Python<'_>, v: &impl Serialize) -> PyResult<Py<PyAny>> {
    let value = serde_json::to_value(v).map_err(crate::py_err)?;
    to_py(py, &value)
}

/// One stored session, as `ctxlog sessions --json` lists it.
#[pyclass(module = "ctxlog._native", name = "SessionInfo", frozen, get_all)]
pub(crate) struct PySessionInfo {
    session: String,
    source_session: Option<String>,
    title: Option<String>,
    started_at: u64,
    date: String,
    events: u64,
    messages: u64,
    withdrawn: u64,
    steps: u64,
    peak_tokens: u64,
    compactions: usize,
    pruned_parts: u64,
    policy: String,
    context_limit: u64,
    window_tokens: u64,
    directory: Option<String>,
    project: Option<String>,
    agent: Option<String>,
    model: Option<String>,
    cost_usd: Option<f64>,
    replaced_by: Option<String>,
    interrupted: bool,
    simulation: Option<Py<PyAny>>,
    captured: Option<Py<PyAny>>,
    live: bool,
}

#[pymethods]
impl PySessionInfo {
    /// ctxlog's id of the session (the same as `session`).
    #[getter]
    fn id(&self) -> &str {
        &self.session
    }

    /// Its name: the Agents SDK's `session_id`, or a recording's own id
    /// (the same as `source_session`).
    #[getter]
    fn name(&self) -> Option<&str> {
        self.source_session.as_deref()
    }

    fn __repr__(&self) -> String {
        format!(
            "SessionInfo(session={:?}, source_session={:?}, events={})",
            self.session, self.source_session, self.events
        )
    }
}

impl PySessionInfo {
    pub(crate) fn new(py: Python<'_>, r: SessionRow) -> PyResult<Self> {
        let simulation = r
            .simulation
            .as_ref()
            .map(|s| serde_to_py(py, s))
            .transpose()?;
        let captured = r
            .captured
            .as_ref()
            .map(|c| serde_to_py(py, c))
            .transpose()?;
        Ok(PySessionInfo {
            session: r.session,
            source_session: r.source_session,
            title: r.title,
            started_at: r.started_at,
            date: r.date,
            events: r.events,
            messages: r.messages,
            withdrawn: r.withdrawn,
            steps: r.steps,
            peak_tokens: r.peak_tokens,
            compactions: r.compactions,
            pruned_parts: r.pruned_parts,
            policy: r.policy,
            context_limit: r.context_limit,
            window_tokens: r.window_tokens,
            directory: r.directory,
            project: r.project,
            agent: r.agent,
            model: r.model,
            cost_usd: r.cost_usd,
            replaced_by: r.replaced_by,
            interrupted: r.interrupted,
            simulation,
            captured,
            live: r.live,
        })
    }
}

/// One line of a session's audit trail, as `ctxlog audit --json` gives it.
#[pyclass(module = "ctxlog._native", name = "AuditEntry", frozen, get_all)]
pub(crate) struct PyAuditEntry {
    seq: u64,
    at: u64,
    kind: String,
    ids: Vec<String>,
    source_ids: Vec<Option<String>>,
    tokens: Option<u64>,
    policy: String,
    what: String,
    part_tokens: Vec<Option<u64>>,
}

#[pymethods]
impl PyAuditEntry {
    fn __repr__(&self) -> String {
        format!(
            "AuditEntry(seq={}, kind={:?}, what={:?})",
            self.seq, self.kind, self.what
        )
    }
}

impl From<AuditLine> for PyAuditEntry {
    fn from(l: AuditLine) -> Self {
        let e = l.entry;
        PyAuditEntry {
            seq: e.seq,
            at: e.at,
            kind: e.kind,
            ids: e.ids,
            source_ids: e.source_ids,
            tokens: e.tokens,
            policy: e.policy,
            what: e.what,
            part_tokens: l.part_tokens,
        }
    }
}

/// One model step of a session's timeline, as `ctxlog timeline --json`
/// gives it.
#[pyclass(module = "ctxlog._native", name = "Step", frozen, get_all)]
pub(crate) struct PyStep {
    seq: u64,
    time: u64,
    message: String,
    tokens: Py<PyAny>,
    count: u64,
    usable: Option<u64>,
    percent: Option<f64>,
    threshold: Option<u64>,
    overflow: bool,
    window_estimate: u64,
    events: Py<PyAny>,
    open: bool,
    no_usage: bool,
    error: Option<String>,
}

#[pymethods]
impl PyStep {
    fn __repr__(&self) -> String {
        format!("Step(seq={}, count={})", self.seq, self.count)
    }
}

impl PyStep {
    pub(crate) fn new(py: Python<'_>, row: &StepRow) -> PyResult<Self> {
        Ok(PyStep {
            seq: row.seq,
            time: row.time,
            message: row.message.to_string(),
            tokens: serde_to_py(py, &row.tokens)?,
            count: row.count,
            usable: row.usable,
            percent: row.percent,
            threshold: row.threshold,
            overflow: row.overflow,
            window_estimate: row.window_estimate,
            events: serde_to_py(py, &row.events)?,
            open: row.open,
            no_usage: row.no_usage,
            error: row.error.clone(),
        })
    }
}

/// The model input at a point of a session, as `ctxlog window --json`
/// gives it.
#[pyclass(module = "ctxlog._native", name = "Window", frozen, get_all)]
pub(crate) struct PyWindow {
    seq: u64,
    step: Option<u64>,
    tokens: u64,
    pivot: Option<String>,
    messages: Py<PyAny>,
}

#[pymethods]
impl PyWindow {
    fn __repr__(&self) -> String {
        format!("Window(seq={}, tokens={})", self.seq, self.tokens)
    }
}

impl PyWindow {
    pub(crate) fn new(py: Python<'_>, w: &WindowView) -> PyResult<Self> {
        Ok(PyWindow {
            seq: w.seq,
            step: w.step,
            tokens: w.tokens,
            pivot: w.pivot.clone(),
            messages: serde_to_py(py, &w.messages)?,
        })
    }
}

/// A session run again under another policy, in memory.
#[pyclass(module = "ctxlog._native", name = "Simulation", frozen, get_all)]
pub(crate) struct PySimulation {
    policy: String,
    decisions: Py<PyAny>,
    steps: u64,
    turns: u64,
    events: u64,
    final_window: u64,
}

#[pymethods]
impl PySimulation {
    fn __repr__(&self) -> String {
        format!(
            "Simulation(policy={:?}, steps={}, final_window={})",
            self.policy, self.steps, self.final_window
        )
    }
}

impl PySimulation {
    pub(crate) fn new(py: Python<'_>, policy: &str, r: &SimulationReport) -> PyResult<Self> {
        Ok(PySimulation {
            policy: policy.to_owned(),
            decisions: serde_to_py(py, &r.decisions)?,
            steps: r.steps,
            turns: r.turns,
            events: r.events,
            final_window: r.final_window,
        })
    }
}
