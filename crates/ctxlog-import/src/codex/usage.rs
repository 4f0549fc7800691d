//! Usage reports: `token_count` (the step it reports on), 0.169's
//! `token_usage_record` (the usage that ends a step), and the context
//! window a rollout records.

use super::{Importer, Step};
use crate::strict;
use crate::ImportError;
use ctxlog_core::TokenUsage;
use serde_json::Value;

/// A Codex usage (`input_tokens` with its cached part, `output_tokens`
/// with its reasoning part) the OpenCode way.
pub(super) fn usage(u: &Value) -> Result<TokenUsage, String> {
    let n = |k: &str| Ok::<_, String>(strict::count(u, k)?.unwrap_or(0));
    let input = n("input_tokens")?;
    let cached = n("cached_input_tokens")?.min(input);
    let output = n("output_tokens")?;
    let reasoning = n("reasoning_output_tokens")?.min(output);
    Ok(TokenUsage {
        total: strict::count(u, "total_tokens")?,
        input: input - cached,
        output: output - reasoning,
        reasoning,
        cache_read: cached,
        cache_write: 0,
    })
}

impl Importer<'_> {
    /// A usage report: the step it reports on (a new one after step items).
    pub(super) fn token_count(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        let Some(info) = p.get("info").filter(|i| !i.is_null()) else {
            return Ok(());
        };
        let u = info
            .get("last_token_usage")
            .ok_or_else(|| self.err("field `payload.info.last_token_usage` missing"))?;
        if !u.is_object() {
            return Err(self.err("field `payload.info.last_token_usage` is not an object"));
        }
        // A repeated report (same running total) is no new request.
        let total = info.get("total_token_usage").cloned();
        if total.is_some() && total == self.last_total {
            return Ok(());
        }
        self.last_total = total;
        if self.step.as_ref().is_some_and(|s| !s.is_empty()) {
            self.close_step(false)?;
        }
        // The window applies from this request on, not to the one closed.
        let window = strict::count(info, "model_context_window")
            .map_err(|e| self.err(format!("payload.info: {e}")))?;
        if let Some(w) = window {
            self.b.set_file_context(at, w)?;
        }
        let usage =
            usage(u).map_err(|e| self.err(format!("payload.info.last_token_usage: {e}")))?;
        let line = self.line;
        let s = self.step(at);
        s.usage = Some(usage);
        if s.message.is_none() && s.items.is_empty() {
            s.first_line = line;
        }
        Ok(())
    }

    /// A 0.169 `token_usage_record`: the usage of the items since the
    /// previous one, which it ends; a step of text only is held (see
    /// [`Importer::held`]).
    pub(super) fn usage_record(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        // Only 0.169 and later write these, whatever `cli_version` says.
        self.since_0_169 = true;
        let u = p
            .get("usage")
            .filter(|u| u.is_object())
            .ok_or_else(|| self.err("field `payload.usage` missing or not an object"))?;
        let usage = usage(u).map_err(|e| self.err(format!("payload.usage: {e}")))?;
        if let Some(held) = self.held.take() {
            self.write_step(held, false)?;
        }
        let line = self.line;
        let mut s = self.step.take().unwrap_or(Step {
            start: at,
            at,
            ..Step::default()
        });
        s.usage = Some(usage);
        if s.message.is_none() && s.items.is_empty() {
            s.first_line = line;
        }
        if !s.has_tool {
            self.held = Some(s);
        } else {
            self.write_step(s, false)?;
        }
        Ok(())
    }

    /// The configured context window, from a 0.169 line's
    /// `model_context_window` (95 % of it).
    pub(super) fn context_window(&mut self, p: &Value, at: u64) -> Result<(), ImportError> {
        let recorded = strict::count(p, "model_context_window")
            .map_err(|e| self.err(format!("payload: {e}")))?;
        match recorded {
            Some(w) => self.b.set_file_context(at, configured_window(w)),
            None => Ok(()),
        }
    }
}

/// The configured context window of a 0.169 rollout's recorded one (Codex
/// records 95 % of it), rounded to the nearest token.
fn configured_window(recorded: u64) -> u64 {
    ((u128::from(recorded) * 100 + 47) / 95) as u64
}
