//! [`SessionState::errors_set_by`]: which messages an event gives an
//! error, decided here for the reducer and for folds that outlive the
//! messages (a timeline's rows name the error a step's message has at the
//! end, also when a pivot dropped it from the state before).

use super::session::SessionState;
use crate::event::{Event, MessageError};
use crate::ids::MessageId;

impl SessionState {
    /// The errors evolving `event` on this state sets, on which messages
    /// (a message this state no longer holds is still named): an agent's
    /// error on its message, a failed compaction's on the summary of its
    /// latest attempt, a restarted one's on the superseded summary.
    pub fn errors_set_by(&self, event: &Event) -> Vec<(MessageId, MessageError)> {
        let summary_of = |job: &MessageId| self.job(*job).and_then(|j| j.summary);
        match event {
            Event::MessageErrored { message, error } => vec![(*message, error.clone())],
            Event::CompactionStarted { job, .. } => summary_of(job)
                .map(|old| {
                    let error = MessageError {
                        name: "CompactionRestarted".into(),
                        message: "superseded by a new attempt of the same job".into(),
                    };
                    (old, error)
                })
                .into_iter()
                .collect(),
            Event::CompactionFailed { job, error } => summary_of(job)
                .map(|s| {
                    let error = MessageError {
                        name: "CompactionFailed".into(),
                        message: error.to_owned(),
                    };
                    (s, error)
                })
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }
}
