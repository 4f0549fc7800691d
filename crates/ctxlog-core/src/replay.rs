//! The prompt a provider refused as too large, replayed after the compaction
//! it caused ([`crate::ProviderOverflow::Compact`], OpenCode since
//! 2026-03-02; `opencode-behavior.md` §1.7 step 2 and step 10).
//!
//! For a job flagged `overflow`, the refused prompt is the nearest user
//! message before the marker, in the window, that is not a marker; the
//! history the job summarizes and keeps a tail of is what comes before it.
//! When nothing but markers would be left before it, there is no replay and
//! the whole window is the history.

use crate::event::PartBody;
use crate::ids::MessageId;
use crate::state::SessionState;
use crate::window::{attachment_note, window_order};

/// The refused prompt job `marker` replays after its summary, if any.
pub fn replay_of(state: &SessionState, marker: MessageId) -> Option<MessageId> {
    let job = state.job(marker)?;
    if !job.overflow {
        return None;
    }
    let marker_index = state.message_index(marker)?;
    let (_, order) = window_order(state);
    let before: Vec<usize> = order.into_iter().filter(|&i| i < marker_index).collect();
    let real_user = |i: usize| {
        let m = &state.messages[i];
        m.role.is_input() && !m.marker
    };
    let at = before.iter().rposition(|&i| real_user(i))?;
    before[..at]
        .iter()
        .any(|&i| real_user(i))
        .then(|| state.messages[before[at]].id)
}

/// Index (in `state.messages`) where the history of job `marker` ends: the
/// refused prompt it replays, else the marker.
pub fn history_end(state: &SessionState, marker: MessageId) -> Option<usize> {
    let end = replay_of(state, marker).unwrap_or(marker);
    state.message_index(end)
}

/// Whether `mime` is media, which a replay turns into a text note
/// (OpenCode's `isMedia`: images and PDF).
pub fn is_media(mime: &str) -> bool {
    mime.starts_with("image/") || mime == "application/pdf"
}

/// The parts of the replayed prompt: the refused prompt's parts, without
/// compaction parts, media attachments replaced by
/// `[Attached <mime>: <filename>]`.
pub fn replay_parts(state: &SessionState, prompt: MessageId) -> Vec<PartBody> {
    let Some(message) = state.message(prompt) else {
        return Vec::new();
    };
    message
        .parts
        .iter()
        .filter_map(|p| match p.content()? {
            PartBody::Compaction { .. } => None,
            PartBody::File(a) if is_media(&a.mime) => Some(PartBody::Text {
                text: attachment_note(a),
                synthetic: false,
                time: None,
            }),
            body => Some(body.clone()),
        })
        .collect()
}
