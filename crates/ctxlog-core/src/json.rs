//! [`Json`]: an arbitrary JSON value (tool inputs, metadata) that both a
//! self-describing format (JSON) and a non-self-describing binary codec
//! (bincode) can carry.
//!
//! `serde_json::Value` cannot be decoded by bincode because its `Deserialize`
//! asks the format what comes next (`deserialize_any`). [`Json`] switches on
//! [`serde::Serializer::is_human_readable`]: human-readable formats see plain
//! JSON; binary formats see a tagged enum with a fixed layout. Object keys
//! keep their original order, so a value round-trips byte for byte.

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt::{self, Write as _};

/// A JSON value with ordered object keys.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Json {
    /// `null`
    #[default]
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number (integers are kept exact).
    Number(JsonNumber),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, keys in their original order.
    Object(Vec<(String, Json)>),
}

/// A JSON number: exact for integers that fit 64 bits, `f64` otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum JsonNumber {
    /// A non-negative integer.
    PosInt(u64),
    /// A negative integer.
    NegInt(i64),
    /// Any other number (never NaN or infinite: JSON cannot spell those).
    Float(f64),
}

/// The binary layout of [`Json`]. Variant order is part of the log format:
/// append only.
#[derive(Serialize, Deserialize)]
enum JsonRepr {
    Null,
    Bool(bool),
    Number(JsonNumber),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// [`JsonRepr`] borrowed, to write a value without copying it first: the
/// same variants in the same order, so the same bytes.
#[derive(Serialize)]
#[serde(rename = "JsonRepr")]
enum JsonReprRef<'a> {
    Null,
    Bool(bool),
    Number(JsonNumber),
    String(&'a str),
    Array(&'a [Json]),
    Object(&'a [(String, Json)]),
}

impl Json {
    /// Looks up `key` in an object (the first occurrence).
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string value, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// Compact JSON text (no whitespace), keys in stored order.
    pub fn to_json_string(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(JsonNumber::PosInt(n)) => {
                let _ = write!(out, "{n}");
            }
            Json::Number(JsonNumber::NegInt(n)) => {
                let _ = write!(out, "{n}");
            }
            Json::Number(JsonNumber::Float(f)) => {
                if f.is_finite() {
                    // The same shortest round-trip form serde_json writes.
                    out.push_str(zmij::Buffer::new().format_finite(*f));
                } else {
                    out.push_str("null");
                }
            }
            Json::String(s) => write_json_string(s, out),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_json(out);
                }
                out.push(']');
            }
            Json::Object(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_json_string(k, out);
                    out.push(':');
                    v.write_json(out);
                }
                out.push('}');
            }
        }
    }
}

impl Json {
    /// The length in UTF-16 units of [`Json::to_json_string`], without
    /// building the string (the window estimate measures every tool input
    /// at every step).
    pub fn json_utf16_len(&self) -> u64 {
        match self {
            Json::Null | Json::Bool(true) => 4,
            Json::Bool(false) => 5,
            Json::Number(_) => crate::policy::utf16_len(&self.to_json_string()),
            Json::String(s) => json_string_utf16_len(s),
            Json::Array(items) => {
                let commas = items.len().saturating_sub(1) as u64;
                2 + commas + items.iter().map(Json::json_utf16_len).sum::<u64>()
            }
            Json::Object(entries) => {
                let commas = entries.len().saturating_sub(1) as u64;
                let fields: u64 = entries
                    .iter()
                    .map(|(k, v)| json_string_utf16_len(k) + 1 + v.json_utf16_len())
                    .sum();
                2 + commas + fields
            }
        }
    }
}

/// UTF-16 length of `s` written as a JSON string by [`write_json_string`]:
/// the quotes, plus one unit for each two-character escape and five for
/// each `\u00XX`.
fn json_string_utf16_len(s: &str) -> u64 {
    let escapes: u64 = s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    2 + crate::policy::utf16_len(s) + escapes
}

fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl From<&str> for Json {
    fn from(s: &str) -> Self {
        Json::String(s.to_owned())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Self {
        Json::String(s)
    }
}

impl From<u64> for Json {
    fn from(n: u64) -> Self {
        Json::Number(JsonNumber::PosInt(n))
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Self {
        Json::Bool(b)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !serializer.is_human_readable() {
            let repr = match self {
                Json::Null => JsonReprRef::Null,
                Json::Bool(b) => JsonReprRef::Bool(*b),
                Json::Number(n) => JsonReprRef::Number(*n),
                Json::String(s) => JsonReprRef::String(s),
                Json::Array(a) => JsonReprRef::Array(a),
                Json::Object(o) => JsonReprRef::Object(o),
            };
            return repr.serialize(serializer);
        }
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(JsonNumber::PosInt(n)) => serializer.serialize_u64(*n),
            Json::Number(JsonNumber::NegInt(n)) => serializer.serialize_i64(*n),
            Json::Number(JsonNumber::Float(f)) => serializer.serialize_f64(*f),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if !deserializer.is_human_readable() {
            return Ok(match JsonRepr::deserialize(deserializer)? {
                JsonRepr::Null => Json::Null,
                JsonRepr::Bool(b) => Json::Bool(b),
                JsonRepr::Number(n) => Json::Number(n),
                JsonRepr::String(s) => Json::String(s),
                JsonRepr::Array(a) => Json::Array(a),
                JsonRepr::Object(o) => Json::Object(o),
            });
        }
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        Json::deserialize(d)
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(JsonNumber::PosInt(n)))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(if n >= 0 {
            JsonNumber::PosInt(n as u64)
        } else {
            JsonNumber::NegInt(n)
        }))
    }
    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Json, E> {
        Ok(Json::Number(JsonNumber::Float(f)))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_owned()))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            entries.push((k, v));
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Json {
        Json::Object(vec![
            ("path".into(), "src/main.rs".into()),
            ("z".into(), Json::Number(JsonNumber::NegInt(-3))),
            (
                "a".into(),
                Json::Array(vec![Json::Null, true.into(), 1.5f64.into_json()]),
            ),
            (
                "nested".into(),
                Json::Object(vec![("k".into(), "ü\"\n".into())]),
            ),
        ])
    }

    /// The layout a value was written in before it was written borrowed:
    /// a copy into the owned [`JsonRepr`], then that.
    fn owned_repr_bytes(v: &Json) -> Vec<u8> {
        let repr = match v.clone() {
            Json::Null => JsonRepr::Null,
            Json::Bool(b) => JsonRepr::Bool(b),
            Json::Number(n) => JsonRepr::Number(n),
            Json::String(s) => JsonRepr::String(s),
            Json::Array(a) => JsonRepr::Array(a),
            Json::Object(o) => JsonRepr::Object(o),
        };
        bincode_bytes(&repr)
    }

    /// bincode's bytes of `v` (any options show a layout; the codec's own
    /// are not reached from here: `codec.rs` uses this file).
    fn bincode_bytes<T: Serialize>(v: &T) -> Vec<u8> {
        use bincode::Options;
        bincode::DefaultOptions::new()
            .with_varint_encoding()
            .serialize(v)
            .expect("encodes")
    }

    /// Writing borrowed gives the bytes of the owned layout, so stored
    /// records read and hash as before.
    #[test]
    fn the_borrowed_layout_writes_the_owned_layouts_bytes() {
        let values = [
            sample(),
            Json::Null,
            true.into(),
            Json::Number(JsonNumber::PosInt(u64::MAX)),
            "text".into(),
            Json::Array(vec![sample(), Json::Array(Vec::new())]),
        ];
        for v in &values {
            assert_eq!(bincode_bytes(v), owned_repr_bytes(v), "{v:?}");
        }
    }

    trait IntoJson {
        fn into_json(self) -> Json;
    }
    impl IntoJson for f64 {
        fn into_json(self) -> Json {
            Json::Number(JsonNumber::Float(self))
        }
    }

    #[test]
    fn json_text_round_trip_keeps_key_order() {
        let text = r#"{"path":"src/main.rs","z":-3,"a":[null,true,1.5],"nested":{"k":"ü\"\n"}}"#;
        let v: Json = serde_json::from_str(text).unwrap();
        assert_eq!(v, sample());
        assert_eq!(serde_json::to_string(&v).unwrap(), text);
        assert_eq!(v.to_json_string(), text);
    }

    #[test]
    fn floats_print_as_serde_json_prints_them() {
        for f in [0.00001, 0.0001, 1e-7, 1.5, 1e21, 1e300, -2.5e-8, 123456.789] {
            let v = Json::Number(JsonNumber::Float(f));
            assert_eq!(
                v.to_json_string(),
                serde_json::to_string(&f).unwrap(),
                "{f}"
            );
        }
    }

    #[test]
    fn bincode_round_trip() {
        let v = sample();
        let bytes = bincode::serialize(&v).unwrap();
        let back: Json = bincode::deserialize(&bytes).unwrap();
        assert_eq!(back, v);
    }
}
