//! JSON values merged key by key: what an import keeps of a recording's
//! fields, and what the exporter writes back over its own objects.

use serde_json::Value;

/// Merges `over` into `into`: objects key by key, any other value replacing.
pub(crate) fn merge(into: &mut Value, over: Value) {
    match (into, over) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}
