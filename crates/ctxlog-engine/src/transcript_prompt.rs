//! The summarizer request of [`SummaryInput::Transcript`] (OpenCode 1.18):
//! OpenCode's summarization system prompt and one user message holding the
//! transcript, the prior summary and the output template. The texts are
//! OpenCode 1.18.33's, byte for byte (the differential test compares them
//! with the requests the real program sent).

#[cfg(doc)]
use ctxlog_core::SummaryInput;
use ctxlog_core::Transcript;

/// OpenCode 1.18's system prompt of the compaction agent.
pub const TRANSCRIPT_SYSTEM_PROMPT: &str = r#"You are a context summarization agent. You are given a conversation between a user and an agent. Your goal is to produce a structured summary matching the format specified so another coding agent can continue the work.

Always follow the exact output structure requested by the user prompt. Keep every section, preserve exact file paths and identifiers when known, and prefer terse bullets over paragraphs.

Do not continue the conversation. Do not respond to any questions in the conversation. Only output the structured summary in the exact format requested by the user prompt. Respond in the same language as the conversation.
"#;

/// What asks for a summary when there is no prior one.
pub const NEW_SUMMARY_INSTRUCTION: &str = "Create a new anchored summary from the conversation history in the <conversation> tags above so another coding agent can continue the work.";

/// What asks to merge the prior summary into the new one.
pub const MERGE_SUMMARY_INSTRUCTION: &str = r#"The <prior-summary> summarizes everything that happened before the <conversation>. Construct a new summary that combines both. The <prior-summary> is discarded after this: anything you do not carry into the new summary is lost.

When combining:
- Carry forward objectives, constraints, user directives, decisions, and parallel workstreams from the <prior-summary> even when the <conversation> does not mention them. Drop only what is finished and no longer needed.
- The <conversation> is more recent than the <prior-summary>. Where they conflict, the conversation wins: state the corrected fact and drop the old claim.
- Add new progress, decisions, constraints, and context from the conversation.
- Move completed work from "Active" to "Completed".
- If a blocker has been resolved, update the summary to reflect that while keeping any details still needed to continue the work.
- Update "Objective" and "Next Move" to reflect the current work state."#;

/// The output template and its rules, at the end of every request.
pub const SUMMARY_TEMPLATE: &str = r#"Output exactly the Markdown structure shown inside <template> and keep the section order unchanged. Do not include the <template> tags in your response.
<template>
## Objective
- [one or two brief sentences describing what the user is trying to accomplish]

## Important Details
- [constraints/preferences, decisions and why, important facts/assumptions, exact context needed to continue, or "(none)"]

## Work State
### Completed
- [finished work, verified facts, or changes made; otherwise "(none)"]

### Active
- [current work, partial changes, or investigation state; otherwise "(none)"]

### Blocked
- [blockers, failing commands, or unknowns; otherwise "(none)"]

## Next Move
1. [immediate concrete action, or "(none)"]
2. [next action if known, or "(none)"]

## Relevant Files
- [file or directory path: why it matters, or "(none)"]
</template>

Rules:
- Keep every section, even when empty.
- Use terse bullets, not prose paragraphs.
- Preserve exact file paths, symbols, commands, error strings, URLs, and identifiers when known.
- Do not mention the summary process or that context was compacted."#;

/// What precedes the conversation when a hook replaces the prompt.
pub const HOOK_HISTORY_HEADER: &str = "The following is the conversation history:";

/// The user message for `transcript`: the conversation, the prior summary
/// when there is one, the template, then each line of hook `context` (joined
/// by `\n`, as OpenCode joins them). A hook `prompt` replaces all of it and
/// is followed by the conversation.
pub fn transcript_prompt(
    transcript: &Transcript,
    hook_prompt: Option<&str>,
    context: &[String],
) -> String {
    if let Some(prompt) = hook_prompt {
        return [prompt, HOOK_HISTORY_HEADER, &transcript.conversation]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
    }
    let conversation = format!(
        "Here is the conversation so far:\n\n<conversation>\n{}\n</conversation>",
        transcript.conversation
    );
    let prompt = match &transcript.prior_summary {
        None => [conversation.as_str(), NEW_SUMMARY_INSTRUCTION, SUMMARY_TEMPLATE].join("\n\n"),
        Some(prior) => [
            conversation.as_str(),
            &format!(
                "Here is the summary of the conversation before the <conversation> above:\n\n<prior-summary>\n{prior}\n</prior-summary>"
            ),
            MERGE_SUMMARY_INSTRUCTION,
            SUMMARY_TEMPLATE,
        ]
        .join("\n\n"),
    };
    std::iter::once(prompt)
        .chain(context.iter().filter(|c| !c.is_empty()).cloned())
        .collect::<Vec<_>>()
        .join("\n")
}
