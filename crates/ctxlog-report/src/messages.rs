//! The rendered messages a page holds, each kept in the page's compact
//! form the moment it is rendered (so a page's memory is its text, not a
//! tree of JSON values): each message an array `[id, source_id, role ("u",
//! "a", "d" developer, "s" system), flags (1 summary, 2 marker, 4
//! synthetic), tokens, parts]`, each
//! part `[kind ("t" text, "r" reasoning, "f" file, "x" tool), text, cut,
//! tokens]` and, for a tool, `call_id, tool, input, error, cleared` after
//! them, where `text` and `input` are indexes into the page's texts, each
//! distinct text held once (a message rendered again after a prune or a
//! tool's result repeats most of its parts). Keys repeated on every part
//! would make a page of many steps half keys.

use ctxlog_core::MessageId;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What the page needs of a rendered message besides its text: what left
/// the window is computed from it.
#[derive(Debug, Clone)]
pub(crate) struct Shown {
    /// The message.
    pub id: MessageId,
    /// Its estimated tokens as rendered.
    pub tokens: u64,
    /// Its parts, in order.
    pub parts: Box<[ShownPart]>,
}

/// A rendered part, as [`Shown`] keeps it.
#[derive(Debug, Clone)]
pub(crate) struct ShownPart {
    /// Its estimated tokens as rendered.
    pub tokens: u64,
    /// For a tool part: its call id and tool, and whether its output was
    /// cleared by a prune.
    pub tool: Option<Box<(String, String, bool)>>,
}

/// The messages a page holds of one session, and their texts.
#[derive(Debug, Default)]
pub struct Messages {
    /// Each message's compact form, as JSON text.
    compact: Vec<Box<str>>,
    /// Each message's [`Shown`].
    pub(crate) shown: Vec<Shown>,
    /// Each distinct text and its index.
    texts: BTreeMap<Box<str>, usize>,
}

impl Messages {
    /// How many messages are held.
    pub(crate) fn len(&self) -> usize {
        self.compact.len()
    }

    /// Keeps `message` (as `data::message_json` makes it) of id `id`; its
    /// index.
    pub(crate) fn push(&mut self, id: MessageId, message: &Value) -> usize {
        let mut shown_parts = Vec::new();
        let mut parts = Vec::new();
        for p in message["parts"].as_array().into_iter().flatten() {
            let (compact, shown) = self.part(p);
            parts.push(compact);
            shown_parts.push(shown);
        }
        let flags = u8::from(message["summary"] == true)
            | u8::from(message["marker"] == true) << 1
            | u8::from(message["synthetic"] == true) << 2;
        let compact = json!([
            message["id"],
            message["source_id"],
            role_letter(message["role"].as_str().unwrap_or("user")),
            flags,
            message["tokens"],
            parts
        ]);
        self.compact.push(compact.to_string().into_boxed_str());
        self.shown.push(Shown {
            id,
            tokens: message["tokens"].as_u64().unwrap_or(0),
            parts: shown_parts.into_boxed_slice(),
        });
        self.compact.len() - 1
    }

    fn part(&mut self, p: &Value) -> (Value, ShownPart) {
        let kind = match p["type"].as_str() {
            Some("text") => "t",
            Some("reasoning") => "r",
            Some("file") => "f",
            _ => "x",
        };
        let tokens = p["tokens"].as_u64().unwrap_or(0);
        let mut out = vec![
            json!(kind),
            json!(self.text(&p["text"])),
            p["cut"].clone(),
            json!(tokens),
        ];
        let mut tool = None;
        if kind == "x" {
            let cleared = p["cleared"] == true;
            out.extend([
                p["call_id"].clone(),
                p["tool"].clone(),
                json!(self.text(&p["input"])),
                json!(u8::from(p["error"] == true)),
                json!(u8::from(cleared)),
            ]);
            let name = |k: &str| p[k].as_str().unwrap_or_default().to_owned();
            tool = Some(Box::new((name("call_id"), name("tool"), cleared)));
        }
        (Value::Array(out), ShownPart { tokens, tool })
    }

    /// The index of `text` (a JSON string) among the texts, added if new.
    fn text(&mut self, text: &Value) -> usize {
        let text = text.as_str().unwrap_or_default();
        if let Some(&i) = self.texts.get(text) {
            return i;
        }
        let i = self.texts.len();
        self.texts.insert(text.into(), i);
        i
    }

    /// The messages as a JSON array's text.
    pub fn messages_json(&self) -> String {
        let mut out = String::new();
        self.each_message_json(|m| out.push_str(m));
        out
    }

    /// Hands `each` the messages as a JSON array's text, a piece at a time.
    pub fn each_message_json(&self, mut each: impl FnMut(&str)) {
        each("[");
        for (i, m) in self.compact.iter().enumerate() {
            if i > 0 {
                each(",");
            }
            each(m);
        }
        each("]");
    }

    /// The texts, in index order, as a JSON array's text.
    pub fn texts_json(&self) -> String {
        let mut out = String::new();
        self.each_text_json(|t| out.push_str(t));
        out
    }

    /// Hands `each` the texts as a JSON array's text, a piece at a time
    /// (a page of many steps holds tens of megabytes of them).
    pub fn each_text_json(&self, mut each: impl FnMut(&str)) {
        let mut ordered: Vec<&str> = vec![""; self.texts.len()];
        for (text, &i) in &self.texts {
            ordered[i] = text;
        }
        each("[");
        for (i, text) in ordered.into_iter().enumerate() {
            if i > 0 {
                each(",");
            }
            each(&Value::from(text).to_string());
        }
        each("]");
    }
}

/// Message `r` of a page's session JSON (its `messages` and `texts`, as
/// [`Messages`] wrote them) in the long form the page's script decodes it
/// to: `id`, `source_id`, `role`, `summary`, `marker`, `synthetic`,
/// `tokens`, and `parts`, each with `type`, `text`, `cut`, `tokens` and, for
/// a tool, `call_id`, `tool`, `input`, `error`, `cleared`.
pub fn decoded(session: &Value, r: usize) -> Value {
    let m = &session["messages"][r];
    let text = |v: &Value| session["texts"][v.as_u64().unwrap_or(u64::MAX) as usize].clone();
    let parts: Vec<Value> = m[5]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let kind = match p[0].as_str() {
                Some("t") => "text",
                Some("r") => "reasoning",
                Some("f") => "file",
                _ => "tool",
            };
            let mut part = json!({"type": kind, "text": text(&p[1]), "cut": p[2], "tokens": p[3]});
            if kind == "tool" {
                part["call_id"] = p[4].clone();
                part["tool"] = p[5].clone();
                part["input"] = text(&p[6]);
                part["error"] = json!(p[7] == 1);
                part["cleared"] = json!(p[8] == 1);
            }
            part
        })
        .collect();
    let flags = m[3].as_u64().unwrap_or(0);
    json!({
        "id": m[0],
        "source_id": m[1],
        "role": m[2].as_str().and_then(role_of_letter).unwrap_or("user"),
        "summary": flags & 1 != 0,
        "marker": flags & 2 != 0,
        "synthetic": flags & 4 != 0,
        "tokens": m[4],
        "parts": parts,
    })
}

/// A role's letter in the compact form.
fn role_letter(role: &str) -> &'static str {
    match role {
        "assistant" => "a",
        "developer" => "d",
        "system" => "s",
        _ => "u",
    }
}

/// The role a letter of the compact form stands for.
fn role_of_letter(letter: &str) -> Option<&'static str> {
    Some(match letter {
        "u" => "user",
        "a" => "assistant",
        "d" => "developer",
        "s" => "system",
        _ => return None,
    })
}
