//! The job runner: the I/O of a compaction job (the hook, the summarizer
//! call, redaction) around the decisions `ctxlog-core` makes (the summary
//! input and its tail, the fallback attempts, the outcome, the continue
//! message and the loop guard).

use crate::config::{HookOutput, HOOK_MAX_LINES, HOOK_MAX_LINE_CHARS, HOOK_MAX_PROMPT_CHARS};
use crate::error::EngineError;
use crate::outcome::JobOutcome;
use crate::summarize::{
    prompt_text, SummarizeError, SummaryOutput, SummaryRequest, COMPACTION_INSTRUCTION,
    COMPACTION_SYSTEM_PROMPT,
};
use crate::transcript_prompt::{transcript_prompt, SUMMARY_TEMPLATE, TRANSCRIPT_SYSTEM_PROMPT};
use crate::Engine;
use ctxlog_core::decide::paused;
use ctxlog_core::fallback::{summary_input, Answer, Fallback, Verdict};
use ctxlog_core::redact;
use ctxlog_core::Event;
use ctxlog_core::{
    transcript, Command, MessageId, ModelRef, PromptRecord, SessionId, SessionState, SummaryInput,
    SummaryText, TailChoice,
};
use ctxlog_store::EventLog;
use sha2::{Digest, Sha256};

impl<L: EventLog> Engine<L> {
    /// Runs every pending compaction job of `session`, oldest first (see
    /// [`Session::run_pending`](crate::Session::run_pending)).
    pub(crate) fn run_pending(&self, session: SessionId) -> Result<Vec<JobOutcome>, EngineError> {
        self.with(session, |state| {
            let mut outcomes = Vec::new();
            loop {
                let next = state.pending_jobs().next().map(|j| j.marker);
                let Some(job) = next else { break };
                outcomes.push(self.run_job(session, state, job)?);
            }
            Ok(outcomes)
        })
    }

    fn hook_output(&self, session: SessionId) -> HookOutput {
        let Some(hook) = &self.hook else {
            return HookOutput::default();
        };
        let raw = hook.compacting(session);
        let cap = |s: &str, n: usize| s.chars().take(n).collect::<String>();
        HookOutput {
            context: raw
                .context
                .iter()
                .take(HOOK_MAX_LINES)
                .map(|l| cap(l, HOOK_MAX_LINE_CHARS))
                .collect(),
            prompt: raw.prompt.map(|p| cap(&p, HOOK_MAX_PROMPT_CHARS)),
        }
    }

    /// Calls the summarizer; a panic in it is an error, not a crash.
    fn summarize(&self, request: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.summarizer.summarize(request)
        }))
        .unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(SummarizeError::Failed(format!(
                "the summarizer panicked: {why}"
            )))
        })
    }

    fn run_job(
        &self,
        session: SessionId,
        state: &mut SessionState,
        job: MessageId,
    ) -> Result<JobOutcome, EngineError> {
        // The hook is asked once per job; its output shapes the prompt that
        // `CompactionStarted` records and the request.
        let hook = self.hook_output(session);
        let (system, instruction) = summary_prompts(state.policy.summary_input, &hook);
        let prompt = prompt_text(&system, &instruction);
        self.run(
            session,
            state,
            Command::StartJob {
                job,
                model: self.compaction_model.clone(),
                prompt: Some(PromptRecord {
                    sha256: hex(&Sha256::digest(prompt.as_bytes())),
                    bytes: prompt.len() as u64,
                }),
                tail: TailChoice::Policy,
            },
        )?;
        // What decide chose to summarize: the window minus the recorded tail.
        let model = self.compaction_model.clone();
        let base = summary_request(session, state, job, &hook, model);
        match self.attempt(session, state, job, &base)? {
            Ok(out) => self.complete(session, state, job, out),
            Err(error) => {
                // Provider error bodies can echo what they were sent.
                let error = redact::redact(&error).text;
                let decided = self
                    .run(
                        session,
                        state,
                        Command::FailJob {
                            job,
                            error: error.clone(),
                        },
                    )?
                    .decided;
                Ok(JobOutcome::Failed {
                    job,
                    error,
                    paused: paused(&decided).map(str::to_owned),
                })
            }
        }
    }

    /// Sends the attempts the fallback plan decides on, each recorded, until
    /// one gives a summary; the error the plan gives up with otherwise.
    fn attempt(
        &self,
        session: SessionId,
        state: &mut SessionState,
        job: MessageId,
        base: &SummaryRequest,
    ) -> Result<Result<SummaryOutput, String>, EngineError> {
        let estimator = state.policy.estimator;
        let limit = state.policy.usable(&state.limits);
        // A transcript is one request, sent whole (as OpenCode does); the
        // messages are cut down by the fallback plan.
        let (mut fallback, plan_messages, fixed) = match &base.transcript {
            Some(t) => (
                Fallback::single(limit),
                &[][..],
                estimator.estimate(&base.system) + estimator.estimate(t),
            ),
            None => (
                Fallback::new(limit),
                &base.messages[..],
                estimator.estimate(&base.system) + estimator.estimate(&base.instruction),
            ),
        };
        while let Some(attempt) = fallback.next(plan_messages, fixed, &estimator) {
            self.run(
                session,
                state,
                Command::Record(vec![Event::CompactionAttempted {
                    job,
                    strategy: attempt.strategy.name().into(),
                    request_tokens: attempt.request_tokens,
                    limit: attempt.limit,
                    fits: attempt.fits,
                }]),
            )?;
            if !attempt.fits {
                continue;
            }
            let request = match &base.transcript {
                Some(_) => base.clone(),
                None => SummaryRequest {
                    messages: attempt.messages.clone(),
                    ..base.clone()
                },
            };
            let result = self.summarize(&request);
            let error = result.as_ref().err().map(|e| e.to_string());
            let answer = match (&result, error.as_deref()) {
                (Ok(out), _) => Answer::Text {
                    text: &out.text,
                    finish: &out.finish,
                },
                (Err(SummarizeError::TooLarge(_)), Some(e)) => Answer::TooLarge(e),
                (Err(_), e) => Answer::Failed(e.unwrap_or_default()),
            };
            match (fallback.answer(&attempt, answer), result) {
                (Verdict::Complete, Ok(out)) => return Ok(Ok(out)),
                (Verdict::Fail(error), _) => return Ok(Err(error)),
                _ => {}
            }
        }
        Ok(Err(fallback.exhausted()))
    }

    fn complete(
        &self,
        session: SessionId,
        state: &mut SessionState,
        job: MessageId,
        out: SummaryOutput,
    ) -> Result<JobOutcome, EngineError> {
        let redacted = redact::redact(&out.text);
        let redactions = redacted.total() + out.redacted;
        let summary = SummaryText {
            text: redacted.text,
            finish: out.finish,
            tokens: out.tokens,
            redactions,
        };
        let decided = self
            .run(session, state, Command::CompleteJob { job, summary })?
            .decided;
        let j = state.job(job);
        // The message that resumes the session, when the policy writes one.
        let continued = ctxlog_core::decide::drafted(&decided).any(|e| {
            matches!(
                e,
                ctxlog_core::Event::MessageAppended {
                    role: ctxlog_core::Role::User,
                    ..
                }
            )
        });
        Ok(JobOutcome::Completed {
            job,
            summary: j.and_then(|j| j.summary).unwrap_or(job),
            continued,
            redactions,
            paused: paused(&decided).map(str::to_owned),
        })
    }
}

/// The system prompt and the fixed instruction of a compaction request
/// under `input`, with the hook's context (or its prompt, which replaces the
/// instruction). Under [`SummaryInput::Transcript`] the instruction is
/// OpenCode's template, which the transcript message ends with.
pub(crate) fn summary_prompts(input: SummaryInput, hook: &HookOutput) -> (String, String) {
    let (system, base, separator) = match input {
        SummaryInput::Messages => (COMPACTION_SYSTEM_PROMPT, COMPACTION_INSTRUCTION, "\n\n"),
        SummaryInput::Transcript { .. } => (TRANSCRIPT_SYSTEM_PROMPT, SUMMARY_TEMPLATE, "\n"),
    };
    let instruction = match &hook.prompt {
        Some(p) => p.clone(),
        None => std::iter::once(base.to_owned())
            .chain(hook.context.iter().cloned())
            .collect::<Vec<_>>()
            .join(separator),
    };
    (system.to_owned(), instruction)
}

/// The summarizer request for `job` in `state`: what decide chose to
/// summarize ([`summary_input`]: the window minus the recorded tail and any
/// refused prompt) with `summary_prompts`, and under
/// [`SummaryInput::Transcript`] the transcript as the one message an endpoint
/// is sent. The request type has no tools field: none can be passed.
pub fn summary_request(
    session: SessionId,
    state: &SessionState,
    job: MessageId,
    hook: &HookOutput,
    model: Option<ModelRef>,
) -> SummaryRequest {
    let (system, instruction) = summary_prompts(state.policy.summary_input, hook);
    let transcript = match state.policy.summary_input {
        SummaryInput::Messages => None,
        SummaryInput::Transcript {
            tool_output_max_chars,
        } => {
            let t = transcript(state, job, tool_output_max_chars);
            Some(transcript_prompt(&t, hook.prompt.as_deref(), &hook.context))
        }
    };
    SummaryRequest {
        session,
        job,
        system,
        messages: summary_input(state, job),
        instruction,
        transcript,
        model,
        max_output_tokens: state.policy.max_output_tokens(&state.limits),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
