//! Built-in model limits for the models in recorded sessions and common
//! current ones, the context window a recording states itself, and the
//! caller's overrides, resolved in that order (later wins).

use ctxlog_core::ModelLimits;

/// The caller's overrides (`--model`, `--context`, `--output`,
/// `--input-limit`); each `None` leaves the resolved value alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    /// Look the limits up for this model instead of the recorded one.
    pub model: Option<String>,
    /// Context window, tokens.
    pub context: Option<u64>,
    /// Dedicated input limit, tokens (0 = none).
    pub input: Option<u64>,
    /// Output limit, tokens.
    pub output: Option<u64>,
}

/// Limits assumed for a model the table does not know.
pub const UNKNOWN_MODEL: ModelLimits = ModelLimits {
    context: 200_000,
    input: None,
    output: Some(32_000),
};

/// The outcome of [`resolve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The limits in force.
    pub limits: ModelLimits,
    /// The model whose limits were assumed because the table lacks it.
    pub unknown: Option<String>,
}

/// Resolves the limits: the table entry of the override model or else the
/// recorded `model`; then the recording's own `file_context` and the
/// output limit its agent uses (`agent_output`); then the explicit
/// overrides. With no model at all (before the first step), the table is
/// skipped and only overrides apply over [`UNKNOWN_MODEL`].
pub fn resolve(
    o: &LimitOverrides,
    model: Option<&str>,
    file_context: Option<u64>,
    agent_output: Option<u64>,
) -> Resolved {
    let model = o.model.as_deref().or(model);
    let (mut limits, unknown) = match model.map(|m| (m, limits_for(m))) {
        Some((_, Some(l))) => (l, None),
        Some((m, None)) => (UNKNOWN_MODEL, Some(m.to_owned())),
        None => (UNKNOWN_MODEL, None),
    };
    let mut unknown = unknown;
    if let Some(c) = file_context.filter(|c| *c > 0) {
        limits.context = c;
        if limits.input.is_some_and(|i| i > c) {
            limits.input = None;
        }
        unknown = None; // the recording said how large its window is
    }
    if let Some(out) = agent_output {
        limits.output = Some(out);
    }
    if let Some(c) = o.context {
        limits.context = c;
    }
    if let Some(i) = o.input {
        limits.input = (i > 0).then_some(i);
    }
    if let Some(out) = o.output {
        limits.output = Some(out);
    }
    // With the context given, nothing that matters is assumed: the output
    // limit assumed for an unknown model (32,000) is every preset's output
    // cap, so the usable budget is the same as with no output limit.
    if o.context.is_some() {
        unknown = None;
    }
    // An input limit beyond the context window (a table entry under a
    // smaller --context) would hide the window: the context is the limit.
    if limits.context > 0 && limits.input.is_some_and(|i| i > limits.context) {
        limits.input = None;
    }
    Resolved { limits, unknown }
}

/// (model id prefix, context, input limit, output limit), most specific first.
const TABLE: &[(&str, u64, Option<u64>, u64)] = &[
    ("claude-opus-4-5", 200_000, None, 64_000),
    ("claude-opus-4-1", 200_000, None, 32_000),
    ("claude-opus-4", 200_000, None, 32_000),
    ("claude-sonnet-4-5", 200_000, None, 64_000),
    ("claude-sonnet-4", 200_000, None, 64_000),
    ("claude-haiku-4-5", 200_000, None, 64_000),
    ("claude-3-7-sonnet", 200_000, None, 64_000),
    ("claude-3-5-sonnet", 200_000, None, 8_192),
    ("claude-3-5-haiku", 200_000, None, 8_192),
    ("gpt-5.1-codex", 400_000, Some(272_000), 128_000),
    ("gpt-5.1", 400_000, Some(272_000), 128_000),
    ("gpt-5-codex", 400_000, Some(272_000), 128_000),
    ("gpt-5-mini", 400_000, Some(272_000), 128_000),
    ("gpt-5-nano", 400_000, Some(272_000), 128_000),
    ("gemini-2.5-pro", 1_048_576, None, 65_536),
    ("gemini-2.5-flash", 1_048_576, None, 65_536),
    ("grok-code-fast-1", 256_000, None, 10_000),
    ("qwen3-coder", 262_144, None, 65_536),
    ("kimi-k2", 131_072, None, 16_384),
    ("glm-4.6", 204_800, None, 131_072),
    ("deepseek-chat", 128_000, None, 8_192),
    ("gpt-5", 400_000, Some(272_000), 128_000),
    ("gpt-4.1", 1_047_576, None, 32_768),
    ("gpt-4o", 128_000, None, 16_384),
    ("o4-mini", 200_000, None, 100_000),
    ("o3", 200_000, None, 100_000),
];

/// A model id without its `provider/` prefix, as the tables match it.
fn bare_id(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

/// The output limit Claude Code 2.1 uses for `model` where it is not the
/// API's (its result's `modelUsage.maxOutputTokens`, measured on 2.1.328:
/// 32,000 for sonnet 4.6 and 4.5, 64,000 for opus 4.6).
pub fn claude_code_2_1_output(model: &str) -> Option<u64> {
    let id = bare_id(model);
    [
        ("claude-sonnet-4-6", 32_000),
        ("claude-sonnet-4-5", 32_000),
        ("claude-opus-4-6", 64_000),
    ]
    .iter()
    .find(|(prefix, _)| id.starts_with(prefix))
    .map(|&(_, out)| out)
}

/// The limits of `model` (matched by prefix, ignoring a `provider/` prefix
/// and a date suffix), or `None` for a model the table does not know.
pub fn limits_for(model: &str) -> Option<ModelLimits> {
    let id = bare_id(model);
    TABLE
        .iter()
        .find(|(prefix, ..)| id.starts_with(prefix))
        .map(|&(_, context, input, output)| ModelLimits {
            context,
            input,
            output: Some(output),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_by_prefix() {
        let l = limits_for("claude-sonnet-4-5-20250929").unwrap();
        assert_eq!((l.context, l.output), (200_000, Some(64_000)));
        assert_eq!(
            limits_for("anthropic/claude-opus-4-1").unwrap().output,
            Some(32_000)
        );
        assert_eq!(limits_for("gpt-5-codex").unwrap().input, Some(272_000));
        assert_eq!(limits_for("my-local-model"), None);
        assert_eq!(limits_for("gpt-5.1-codex").unwrap().input, Some(272_000));
    }

    #[test]
    fn resolution_order_table_then_file_then_overrides() {
        let none = LimitOverrides::default();
        let r = resolve(&none, Some("gpt-5-codex"), Some(272_000), None);
        assert_eq!(r.limits.context, 272_000);
        assert_eq!(r.limits.input, Some(272_000));
        assert_eq!(r.unknown, None);
        let r = resolve(&none, Some("mystery"), None, None);
        assert_eq!(
            (r.limits.clone(), r.unknown.as_deref()),
            (UNKNOWN_MODEL, Some("mystery"))
        );
        let o = LimitOverrides {
            context: Some(50_000),
            output: Some(4_000),
            ..Default::default()
        };
        let r = resolve(&o, Some("gpt-5"), None, None);
        assert_eq!(
            r.limits.input, None,
            "an input limit above --context is dropped"
        );
        let r = resolve(&o, Some("mystery"), Some(1_000_000), None);
        assert_eq!(r.limits.context, 50_000);
        assert_eq!(r.limits.output, Some(4_000));
        assert_eq!(r.unknown, None);
        let o = LimitOverrides {
            model: Some("claude-sonnet-4-5".into()),
            input: Some(0),
            ..Default::default()
        };
        let r = resolve(&o, Some("gpt-5"), None, None);
        assert_eq!((r.limits.context, r.limits.input), (200_000, None));
    }
}
