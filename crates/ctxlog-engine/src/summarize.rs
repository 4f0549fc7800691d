//! Summarizers: what turns a compaction request into summary text.
//!
//! A [`SummaryRequest`] carries the system prompt, the window to summarise
//! (ending with the marker rendered as "What did we do so far?") and the
//! final instruction. It has **no tools field**: a summarizer cannot be
//! handed tools, whatever it is backed by.

use ctxlog_core::policy::Estimator;
use ctxlog_core::window::{
    is_continue_text, ToolResult, WindowMessage, WindowPart, COMPACTION_QUESTION,
};
use ctxlog_core::{Envelope, JobStatus, Json};
use ctxlog_core::{FinishReason, MessageId, ModelRef, Role, SessionId, TokenUsage};
use std::collections::BTreeMap;
use thiserror::Error;

/// Seed 000 §6.1, plus the instruction to leave out secrets.
pub const COMPACTION_SYSTEM_PROMPT: &str = "You are a helpful AI assistant tasked with summarizing conversations.

When asked to summarize, provide a detailed but concise summary of the conversation.
Focus on information that would be helpful for continuing the conversation, including:
- What was done
- What is currently being worked on
- Which files are being modified
- What needs to be done next
- Key user requests, constraints, or preferences that should persist
- Important technical decisions and why they were made

Your summary should be comprehensive enough to provide context but concise enough to be quickly understood.

Never include secrets or credentials (API keys, tokens, passwords, private keys) in the summary, even if they appear in the conversation; refer to them by name only.";

/// Seed 000 §6.2: the final user instruction.
pub const COMPACTION_INSTRUCTION: &str = "Provide a detailed prompt for continuing our conversation above. Focus on information that would be helpful for continuing the conversation, including what we did, what we're doing, which files we're working on, and what we're going to do next considering new session will not have access to our conversation.";

/// Everything a summarizer gets. There is deliberately no way to pass tools.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRequest {
    /// The session.
    pub session: SessionId,
    /// The compaction job (marker message).
    pub job: MessageId,
    /// The system prompt.
    pub system: String,
    /// The conversation to summarise, ending with the marker question.
    pub messages: Vec<WindowMessage>,
    /// The final user instruction (after hook context, or the hook's prompt).
    pub instruction: String,
    /// Under [`ctxlog_core::SummaryInput::Transcript`], the one user message
    /// an endpoint is sent instead of `messages` and `instruction` (see
    /// [`crate::transcript_prompt`]); `messages` still hold the history for
    /// summarizers that read it.
    pub transcript: Option<String>,
    /// The model to summarise with, when configured.
    pub model: Option<ModelRef>,
    /// Most output tokens to ask for.
    pub max_output_tokens: u64,
}

impl SummaryRequest {
    /// The prompt text actually used (system, then instruction): what the
    /// `CompactionStarted` event hashes.
    pub fn prompt_text(&self) -> String {
        prompt_text(&self.system, &self.instruction)
    }
}

/// The prompt text of a request with this system prompt and instruction.
pub fn prompt_text(system: &str, instruction: &str) -> String {
    format!("{system}\n\n{instruction}")
}

/// A summarizer's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryOutput {
    /// The summary text (redacted afterwards by the engine).
    pub text: String,
    /// Usage of the call.
    pub tokens: TokenUsage,
    /// Finish reason of the call.
    pub finish: FinishReason,
    /// Secrets already redacted from `text` by the source (a recorded summary
    /// carries its original count, so a run from a recording records the same number).
    pub redacted: u32,
}

/// Why a summary could not be produced.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SummarizeError {
    /// The request is larger than the model accepts.
    #[error("request too large for the model: {0}")]
    TooLarge(String),
    /// A transport or provider failure.
    #[error("summarizer failed: {0}")]
    Failed(String),
    /// A recorded summarizer has no summary for this job.
    #[error("no recorded summary for job {0}")]
    NotRecorded(MessageId),
}

/// Turns a compaction request into a summary. Called while the engine holds
/// the session's lock: it must not call back into the engine for the same
/// session. A panic is caught and recorded as a failed compaction.
pub trait Summarizer: Send + Sync {
    /// A short name, recorded nowhere secret (`extractive`, `openai`, `recorded`).
    fn name(&self) -> &str;
    /// Produces the summary.
    fn summarize(&self, request: &SummaryRequest) -> Result<SummaryOutput, SummarizeError>;
}

/// The default summarizer: deterministic, no network. It extracts from the
/// window the user's requests, the files read and changed (paths from tool
/// inputs), the commands run and their outcome, the last assistant text and
/// the errors, bounded by a token budget.
#[derive(Debug, Clone)]
pub struct ExtractiveSummarizer {
    /// Token budget of the summary.
    pub budget_tokens: u64,
    /// Estimator for the budget.
    pub estimator: Estimator,
}

impl Default for ExtractiveSummarizer {
    fn default() -> Self {
        ExtractiveSummarizer {
            budget_tokens: 2_000,
            estimator: Estimator::CharsPerToken { chars_per_token: 4 },
        }
    }
}

const READ_TOOLS: &[&str] = &[
    "read", "view", "cat", "glob", "grep", "list", "ls", "webfetch", "Read", "Glob", "Grep", "LS",
];
const WRITE_TOOLS: &[&str] = &[
    "edit",
    "write",
    "patch",
    "apply_patch",
    "multiedit",
    "Edit",
    "Write",
    "MultiEdit",
    "NotebookEdit",
];
const SHELL_TOOLS: &[&str] = &[
    "bash",
    "shell",
    "exec",
    "exec_command",
    "Bash",
    "local_shell",
];
const PATH_KEYS: &[&str] = &[
    "filePath",
    "file_path",
    "path",
    "notebook_path",
    "pattern",
    "url",
];

fn first_line(s: &str, max: usize) -> String {
    let line = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max {
        out.push('…');
    }
    out
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !s.is_empty() && !v.contains(&s) {
        v.push(s);
    }
}

impl Summarizer for ExtractiveSummarizer {
    fn name(&self) -> &str {
        "extractive"
    }

    fn summarize(&self, request: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        let sections = Extract::from_messages(&request.messages).sections();
        let (text, used) = self.render(sections);
        Ok(SummaryOutput {
            tokens: TokenUsage {
                output: used,
                ..TokenUsage::default()
            },
            text,
            finish: FinishReason::Stop,
            redacted: 0,
        })
    }
}

impl ExtractiveSummarizer {
    /// The summary of `sections` (title, items) within the token budget,
    /// and the tokens it takes. A section's newest items are kept; once the
    /// budget is spent the text ends with `- …`.
    fn render(&self, sections: Vec<(&str, Vec<String>)>) -> (String, u64) {
        let mut text = String::from("## Summary of the conversation so far (extractive)\n");
        let mut used = self.estimator.estimate(&text);
        'sections: for (title, items) in sections {
            if items.is_empty() {
                continue;
            }
            let header = format!("\n### {title}\n");
            used += self.estimator.estimate(&header);
            text.push_str(&header);
            // Newest items matter most: keep the tail when over budget.
            let skip = items.len().saturating_sub(40);
            for item in &items[skip..] {
                let line = format!("- {item}\n");
                let cost = self.estimator.estimate(&line);
                if used + cost > self.budget_tokens {
                    text.push_str("- …\n");
                    break 'sections;
                }
                used += cost;
                text.push_str(&line);
            }
        }
        (text, used)
    }
}

/// What [`ExtractiveSummarizer`] gathers from a window, section by section,
/// in the order met.
#[derive(Default)]
struct Extract {
    requests: Vec<String>,
    read: Vec<String>,
    changed: Vec<String>,
    commands: Vec<String>,
    errors: Vec<String>,
    last_text: Option<String>,
}

impl Extract {
    /// Gathers from the window `messages`: the user's requests, the last
    /// assistant text and what the tool calls did.
    fn from_messages(messages: &[WindowMessage]) -> Self {
        let mut found = Extract::default();
        for m in messages {
            for p in &m.parts {
                match (m.role, p) {
                    (Role::User, WindowPart::Text(t))
                        if t != COMPACTION_QUESTION && !is_continue_text(t) =>
                    {
                        push_unique(&mut found.requests, first_line(t, 300));
                    }
                    (Role::Assistant, WindowPart::Text(t)) if !t.trim().is_empty() => {
                        found.last_text = Some(first_line(t, 600));
                    }
                    (
                        Role::Assistant,
                        WindowPart::Tool {
                            tool,
                            input,
                            result,
                            ..
                        },
                    ) => found.tool(tool, input, result),
                    _ => {}
                }
            }
        }
        found
    }

    /// One tool call: the command it ran and its outcome, or the file it
    /// changed or read; and its error, if it failed.
    fn tool(&mut self, tool: &str, input: &Json, result: &ToolResult) {
        let path = PATH_KEYS
            .iter()
            .find_map(|k| input.get(k).and_then(|v| v.as_str()))
            .map(str::to_owned);
        let failed = match result {
            ToolResult::Error(e) => Some(first_line(e, 200)),
            ToolResult::Output { .. } => None,
        };
        if SHELL_TOOLS.contains(&tool) {
            let cmd = input
                .get("command")
                .or_else(|| input.get("cmd"))
                .map(|c| {
                    c.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| c.to_json_string())
                })
                .unwrap_or_default();
            let outcome = match &failed {
                Some(e) => format!("failed: {e}"),
                None => "ok".into(),
            };
            self.commands
                .push(format!("`{}` ({outcome})", first_line(&cmd, 160)));
        } else if let Some(path) = path {
            if WRITE_TOOLS.contains(&tool) {
                push_unique(&mut self.changed, path);
            } else if READ_TOOLS.contains(&tool) {
                push_unique(&mut self.read, path);
            }
        }
        if let Some(e) = failed {
            self.errors.push(format!("{tool}: {e}"));
        }
    }

    /// The summary's sections in order, each a title and its items.
    fn sections(self) -> Vec<(&'static str, Vec<String>)> {
        vec![
            ("User requests", self.requests),
            ("Files changed", self.changed),
            ("Files read", self.read),
            ("Commands run", self.commands),
            ("Errors", self.errors),
            (
                "Last assistant message",
                self.last_text.into_iter().collect(),
            ),
        ]
    }
}

/// Returns the summaries already in a log, for runs from a recording: by
/// job id, or in order of the jobs when the run has new job ids.
#[derive(Debug, Clone, Default)]
pub struct RecordedSummarizer {
    by_job: BTreeMap<MessageId, SummaryOutput>,
    in_order: Vec<SummaryOutput>,
    next: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl RecordedSummarizer {
    /// Collects the completed summaries of `events` (one session's log).
    pub fn from_log(events: &[Envelope]) -> Self {
        // Every job's summary, dropped or not: the state keeps the history.
        let state = match ctxlog_core::SessionState::replay_keeping_history(events) {
            Ok(s) => s,
            Err(_) => return Self::default(),
        };
        let mut by_job = BTreeMap::new();
        let mut in_order = Vec::new();
        for job in &state.jobs {
            if !matches!(job.status, JobStatus::Completed { .. }) {
                continue;
            }
            let Some(summary) = job.summary.and_then(|s| state.history_message(s)) else {
                continue;
            };
            let Ok(text) = summary.texts_in(events) else {
                return Self::default(); // the log does not hold what its state says
            };
            let out = SummaryOutput {
                text: text.join("\n\n"),
                tokens: summary.tokens.as_deref().copied().unwrap_or_default(),
                finish: summary.finish.clone().unwrap_or(FinishReason::Stop),
                redacted: job.redactions,
            };
            by_job.insert(job.marker, out.clone());
            in_order.push(out);
        }
        RecordedSummarizer {
            by_job,
            in_order,
            next: Default::default(),
        }
    }

    /// A summarizer that answers with these texts, in order.
    pub fn from_texts(texts: &[&str]) -> Self {
        RecordedSummarizer {
            in_order: texts
                .iter()
                .map(|t| SummaryOutput {
                    text: (*t).to_owned(),
                    tokens: TokenUsage::default(),
                    finish: FinishReason::Stop,
                    redacted: 0,
                })
                .collect(),
            ..Self::default()
        }
    }
}

impl Summarizer for RecordedSummarizer {
    fn name(&self) -> &str {
        "recorded"
    }

    fn summarize(&self, request: &SummaryRequest) -> Result<SummaryOutput, SummarizeError> {
        if let Some(out) = self.by_job.get(&request.job) {
            return Ok(out.clone());
        }
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.in_order
            .get(i)
            .cloned()
            .ok_or(SummarizeError::NotRecorded(request.job))
    }
}
