//! User and assistant messages: each message's `info` read and checked, the
//! message appended with its parts; a compaction marker and a summary are
//! handed to `compaction`.

use super::fields::{ASSISTANT_INFO, USER_INFO};
use super::values::{str_at, user_model};
use super::Importer;
use crate::build::NewMessage;
use crate::opencode_names::SENT_ROLE;
use crate::opencode_names::{finish_from, FAILED_REF, RESTARTED_REF};
use crate::ImportError;
use ctxlog_core::{Event, MessageError, ModelRef, Role, SourceTarget};
use serde_json::Value;

impl Importer<'_> {
    /// Imports message `index` of the export (`v`, its `{info, parts}`).
    pub(super) fn message(&mut self, index: usize, v: Value) -> Result<(), ImportError> {
        let path = format!("messages[{index}]");
        let info = v
            .get("info")
            .filter(|i| i.is_object())
            .ok_or_else(|| self.err(format!("{path}.info"), "missing or not an object"))?;
        let id = str_at(info, "id")
            .ok_or_else(|| self.err(format!("{path}.info.id"), "missing or not a string"))?
            .to_owned();
        if let Some(first) = self.message_paths.insert(id.clone(), path.clone()) {
            return Err(self.err(
                format!("{path}.info.id"),
                format!("message id {id:?} is used twice (first at {first}): every message needs its own id"),
            ));
        }
        if let Some(parts) = v.get("parts").and_then(Value::as_array) {
            for (i, p) in parts.iter().enumerate() {
                let Some(part) = str_at(p, "id") else {
                    continue;
                };
                let here = format!("{path}.parts[{i}]");
                if let Some(first) = self.part_paths.insert(part.to_owned(), here.clone()) {
                    return Err(self.err(
                        format!("{here}.id"),
                        format!("part id {part:?} is used twice (first at {first}): every part needs its own id"),
                    ));
                }
            }
        }
        let created = self
            .count(info, "/time/created", || format!("{path}.info"))?
            .ok_or_else(|| self.err(format!("{path}.info.time.created"), "missing"))?;
        self.start(str_at(info, "sessionID"), created)?;
        self.flush_prunes(Some(created))?;
        let parts = match v.get("parts") {
            Some(Value::Array(p)) => p.as_slice(),
            None | Some(Value::Null) => &[],
            Some(_) => return Err(self.err(format!("{path}.parts"), "not an array")),
        };
        let at = created;
        match str_at(info, "role") {
            Some("user") => self.user(&path, info, id, parts, at),
            Some("assistant") => self.assistant(&path, info, id, parts, at),
            Some(r) => Err(self.err(format!("{path}.info.role"), format!("unknown role {r:?}"))),
            None => Err(self.err(format!("{path}.info.role"), "missing")),
        }
    }

    fn user(
        &mut self,
        path: &str,
        info: &Value,
        id: String,
        parts: &[Value],
        at: u64,
    ) -> Result<(), ImportError> {
        if let Some((pi, c)) = parts
            .iter()
            .enumerate()
            .find(|(_, p)| str_at(p, "type") == Some("compaction"))
        {
            return self.marker(&format!("{path}.parts[{pi}]"), info, id, c, at);
        }
        let agent = str_at(info, "agent").map(str::to_owned);
        let model = user_model(info);
        let texts: Vec<&Value> = parts
            .iter()
            .filter(|p| str_at(p, "type") == Some("text"))
            .collect();
        let synthetic = !texts.is_empty()
            && texts
                .iter()
                .all(|p| p.get("synthetic").and_then(Value::as_bool) == Some(true));
        let role = match str_at(info, SENT_ROLE) {
            None => Role::User,
            Some(r) => Role::from_name(r)
                .filter(|r| matches!(r, Role::Developer | Role::System))
                .ok_or_else(|| {
                    self.err(
                        format!("{path}.info.{SENT_ROLE}"),
                        format!("{r:?} is not a role ctxlog exports (developer, system)"),
                    )
                })?,
        };
        let message = self.b.message(
            at,
            role,
            NewMessage {
                parent: None,
                source: Some(id.clone()),
                model,
                agent,
                synthetic,
            },
        )?;
        self.ids.insert(id, message);
        self.keep_source(at, SourceTarget::Message(message), info, USER_INFO)?;
        self.parts(path, message, parts, at, false, None)
            .map(|_| ())
    }

    fn assistant(
        &mut self,
        path: &str,
        info: &Value,
        id: String,
        parts: &[Value],
        at: u64,
    ) -> Result<(), ImportError> {
        // The message's own totals, checked even where its step-finish
        // parts carry the figures ctxlog keeps.
        let (info_tokens, info_cost) = self.usage(info, &format!("{path}.info"))?;
        if let Some(c) = info_cost {
            self.message_cost = Some(self.message_cost.unwrap_or(0).saturating_add(c));
        }
        let model = str_at(info, "modelID").map(|m| ModelRef {
            provider: str_at(info, "providerID").unwrap_or("").to_owned(),
            model: m.to_owned(),
        });
        let agent = str_at(info, "agent")
            .or_else(|| str_at(info, "mode"))
            .map(str::to_owned);
        let parent = str_at(info, "parentID").and_then(|p| self.ids.get(p).copied());
        let finish = str_at(info, "finish").map(finish_from);
        let error = message_error(info);
        let completed = self.count(info, "/time/completed", || format!("{path}.info"))?;
        let job = parent.filter(|p| {
            self.markers.contains_key(p)
                && self
                    .b
                    .state()
                    .and_then(|s| s.job(*p))
                    .is_some_and(|j| j.status.is_pending())
        });
        if info.get("summary").and_then(Value::as_bool) == Some(true) {
            if let Some(job) = job {
                return self.summary(path, info, id, parts, at, job, model, agent, finish, error);
            }
        }
        if let Some(m) = model.as_ref() {
            self.b.set_model(at, &m.model)?;
        }
        let message = self.b.message(
            at,
            Role::Assistant,
            NewMessage {
                parent,
                source: Some(id.clone()),
                model,
                agent,
                synthetic: false,
            },
        )?;
        self.ids.insert(id, message);
        self.keep_source(at, SourceTarget::Message(message), info, ASSISTANT_INFO)?;
        let stepped = self.parts(path, message, parts, at, false, completed)?;
        if !stepped {
            if let Some(reason) = finish {
                let t = completed.unwrap_or(at);
                self.b
                    .finish_step(t, message, reason, info_tokens, info_cost)?;
            }
        }
        if let Some(error) = error {
            self.b.record(
                completed.unwrap_or(at),
                Event::MessageErrored { message, error },
            )?;
        }
        Ok(())
    }
}

/// An assistant message's `error`: ctxlog's own compaction outcomes travel
/// as an `UnknownError` whose `ref` names them (see `export`).
fn message_error(info: &Value) -> Option<MessageError> {
    info.get("error")
        .filter(|e| !e.is_null())
        .map(|e| MessageError {
            name: match e.pointer("/data/ref").and_then(Value::as_str) {
                Some(FAILED_REF) => "CompactionFailed",
                Some(RESTARTED_REF) => "CompactionRestarted",
                _ => str_at(e, "name").unwrap_or("UnknownError"),
            }
            .to_owned(),
            message: e
                .pointer("/data/message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        })
}
