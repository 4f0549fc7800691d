//! The model in use and its limits: `LimitsChanged` whenever the limits
//! the recording itself implies change.

use super::Builder;
use crate::limits::{claude_code_2_1_output, resolve, LimitOverrides, Resolved};
use crate::{Format, ImportError};
use ctxlog_core::{Event, TimestampMs};

impl Builder<'_> {
    /// The model in use, once the recording named one.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The model in use from now on; records `LimitsChanged` when its
    /// limits differ from the current ones.
    pub fn set_model(&mut self, at: TimestampMs, model: &str) -> Result<(), ImportError> {
        if self.model.as_deref() == Some(model) {
            return Ok(());
        }
        self.model = Some(model.to_owned());
        // The output limit the recording's agent uses for it, where it is
        // not the API's.
        self.agent_output = match self.format {
            Format::ClaudeCode => claude_code_2_1_output(model),
            _ => None,
        };
        self.refresh_limits(at)
    }

    /// The warnings of the models not in the limits table that a step ran
    /// on, for the end of the import.
    pub(super) fn unknown_models_used(&mut self) -> Vec<String> {
        let unknown = std::mem::take(&mut self.unknown_models);
        unknown
            .into_iter()
            .filter(|(model, _)| self.stepped_models.contains(model))
            .map(|(_, w)| w)
            .collect()
    }

    /// The context window the recording itself states (Codex does).
    pub fn set_file_context(&mut self, at: TimestampMs, context: u64) -> Result<(), ImportError> {
        if self.file_context == Some(context) {
            return Ok(());
        }
        self.file_context = Some(context);
        self.refresh_limits(at)
    }

    /// Records `LimitsChanged` when the recording's own limits (the table's
    /// for its model, its file's context) change: whether one is recorded
    /// never depends on the overrides, only the limits it carries do, so
    /// the same recording gives the same events (and ids) under any
    /// `--context`, `--output` or `--model`.
    fn refresh_limits(&mut self, at: TimestampMs) -> Result<(), ImportError> {
        let own = resolve(
            &LimitOverrides::default(),
            self.model.as_deref(),
            self.file_context,
            self.agent_output,
        )
        .limits;
        let Resolved { limits, unknown } = resolve(
            &self.options.limits,
            self.model.as_deref(),
            self.file_context,
            self.agent_output,
        );
        // Said at the end if a step ran on it (`unknown_models_used`).
        if let Some(model) = unknown {
            let w = format!(
                "model {model:?} is not in the limits table: assuming {} context, {} output \
                 (override with --context/--output/--input-limit)",
                limits.context,
                limits.output.unwrap_or(0)
            );
            self.unknown_models.entry(model).or_insert(w);
        }
        if own != self.own_limits {
            self.own_limits = own;
            self.limits = limits.clone();
            self.record(at, Event::LimitsChanged { limits })?;
        }
        Ok(())
    }
}
