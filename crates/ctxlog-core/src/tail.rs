//! Recent-turn tail selection (OpenCode 1.17, `opencode-behavior.md` §1.7
//! step 5): which newest messages a compaction keeps verbatim after the
//! summary instead of summarising them.

use crate::ids::MessageId;
use crate::policy::{estimate_tokens, utf16_len, Policy};
use crate::replay::history_end;
use crate::state::SessionState;
use crate::window::{render_message, window_order};

/// The token budget of the tail under `policy` for the state's limits.
pub fn tail_budget(policy: &Policy, state: &SessionState) -> Option<u64> {
    let tail = policy.tail.as_ref()?;
    Some(match tail.preserve_recent_tokens {
        Some(fixed) => fixed,
        None => {
            let usable = policy.usable(&state.limits).unwrap_or(0);
            // `max` then `min` rather than `clamp`, which panics when a
            // policy that was never validated has min above max.
            ((usable as u128 * tail.percent_of_usable as u128 / 100) as u64)
                .max(tail.min_tokens)
                .min(tail.max_tokens)
        }
    })
}

/// Chooses the first message of the verbatim tail for compaction job
/// `marker`, or `None` (no tail rule, no turn fits, or the tail would be the
/// whole history).
///
/// History is the current window before the marker (before the refused
/// prompt, for a job that replays one: [`history_end`]), without earlier
/// markers and summaries. Turns start at user messages that are not markers. The walk
/// adds whole turns from the newest while they fit the budget; the first turn
/// that does not fit may contribute its longest suffix that fits. A turn's
/// size is the estimate of its messages serialised as one JSON array (see
/// [`crate::window::WindowMessage::to_json`]), as OpenCode estimates
/// `JSON.stringify(toModelMessages(turn))`; the JSON shape is ctxlog's, so
/// sizes near the budget can differ slightly from upstream's.
pub fn select_tail(state: &SessionState, policy: &Policy, marker: MessageId) -> Option<MessageId> {
    let rule = policy.tail.as_ref()?;
    if rule.turns == 0 {
        return None;
    }
    let budget = tail_budget(policy, state)?;
    let end = history_end(state, marker)?;
    let (_, order) = window_order(state);
    let history: Vec<usize> = order
        .into_iter()
        .filter(|&i| i < end)
        .filter(|&i| !state.messages[i].marker && !state.messages[i].summary)
        .collect();
    let starts: Vec<usize> = (0..history.len())
        .filter(|&k| state.messages[history[k]].role.is_input())
        .collect();
    let recent = &starts[starts.len().saturating_sub(rule.turns as usize)..];
    // The JSON array of history[a..b] is `[` + the messages' JSON joined by
    // `,` + `]`, so its length is a sum: each message is rendered and
    // measured once (in UTF-16 units), and every suffix size is O(1).
    let first = recent.first().copied().unwrap_or(history.len());
    let mut units = vec![0u64; history.len() + 1];
    let mut counts = vec![0u64; history.len() + 1];
    for k in (first..history.len()).rev() {
        let own = render_message(state, &state.messages[history[k]])
            .map(|m| utf16_len(&m.to_json().to_json_string()));
        units[k] = units[k + 1] + own.unwrap_or(0);
        counts[k] = counts[k + 1] + u64::from(own.is_some());
    }
    let chars_per_token = policy.estimator.per_token();
    // Size of history[a..b] rendered as model messages, estimated once.
    let size = |a: usize, b: usize| -> u64 {
        let n = counts[a] - counts[b];
        let body = units[a] - units[b] + n.saturating_sub(1);
        estimate_tokens(2 + body, chars_per_token)
    };
    let mut total = 0u64;
    let mut keep: Option<usize> = None;
    for (n, &start) in recent.iter().enumerate().rev() {
        let end = recent.get(n + 1).copied().unwrap_or(history.len());
        let turn = size(start, end);
        if total + turn <= budget {
            total += turn;
            keep = Some(start);
            continue;
        }
        // Split: the longest suffix of this turn that fits (OpenCode tries
        // suffixes from the turn's second message on and takes the first fit).
        let remaining = budget - total;
        let best = (start + 1..end).find(|&k| size(k, end) <= remaining);
        if best.is_some() {
            keep = best;
        }
        break;
    }
    match keep {
        None | Some(0) => None,
        Some(k) => Some(state.messages[history[k]].id),
    }
}
