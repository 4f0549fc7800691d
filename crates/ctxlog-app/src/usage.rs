//! Usage and cost rollups: every model call the stored recordings and
//! native sessions record (their steps and their summaries), summed by
//! day, week, month, session, project, model or agent, with a total.
//!
//! - Tokens are the calls' recorded counts; `total` is the sum of their
//!   recorded totals (the provider's, else the sum of the five counts). A
//!   step whose end is not recorded yet counts with the usage it reported
//!   so far, as `sessions` counts it.
//! - Cost is the recording's own where it gives one (OpenCode, pi), else
//!   estimated from [`crate::pricing`] and marked so; a call whose model
//!   has no price adds no cost and is counted in `unpriced_calls`.
//! - Sessions derived by ctxlog (kept simulations, `@manual` copies) and
//!   versions of a recording that a newer one replaced are left out: their
//!   calls were never made, or are counted in the session they copy.

use crate::catalog;
use crate::dates::Zone;
use crate::pricing::PriceTable;
use crate::sessions::project_of;
use ctxlog_core::{
    description_stream, Event, MessageId, ModelRef, SessionAbout, StepTokens, TokenUsage,
};
use ctxlog_store::{EventLog, ReadError};
use serde::Serialize;
use std::collections::BTreeMap;

/// What the rows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum GroupBy {
    /// The day a call was made, in the zone asked for.
    #[default]
    Day,
    /// Its ISO week, named by its Monday.
    Week,
    /// Its month.
    Month,
    /// Its session (the recording's id).
    Session,
    /// Its project (the directory's last components).
    Project,
    /// Its model.
    Model,
    /// Its agent (without version).
    Agent,
}

/// Which calls count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageFilter {
    /// Only calls made at or after this time, ms.
    pub since: Option<u64>,
    /// Only calls made before this time, ms.
    pub until: Option<u64>,
    /// Only sessions whose agent contains this text (case ignored).
    pub agent: Option<String>,
    /// Only sessions whose directory contains this text (case ignored).
    pub project: Option<String>,
}

/// The figures of a group (or of all).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens (without reasoning).
    pub output: u64,
    /// Reasoning tokens.
    pub reasoning: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// The sum of the calls' recorded totals.
    pub total: u64,
    /// Model steps.
    pub steps: u64,
    /// Completed compactions (their summaries' calls are counted in the
    /// tokens).
    pub compactions: u64,
    /// Prunes (each clears one or more tool outputs).
    pub prunes: u64,
    /// The cost in US dollars: recorded, plus estimated where the recording
    /// gives none; `None` when no call has either.
    pub cost_usd: Option<f64>,
    /// Part of the cost is estimated from list prices.
    pub cost_estimated: bool,
    /// Calls with neither a recorded cost nor a price for their model.
    pub unpriced_calls: u64,
}

impl Figures {
    /// Adds one call's usage and cost (counts saturate: a recording's
    /// counts can be anything).
    fn add_call(&mut self, tokens: &TokenUsage, cost: Cost) {
        let t = StepTokens::of(tokens);
        self.add(&Figures {
            input: t.input,
            output: t.output,
            reasoning: t.reasoning,
            cache_read: t.cache_read,
            cache_write: t.cache_write,
            total: t.total,
            cost_usd: match cost {
                Cost::Recorded(usd) | Cost::Estimated(usd) => Some(usd),
                Cost::Unknown => None,
            },
            cost_estimated: matches!(cost, Cost::Estimated(_)),
            unpriced_calls: u64::from(matches!(cost, Cost::Unknown)),
            ..Figures::default()
        });
    }

    /// Adds `other`'s figures to these.
    fn add(&mut self, other: &Figures) {
        let sum = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        sum(&mut self.input, other.input);
        sum(&mut self.output, other.output);
        sum(&mut self.reasoning, other.reasoning);
        sum(&mut self.cache_read, other.cache_read);
        sum(&mut self.cache_write, other.cache_write);
        sum(&mut self.total, other.total);
        sum(&mut self.steps, other.steps);
        sum(&mut self.compactions, other.compactions);
        sum(&mut self.prunes, other.prunes);
        sum(&mut self.unpriced_calls, other.unpriced_calls);
        if let Some(c) = other.cost_usd {
            *self.cost_usd.get_or_insert(0.0) += c;
        }
        self.cost_estimated |= other.cost_estimated;
    }
}

/// A row: its key and figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// The day, week, month, session, project, model or agent.
    pub key: String,
    /// Its figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// The rollup.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Usage {
    /// What the groups are.
    pub by: GroupBy,
    /// The groups, in key order.
    pub groups: Vec<Group>,
    /// All groups summed.
    pub total: Figures,
    /// Sessions that do not read, each naming itself and why (their calls
    /// are not counted).
    pub unreadable: Vec<String>,
}

/// A call's cost.
#[derive(Debug, Clone, Copy)]
enum Cost {
    Recorded(f64),
    Estimated(f64),
    Unknown,
}

/// What a session says about itself, as a rollup needs it.
struct SessionKeys {
    name: String,
    about: SessionAbout,
}

/// The rollup of every session of `log` that `filter` keeps, grouped `by`,
/// days in `zone`, costs estimated from `prices`.
pub fn usage(
    log: &impl EventLog,
    by: GroupBy,
    filter: &UsageFilter,
    zone: &Zone,
    prices: &PriceTable,
) -> Result<Usage, ReadError> {
    let mut groups: BTreeMap<String, Figures> = BTreeMap::new();
    let mut unreadable = Vec::new();
    for (session, _) in catalog::sessions(log)? {
        // A session's figures count only once it read to its end.
        let mut own: BTreeMap<String, Figures> = BTreeMap::new();
        match session_usage(log, session, by, filter, zone, prices, &mut own) {
            Ok(()) => {
                for (key, figures) in own {
                    groups.entry(key).or_default().add(&figures);
                }
            }
            Err(e) => unreadable.push(format!("session {session}: {e}")),
        }
    }
    let mut total = Figures::default();
    let mut groups: Vec<Group> = groups
        .into_iter()
        .map(|(key, figures)| {
            total.add(&figures);
            Group { key, figures }
        })
        .collect();
    for f in groups
        .iter_mut()
        .map(|g| &mut g.figures)
        .chain([&mut total])
    {
        f.cost_usd = f.cost_usd.map(to_micro_dollars);
    }
    Ok(Usage {
        by,
        groups,
        total,
        unreadable,
    })
}

/// What session `session` (whose first event is `first`) says about
/// itself, or `None` for a session ctxlog derived (a kept simulation, a
/// `@manual` copy), whose calls never happened or are its recording's.
fn session_keys(
    log: &impl EventLog,
    session: ctxlog_core::SessionId,
    first: Option<&Event>,
) -> Result<Option<SessionKeys>, ReadError> {
    let name = match first {
        Some(Event::SessionStarted {
            source_id: Some(s),
            policy,
            ..
        }) => {
            let manual = s
                .rsplit_once('@')
                .is_some_and(|(_, suffix)| suffix == catalog::MANUAL);
            if manual || crate::sessions::simulation_of(s, &policy.name).is_some() {
                return Ok(None);
            }
            s.clone()
        }
        _ => session.to_string(),
    };
    let mut about = SessionAbout::default();
    for e in log.read(description_stream(session), 1)? {
        if let Event::SessionDescribed { about: a } = e?.event {
            about = a;
        }
    }
    Ok(Some(SessionKeys { name, about }))
}

/// Whether `filter` keeps the session described by `keys`.
fn keeps(filter: &UsageFilter, keys: &SessionKeys) -> bool {
    let contains = |have: &Option<String>, want: &Option<String>| {
        want.as_ref().is_none_or(|w| {
            have.as_deref()
                .unwrap_or("")
                .to_lowercase()
                .contains(&w.to_lowercase())
        })
    };
    contains(&keys.about.agent, &filter.agent) && contains(&keys.about.directory, &filter.project)
}

/// Adds `session`'s calls to `groups` (its own: a replaced session
/// leaves it empty).
fn session_usage(
    log: &impl EventLog,
    session: ctxlog_core::SessionId,
    by: GroupBy,
    filter: &UsageFilter,
    zone: &Zone,
    prices: &PriceTable,
    groups: &mut BTreeMap<String, Figures>,
) -> Result<(), ReadError> {
    // One read of the session: its first event says what it is.
    let mut events = log.read(session, 1)?.peekable();
    let first = match events.peek() {
        Some(Ok(e)) => Some(&e.event),
        _ => None,
    };
    let keys = match session_keys(log, session, first)? {
        Some(keys) if keeps(filter, &keys) => keys,
        _ => return Ok(()),
    };
    let mut fold = SessionFold {
        keys: &keys,
        by,
        filter,
        zone,
        prices,
        models: BTreeMap::new(),
        open: BTreeMap::new(),
        in_use: None,
    };
    for e in events {
        let e = e?;
        let at = e.recorded_at;
        match &e.event {
            Event::MessageAppended {
                message,
                model: Some(model),
                ..
            } => {
                fold.models.insert(*message, model.clone());
            }
            Event::UsageReported { message, tokens } => {
                fold.open.insert(*message, (*tokens, at));
            }
            Event::StepFinished {
                message,
                tokens,
                cost_micros,
                ..
            } => {
                fold.open.remove(message);
                fold.step(groups, message, tokens, *cost_micros, at);
            }
            Event::SummaryCompleted { tokens, .. } if fold.in_range(at) => {
                let model = fold.in_use_model();
                let figures = groups.entry(fold.key(model, at)).or_default();
                figures.compactions += 1;
                if tokens != &TokenUsage::default() {
                    figures.add_call(tokens, cost_of(tokens, None, model, prices));
                }
            }
            // A newer version of the recording holds these calls again.
            Event::SessionReplaced { .. } => {
                groups.clear();
                return Ok(());
            }
            Event::PartsPruned { .. } if fold.in_range(at) => {
                let key = fold.key(fold.in_use_model(), at);
                groups.entry(key).or_default().prunes += 1;
            }
            _ => {}
        }
    }
    for (message, (tokens, at)) in std::mem::take(&mut fold.open) {
        fold.step(groups, &message, &tokens, None, at);
    }
    Ok(())
}

/// One session's calls, read an event at a time by [`session_usage`].
struct SessionFold<'a> {
    keys: &'a SessionKeys,
    by: GroupBy,
    filter: &'a UsageFilter,
    zone: &'a Zone,
    prices: &'a PriceTable,
    /// The model of each step's message.
    models: BTreeMap<MessageId, ModelRef>,
    /// The usage reported so far of steps whose end is not recorded yet:
    /// counted when the events end before their end (the agent was still
    /// writing, or a call waits for its result).
    open: BTreeMap<MessageId, (TokenUsage, u64)>,
    /// The step of the last call that reported usage on a known model:
    /// its model is what a compaction, a prune or a request aborted before
    /// any usage is grouped with (the session's model, its last selected,
    /// may never have been used).
    in_use: Option<MessageId>,
}

impl SessionFold<'_> {
    fn in_range(&self, at: u64) -> bool {
        self.filter.since.is_none_or(|t| at >= t) && self.filter.until.is_none_or(|t| at < t)
    }

    /// The model of the step of `message`, when recorded.
    fn model_of(&self, message: &MessageId) -> Option<&str> {
        self.models.get(message).map(|m| m.model.as_str())
    }

    /// The model a call that is not a step of its own goes with.
    fn in_use_model(&self) -> Option<&str> {
        self.in_use
            .and_then(|m| self.model_of(&m))
            .or(self.keys.about.model.as_deref())
    }

    /// The group of a call made at `at` with `model`.
    fn key(&self, model: Option<&str>, at: u64) -> String {
        key_of(self.by, self.keys, model, at, self.zone)
    }

    /// Counts the step of `message` that reported `tokens` at `at`.
    fn step(
        &mut self,
        groups: &mut BTreeMap<String, Figures>,
        message: &MessageId,
        tokens: &TokenUsage,
        cost_micros: Option<u64>,
        at: u64,
    ) {
        let used = StepTokens::of(tokens).total > 0 || cost_micros.is_some();
        if used && self.models.contains_key(message) {
            self.in_use = Some(*message);
        }
        if !self.in_range(at) {
            return;
        }
        let model = self.model_of(message);
        let grouped = if used {
            model
        } else {
            self.in_use.and_then(|m| self.model_of(&m))
        };
        let key = self.key(grouped, at);
        let priced = model.or(self.keys.about.model.as_deref());
        let cost = cost_of(tokens, cost_micros, priced, self.prices);
        let figures = groups.entry(key).or_default();
        figures.steps += 1;
        figures.add_call(tokens, cost);
    }
}

/// `usd` rounded to micro-dollars (sums of float prices carry noise).
fn to_micro_dollars(usd: f64) -> f64 {
    (usd * 1_000_000.0).round() / 1_000_000.0
}

/// A call's cost: recorded, else at `model`'s list prices.
fn cost_of(
    tokens: &TokenUsage,
    recorded: Option<u64>,
    model: Option<&str>,
    prices: &PriceTable,
) -> Cost {
    if let Some(micros) = recorded {
        return Cost::Recorded(micros as f64 / 1_000_000.0);
    }
    match model.and_then(|m| prices.prices(m)) {
        Some(p) => Cost::Estimated(p.cost(tokens)),
        None if StepTokens::of(tokens).total == 0 => Cost::Estimated(0.0),
        None => Cost::Unknown,
    }
}

/// The group of a call made at `at` with `model` in a session.
fn key_of(by: GroupBy, keys: &SessionKeys, model: Option<&str>, at: u64, zone: &Zone) -> String {
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    match by {
        GroupBy::Day => zone.day(at),
        GroupBy::Week => zone.week(at),
        GroupBy::Month => zone.month(at),
        GroupBy::Session => keys.name.clone(),
        GroupBy::Project => or_dash(keys.about.directory.as_deref().map(project_of)),
        GroupBy::Model => or_dash(model.or(keys.about.model.as_deref()).map(model_family)),
        GroupBy::Agent => or_dash(
            keys.about
                .agent
                .as_deref()
                .map(|a| without_version(a).to_owned()),
        ),
    }
}

/// A model as `usage --by model` groups it: without its provider
/// (`anthropic/…`) and its date snapshot (`claude-sonnet-4-5-20250929`,
/// Vertex's `claude-sonnet-4-5@20250929` → `claude-sonnet-4-5`), which
/// name the same model.
pub fn model_family(model: &str) -> String {
    let model = model.rsplit('/').next().unwrap_or(model);
    let dated = |tail: &str| tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit());
    match model.rfind(['-', '@']) {
        Some(i) if dated(&model[i + 1..]) && i > 0 => model[..i].to_owned(),
        _ => model.to_owned(),
    }
}

/// `claude-code-2.0.5` → `claude-code`.
pub fn without_version(agent: &str) -> &str {
    match agent.rsplit_once('-') {
        Some((name, v)) if v.starts_with(|c: char| c.is_ascii_digit()) => name,
        _ => agent,
    }
}

#[cfg(test)]
mod tests {
    use super::model_family;

    #[test]
    fn a_models_date_snapshot_and_provider_name_the_same_model() {
        for (model, family) in [
            ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
            ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
            ("gpt-5.1-codex", "gpt-5.1-codex"),
            ("gpt-4o-2024-08-06", "gpt-4o-2024-08-06"),
            ("model-12345678x", "model-12345678x"),
        ] {
            assert_eq!(model_family(model), family);
        }
    }
}
