//! Strict reading of JSON fields: a value of the wrong type is an error that
//! names the field and what it held, never a default. Absent and `null`
//! mean "not recorded".

use serde_json::{Map, Value};

/// The largest count or time accepted: 2^53, the largest integer the
/// agents' JavaScript and JSON tools keep exact (a token count or a
/// millisecond time beyond it is damage, not data).
pub const MAX_COUNT: u64 = 1 << 53;

/// What `v` is, in words, for an error.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let shown: String = s.chars().take(40).collect();
            let more = if shown.len() < s.len() { "…" } else { "" };
            format!("the string {shown:?}{more}")
        }
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// A count or a time (an integer from 0 to [`MAX_COUNT`]) held by `v`,
/// named `name()` in the error (made only then: counts are read for every
/// message and part of an import).
pub(crate) fn count_named(
    v: Option<&Value>,
    name: impl FnOnce() -> String,
) -> Result<Option<u64>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(x) if x <= MAX_COUNT => Ok(Some(x)),
            _ => Err(format!(
                "`{}` must be an integer from 0 to 2^53, not the number {n}",
                name()
            )),
        },
        Some(other) => Err(format!(
            "`{}` must be an integer from 0 to 2^53, not {}",
            name(),
            describe(other)
        )),
    }
}

/// The count at `key` of `obj` (see [`count_named`]).
pub(crate) fn count(obj: &Value, key: &str) -> Result<Option<u64>, String> {
    count_named(obj.get(key), || key.to_owned())
}

/// The count at the JSON pointer `pointer` of `obj`, named by the pointer
/// in dotted form (`/time/created` → `time.created`).
pub(crate) fn count_at(obj: &Value, pointer: &str) -> Result<Option<u64>, String> {
    count_named(at(obj, pointer), || dotted(pointer))
}

/// A non-negative finite number (a cost) held by `v`.
pub(crate) fn amount_value(v: Option<&Value>, name: &str) -> Result<Option<f64>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err(format!(
                "`{name}` must be a non-negative number, not the number {n}"
            )),
        },
        Some(other) => Err(format!(
            "`{name}` must be a non-negative number, not {}",
            describe(other)
        )),
    }
}

/// The object at `key` of `obj`: absent or `null` is `None`; anything else
/// that is not an object is an error.
pub(crate) fn object<'a>(
    obj: &'a Value,
    key: &str,
) -> Result<Option<&'a Map<String, Value>>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(other) => Err(format!(
            "`{key}` must be an object, not {}",
            describe(other)
        )),
    }
}

/// The value at `pointer` (`/a/b`: key `b` of object `a`) of `v`, for the
/// importers' own pointers, which escape nothing: serde_json's
/// `Value::pointer` allocates twice per key to undo `~0` and `~1`, and the
/// importers look up several counts in every message and part.
pub(crate) fn at<'v>(v: &'v Value, pointer: &str) -> Option<&'v Value> {
    debug_assert!(pointer.starts_with('/') && !pointer.contains('~'));
    pointer
        .split('/')
        .skip(1)
        .try_fold(v, |v, key| v.as_object()?.get(key))
}

/// `/a/b` → `a.b`.
fn dotted(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_are_integers_in_range_or_absent() {
        let v = json!({"a": 12, "b": null, "s": "12", "f": 1.5, "n": -3, "h": 1e30, "x": 9007199254740993u64, "o": {"t": 4}});
        assert_eq!(count(&v, "a"), Ok(Some(12)));
        assert_eq!(count(&v, "b"), Ok(None));
        assert_eq!(count(&v, "missing"), Ok(None));
        assert_eq!(count_at(&v, "/o/t"), Ok(Some(4)));
        for p in ["/o/t", "/o", "/a", "/o/x", "/a/t", "/missing/t"] {
            assert_eq!(at(&v, p), v.pointer(p), "{p}");
        }
        for (k, found) in [
            ("s", "the string \"12\""),
            ("f", "the number 1.5"),
            ("n", "the number -3"),
            ("h", "the number 1e+30"),
            ("x", "the number 9007199254740993"),
        ] {
            let e = count(&v, k).unwrap_err();
            assert!(e.contains(&format!("`{k}`")) && e.contains(found), "{e}");
        }
        assert!(object(&json!({"u": "x"}), "u")
            .unwrap_err()
            .contains("the string \"x\""));
        assert_eq!(amount_value(Some(&json!(0.25)), "cost"), Ok(Some(0.25)));
        assert!(amount_value(Some(&json!(-1)), "cost").is_err());
    }
}
