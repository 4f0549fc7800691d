//! Built-in model limits for the models in recorded sessions and common
//! current ones. Overridable by the caller.

use ctxlog_core::ModelLimits;

/// (model id prefix, context, input limit, output limit), most specific first.
const TABLE: &[(&str, u64, Option<u64>, u64)] = &[
    ("claude-opus-4-1", 200_000, None, 32_000),
    ("claude-opus-4", 200_000, None, 32_000),
    ("claude-sonnet-4-5", 200_000, None, 64_000),
    ("claude-sonnet-4", 200_000, None, 64_000),
    ("claude-haiku-4-5", 200_000, None, 64_000),
    ("claude-3-7-sonnet", 200_000, None, 64_000),
    ("claude-3-5-sonnet", 200_000, None, 8_192),
    ("claude-3-5-haiku", 200_000, None, 8_192),
    ("gpt-5-codex", 400_000, Some(272_000), 128_000),
    ("gpt-5", 400_000, Some(272_000), 128_000),
    ("gpt-4.1", 1_047_576, None, 32_768),
    ("gpt-4o", 128_000, None, 16_384),
    ("o4-mini", 200_000, None, 100_000),
    ("o3", 200_000, None, 100_000),
];

/// The limits of `model` (matched by prefix, ignoring a `provider/` prefix
/// and a date suffix), or `None` for a model the table does not know.
pub fn limits_for(model: &str) -> Option<ModelLimits> {
    let id = model.rsplit('/').next().unwrap_or(model);
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
    }
}
