//! `attachment` lines: the context Claude Code injects (environment, model,
//! deferred tools, agents, skills, the token budget, the date, the commit
//! attribution), each with the text it is sent as (`rendered`:
//! `<system-reminder>` blocks). Each one sent becomes a synthetic message
//! with the role Claude Code records for it (`renderedRole`: `system`, or
//! `user` for one sent beside a tool result rather than folded into it),
//! so the window holds what was sent; one without `rendered` (a prompt
//! snapshot, an empty session context) is never sent and is passed over.
//! Reminders written between a compaction's boundary and its summary are
//! sent before the summary, in its message: they are held until it.

use super::Importer;
use crate::ImportError;
use ctxlog_core::Role;
use serde_json::Value;

impl Importer<'_> {
    /// An `attachment` line.
    pub(super) fn attachment(&mut self, v: &Value, at: u64) -> Result<(), ImportError> {
        let texts = rendered_texts(v).map_err(|e| self.err(e))?;
        if texts.is_empty() {
            return Ok(());
        }
        if self.pending_compaction.is_some() {
            self.before_summary.extend(texts);
            return Ok(());
        }
        let role = match v.get("renderedRole").and_then(Value::as_str) {
            Some("user") => Role::User,
            _ => Role::System,
        };
        let uuid = v.get("uuid").and_then(Value::as_str).map(str::to_owned);
        self.finish_group()?;
        let m = self.new_message(at, role, None, uuid.clone(), None, true)?;
        for text in texts {
            self.b.text(at, m, text, true)?;
        }
        self.note_uuid(uuid, m);
        Ok(())
    }
}

/// The texts an attachment line is sent as: each `rendered` item's
/// `content`, a string or text blocks; none when it has no `rendered`.
fn rendered_texts(v: &Value) -> Result<Vec<String>, String> {
    let items = match v.get("rendered") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("field `rendered` is not an array".into()),
    };
    let mut texts = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.get("content") {
            Some(Value::String(s)) => texts.push(s.clone()),
            Some(Value::Array(blocks)) => texts.extend(
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .map(str::to_owned),
            ),
            _ => {
                return Err(format!(
                    "field `rendered[{i}].content` is neither a string nor an array"
                ))
            }
        }
    }
    Ok(texts)
}
