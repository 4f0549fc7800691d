//! A complete agent loop embedding the ctxlog engine, with a scripted model
//! standing in for an LLM. Run it with `cargo run --example agent_loop`.
//!
//! The loop is the seeds' lifecycle, driven from the outside:
//!
//! 1. the user's prompt is appended (`Session::user`);
//! 2. the model is called with the exact window (`window`) and its answer —
//!    text, tool calls, usage, finish reason — is recorded as one [`Step`]
//!    (`Session::step`), which checks the overflow predicate and may queue an
//!    automatic compaction;
//! 3. queued compactions run before the next model call (`run_pending`); an
//!    automatic one ends with the synthetic "Continue if you have next steps";
//! 4. when the model stops, the turn ends and old tool outputs are pruned
//!    (`end_turn`).

use ctxlog::core::window::{ToolResult, WindowPart};
use ctxlog::core::{FinishReason, Json, ModelLimits, PartBody, Policy, TokenUsage, ToolState};
use ctxlog::engine::{EngineBuilder, JobOutcome, NewSession, Step};

/// What the scripted model answers: a few file reads, then a final text.
struct ScriptedModel {
    reads_per_turn: usize,
}

/// One model answer.
struct Answer {
    text: String,
    tool_calls: Vec<(String, Json)>,
    finish: FinishReason,
}

impl ScriptedModel {
    /// Answers from the window: keep reading files until `reads_per_turn`
    /// tool results follow the last user message, then stop.
    fn answer(&self, window: &ctxlog::core::Window) -> Answer {
        let since_user = window
            .messages
            .iter()
            .rev()
            .take_while(|m| m.role == ctxlog::core::Role::Assistant)
            .flat_map(|m| &m.parts)
            .filter(|p| matches!(p, WindowPart::Tool { .. }))
            .count();
        if since_user < self.reads_per_turn {
            let path = format!("src/module_{since_user}.rs");
            Answer {
                text: format!("Reading {path}."),
                tool_calls: vec![(
                    "read".into(),
                    Json::Object(vec![("filePath".into(), path.into())]),
                )],
                finish: FinishReason::ToolCalls,
            }
        } else {
            Answer {
                text: "Done: the modules are consistent.".into(),
                tool_calls: vec![],
                finish: FinishReason::Stop,
            }
        }
    }
}

/// The "tool": a file read that returns a large output.
fn run_tool(name: &str, input: &Json) -> String {
    let path = input.get("filePath").and_then(Json::as_str).unwrap_or("?");
    format!(
        "// {name} {path}\n{}",
        "fn item() -> u32 { 42 }\n".repeat(1_500)
    )
}

/// Estimated prompt size of a window, as a provider would report it.
fn prompt_tokens(window: &ctxlog::core::Window) -> u64 {
    2_000 + window.estimate(&Policy::default().estimator)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("ctxlog-agent-loop-{}", std::process::id()));
    let engine = EngineBuilder::new().open(&dir)?;
    // A small model so the example compacts quickly: 64k context, 8k output.
    let limits = ModelLimits {
        context: 64_000,
        input: None,
        output: Some(8_000),
    };
    let session = engine.create_session(NewSession::new(limits).title("agent loop example"))?;
    let model = ScriptedModel { reads_per_turn: 4 };

    for prompt in [
        "Check module 0 to 3.",
        "Check them again.",
        "One more pass, please.",
        "And a last one.",
    ] {
        println!("user: {prompt}");
        let mut parent = session.user(prompt)?;
        loop {
            // Queued compactions run before the next model call.
            for outcome in session.run_pending()? {
                match outcome {
                    JobOutcome::Completed { continued, .. } => {
                        println!(
                            "  [compacted; window now starts at the summary{}]",
                            if continued { ", continuing" } else { "" }
                        );
                        // The synthetic continue message is the new parent.
                        if let Some(last) = session.state()?.messages.last() {
                            parent = last.id;
                        }
                    }
                    JobOutcome::Failed { error, .. } => {
                        println!("  [compaction failed: {error}; history kept]")
                    }
                }
            }
            let window = session.window()?;
            let answer = model.answer(&window);
            let mut step = Step::new(parent).text(answer.text.clone());
            for (i, (tool, input)) in answer.tool_calls.iter().enumerate() {
                step = step.part(PartBody::Tool {
                    call_id: format!("call_{i}"),
                    tool: tool.clone(),
                    state: ToolState::Completed {
                        input: input.clone(),
                        output: run_tool(tool, input),
                        title: None,
                        metadata: Json::Null,
                        start: 0,
                        end: 0,
                        attachments: vec![],
                    },
                });
            }
            let usage = TokenUsage {
                input: prompt_tokens(&window),
                output: 200,
                ..TokenUsage::default()
            };
            let outcome = session.step(step.tokens(usage).finish(answer.finish.clone()))?;
            println!(
                "  assistant: {} (prompt ~{} tokens{})",
                answer.text,
                usage.input,
                if outcome.queued.is_some() {
                    ", overflow: compaction queued"
                } else {
                    ""
                }
            );
            if answer.finish == FinishReason::Stop && outcome.queued.is_none() {
                break;
            }
        }
        if let Some(pruned) = session.end_turn()? {
            println!(
                "  [turn ended: pruned {} old tool outputs, ~{} tokens]",
                pruned.parts.len(),
                pruned.tokens
            );
        }
    }

    let window = session.window()?;
    let placeholders = window
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(p, WindowPart::Tool { result: ToolResult::Output { text, .. }, .. } if text == ctxlog::core::window::PRUNED_PLACEHOLDER))
        .count();
    println!(
        "final window: {} messages, ~{} tokens, {placeholders} pruned outputs",
        window.messages.len(),
        prompt_tokens(&window)
    );
    for entry in session.audit()? {
        println!("  audit #{} {}", entry.seq, entry.what);
    }
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
