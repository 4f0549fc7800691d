//! OpenCode's values as ctxlog reads them: token counts, costs, strings and
//! the model a user message names.

use crate::strict;
use ctxlog_core::{ModelRef, TokenUsage};
use serde_json::Value;

/// Reads OpenCode's `tokens` object; a count of the wrong type is an error
/// naming it (`tokens.cache.read must be …`).
pub fn tokens_from(v: &Value) -> Result<TokenUsage, String> {
    if !v.is_object() {
        return Err(format!(
            "`tokens` must be an object, not {}",
            strict::describe(v)
        ));
    }
    let count = |p: &str| {
        strict::count_named(strict::at(v, p), || {
            format!("tokens{}", p.replace('/', "."))
        })
    };
    let n = |p: &str| count(p).map(Option::unwrap_or_default);
    Ok(TokenUsage {
        total: count("/total")?,
        input: n("/input")?,
        output: n("/output")?,
        reasoning: n("/reasoning")?,
        cache_read: n("/cache/read")?,
        cache_write: n("/cache/write")?,
    })
}

/// A recorded cost in dollars as micro-dollars.
pub(super) fn cost_micros(v: Option<&Value>) -> Result<Option<u64>, String> {
    Ok(strict::amount_value(v, "cost")?.map(|c| (c * 1_000_000.0).round() as u64))
}

/// The string at key `k` of `o`, when it is one.
pub(super) fn str_at<'v>(o: &'v Value, k: &str) -> Option<&'v str> {
    o.get(k).and_then(Value::as_str)
}

/// The model a user message's `info` names.
pub(super) fn user_model(info: &Value) -> Option<ModelRef> {
    let m = info.get("model")?;
    Some(ModelRef {
        provider: str_at(m, "providerID").unwrap_or("").to_owned(),
        model: str_at(m, "modelID")?.to_owned(),
    })
}
