//! What the engine's tests share.

use ctxlog_core::ModelLimits;

/// A 100k context with an 8k output cap: usable = 100k − min(8k, 32k) =
/// 92k.
pub fn limits() -> ModelLimits {
    ModelLimits {
        context: 100_000,
        input: None,
        output: Some(8_000),
    }
}
