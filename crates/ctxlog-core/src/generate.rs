//! A seeded generator of realistic agent sessions: user turns, assistant
//! steps with tool calls whose outputs follow a heavy-tailed size
//! distribution, provider usage that grows with the window and is cut by
//! compaction, prunes when turns end, and the odd failure (tool error,
//! aborted step, failed compaction). It drives the seeds' lifecycle the way
//! an agent loop would, so its logs exercise every rule. Pure: the same
//! config always gives the same events.

use crate::decide::{first_message, pruned, queued, Command, SummaryText, TailChoice};
use crate::error::Refused;
use crate::event::{Envelope, Event, FinishReason, MessageError, PartBody, Role, ToolState};
use crate::fallback::{summary_input, Fallback};
use crate::guard::LoopGuard;
use crate::ids::{splitmix64_mix, MessageId, SeededIds, SessionId, SPLITMIX64_GAMMA};
use crate::json::Json;
use crate::policy::{ModelLimits, Policy, TokenUsage};
use crate::recorder::Recorder;
use crate::window::estimate_window;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// User turns.
    pub turns: u32,
    /// Most model steps per turn (at least 1).
    pub max_steps_per_turn: u32,
    /// Most tool calls per step.
    pub max_tools_per_step: u32,
    /// Smallest tool output, chars.
    pub min_output_chars: u32,
    /// Largest tool output, chars (the tail of the distribution is cut here).
    pub max_output_chars: u32,
    /// Percent chance of a failure at each opportunity.
    pub failure_percent: u32,
    /// Fixed prompt overhead (system prompt, tool schemas), tokens.
    pub overhead_tokens: u64,
    /// The policy recorded at start.
    pub policy: Policy,
    /// The model's limits.
    pub limits: ModelLimits,
    /// Time of the first event, ms.
    pub start_ms: u64,
    /// Stop at the end of the first turn that reaches this many events
    /// (0: after `turns` turns only).
    pub max_events: u64,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            seed: 1,
            turns: 12,
            max_steps_per_turn: 6,
            max_tools_per_step: 3,
            min_output_chars: 2_000,
            max_output_chars: 120_000,
            failure_percent: 3,
            overhead_tokens: 2_000,
            policy: Policy::opencode_seed(),
            limits: ModelLimits {
                context: 128_000,
                input: None,
                output: Some(16_384),
            },
            start_ms: 1_767_225_600_000, // 2026-01-01T00:00:00Z
            max_events: 0,
        }
    }
}

/// splitmix64: small, fast, deterministic.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(SPLITMIX64_GAMMA);
        splitmix64_mix(self.0)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }
    /// Uniform below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.next_u64() % 100 < percent as u64
    }
    /// Pareto(α = 1.2) sample scaled to start at `min`, capped at `max`.
    pub fn heavy_tail(&mut self, min: u64, max: u64) -> u64 {
        // u in (0, 1]; x = min / u^(1/α)
        let u = ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        let x = min as f64 / u.powf(1.0 / 1.2);
        (x as u64).clamp(min, max.max(min))
    }
}

const TOOLS: &[&str] = &["read", "bash", "grep", "edit", "glob", "skill", "webfetch"];
const WORDS: &[&str] = &[
    "fn", "let", "parse", "token", "window", "error", "ok", "struct", "impl", "test", "cargo",
    "src", "main", "the", "value", "=>", "{", "}", "über", "日本", "😀",
];

fn text_of(rng: &mut Rng, lo: u64, hi: u64) -> String {
    let chars = rng.range(lo, hi);
    let mut s = String::with_capacity(chars as usize + 8);
    while (s.len() as u64) < chars {
        s.push_str(WORDS[rng.range(0, WORDS.len() as u64 - 1) as usize]);
        s.push(if rng.chance(10) { '\n' } else { ' ' });
    }
    s
}

/// The generator's stand-in for the summarizer's system prompt and
/// instruction, tokens.
const PROMPT_OVERHEAD_TOKENS: u64 = 600;

/// Runs a queued job as an agent would: started, the attempts the fallback
/// plan decides on, then a summary (or, now and then, a failure). Returns
/// the continue message, if any.
#[allow(clippy::too_many_arguments)]
fn run_job(
    r: &mut Recorder<SeededIds>,
    rng: &mut Rng,
    cfg: &GenerateConfig,
    guard: LoopGuard,
    job: MessageId,
    t: &mut u64,
    turn: u32,
    step: u64,
) -> Result<Option<MessageId>, Refused> {
    let model = None;
    r.run(
        *t,
        Command::StartJob {
            job,
            model,
            prompt: None,
            tail: TailChoice::Policy,
        },
        guard,
    )?;
    // The attempts the fallback plan decides on, until one fits.
    let state = r.state();
    let messages = summary_input(state, job);
    let estimator = state.policy.estimator;
    let mut fallback = Fallback::new(state.policy.usable(&state.limits));
    let mut fits = false;
    while let Some(a) = fallback.next(&messages, PROMPT_OVERHEAD_TOKENS, &estimator) {
        fits = a.fits;
        let attempt = Command::Record(vec![Event::CompactionAttempted {
            job,
            strategy: a.strategy.name().into(),
            request_tokens: a.request_tokens,
            limit: a.limit,
            fits,
        }]);
        r.run(*t + 1, attempt, guard)?;
        if fits {
            break;
        }
    }
    if !fits || rng.chance(cfg.failure_percent * 3) {
        let error = if fits {
            "summarizer timed out".to_owned()
        } else {
            fallback.exhausted()
        };
        r.run(*t + 1, Command::FailJob { job, error }, guard)?;
        // The clock never goes back: what follows comes after the failure.
        *t += 1;
        return Ok(None);
    }
    let text = format!(
        "Summary after turn {turn}, step {step}: {}",
        text_of(rng, 400, 400)
    );
    let summary = SummaryText {
        text,
        finish: FinishReason::Stop,
        tokens: TokenUsage {
            input: 3_000,
            output: 400,
            ..TokenUsage::default()
        },
        redactions: 0,
    };
    let decided = r.run(*t + 2_000, Command::CompleteJob { job, summary }, guard)?;
    *t += 2_001;
    // The continue message, after an automatic compaction.
    Ok(first_message(&decided))
}

/// Generates one session's events under `cfg`.
pub fn generate(cfg: &GenerateConfig) -> Result<Vec<Envelope>, Refused> {
    let mut out = Vec::new();
    generate_into(cfg, |batch| out.extend(batch))?;
    Ok(out)
}

/// Generates one session's events under `cfg`, handing them to `sink` a turn
/// at a time (the log is never held whole; the state is). Returns how many
/// events were generated. The provider usage of each step is the fixed
/// overhead plus a running estimate of the window: measured exactly at each
/// pivot and after each prune, grown by the text of every part in between
/// (tool names and inputs are not counted), so a step costs the same at any
/// session length.
pub fn generate_into(
    cfg: &GenerateConfig,
    mut sink: impl FnMut(Vec<Envelope>),
) -> Result<u64, Refused> {
    let mut generation = Generation::start(cfg)?;
    let mut total = 0u64;
    for turn in 0..cfg.turns {
        generation.turn(turn)?;
        let batch = generation.recorder.drain_events();
        total += batch.len() as u64;
        sink(batch);
        if cfg.max_events > 0 && total >= cfg.max_events {
            break;
        }
    }
    let batch = generation.recorder.drain_events();
    total += batch.len() as u64;
    sink(batch);
    Ok(total)
}

/// One session being generated: the recorder, the random source, the clock
/// and the running window estimate each step's usage is derived from. Every
/// random draw goes through `rng`, in the order the methods below make them.
struct Generation<'c> {
    cfg: &'c GenerateConfig,
    guard: LoopGuard,
    recorder: Recorder<SeededIds>,
    rng: Rng,
    /// The clock, ms.
    t: u64,
    /// The running window estimate, tokens.
    win: u64,
}

/// How a generated step ended.
enum StepEnd {
    /// Aborted: the turn ends here.
    Aborted,
    /// Finished; the continue message of a compaction it set off, if any,
    /// is what the turn's later steps answer.
    Finished(Option<MessageId>),
}

impl<'c> Generation<'c> {
    /// The session started under `cfg`, no random number drawn yet.
    fn start(cfg: &'c GenerateConfig) -> Result<Self, Refused> {
        let rng = Rng::new(cfg.seed);
        let mut ids = SeededIds::new(cfg.seed);
        let session = SessionId(crate::ids::IdSource::next_uuid(&mut ids, cfg.start_ms));
        let t = cfg.start_ms;
        let recorder = Recorder::start(session, ids, t, cfg.policy.clone(), cfg.limits.clone())?;
        Ok(Generation {
            cfg,
            guard: LoopGuard::default(),
            recorder,
            rng,
            t,
            win: 0,
        })
    }

    /// Estimated tokens of `s` under the configured policy.
    fn est(&self, s: &str) -> u64 {
        self.cfg.policy.estimator.estimate(s)
    }

    /// One user turn: the prompt, its steps, the end of the turn, and now
    /// and then a model switch half-way.
    fn turn(&mut self, turn: u32) -> Result<(), Refused> {
        self.t += self.rng.range(1_000, 60_000);
        let prompt = format!("turn {turn}: {}", text_of(&mut self.rng, 20, 400));
        self.win += self.est(&prompt);
        let mut user = self.recorder.user_text(self.t, &prompt, false)?;
        let steps = self.rng.range(1, self.cfg.max_steps_per_turn.max(1) as u64);
        let mut step = 0;
        while step < steps {
            step += 1;
            match self.step(user, turn, step, step == steps)? {
                StepEnd::Aborted => break,
                StepEnd::Finished(Some(continued)) => user = continued,
                StepEnd::Finished(None) => {}
            }
        }
        self.end_turn()?;
        self.switch_model_half_way(turn)
    }

    /// One assistant step answering `user`: reasoning now and then, tool
    /// calls unless it is the `last`, a text, then its finish (or an abort).
    fn step(
        &mut self,
        user: MessageId,
        turn: u32,
        step: u64,
        last: bool,
    ) -> Result<StepEnd, Refused> {
        self.t += self.rng.range(500, 20_000);
        let msg = self
            .recorder
            .message(self.t, Role::Assistant, Some(user), false)?;
        self.recorder
            .part(self.t, msg, PartBody::StepStart { snapshot: None })?;
        if self.rng.chance(30) {
            let text = text_of(&mut self.rng, 50, 600);
            self.win += self.est(&text);
            self.recorder
                .part(self.t, msg, PartBody::Reasoning { text, time: None })?;
        }
        let tools = if last {
            0
        } else {
            self.rng.range(1, self.cfg.max_tools_per_step.max(1) as u64)
        };
        for _ in 0..tools {
            self.tool_call(msg)?;
        }
        let text = text_of(&mut self.rng, 20, 800);
        self.win += self.est(&text);
        self.recorder.part(
            self.t,
            msg,
            PartBody::Text {
                text,
                synthetic: false,
                time: None,
            },
        )?;
        if self.rng.chance(self.cfg.failure_percent) {
            self.recorder.record(
                self.t,
                Event::MessageErrored {
                    message: msg,
                    error: MessageError {
                        name: "MessageAbortedError".into(),
                        message: "aborted".into(),
                    },
                },
            )?;
            return Ok(StepEnd::Aborted);
        }
        let continued = self.finish_step(msg, turn, step, last)?;
        Ok(StepEnd::Finished(continued))
    }

    /// One tool call on `msg`: a heavy-tailed output, or now and then an
    /// error.
    fn tool_call(&mut self, msg: MessageId) -> Result<(), Refused> {
        self.t += self.rng.range(10, 5_000);
        let name = TOOLS[self.rng.range(0, TOOLS.len() as u64 - 1) as usize];
        let input = Json::Object(vec![(
            "path".into(),
            Json::String(format!("src/file_{}.rs", self.rng.range(0, 40))),
        )]);
        if self.rng.chance(self.cfg.failure_percent) {
            return self.failed_tool_call(msg, name, input);
        }
        let size = self.rng.heavy_tail(
            self.cfg.min_output_chars as u64,
            self.cfg.max_output_chars as u64,
        );
        let output = text_of(&mut self.rng, size, size);
        self.win += self.est(&output);
        self.recorder.tool(self.t, msg, name, input, &output)?;
        Ok(())
    }

    /// A tool call on `msg` that starts running and then fails.
    fn failed_tool_call(&mut self, msg: MessageId, name: &str, input: Json) -> Result<(), Refused> {
        let t = self.t;
        let call_id = format!("call_{}", self.rng.next_u64());
        let part = self.recorder.part(
            t,
            msg,
            PartBody::Tool {
                call_id: call_id.clone(),
                tool: name.into(),
                state: ToolState::Running {
                    input: input.clone(),
                    title: None,
                    start: t,
                },
            },
        )?;
        self.recorder.record(
            t + 1,
            Event::PartUpdated {
                part,
                body: PartBody::Tool {
                    call_id,
                    tool: name.into(),
                    state: ToolState::Error {
                        input,
                        error: "exit status 1".into(),
                        start: t,
                        end: t + 1,
                    },
                },
            },
        )?;
        // The clock never goes back: what follows comes after the error.
        self.t += 1;
        Ok(())
    }

    /// The step's finish with usage of about the window, plus noise; runs
    /// the compaction it queues. Returns the continue message, if any.
    fn finish_step(
        &mut self,
        msg: MessageId,
        turn: u32,
        step: u64,
        last: bool,
    ) -> Result<Option<MessageId>, Refused> {
        // Usage: roughly the window as the provider would count it, plus noise.
        let prompt_tokens = self.cfg.overhead_tokens + self.win;
        let cached = prompt_tokens * self.rng.range(0, 90) / 100;
        let tokens = TokenUsage {
            total: None,
            input: prompt_tokens - cached,
            output: self.rng.range(50, 2_000),
            reasoning: self.rng.range(0, 500),
            cache_read: cached,
            cache_write: self.rng.range(0, 2_000),
        };
        let reason = if last {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        };
        let decided = self.recorder.run(
            self.t,
            Command::FinishStep {
                message: msg,
                reason,
                tokens,
            },
            self.guard,
        )?;
        let Some(job) = queued(&decided) else {
            return Ok(None);
        };
        self.t += 10;
        let continued = run_job(
            &mut self.recorder,
            &mut self.rng,
            self.cfg,
            self.guard,
            job,
            &mut self.t,
            turn,
            step,
        )?;
        self.win = estimate_window(self.recorder.state());
        Ok(continued)
    }

    /// The end of the turn: a prune when the policy prunes, taken back now
    /// and then.
    fn end_turn(&mut self) -> Result<(), Refused> {
        let pruned_now = self.recorder.run(self.t, Command::EndTurn, self.guard)?;
        let Some((parts, _)) = pruned(&pruned_now) else {
            return Ok(());
        };
        // The seed's prune walk can reach outputs from before the pivot,
        // which were not in the window: re-measure it rather than subtract.
        if self.rng.chance(50) {
            // Now and then a user takes a prune back.
            self.recorder.run(
                self.t,
                Command::Record(vec![Event::PartsRestored {
                    parts: parts.iter().take(1).map(|p| p.part).collect(),
                    reason: "the user asked for the output again".into(),
                }]),
                self.guard,
            )?;
        }
        self.win = estimate_window(self.recorder.state());
        Ok(())
    }

    /// Half-way, now and then: a model switch (the limits change) and a
    /// policy tweak.
    fn switch_model_half_way(&mut self, turn: u32) -> Result<(), Refused> {
        if turn == self.cfg.turns / 2 && self.rng.chance(50) {
            let mut limits = self.recorder.state().limits.clone();
            limits.output = limits.output.map(|o| o + 1_024);
            self.recorder.run(
                self.t,
                Command::Record(vec![Event::LimitsChanged { limits }]),
                self.guard,
            )?;
            let mut policy = self.recorder.state().policy.clone();
            policy.prune_protect = policy.prune_protect.saturating_sub(1_000);
            self.recorder.run(
                self.t,
                Command::Record(vec![Event::PolicyChanged { policy }]),
                self.guard,
            )?;
        }
        Ok(())
    }
}
