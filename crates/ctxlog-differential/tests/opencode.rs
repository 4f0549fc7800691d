//! Differential test against the real OpenCode (`opencode-ai`, pinned in
//! [`ctxlog_differential::opencode::VERSION`]).
//!
//! Each scenario drives OpenCode offline against the scripted model server,
//! keeps every request the model received, exports the session with
//! `opencode export`, imports that export into ctxlog, and checks:
//! - the import labels the session `opencode-1.18`;
//! - ctxlog's window before each model call, rendered as chat-completions
//!   messages, equals the `messages` OpenCode sent (its system prompt aside);
//! - every summarizer request OpenCode sent equals the one ctxlog builds for
//!   that job (system prompt, transcript, prior summary, `max_tokens`);
//! - after every automatic summary OpenCode wrote the message ctxlog decides
//!   (the replayed prompt or the preset's continue message);
//! - `simulate` under the session's own policy compacts after exactly the
//!   steps (and refused requests) OpenCode compacted after;
//! - ctxlog's overflow decision after every step equals OpenCode's (a
//!   compaction marker follows exactly the steps ctxlog says overflow);
//! - ctxlog's export of the imported session is accepted by `opencode import`,
//!   and OpenCode's export of what it imported equals its own export of the
//!   session (the round trip OpenCode → ctxlog → OpenCode loses nothing);
//! - every recorded format (the fixtures and `../shared/sessions`) goes
//!   through OpenCode and back into ctxlog unchanged;
//! - OpenCode's SQLite database, read by ctxlog, gives exactly OpenCode's
//!   export of each session, and reading it while OpenCode works never
//!   stops OpenCode; the snapshots read meanwhile, imported and
//!   stored one after another, grow into the finished session.
//!
//! The npm install is cached outside git; when the registry cannot be
//! reached the tests skip with a message. Scenarios run one at a time (each
//! starts its own `opencode serve`).

mod common;

use ctxlog_app::catalog;
use ctxlog_core::decide::continue_text;
use ctxlog_core::replay::{replay_of, replay_parts};
use ctxlog_core::{window, Envelope, Event, EventPack, PartBody, Policy, SessionState};
use ctxlog_differential::model_server::{Kind, ModelServer, Reply, Request, Script};
use ctxlog_differential::opencode::{
    imported_session, install, DriveError, ModelConfig, Sandbox, Server,
};

use ctxlog_engine::simulate::{simulate_recording, Decision, SimulateConfig};
use ctxlog_engine::summarize::RecordedSummarizer;
use ctxlog_engine::{summary_request, HookOutput};
use ctxlog_import::{opencode_db, Format, ImportOptions, LimitOverrides};
use ctxlog_store::{EventLog, MemoryLog};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One scenario at a time: each runs an OpenCode server on 2 cores.
static SERIAL: Mutex<()> = Mutex::new(());

/// The pinned OpenCode, or `None` (with a message) when npm cannot reach
/// its registry.
fn opencode() -> Option<PathBuf> {
    match install() {
        Ok(bin) => Some(bin),
        Err(DriveError::Unreachable(why)) => {
            eprintln!("SKIPPED: the differential tests need the npm registry: {why}");
            None
        }
        Err(e) => panic!("installing OpenCode failed: {e}"),
    }
}

/// What a scenario does after the session is created.
enum Action {
    Prompt(&'static str),
    Summarize,
    /// From here to the end, read OpenCode's database again and again while
    /// it works.
    ReadDatabaseMeanwhile,
}

/// What one run left behind (holding the one-at-a-time lock until dropped).
struct Run {
    _serial: std::sync::MutexGuard<'static, ()>,
    dir: PathBuf,
    requests: Vec<Request>,
    export_path: PathBuf,
    export: Value,
    sandbox: Sandbox,
    model: ModelConfig,
    /// The sessions ctxlog read from the database while OpenCode worked.
    snapshots: Vec<Vec<Envelope>>,
}

/// OpenCode's database in a run's sandbox.
fn database(dir: &Path) -> PathBuf {
    dir.join("data/opencode/opencode.db")
}

/// Reads `session` from the database under `dir` every 20 ms until `stop`,
/// importing each snapshot as a live recording; the events of each.
fn read_meanwhile(
    dir: PathBuf,
    session: String,
    model: ModelConfig,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<Vec<Envelope>>> {
    std::thread::spawn(move || {
        let db = database(&dir);
        let options = options_for(model);
        let mut snapshots = Vec::new();
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let bytes = opencode_db::assemble(&db, &session, u64::MAX)
                .unwrap_or_else(|e| panic!("reading OpenCode's database while it works: {e}"));
            match ctxlog_import::import(&bytes[..], "snapshot", Format::OpenCode, &options) {
                Ok(imported) => snapshots.push(imported.events.to_vec().unwrap()),
                Err(e) if e.holds_no_session() => {}
                Err(e) => panic!("a snapshot of OpenCode's database does not import: {e}"),
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        snapshots
    })
}

fn run(name: &str, script: Script, model: ModelConfig, actions: &[Action]) -> Option<Run> {
    let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let bin = opencode()?;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("opencode-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    let server = ModelServer::start(script).expect("model server");
    let sandbox = Sandbox::new(bin, dir.clone(), &server.base_url(), model).expect("sandbox");
    let oc = Server::start(&sandbox).expect("opencode serve");
    let id = oc.create_session().expect("session");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut reader = None;
    for a in actions {
        match a {
            Action::Prompt(text) => oc.prompt(&id, text).expect("prompt"),
            Action::Summarize => oc.summarize(&id).expect("summarize"),
            Action::ReadDatabaseMeanwhile => {
                reader = Some(read_meanwhile(dir.clone(), id.clone(), model, stop.clone()))
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let snapshots = reader
        .map(|r| r.join().expect("the database reader"))
        .unwrap_or_default();
    let export_path = dir.join("export.json");
    let export = sandbox.export(&id, &export_path).expect("export");
    drop(oc);
    let requests = server.requests();
    for r in &requests {
        let file = dir.join(format!("request-{:02}-{:?}.json", r.n, r.kind));
        std::fs::write(file, serde_json::to_vec_pretty(&r.body).unwrap()).unwrap();
    }
    assert_eq!(
        server.unused(),
        (0, 0),
        "{name}: OpenCode made fewer model calls than scripted"
    );
    let unscripted: Vec<String> = requests
        .iter()
        .filter(|r| r.kind != Kind::Title && r.reply.is_none())
        .map(|r| format!("n={} {:?}", r.n, r.kind))
        .collect();
    assert!(
        unscripted.is_empty(),
        "{name}: OpenCode made model calls the script did not expect: {unscripted:?}"
    );
    Some(Run {
        _serial: serial,
        dir,
        requests,
        export_path,
        export,
        sandbox,
        model,
        snapshots,
    })
}

/// How a run's recordings are imported: with the limits of its model.
fn options_for(model: ModelConfig) -> ImportOptions {
    ImportOptions {
        limits: LimitOverrides {
            context: Some(model.context),
            output: Some(model.output),
            ..LimitOverrides::default()
        },
        ..ImportOptions::default()
    }
}

/// The export imported into ctxlog (policy detected from the export).
fn import(run: &Run) -> Vec<Envelope> {
    let options = options_for(run.model);
    let file = std::fs::File::open(&run.export_path).unwrap();
    let imported = ctxlog_import::import(
        std::io::BufReader::new(file),
        &run.export_path.display().to_string(),
        Format::OpenCode,
        &options,
    )
    .unwrap_or_else(|e| panic!("ctxlog cannot import OpenCode's export: {e}"));
    imported.events.to_vec().unwrap()
}

fn state_at(events: &[Envelope], seq: u64) -> SessionState {
    SessionState::replay(events.iter().take(seq as usize)).expect("replay")
}

/// The policy the import recorded.
fn recorded_policy(events: &[Envelope]) -> Policy {
    match &events[0].event {
        Event::SessionStarted { policy, .. } => policy.clone(),
        e => panic!("first event is {}", e.kind()),
    }
}

/// The export's messages in order.
fn messages(export: &Value) -> &[Value] {
    export["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Checks ctxlog's window before every agent-loop model call against the
/// request OpenCode sent.
fn check_windows(run: &Run, events: &[Envelope]) {
    let agent: Vec<&Request> = run
        .requests
        .iter()
        .filter(|r| r.kind == Kind::Agent)
        .collect();
    // Every agent call created one non-summary assistant message, in order.
    let calls: Vec<&str> = messages(&run.export)
        .iter()
        .filter(|m| m["info"]["role"] == "assistant" && m["info"]["summary"] != true)
        .filter_map(|m| m["info"]["id"].as_str())
        .collect();
    assert_eq!(
        agent.len(),
        calls.len(),
        "one assistant message per agent request"
    );
    for (request, call) in agent.iter().zip(&calls) {
        let seq = events
            .iter()
            .find(|e| {
                matches!(&e.event, Event::MessageAppended { source_id: Some(s), .. } if s == call)
            })
            .map(|e| e.seq)
            .unwrap_or_else(|| panic!("message {call} not imported"));
        let state = state_at(events, seq - 1);
        let ours = Value::Array(ctxlog_providers::Format::Chat.encode(&window(&state)));
        let sent = request.body["messages"].as_array().unwrap();
        let theirs = Value::Array(sent[1..].to_vec());
        common::same_window(&run.dir, "OpenCode", request.n, seq, &ours, &theirs);
    }
}

/// After every finished step, ctxlog's overflow check says "compact" exactly
/// when OpenCode wrote an automatic, non-overflow compaction marker next.
fn check_overflow_decisions(events: &[Envelope]) -> usize {
    let policy = recorded_policy(events);
    let mut state = SessionState::new();
    let mut compactions = 0;
    for (i, e) in events.iter().enumerate() {
        state.evolve(e).unwrap();
        let Event::StepFinished {
            tokens, message, ..
        } = &e.event
        else {
            continue;
        };
        let ours = policy.check_overflow(&state.limits, tokens).overflow;
        // OpenCode's decision: the next message it wrote is an automatic marker.
        let theirs = events[i + 1..]
            .iter()
            .find_map(|n| match &n.event {
                Event::MessageAppended { .. } => Some(false),
                Event::CompactionRequested { auto, overflow, .. } => Some(*auto && !*overflow),
                _ => None,
            })
            .unwrap_or(false);
        assert_eq!(
            ours, theirs,
            "step of message {message} (seq {}, {tokens:?}): ctxlog says overflow = {ours}, OpenCode compacted = {theirs}",
            e.seq
        );
        compactions += usize::from(theirs);
    }
    compactions
}

/// The fields of an export that `opencode import` sets itself: the
/// session's directory, path and project name the project it is imported
/// into, whatever the file says.
const SET_BY_IMPORT: &[&str] = &["directory", "path", "projectID"];

/// `export` without the fields `opencode import` sets itself.
fn without_import_fields(mut export: Value) -> Value {
    if let Some(info) = export.get_mut("info").and_then(Value::as_object_mut) {
        for k in SET_BY_IMPORT {
            info.remove(*k);
        }
    }
    export
}

/// `export` without the `time` of its step-finish parts: OpenCode's parts
/// have none, and its import drops the one ctxlog writes (a message's last
/// step comes back at the message's `time.completed`).
fn without_step_finish_times(mut export: Value) -> Value {
    for m in export["messages"].as_array_mut().into_iter().flatten() {
        for p in m["parts"].as_array_mut().into_iter().flatten() {
            if p["type"] == "step-finish" {
                if let Some(o) = p.as_object_mut() {
                    o.remove("time");
                }
            }
        }
    }
    export
}

/// The first place where `a` and `b` differ (a JSON path), if any.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, &format!("{path}.{k}")),
                (p, q) => Some(format!("{path}.{k}: {p:?} | {q:?}")),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{path}[{i}]"))),
        _ if a == b => None,
        // One JSON number however it is written (`0.0` is `0` in JavaScript).
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => None,
        _ => Some(format!("{path}: {} | {}", short(a), short(b))),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// `file` imported by the real OpenCode into a fresh sandbox under `dir`,
/// and exported again by it.
fn through_opencode(bin: &Path, dir: &Path, file: &Path) -> Result<Value, String> {
    let sandbox = Sandbox::new(
        bin.to_owned(),
        dir.to_owned(),
        "http://127.0.0.1:9/v1",
        model(200_000),
    )
    .map_err(|e| e.to_string())?;
    let said = sandbox.import(file).map_err(|e| e.to_string())?;
    let id = imported_session(&said)
        .ok_or_else(|| format!("`opencode import` named no session: {said}"))?;
    sandbox
        .export(&id, &dir.join("export.json"))
        .map_err(|e| e.to_string())
}

/// OpenCode → ctxlog → OpenCode loses nothing: ctxlog's export of the
/// imported session is accepted by `opencode import` (in a fresh sandbox),
/// and OpenCode's export of it equals OpenCode's own export of the session
/// (messages, parts, ids, tool calls and outputs, prune marks, markers,
/// summaries, metadata, agent, model, paths, tokens), but for the fields its
/// import sets itself.
fn check_round_trip(run: &Run, events: &[Envelope]) {
    let file = run.dir.join("ctxlog-export.json");
    let mut out = Vec::new();
    ctxlog_import::export::opencode(events, &mut out).expect("ctxlog export");
    std::fs::write(&file, &out).unwrap();
    let again = through_opencode(run.sandbox.bin(), &run.dir.join("round-trip"), &file)
        .unwrap_or_else(|e| panic!("OpenCode refuses ctxlog's export {}: {e}", file.display()));
    let (theirs, back) = (
        without_import_fields(run.export.clone()),
        without_import_fields(again),
    );
    if let Some(d) = first_difference(&theirs, &back, "") {
        panic!(
            "the round trip OpenCode → ctxlog → OpenCode changed {}: {d} (OpenCode's own | after the round trip)",
            run.export_path.display()
        );
    }
}

/// Every summarizer request OpenCode sent equals the one ctxlog builds for
/// the same job (by order), as chat-completions messages: the system prompt,
/// then the transcript with its cut tool results and prior summary.
fn check_summary_requests(run: &Run, events: &[Envelope]) {
    let sent: Vec<&Request> = run
        .requests
        .iter()
        .filter(|r| r.kind == Kind::Summary)
        .collect();
    let started: Vec<(u64, ctxlog_core::MessageId)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::CompactionStarted { job, .. } => Some((e.seq, *job)),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), started.len(), "one summary request per job");
    for (request, (seq, job)) in sent.iter().zip(started) {
        let state = state_at(events, seq);
        let ours = summary_request(events[0].session, &state, job, &HookOutput::default(), None);
        let mine = Value::Array(ctxlog_providers::openai::summary_messages(&ours));
        if mine != request.body["messages"] {
            let file = run.dir.join(format!("summary-{:02}.json", request.n));
            std::fs::write(&file, serde_json::to_vec_pretty(&mine).unwrap()).unwrap();
            panic!(
                "summary request n={} (job {job}, seq {seq}) differs; ours in {}, theirs in request-{:02}-Summary.json",
                request.n,
                file.display(),
                request.n
            );
        }
        assert_eq!(
            request.body["max_tokens"], ours.max_output_tokens,
            "summary request n={}: max_tokens",
            request.n
        );
        assert!(request.body.get("tools").is_none());
    }
}

/// After every automatic summary, the message OpenCode wrote next is the one
/// ctxlog decides: the refused prompt again (same parts), or the preset's
/// continue message (with the overflow note when a refusal had nothing to
/// replay), synthetic.
fn check_resume(events: &[Envelope]) -> usize {
    let mut state = SessionState::new();
    let mut checked = 0;
    for (i, e) in events.iter().enumerate() {
        // Decided as the job completes: on the state before its summary counts.
        let Event::SummaryCompleted { job, .. } = &e.event else {
            state.evolve(e).unwrap();
            continue;
        };
        let j = state.job(*job).unwrap().clone();
        if !j.auto {
            state.evolve(e).unwrap();
            continue;
        }
        let (want_parts, want_synthetic) = match replay_of(&state, *job) {
            Some(prompt) => (replay_parts(&state, prompt), false),
            None => (
                vec![PartBody::Text {
                    text: continue_text(&state.policy, j.overflow),
                    synthetic: true,
                    time: None,
                }],
                true,
            ),
        };
        state.evolve(e).unwrap();
        let mut next = SessionState::replay(events).unwrap();
        next.messages.retain(|m| m.created_seq > e.seq);
        let m = next
            .messages
            .first()
            .unwrap_or_else(|| panic!("seq {}: OpenCode wrote nothing after the summary", e.seq));
        assert_eq!(m.role, ctxlog_core::Role::User);
        assert_eq!(m.synthetic, want_synthetic, "seq {}", events[i].seq);
        let text = |parts: &[PartBody]| -> Vec<String> {
            parts
                .iter()
                .filter_map(|p| match p {
                    PartBody::Text { text, .. } => Some(text.clone()),
                    _ => None,
                })
                .collect()
        };
        let theirs: Vec<PartBody> = m
            .parts
            .iter()
            .map(|p| p.body_in(events).unwrap().into_owned())
            .collect();
        assert_eq!(text(&theirs), text(&want_parts), "seq {}: resume", e.seq);
        checked += 1;
    }
    checked
}

/// `simulate` of the imported session under its own policy, with the
/// recorded summaries, reproduces every automatic compaction OpenCode made,
/// after the same step (or the same refused request), the second and later
/// ones included, on the recorded usage throughout. Returns how many.
fn check_simulation(events: &[Envelope]) -> usize {
    let config = SimulateConfig {
        summarizer: Arc::new(RecordedSummarizer::from_log(events)),
        ..SimulateConfig::new(recorded_policy(events))
    };
    let report = simulate_recording(events, config, |_| {}).expect("simulate");
    let mut last_assistant = String::new();
    let mut recorded = Vec::new();
    for e in events {
        match &e.event {
            Event::MessageAppended {
                role: ctxlog_core::Role::Assistant,
                source_id: Some(s),
                ..
            } => last_assistant = s.clone(),
            Event::CompactionRequested { auto: true, .. } => recorded.push(last_assistant.clone()),
            _ => {}
        }
    }
    let simulated: Vec<String> = report
        .decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Compaction {
                after, estimated, ..
            } => {
                assert!(!estimated, "after {after}: the recorded usage was replaced");
                Some(after.clone())
            }
            Decision::Refused {
                after,
                compacted: true,
            } => Some(after.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        simulated, recorded,
        "simulate compacts after the steps OpenCode compacted after: {:?}",
        report.decisions
    );
    recorded.len()
}

fn check_all(run: &Run) -> Vec<Envelope> {
    let events = import(run);
    assert_eq!(
        recorded_policy(&events).name,
        "opencode-1.18",
        "an OpenCode 1.18 export is labelled with its preset"
    );
    check_windows(run, &events);
    check_summary_requests(run, &events);
    check_resume(&events);
    check_simulation(&events);
    check_round_trip(run, &events);
    check_database(run, &events);
    events
}

/// ctxlog reads OpenCode's database as OpenCode exports it: the session
/// assembled from its rows equals `opencode export`, and imports to the
/// same events. The snapshots read while OpenCode worked, stored in turn,
/// grow into them.
fn check_database(run: &Run, events: &[Envelope]) {
    let db = database(&run.dir);
    let id = run.export["info"]["id"].as_str().expect("the export's id");
    let listed = opencode_db::sessions(&db).expect("the database's sessions");
    assert_eq!(
        listed.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        [id],
        "the database holds the one session"
    );
    let bytes = opencode_db::assemble(&db, id, u64::MAX).expect("reading the database");
    let assembled: Value = serde_json::from_slice(&bytes).unwrap();
    if let Some(d) = first_difference(&run.export, &assembled, "") {
        panic!(
            "the session read from {} differs from OpenCode's export: {d} (export | database)",
            db.display()
        );
    }
    let options = options_for(run.model);
    let from_db = ctxlog_import::import(&bytes[..], "db", Format::OpenCode, &options)
        .expect("importing the database's session");
    assert_eq!(
        from_db.events.to_vec().unwrap(),
        events,
        "the database imports as the export does"
    );
    // Stored one after another, as a user re-importing the session while
    // OpenCode works does: every snapshot only extends the last (what
    // describes the session, like the title OpenCode sets after the first
    // prompt, goes to its description stream when it changed), and the end
    // is exactly a fresh import: the same events at the same seqs.
    let log = MemoryLog::new();
    for (i, snapshot) in run.snapshots.iter().enumerate() {
        if let Err(e) = catalog::store_recording(&log, EventPack::try_from(&snapshot[..]).unwrap())
        {
            let before = &run.snapshots[i.saturating_sub(1)];
            let differ = before.iter().zip(snapshot).find(|(a, b)| a != b);
            panic!(
                "snapshot {i} of {} read while OpenCode worked does not extend the one before: {e}: {differ:?}",
                run.snapshots.len()
            )
        }
    }
    catalog::store_recording(&log, EventPack::try_from(events).unwrap())
        .unwrap_or_else(|e| panic!("the finished session does not extend the snapshots: {e}"));
    let fresh = MemoryLog::new();
    catalog::store_recording(&fresh, EventPack::try_from(events).unwrap()).unwrap();
    let session = events[0].session;
    let read = |l: &MemoryLog| -> Vec<Envelope> {
        l.read(session, 1)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert!(
        read(&log) == read(&fresh),
        "the grown session is the finished one, seq for seq"
    );
    let described = |l: &MemoryLog| {
        let s = catalog::load_described(l, session).unwrap().state;
        (s.title, s.about)
    };
    assert_eq!(
        described(&log),
        described(&fresh),
        "the grown session is described as the finished one"
    );
}

/// `events` up to the end of its last finished step: a recording's last
/// step may be open (its end is not on disk yet), and is exported as not
/// completed, which an import of the export then waits for, as for a
/// session OpenCode is still writing.
fn finished_steps(mut events: Vec<Envelope>) -> Vec<Envelope> {
    let Some(last) = events
        .iter()
        .rposition(|e| matches!(e.event, Event::StepFinished { .. }))
    else {
        return events;
    };
    if let Some(open) = events[last..]
        .iter()
        .position(|e| matches!(e.event, Event::MessageAppended { .. }))
    {
        events.truncate(last + open);
    }
    events
}

fn model(context: u64) -> ModelConfig {
    ModelConfig {
        context,
        output: 4_000,
        prune: true,
    }
}

fn dir_of(run: &Run) -> &Path {
    &run.dir
}

/// At the end of every turn (before each real user message, and at the end),
/// ctxlog's prune plan (with pruning on, as the sandbox configures) applies
/// exactly when OpenCode pruned there, and selects the same parts.
fn check_prunes(events: &[Envelope]) -> usize {
    let mut policy = recorded_policy(events);
    policy.prune = true;
    let mut state = SessionState::new();
    let mut prunes = 0;
    let mut i = 0;
    while i < events.len() {
        let turn_ends = match &events[i].event {
            Event::MessageAppended {
                role: ctxlog_core::Role::User,
                synthetic: false,
                ..
            } => state.session.is_some() && !state.messages.is_empty(),
            _ => false,
        };
        if turn_ends {
            let plan = ctxlog_core::prune::plan_prune(&state, &policy);
            let recorded = match &events[i - 1].event {
                Event::PartsPruned { parts, .. } => Some(parts.clone()),
                _ => None,
            };
            let ours = plan.apply.then(|| plan.parts.clone());
            // The recorded prune was already applied to `state`: compare the
            // plan made before it.
            if recorded.is_none() {
                assert_eq!(
                    ours, None,
                    "before seq {}: ctxlog would prune, OpenCode did not",
                    events[i].seq
                );
            }
        }
        // OpenCode stamps each part it clears with its own time, so one prune
        // pass imports as a run of adjacent `PartsPruned` events.
        let run_len = events[i..]
            .iter()
            .take_while(|e| matches!(e.event, Event::PartsPruned { .. }))
            .count();
        if run_len > 0 {
            let plan = ctxlog_core::prune::plan_prune(&state, &policy);
            let mut ours: Vec<_> = plan.parts.iter().map(|p| p.part).collect();
            let mut theirs: Vec<_> = events[i..i + run_len]
                .iter()
                .flat_map(|e| match &e.event {
                    Event::PartsPruned { parts, .. } => parts.iter().map(|p| p.part).collect(),
                    _ => Vec::new(),
                })
                .collect();
            ours.sort();
            theirs.sort();
            assert!(
                plan.apply,
                "seq {}: OpenCode pruned, ctxlog would not",
                events[i].seq
            );
            assert_eq!(ours, theirs, "seq {}: pruned parts differ", events[i].seq);
            prunes += 1;
            for e in &events[i..i + run_len] {
                state.evolve(e).unwrap();
            }
            i += run_len;
            continue;
        }
        state.evolve(&events[i]).unwrap();
        i += 1;
    }
    prunes
}

/// Nine turns, each one bash call of 44,000 characters (440 lines of 99
/// digits and a newline, 11,000 estimated tokens) and a short answer, with
/// small usage: pruning, not compaction, is exercised. With protect 40,000
/// and minimum 20,000 the first pass clears calls 1 and 2 after turn 7; the
/// second, after turn 9, clears 3 and 4 and stops at the cleared call 2.
#[test]
fn prune_over_many_large_tool_outputs() {
    let mut script = Script::default();
    let big = "for i in $(seq 1 440); do printf '%099d\\n' $i; done";
    for n in 1..=9u64 {
        script.agent.push_back(Reply::bash(
            &format!("call_{n:04}"),
            big,
            5_000 + n * 11_000,
            20,
        ));
        script.agent.push_back(Reply::text(
            &format!("Turn {n} done."),
            6_000 + n * 11_000,
            5,
        ));
    }
    let prompts = [
        Action::ReadDatabaseMeanwhile,
        Action::Prompt("turn one"),
        Action::Prompt("turn two"),
        Action::Prompt("turn three"),
        Action::Prompt("turn four"),
        Action::Prompt("turn five"),
        Action::Prompt("turn six"),
        Action::Prompt("turn seven"),
        Action::Prompt("turn eight"),
        Action::Prompt("turn nine"),
    ];
    let Some(run) = run("prune", script, model(400_000), &prompts) else {
        return;
    };
    let events = check_all(&run);
    assert_eq!(check_overflow_decisions(&events), 0);
    assert!(check_prunes(&events) >= 2, "{:?}", dir_of(&run));
    assert!(
        run.snapshots.len() > 1,
        "the database was read while OpenCode worked"
    );
}

#[test]
fn two_compactions() {
    let mut script = Script::default();
    script.agent.extend([
        Reply::bash("call_0001", "seq 1 700", 20_000, 20),
        Reply::text("One.", 97_000, 3),
        Reply::text("Resumed once.", 5_000, 3),
        Reply::bash("call_0002", "seq 1 800", 40_000, 20),
        // 95,997 + 3 = 96,000 = usable exactly: OpenCode compacts (`>=`).
        Reply::text("Two.", 95_997, 3),
        Reply::text("Resumed twice.", 5_000, 3),
    ]);
    script.summary.extend([
        Reply::text("## Objective\n- First summary.", 9_000, 20),
        Reply::text("## Objective\n- Second summary.", 9_000, 20),
    ]);
    let Some(run) = run(
        "two",
        script,
        model(100_000),
        &[Action::Prompt("first turn"), Action::Prompt("second turn")],
    ) else {
        return;
    };
    let events = check_all(&run);
    assert_eq!(check_overflow_decisions(&events), 2, "{:?}", dir_of(&run));
}

#[test]
fn manual_compaction() {
    let mut script = Script::default();
    script.agent.extend([
        Reply::bash("call_0001", "seq 1 300", 8_000, 20),
        Reply::text("Done.", 9_000, 3),
        Reply::text("After the manual compaction.", 2_000, 3),
    ]);
    script
        .summary
        .push_back(Reply::text("## Objective\n- Manual summary.", 3_000, 20));
    let Some(run) = run(
        "manual",
        script,
        model(100_000),
        &[
            Action::Prompt("first turn"),
            Action::Summarize,
            Action::Prompt("after compacting"),
        ],
    ) else {
        return;
    };
    let events = check_all(&run);
    assert_eq!(check_overflow_decisions(&events), 0);
}

#[test]
fn provider_context_length_error() {
    let mut script = Script::default();
    script.agent.extend([
        Reply::bash("call_0001", "seq 1 300", 30_000, 20),
        Reply::text("One.", 31_000, 3),
        Reply::context_length_exceeded(),
        Reply::text("Answered the replayed prompt.", 4_000, 3),
    ]);
    script
        .summary
        .push_back(Reply::text("## Objective\n- After the refusal.", 3_000, 20));
    let Some(run) = run(
        "refused",
        script,
        model(100_000),
        &[
            Action::Prompt("first turn"),
            Action::Prompt("a prompt too large"),
        ],
    ) else {
        return;
    };
    let events = check_all(&run);
    assert_eq!(check_resume(&events), 1, "{:?}", dir_of(&run));
}

/// The very first prompt is refused: nothing before it can be kept, so the
/// whole history is summarized and OpenCode continues with its overflow note.
#[test]
fn provider_refuses_the_first_prompt() {
    let mut script = Script::default();
    script.agent.extend([
        Reply::context_length_exceeded(),
        Reply::text("Continued after the refusal.", 4_000, 3),
    ]);
    script
        .summary
        .push_back(Reply::text("## Objective\n- Refused at once.", 3_000, 20));
    let Some(run) = run(
        "refused-first",
        script,
        model(100_000),
        &[Action::Prompt("an enormous first prompt")],
    ) else {
        return;
    };
    let events = check_all(&run);
    assert_eq!(check_resume(&events), 1, "{:?}", dir_of(&run));
}

#[test]
fn failed_summary() {
    let mut script = Script::default();
    script.agent.extend([
        Reply::bash("call_0001", "seq 1 300", 50_000, 20),
        Reply::text("One.", 97_000, 3),
        // Below the threshold: one compaction, the failed one.
        Reply::text("Answered with the whole history.", 60_000, 3),
    ]);
    script.summary.push_back(Reply::context_length_exceeded());
    let Some(run) = run(
        "failed",
        script,
        model(100_000),
        &[Action::Prompt("first turn"), Action::Prompt("next prompt")],
    ) else {
        return;
    };
    let events = check_all(&run);
    let failed = events
        .iter()
        .filter(|e| matches!(e.event, Event::CompactionFailed { .. }))
        .count();
    assert_eq!(failed, 1, "{:?}", dir_of(&run));
    assert_eq!(check_simulation(&events), 1);
}

#[test]
fn automatic_compaction_and_continue() {
    let mut script = Script::default();
    script.agent.extend([
        Reply::bash("call_0001", "seq 1 200", 11_000, 20),
        Reply::text("First turn done.", 11_900, 10),
        Reply::bash("call_0002", "seq 1 900", 60_000, 20),
        // 97,037 >= usable 96,000: compaction before the next call
        Reply::bash("call_0003", "seq 1 100", 97_000, 37),
        Reply::text("Picked up after the summary.", 3_000, 10),
    ]);
    script.summary.push_back(Reply::text(
        "## Objective\n- Scripted summary one.",
        9_000,
        50,
    ));
    let Some(run) = run(
        "auto",
        script,
        model(100_000),
        &[
            Action::ReadDatabaseMeanwhile,
            Action::Prompt("first turn"),
            Action::Prompt("second turn"),
        ],
    ) else {
        return;
    };
    let events = check_all(&run);
    assert_eq!(check_overflow_decisions(&events), 1, "{:?}", dir_of(&run));
    assert!(
        run.snapshots.len() > 1,
        "the database was read while OpenCode worked"
    );
}

/// Every recording ctxlog reads (the fixtures of each format, and the real
/// sessions in `../shared/sessions` when present), imported and exported,
/// is accepted by `opencode import`, and OpenCode's export of it imports
/// back into ctxlog as the same session (the same export, but for the fields
/// OpenCode's import sets itself).
#[test]
fn every_recorded_format_round_trips_through_opencode() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(bin) = opencode() else {
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<(PathBuf, Format)> = Vec::new();
    for dir in ["fixtures/sessions", "../shared/sessions"] {
        for (format, kind) in [
            ("opencode", Format::OpenCode),
            ("claude-code", Format::ClaudeCode),
            ("codex", Format::Codex),
            ("pi", Format::Pi),
        ] {
            let Ok(entries) = std::fs::read_dir(root.join(dir).join(format)) else {
                if dir.starts_with("../shared") {
                    eprintln!("SKIPPED: {dir}/{format} is absent");
                }
                continue;
            };
            let mut found: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            found.sort();
            files.extend(found.into_iter().map(|f| (f, kind)));
        }
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("opencode-formats");
    let _ = std::fs::remove_dir_all(&dir);
    let mut failures = Vec::new();
    for (n, (file, format)) in files.iter().enumerate() {
        let reader = std::io::BufReader::new(std::fs::File::open(file).unwrap());
        let name = file.display().to_string();
        let imported = ctxlog_import::import(reader, &name, *format, &ImportOptions::default())
            .unwrap_or_else(|e| panic!("ctxlog cannot import {name}: {e}"));
        let out = dir.join(format!("export-{n:02}.json"));
        let mut ours = Vec::new();
        ctxlog_import::export::opencode(
            &finished_steps(imported.events.to_vec().unwrap()),
            &mut ours,
        )
        .expect("export");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&out, &ours).unwrap();
        let back = match through_opencode(&bin, &dir.join(format!("sandbox-{n:02}")), &out) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!(
                    "{name}: OpenCode refuses ctxlog's export {}: {e}",
                    out.display()
                ));
                continue;
            }
        };
        // Back into ctxlog, and out again: the same export.
        let text = serde_json::to_vec(&back).unwrap();
        let again = ctxlog_import::import(
            &text[..],
            "back",
            Format::OpenCode,
            &ImportOptions::default(),
        )
        .unwrap_or_else(|e| panic!("ctxlog cannot import OpenCode's export of {name}: {e}"));
        let mut twice = Vec::new();
        ctxlog_import::export::opencode(&again.events.to_vec().unwrap(), &mut twice)
            .expect("export");
        let (first, second): (Value, Value) = (
            serde_json::from_slice(&ours).unwrap(),
            serde_json::from_slice(&twice).unwrap(),
        );
        if let Some(d) = first_difference(
            &without_step_finish_times(without_import_fields(first)),
            &without_step_finish_times(without_import_fields(second)),
            "",
        ) {
            failures.push(format!(
                "{name}: ctxlog → OpenCode → ctxlog changed {d} (before | after; export in {})",
                out.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "the round trip through OpenCode fails for:\n{}",
        failures.join("\n")
    );
    assert!(files.len() >= 4, "the fixtures of every format were read");
}
