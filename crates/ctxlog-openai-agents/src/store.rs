//! [`AgentStore`]: the Agents SDK's session operations over an engine.
//! Every change is an event; what `get_items` returns is derived from the
//! session's state (which messages the window sends, which outputs a prune
//! cleared) and from [`Items`] (the JSON text of each item).

use crate::item::{session_id_for, FORMAT};
use crate::item::{ItemView, NewItem};
use crate::items::Items;
use ctxlog_core::window::COMPACTION_QUESTION;
use ctxlog_core::window::{render_message, sent_order, WindowPart};
use ctxlog_core::{MessageId, ModelLimits, PartBody, PartId, Policy};
use ctxlog_core::{SessionAbout, SessionId, SessionState, TokenUsage, ToolState};
use ctxlog_engine::{Engine, EngineError, JobOutcome, NewSession, Pruned, Session};
use ctxlog_store::{EventLog, StoreError};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Why an operation failed; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The engine refused or the log failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The log failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

ctxlog_store::log_errors_into!(AgentError, AgentError::Store);

/// What a session is opened with: `None` keeps what the session has (a
/// new session starts with ctxlog's defaults: the `opencode-seed` preset,
/// no context limit, so no automatic compaction).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// The compaction policy.
    pub policy: Option<Policy>,
    /// The model's limits.
    pub limits: Option<ModelLimits>,
}

/// What [`AgentStore::compact`] did (Python gets it as a dict of the
/// same fields).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Compaction {
    /// The assistant message whose step it finished with the usage given.
    pub step: Option<MessageId>,
    /// The count the overflow check compared, when it found an overflow.
    pub overflow: Option<u64>,
    /// The compaction jobs run (an automatic one on overflow, a forced one).
    pub jobs: Vec<JobOutcome>,
    /// What the end of the turn pruned.
    pub pruned: Option<Pruned>,
}

/// Where an item of `get_items` lives in the session: what taking it back
/// changes.
#[derive(Debug, Clone)]
enum Place {
    /// The message it is (withdrawn when taken back).
    Message(MessageId),
    /// The output of a tool part (the call waits again when taken back).
    Output(PartId),
}

/// The Agents SDK sessions of one log: one [`Items`] per open session, kept
/// caught up with the log under the session's lock.
pub struct AgentStore<L: EventLog> {
    engine: Engine<L>,
    sessions: Mutex<BTreeMap<SessionId, Arc<Mutex<Tracked>>>>,
}

/// A session's items and how far into its log they are folded.
#[derive(Debug, Default)]
struct Tracked {
    items: Items,
    head: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<L: EventLog> AgentStore<L> {
    /// Sessions over `engine`.
    pub fn new(engine: Engine<L>) -> Self {
        AgentStore {
            engine,
            sessions: Mutex::new(BTreeMap::new()),
        }
    }

    /// The engine (for views: window, audit, timeline).
    pub fn engine(&self) -> &Engine<L> {
        &self.engine
    }

    /// Opens the session named `name`, starting it when the log has none
    /// (its source id and title are the name, so `ctxlog sessions` lists
    /// it and every command finds it by the name). A policy or limits in
    /// `settings` that differ from the session's are recorded as changes.
    pub fn open(&self, name: &str, settings: &Settings) -> Result<SessionId, AgentError> {
        let session = session_id_for(name);
        let tracked = self.tracked(session);
        let _guard = lock(&tracked);
        if self.engine.store().head(session)? == 0 {
            let policy = settings
                .policy
                .clone()
                .or_else(|| Policy::preset("opencode-seed"))
                .unwrap_or_default();
            let new = NewSession {
                policy,
                limits: settings.limits.clone().unwrap_or_default(),
                title: Some(name.into()),
                source_id: Some(name.into()),
                id: Some(session),
            };
            match self.engine.create_session(new) {
                Ok(_) => {}
                // Another process (sharing a PostgreSQL log) started it
                // first: open it as it stands.
                Err(_) if self.engine.store().head(session)? > 0 => {
                    self.handle(session)?
                        .settle(settings.policy.clone(), settings.limits.clone())?;
                    return Ok(session);
                }
                Err(e) => return Err(e.into()),
            }
            let about = SessionAbout {
                title: Some(name.into()),
                agent: Some(FORMAT.into()),
                ..SessionAbout::default()
            };
            self.handle(session)?.describe(about)?;
            return Ok(session);
        }
        self.handle(session)?
            .settle(settings.policy.clone(), settings.limits.clone())?;
        Ok(session)
    }

    /// The engine's handle on `session`.
    fn handle(&self, session: SessionId) -> Result<Session<'_, L>, EngineError> {
        self.engine.session(session)
    }

    /// The tracked items of `session` (empty until caught up).
    fn tracked(&self, session: SessionId) -> Arc<Mutex<Tracked>> {
        lock(&self.sessions).entry(session).or_default().clone()
    }

    /// Runs `f` on the session's items, caught up with its log, under the
    /// session's lock; catches up again after `f` wrote.
    fn with<T>(
        &self,
        session: SessionId,
        f: impl FnOnce(&Items) -> Result<T, AgentError>,
    ) -> Result<T, AgentError> {
        let tracked = self.tracked(session);
        let mut t = lock(&tracked);
        self.catch_up(session, &mut t)?;
        let out = f(&t.items);
        self.catch_up(session, &mut t)?;
        out
    }

    /// Folds the events of `session` after `t.head`.
    fn catch_up(&self, session: SessionId, t: &mut Tracked) -> Result<(), AgentError> {
        let head = self.engine.store().head(session)?;
        if head == 0 {
            return Err(EngineError::UnknownSession(session).into());
        }
        if head > t.head {
            for e in self.engine.store().read(session, t.head + 1)? {
                let e = e?;
                t.items.evolve(&e);
                t.head = e.seq;
            }
        }
        Ok(())
    }

    /// Records `items` in one atomic append: each a message of its own,
    /// but an output, which completes its call's tool part (a message of
    /// its own too when no call waits for it).
    pub fn add_items(&self, session: SessionId, items: &[NewItem]) -> Result<(), AgentError> {
        if items.is_empty() {
            return Ok(());
        }
        self.with(session, |_| {
            let items = items.iter().map(NewItem::to_agent_item).collect();
            self.handle(session)?.add_items(items)?;
            Ok(())
        })
    }

    /// The items the model should see, the latest `limit` of them when
    /// given, in order.
    pub fn get_items(
        &self,
        session: SessionId,
        limit: Option<usize>,
    ) -> Result<Vec<ItemView>, AgentError> {
        self.with(session, |items| {
            let views = self.visible(session, items, limit)?;
            Ok(views.into_iter().map(|(v, _)| v).collect())
        })
    }

    /// Takes back the last item `get_items` gives, as it gave it: its
    /// message is withdrawn, or, for a tool output, the call waits for its
    /// output again. `None` when there is none.
    pub fn pop_item(&self, session: SessionId) -> Result<Option<ItemView>, AgentError> {
        self.with(session, |items| {
            let Some((view, place)) = self.visible(session, items, Some(1))?.pop() else {
                return Ok(None);
            };
            match place {
                Place::Message(m) => self.handle(session)?.withdraw(vec![m], "pop_item")?,
                Place::Output(part) => self.handle(session)?.reopen_call(part, "pop_item")?,
            }
            Ok(Some(view))
        })
    }

    /// Withdraws every message not withdrawn yet, in one event; returns how
    /// many. The log keeps them.
    pub fn clear(&self, session: SessionId) -> Result<usize, AgentError> {
        self.with(session, |_| {
            Ok(self.handle(session)?.withdraw_all("clear_session")?)
        })
    }

    /// The end of an agent turn: finishes the step of the last assistant
    /// message with `usage` (the window's estimate when `None`), runs the
    /// overflow check and, on overflow, the compaction it queues (a forced
    /// one too when `force`), then prunes as the policy says.
    pub fn compact(
        &self,
        session: SessionId,
        usage: Option<TokenUsage>,
        force: bool,
    ) -> Result<Compaction, AgentError> {
        self.with(session, |_| {
            let mut out = Compaction {
                step: None,
                overflow: None,
                jobs: Vec::new(),
                pruned: None,
            };
            if let Some(outcome) = self.handle(session)?.finish_open_step(usage)? {
                out.step = Some(outcome.message);
                out.overflow = outcome.overflow.filter(|o| o.overflow).map(|o| o.count);
            }
            if force {
                self.handle(session)?.request_compaction()?;
            }
            out.jobs = self.handle(session)?.run_pending()?;
            out.pruned = self.handle(session)?.end_turn()?;
            Ok(out)
        })
    }

    /// The items the window sends, with where they live (the last `last`
    /// of them when given): the pivot's question and summary first (as
    /// messages ctxlog wrote), then the items in the order they were
    /// recorded. Which items and in what order is found first; only those
    /// kept are built.
    fn visible(
        &self,
        session: SessionId,
        items: &Items,
        last: Option<usize>,
    ) -> Result<Vec<(ItemView, Place)>, AgentError> {
        let views = self.handle(session)?.query(|state| {
            let (pivot, order) = sent_order(state);
            // (seq, message index, the part index of an output)
            let mut first = Vec::new();
            let mut rest = Vec::new();
            for i in order {
                let m = &state.messages[i];
                let pinned = pivot.is_some_and(|p| m.id == p || (m.summary && m.parent == Some(p)));
                let out = if pinned { &mut first } else { &mut rest };
                out.push((m.created_seq, i, None));
                for (j, p) in m.parts.iter().enumerate() {
                    if let Some((seq, _, _)) = items.output(p.id) {
                        rest.push((seq, i, Some(j)));
                    }
                }
            }
            rest.sort_by_key(|&(seq, _, _)| seq);
            let all: Vec<_> = first.into_iter().chain(rest).collect();
            let view = |&(_, i, part): &(u64, usize, Option<usize>)| match part {
                None => message_view(state, items, i),
                Some(j) => output_view(state, items, i, j),
            };
            let Some(n) = last else {
                return all.iter().filter_map(view).collect();
            };
            // Built from the newest back, until `n` are found.
            let mut views: Vec<(ItemView, Place)> =
                all.iter().rev().filter_map(view).take(n).collect();
            views.reverse();
            views
        })?;
        Ok(views)
    }
}

/// The item message `i` is: the agent's, or one ctxlog wrote; `None` when
/// it sends nothing.
fn message_view(state: &SessionState, items: &Items, i: usize) -> Option<(ItemView, Place)> {
    let m = &state.messages[i];
    let view = match items.message(m.id) {
        Some(raw) => ItemView::Recorded {
            raw: raw.into(),
            cleared: false,
            output: None,
        },
        None => ItemView::Written {
            role: m.role,
            text: written_text(state, i)?,
        },
    };
    Some((view, Place::Message(m.id)))
}

/// The output item of part `j` of message `i`, while its call is completed.
fn output_view(
    state: &SessionState,
    items: &Items,
    i: usize,
    j: usize,
) -> Option<(ItemView, Place)> {
    let p = state.messages[i].parts.get(j)?;
    let (_, raw, in_part) = items.output(p.id)?;
    let Some(PartBody::Tool {
        state: ToolState::Completed { output, .. },
        ..
    }) = p.content()
    else {
        return None;
    };
    let pruned = p.pruned.is_some();
    let view = ItemView::Recorded {
        raw: raw.into(),
        cleared: pruned,
        output: (in_part && !pruned).then(|| output.clone()),
    };
    Some((view, Place::Output(p.id)))
}

/// The text of a message ctxlog wrote, as the window sends it.
fn written_text(state: &SessionState, i: usize) -> Option<String> {
    let m = &state.messages[i];
    if m.marker {
        return Some(COMPACTION_QUESTION.into());
    }
    let rendered = render_message(state, m)?;
    let texts: Vec<&str> = rendered
        .parts
        .iter()
        .filter_map(|p| match p {
            WindowPart::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}
