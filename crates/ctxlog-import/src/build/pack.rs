//! What is held back and packed: recorded events move into the pack in
//! batches, and at the end the kept source fields and the session's
//! description are recorded, each with the id of its place.

use super::{as_json, Builder};
use crate::json::merge;
use crate::{ImportError, Imported};
use ctxlog_core::{description_event_id, Event, Json, SessionAbout, SourceTarget};

/// How many events the recorder holds before they move into the pack.
const HELD_EVENTS: usize = 256;

impl Builder<'_> {
    /// Moves the recorder's events into the pack once it holds
    /// [`HELD_EVENTS`], all but the descriptions after the last event that
    /// is not one: those may end the recording, and [`Builder::finish`]
    /// gives those the ids of their places. While finishing, every event is
    /// such a description and is packed at once.
    pub(super) fn pack_recorded(&mut self) -> Result<(), ImportError> {
        let held = self.r.as_ref().map_or(0, |r| r.events().len());
        if self.finishing {
            self.pack_first(held)
        } else if held >= HELD_EVENTS {
            self.pack_recorded_through_last_happened()
        } else {
            Ok(())
        }
    }

    /// Packs the held events up to the last that is not a description.
    fn pack_recorded_through_last_happened(&mut self) -> Result<(), ImportError> {
        let through = self
            .r
            .as_ref()
            .and_then(|r| r.events().iter().rposition(|e| !e.event.is_description()));
        match through {
            Some(last) => self.pack_first(last + 1),
            None => Ok(()),
        }
    }

    /// Moves the first `count` held events into the pack (while finishing,
    /// with the ids of their places).
    fn pack_first(&mut self, count: usize) -> Result<(), ImportError> {
        let Some(r) = self.r.as_mut() else {
            return Ok(());
        };
        let mut refused = None;
        for mut e in r.take_events(count) {
            if self.finishing {
                debug_assert!(
                    e.event.is_description(),
                    "only descriptions end a recording"
                );
                e.id = description_event_id(e.session, e.seq);
            }
            if refused.is_none() {
                if let Err(error) = self.pack.push(&e) {
                    refused = Some((e.seq, error));
                }
            }
        }
        match refused {
            None => Ok(()),
            Some((seq, e)) => Err(self.err(format!("event {seq} cannot be stored: {e}"))),
        }
    }

    /// Keeps `fields` of `target` that ctxlog does not model, in `format`'s
    /// terms (merged over what was kept of it before).
    pub fn keep_source(&mut self, format: &str, target: SourceTarget, fields: serde_json::Value) {
        let slot = self.sources.entry((format.to_owned(), target)).or_default();
        // JSON text round-trips a `Value` exactly (floats included:
        // serde_json's `float_roundtrip`).
        let mut merged = serde_json::from_str(slot).unwrap_or(serde_json::Value::Null);
        merge(&mut merged, fields);
        *slot = merged.to_string();
    }

    pub fn finish(mut self) -> Result<Imported, ImportError> {
        for w in self.unknown_models_used() {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
        if self.started() {
            // At the last event's time, not the last line's: a later import
            // of the grown file appends what happened after that event
            // behind these, and the log's times never go backwards.
            let at = self.last_recorded_at;
            self.last_at = at;
            // Everything before the descriptions that end the recording
            // goes into the pack; those are packed as they are recorded.
            self.pack_recorded_through_last_happened()?;
            self.finishing = true;
            self.pack_recorded()?;
            for ((format, target), fields) in std::mem::take(&mut self.sources) {
                let fields = serde_json::from_str(&fields)
                    .map_or(Json::Null, |fields: serde_json::Value| as_json(&fields));
                self.record(
                    at,
                    Event::SourceFields {
                        format,
                        target,
                        fields,
                    },
                )?;
            }
            let mut about = std::mem::take(&mut self.about);
            about.model = about.model.or_else(|| self.model.clone());
            about.cost_usd = about
                .cost_usd
                .or(self.step_cost.map(|c| c as f64 / 1_000_000.0));
            if about != SessionAbout::default() {
                self.record(at, Event::SessionDescribed { about })?;
            }
        }
        let Some(r) = self.r else {
            return Err(ImportError {
                file: self.file.to_owned(),
                line: 0,
                path: None,
                message: crate::NO_SESSION.into(),
            });
        };
        let tally = r.state().tally();
        let (session, messages) = (r.session(), tally.messages);
        // A step whose end is not recorded yet counts too: it is a model
        // call, with the usage it reported (the timeline's open row).
        let open = tally.open_steps;
        debug_assert!(r.events().is_empty(), "every event was packed");
        let events = self.pack;
        Ok(Imported {
            session,
            format: self.format,
            source_session: self.source_session,
            messages,
            tool_calls: self.tool_ids.len() as u64,
            steps: self.steps + open,
            warnings: self.warnings,
            events,
        })
    }
}
