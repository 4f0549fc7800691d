//! What the simulated engine decides on the way through a recording (the
//! checks, refusals, compaction jobs and prunes), run at once and reported
//! as [`Decision`]s.

use super::feed::Feed;
use super::report::Decision;
use crate::{EngineError, JobOutcome, StepOutcome};
use ctxlog_core::{MessageId, PartBody};

/// The error a recorded refusal is simulated with (the recording keeps no
/// provider text: only that its compaction was caused by an overflow).
const RECORDED_REFUSAL: &str = "the provider refused the request as too large (recorded)";

impl Feed<'_> {
    /// After a step that queued a job: run it at once and report.
    pub(super) fn after_step(
        &mut self,
        after: String,
        outcome: StepOutcome,
    ) -> Result<(), EngineError> {
        let (Some(job), Some(check)) = (outcome.queued, outcome.overflow) else {
            return Ok(());
        };
        self.decisions.push(Decision::Compaction {
            after: after.clone(),
            auto: true,
            count: check.count,
            usable: check.usable,
            estimated: self.diverged,
        });
        self.run_jobs(after, job)
    }

    /// Before a request, under a policy that checks then: the check, and
    /// the job it queued run at once.
    pub(super) fn request_check(&mut self) -> Result<(), EngineError> {
        if !self.checks_before_requests {
            return Ok(());
        }
        self.flush()?;
        let check = self.session.before_request()?;
        let (Some(job), Some(c)) = (check.queued, check.overflow) else {
            return Ok(());
        };
        let after = self.last_step_source.clone();
        self.decisions.push(Decision::Compaction {
            after: after.clone(),
            auto: true,
            count: c.count,
            usable: c.usable,
            estimated: self.diverged,
        });
        self.run_jobs(after, job)
    }

    /// A recorded compaction flagged `overflow`: the provider refused the
    /// open step's request. The policy decides what that does.
    pub(super) fn refusal(&mut self) -> Result<(), EngineError> {
        self.flush()?;
        let Some(step) = self.open_step.take() else {
            // No request to attribute it to: the recording's compaction is
            // one the simulation cannot make.
            return Ok(());
        };
        let after = self.sources.get(&step).cloned().unwrap_or_default();
        let queued = self.session.refused(step, RECORDED_REFUSAL)?;
        self.decisions.push(Decision::Refused {
            after: after.clone(),
            compacted: queued.is_some(),
        });
        match queued {
            Some(job) => self.run_jobs(after, job),
            None => Ok(()),
        }
    }

    /// Runs the queued job `job` at once and reports what it led to.
    fn run_jobs(&mut self, after: String, job: MessageId) -> Result<(), EngineError> {
        self.unmatched = Some(job);
        let window_before = self.session.window_estimate()?;
        let outcomes = self.session.run_pending()?;
        let window_after = self.session.window_estimate()?;
        self.replayed = None;
        for o in outcomes {
            match &o {
                JobOutcome::Completed { continued, .. } => {
                    self.decisions.push(Decision::Summary {
                        after: after.clone(),
                        window_before,
                        window_after,
                    });
                    if *continued {
                        let after = after.clone();
                        match self.replayed_prompt()? {
                            Some(text) => {
                                self.replayed = Some(text);
                                self.decisions.push(Decision::Replay { after });
                            }
                            None => self.decisions.push(Decision::Continue { after }),
                        }
                    }
                }
                JobOutcome::Failed { error, .. } => {
                    self.decisions.push(Decision::CompactionFailed {
                        after: after.clone(),
                        error: error.clone(),
                    })
                }
            }
            if let Some(reason) = o.paused() {
                self.decisions.push(Decision::Stalled {
                    after: self.last_source.clone(),
                    reason: reason.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// The first text of the message that resumed the latest compaction,
    /// when it is a replayed prompt (a real user message) rather than a
    /// synthetic continue message.
    fn replayed_prompt(&self) -> Result<Option<String>, EngineError> {
        let state = self.session.state()?;
        let Some(last) = state.messages.last().filter(|m| m.role.is_input()) else {
            return Ok(None);
        };
        if last.synthetic {
            return Ok(None);
        }
        Ok(last.parts.iter().find_map(|p| match p.content()? {
            PartBody::Text { text, .. } => Some(text.clone()),
            _ => None,
        }))
    }

    /// The end of a turn: prune when the policy says so.
    pub(super) fn end_turn(&mut self) -> Result<(), EngineError> {
        if let Some(pruned) = self.session.end_turn()? {
            self.decisions.push(Decision::Prune {
                after: self.last_source.clone(),
                call_ids: pruned
                    .parts
                    .iter()
                    .map(|p| self.call_ids.get(&p.part).cloned().unwrap_or_default())
                    .collect(),
                tokens: pruned.tokens,
            });
        }
        Ok(())
    }
}
