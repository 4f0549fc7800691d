//! The session list: one [`SessionRow`] per stored session (or an
//! [`UnreadableRow`] saying why it does not read), filtered and ordered.
//! `ctxlog sessions` prints it as a table or as JSON; Python's
//! `Store.sessions()` gives the same rows.

use crate::catalog;
use ctxlog_core::{JobStatus, SessionId, SessionState};
use ctxlog_store::{EventLog, ReadError};
use serde::Serialize;

/// One session as the list shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRow {
    /// ctxlog's id of the session.
    pub session: String,
    /// Its name: the recording's own id, the Agents SDK's `session_id`, or
    /// `<source>@<policy>` for a kept simulation.
    pub source_session: Option<String>,
    /// Its title: the agent's own (the latest description's, else the
    /// recorded one), else its first real prompt ([`crate::titles`]).
    pub title: Option<String>,
    /// When it started, ms since the epoch.
    pub started_at: u64,
    /// The same, RFC 3339 in UTC.
    pub date: String,
    /// Events stored.
    pub events: u64,
    /// Messages.
    pub messages: u64,
    /// Messages withdrawn (`pop_item`, `clear_session`); the log keeps
    /// them.
    pub withdrawn: u64,
    /// Model steps.
    pub steps: u64,
    /// The largest total tokens a step reported.
    pub peak_tokens: u64,
    /// Completed compactions.
    pub compactions: usize,
    /// Tool outputs cleared now.
    pub pruned_parts: u64,
    /// The compaction policy in force.
    pub policy: String,
    /// The model's context window in tokens; 0: no automatic compaction.
    pub context_limit: u64,
    /// The estimated tokens of what the model sees now.
    pub window_tokens: u64,
    /// The directory the agent ran in.
    pub directory: Option<String>,
    /// The project: the directory's last [`PROJECT_COMPONENTS`]
    /// components.
    pub project: Option<String>,
    /// The agent that recorded it (`simulated` for a kept simulation).
    pub agent: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// What it cost, as the agent recorded it.
    pub cost_usd: Option<f64>,
    /// The newer version of the recording that replaced it.
    pub replaced_by: Option<String>,
    /// Its last import was cut short: importing the recording again
    /// completes it.
    pub interrupted: bool,
    /// For a kept simulation: what it simulates, under which policy.
    pub simulation: Option<Simulation>,
    /// The last time an agent's hook brought it in: when, and at which
    /// moment ("captured at Stop").
    pub captured: Option<CapturedRow>,
    /// Its agent still runs it: the last hook that brought it in was not
    /// the session's end, and the agent's process that called it runs.
    pub live: bool,
}

/// The last capture of a session, as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapturedRow {
    /// When, ms since the epoch.
    pub at: u64,
    /// The moment in the agent's words ([`ctxlog_core::Capture::words`]).
    pub what: String,
}

/// What a kept simulation simulates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Simulation {
    /// The recording's own id (the session simulated).
    pub of: String,
    /// The policy it ran under.
    pub policy: String,
}

/// What a session named `source_id` that runs `policy` simulates: a kept
/// simulation is named `<recording id>@<policy>` after the policy it ran
/// ([`ctxlog_engine::simulate::kept_name`]). Any other `@` in a name (an
/// Agents SDK `session_id` such as `alice@support`, a `@manual` copy) is
/// not one.
pub fn simulation_of(source_id: &str, policy: &str) -> Option<Simulation> {
    let (of, suffix) = source_id.rsplit_once('@')?;
    (suffix == policy && suffix != catalog::MANUAL).then(|| Simulation {
        of: of.to_owned(),
        policy: policy.to_owned(),
    })
}

/// How many of a directory's last components name its project.
pub const PROJECT_COMPONENTS: usize = 2;

/// The project of a directory: its last [`PROJECT_COMPONENTS`] components
/// (`/home/ada/src/ctxlog` → `src/ctxlog`; Windows separators too).
pub fn project_of(directory: &str) -> String {
    let parts: Vec<&str> = directory
        .split(['/', '\\'])
        .filter(|p| !p.is_empty())
        .collect();
    let from = parts.len().saturating_sub(PROJECT_COMPONENTS);
    match parts[from..].join("/") {
        p if p.is_empty() => directory.to_owned(),
        p => p,
    }
}

/// A session that does not read (damage, or acknowledged events the
/// store lost): listed with why, never left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnreadableRow {
    /// ctxlog's id of the session.
    pub session: String,
    /// Its head.
    pub events: u64,
    /// Why it does not read, naming the session.
    pub error: String,
}

/// One line of the list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Listed {
    /// A session that reads.
    Row(Box<SessionRow>),
    /// One that does not.
    Unreadable(UnreadableRow),
}

impl Listed {
    /// The session's ctxlog id.
    pub fn session(&self) -> &str {
        match self {
            Listed::Row(r) => &r.session,
            Listed::Unreadable(u) => &u.session,
        }
    }
}

/// Which sessions to list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// `Some(true)`: only the kept simulations; `Some(false)`: only the
    /// recordings and native sessions (`ctxlog sessions`); `None`: all.
    pub simulations: Option<bool>,
    /// Only those whose agent contains this text (case ignored).
    pub agent: Option<String>,
    /// Only those whose directory contains this text (case ignored).
    pub project: Option<String>,
    /// Only those started at or after this time, ms.
    pub since: Option<u64>,
    /// Only those started before this time, ms.
    pub until: Option<u64>,
    /// Only those whose title, name, id, agent or directory contains this
    /// text (case ignored).
    pub text: Option<String>,
}

impl Filter {
    /// Whether any filter is set.
    pub fn is_set(&self) -> bool {
        self.agent.is_some()
            || self.project.is_some()
            || self.text.is_some()
            || self.since.is_some()
            || self.until.is_some()
    }

    /// Whether the list keeps `row`.
    pub fn keeps(&self, row: &SessionRow) -> bool {
        let contains = |have: &Option<String>, want: &Option<String>| {
            want.as_ref().is_none_or(|want| {
                let have = have.as_deref().unwrap_or("").to_lowercase();
                have.contains(&want.to_lowercase())
            })
        };
        self.simulations
            .is_none_or(|s| row.simulation.is_some() == s)
            && contains(&row.agent, &self.agent)
            && contains(&row.directory, &self.project)
            && self.since.is_none_or(|t| row.started_at >= t)
            && self.until.is_none_or(|t| row.started_at < t)
            && self.text.as_ref().is_none_or(|want| {
                let want = want.to_lowercase();
                [&row.title, &row.source_session, &row.agent, &row.directory]
                    .into_iter()
                    .flatten()
                    .chain(std::iter::once(&row.session))
                    .any(|have| have.to_lowercase().contains(&want))
            })
    }
}

/// What the list is ordered by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SortBy {
    /// When the session started.
    #[default]
    Date,
    /// The agent's name.
    Agent,
    /// Model steps.
    Steps,
    /// The largest total tokens a step reported.
    Peak,
    /// Events stored.
    Events,
    /// The title.
    Title,
}

/// The list, and every stored session's name (filtered or not), which a
/// front door needs to shorten names without making two alike.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    /// The sessions listed, in order.
    pub rows: Vec<Listed>,
    /// Every session's name (its source id, else its ctxlog id).
    pub all_names: Vec<String>,
    /// Every session's ctxlog id.
    pub all_ids: Vec<String>,
}

impl Listing {
    /// Why each session that does not read does not, naming it.
    pub fn unreadable(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter_map(|r| match r {
                Listed::Unreadable(u) if u.error.contains(&u.session) => Some(u.error.clone()),
                Listed::Unreadable(u) => Some(format!("session {}: {}", u.session, u.error)),
                Listed::Row(_) => None,
            })
            .collect()
    }
}

/// Lists the sessions of `log` that `filter` keeps, ordered by `sort`
/// (largest or newest first when `desc`); ties by start time, then id, so
/// the order is the same in every run. One session's state is held at a
/// time (from its newest snapshot).
pub fn list(
    log: &impl EventLog,
    filter: &Filter,
    sort: SortBy,
    desc: bool,
) -> Result<Listing, ReadError> {
    let mut listing = Listing::default();
    for (s, head) in catalog::sessions(log)? {
        listing.all_ids.push(s.to_string());
        let mut row = match untitled_row(log, s, head) {
            Ok(row) => row,
            Err(unreadable) => {
                listing.all_names.push(s.to_string());
                listing.rows.push(Listed::Unreadable(unreadable));
                continue;
            }
        };
        listing
            .all_names
            .push(row.source_session.clone().unwrap_or_else(|| s.to_string()));
        if filter.keeps(&row) {
            titled(log, s, &mut row);
            listing.rows.push(Listed::Row(Box::new(row)));
        }
    }
    sort_rows(&mut listing.rows, sort, desc);
    Ok(listing)
}

/// The line of session `s` (head `head`) as [`list`] has it, unfiltered:
/// for a front door that keeps the list and reads again only the sessions
/// that changed.
pub fn row(log: &impl EventLog, s: SessionId, head: u64) -> Listed {
    match untitled_row(log, s, head) {
        Ok(mut row) => {
            titled(log, s, &mut row);
            Listed::Row(Box::new(row))
        }
        Err(unreadable) => Listed::Unreadable(unreadable),
    }
}

/// The row of `s` titled by the agent's own title only, with its last
/// capture, or why it does not read.
fn untitled_row(log: &impl EventLog, s: SessionId, head: u64) -> Result<SessionRow, UnreadableRow> {
    let listed = catalog::load_listed(log, s).map_err(|e| UnreadableRow {
        session: s.to_string(),
        events: head,
        error: e.to_string(),
    })?;
    let mut row = row_of(s, head, &listed.loaded.state, listed.interrupted);
    if let Some((at, capture)) = &listed.last_capture {
        row.captured = Some(CapturedRow {
            at: *at,
            what: capture.words(),
        });
        row.live = !capture.moment.ends_session()
            && capture
                .process
                .as_ref()
                .is_some_and(crate::hooks::is_running);
    }
    Ok(row)
}

/// Titles an untitled `row` by its first real prompt.
fn titled(log: &impl EventLog, s: SessionId, row: &mut SessionRow) {
    if row.title.is_none() {
        // A session whose first events do not read is untitled; its
        // state read, so it is listed.
        row.title = crate::titles::first_prompt(log, s).ok().flatten();
    }
}

/// The row of session `s` (head `head`) in state `st`, titled by the
/// agent's own title only (a [`list`] falls back to the first prompt).
pub fn row_of(s: SessionId, head: u64, st: &SessionState, interrupted: bool) -> SessionRow {
    let about = st.about.as_ref();
    let simulation = st
        .source_id
        .as_deref()
        .and_then(|s| simulation_of(s, &st.policy.name));
    let agent = about
        .and_then(|a| a.agent.clone())
        .or_else(|| simulation.is_some().then(|| "simulated".to_owned()));
    let directory = about.and_then(|a| a.directory.clone());
    let tally = st.tally();
    SessionRow {
        session: s.to_string(),
        source_session: st.source_id.clone(),
        title: about
            .and_then(|a| a.title.clone())
            .or_else(|| st.title.clone()),
        started_at: st.started_at,
        date: ctxlog_import::time::format_rfc3339_ms(st.started_at),
        events: head,
        messages: tally.messages,
        withdrawn: tally.withdrawn,
        steps: tally.steps,
        peak_tokens: tally.peak_tokens,
        compactions: st
            .jobs
            .iter()
            .filter(|j| matches!(j.status, JobStatus::Completed { .. }))
            .count(),
        pruned_parts: tally.pruned_parts,
        policy: st.policy.name.clone(),
        context_limit: st.limits.context,
        window_tokens: ctxlog_core::window::estimate_window(st),
        project: directory.as_deref().map(project_of),
        directory,
        agent,
        model: about.and_then(|a| a.model.clone()),
        cost_usd: about.and_then(|a| a.cost_usd),
        replaced_by: st.replaced_by.map(|r| r.to_string()),
        interrupted,
        simulation,
        captured: None,
        live: false,
    }
}

/// Orders `rows` as [`list`] does.
pub fn sort_rows(rows: &mut [Listed], by: SortBy, desc: bool) {
    let key = |r: &Listed| -> (String, u64) {
        let Listed::Row(r) = r else {
            return (String::new(), 0);
        };
        let text = |s: &Option<String>| s.as_deref().unwrap_or("").to_lowercase();
        match by {
            SortBy::Date => (String::new(), r.started_at),
            SortBy::Agent => (text(&r.agent), 0),
            SortBy::Steps => (String::new(), r.steps),
            SortBy::Peak => (String::new(), r.peak_tokens),
            SortBy::Events => (String::new(), r.events),
            SortBy::Title => (text(&r.title), 0),
        }
    };
    let started = |r: &Listed| match r {
        Listed::Row(r) => Some(r.started_at),
        Listed::Unreadable(_) => None,
    };
    rows.sort_by(|a, b| {
        let order = key(a)
            .cmp(&key(b))
            .then_with(|| (started(a), a.session()).cmp(&(started(b), b.session())));
        if desc {
            order.reverse()
        } else {
            order
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_a_simulation_only_under_the_policy_it_runs() {
        assert_eq!(
            simulation_of("0199812e@codex-0.169", "codex-0.169"),
            Some(Simulation {
                of: "0199812e".into(),
                policy: "codex-0.169".into()
            })
        );
        // An Agents SDK session_id with an @, a manual copy, no @.
        assert_eq!(simulation_of("alice@support", "opencode-seed"), None);
        assert_eq!(simulation_of("0199812e@manual", "manual"), None);
        assert_eq!(simulation_of("0199812e", "codex-0.169"), None);
        assert_eq!(project_of("/home/ada/src/ctxlog/"), "src/ctxlog");
        assert_eq!(project_of("C:\\work\\app"), "work/app");
        assert_eq!(project_of("/"), "/");
    }
}
