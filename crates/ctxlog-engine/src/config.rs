//! How an engine is configured: the [`EngineBuilder`] (its `EngineConfig`)
//! with defaults (system clock, fresh ids, the extractive summarizer, the
//! default loop guard), and the compacting hook.

use crate::clock::{system_ids, Clock, SystemClock};
use crate::error::EngineError;
use crate::summarize::{ExtractiveSummarizer, Summarizer};
use crate::Engine;
use ctxlog_core::{IdSource, LoopGuard, ModelRef, SessionId};
use ctxlog_sled::SledStore;
use ctxlog_store::{EventLog, MemoryLog};
use std::path::Path;
use std::sync::Arc;

/// What a compacting hook adds: context lines appended to the instruction, or
/// a whole replacement prompt. Treated as untrusted and length-capped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookOutput {
    /// Extra context lines.
    pub context: Vec<String>,
    /// A replacement for the instruction.
    pub prompt: Option<String>,
}

/// The seeds' `experimental.session.compacting` plugin hook.
///
/// It is called while the engine holds the session's lock: it must not call
/// back into the engine for the same session (it would wait on itself).
pub trait CompactingHook: Send + Sync {
    /// Called before each compaction request is built.
    fn compacting(&self, session: SessionId) -> HookOutput;
}

/// Caps on what a hook may supply.
pub const HOOK_MAX_LINES: usize = 32;
/// Longest hook context line kept, in chars.
pub const HOOK_MAX_LINE_CHARS: usize = 2_000;
/// Longest hook replacement prompt kept, in chars.
pub const HOOK_MAX_PROMPT_CHARS: usize = 8_000;

/// How the engine behaves beyond the policy in the log (made by the
/// [`EngineBuilder`]).
pub(crate) struct EngineConfig {
    /// Time source.
    pub(crate) clock: Arc<dyn Clock>,
    /// Id source. It must never repeat an id already in the store: a
    /// deterministic source reopened on the same store needs a new seed (the
    /// store refuses a repeated id with different content, so nothing is
    /// corrupted, but the command fails).
    pub(crate) ids: Box<dyn IdSource + Send>,
    /// The summarizer.
    pub(crate) summarizer: Arc<dyn Summarizer>,
    /// A model used only for compaction, when configured.
    pub(crate) compaction_model: Option<ModelRef>,
    /// The compacting hook, if any.
    pub(crate) hook: Option<Arc<dyn CompactingHook>>,
    /// When automatic compaction stops itself.
    pub(crate) loop_guard: LoopGuard,
}

impl EngineConfig {
    /// The given ids and clock, the extractive summarizer, no hook, the
    /// default loop guard.
    pub(crate) fn new(ids: Box<dyn IdSource + Send>, clock: Arc<dyn Clock>) -> Self {
        EngineConfig {
            clock,
            ids,
            summarizer: Arc::new(ExtractiveSummarizer::default()),
            compaction_model: None,
            hook: None,
            loop_guard: LoopGuard::default(),
        }
    }

    /// A typed error for a configuration the engine cannot run with (a
    /// shrink percentage above 100 has no meaning; it used to be clamped).
    pub(crate) fn validate(&self) -> Result<(), EngineError> {
        let g = &self.loop_guard;
        if g.min_shrink_percent > 100 {
            return Err(EngineError::InvalidConfig(format!(
                "loop_guard.min_shrink_percent is {}, at most 100",
                g.min_shrink_percent
            )));
        }
        Ok(())
    }
}

impl Default for EngineConfig {
    /// The system clock and fresh ids: what an agent embeds.
    fn default() -> Self {
        EngineConfig::new(Box::new(system_ids()), Arc::new(SystemClock))
    }
}

/// Builds an [`Engine`] over any log from defaults: the system clock,
/// fresh ids, the extractive summarizer. [`EngineBuilder::build`] takes
/// the log; [`EngineBuilder::open`] opens the embedded default, a sled
/// store, and [`EngineBuilder::in_memory`] a fresh memory log.
#[derive(Default)]
pub struct EngineBuilder {
    config: EngineConfig,
}

impl EngineBuilder {
    /// A builder with every default.
    pub fn new() -> Self {
        EngineBuilder::default()
    }

    /// The time source (default: the system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.config.clock = clock;
        self
    }

    /// The id source (default: fresh ids seeded from the clock). Give a
    /// [`ctxlog_core::SeededIds`] for reproducible logs.
    pub fn ids(mut self, ids: impl IdSource + Send + 'static) -> Self {
        self.config.ids = Box::new(ids);
        self
    }

    /// The summarizer (default: the deterministic extractive one).
    pub fn summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.config.summarizer = summarizer;
        self
    }

    /// A model used only for compaction.
    pub fn compaction_model(mut self, model: ModelRef) -> Self {
        self.config.compaction_model = Some(model);
        self
    }

    /// The compacting hook.
    pub fn hook(mut self, hook: Arc<dyn CompactingHook>) -> Self {
        self.config.hook = Some(hook);
        self
    }

    /// The loop guard (default: [`LoopGuard::default`]).
    pub fn loop_guard(mut self, guard: LoopGuard) -> Self {
        self.config.loop_guard = guard;
        self
    }

    /// An engine over the embedded default log, a durable [`SledStore`]
    /// at `path` (created if missing).
    pub fn open(self, path: impl AsRef<Path>) -> Result<Engine<SledStore>, EngineError> {
        self.build(SledStore::open(path)?)
    }

    /// An engine over a fresh in-memory log.
    pub fn in_memory(self) -> Result<Engine<MemoryLog>, EngineError> {
        self.build(MemoryLog::new())
    }

    /// An engine over `log`.
    pub fn build<L: EventLog>(self, log: L) -> Result<Engine<L>, EngineError> {
        Engine::new(log, self.config)
    }
}
