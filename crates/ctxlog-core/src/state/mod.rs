//! The derived session state and its reducer, [`SessionState::evolve`].
//!
//! `evolve` is pure and deterministic: it reads only the state and the
//! envelope (never a clock, a random source or hash-map order), and it is
//! atomic: every check runs before the first mutation, so a refused event
//! leaves the state exactly as it was.
//!
//! Files: `session` (the [`SessionState`] record and its queries), `message`
//! ([`Message`]), `job` ([`Job`] and [`JobStatus`]), `index` (the lookup
//! tables and the token estimates the reducer keeps), `estimates` (rebuilding
//! the index, reading and refreshing its estimates), `check` (every
//! invariant an event must keep), `evolve` (checking then applying one
//! event), `compaction` (applying the compaction lifecycle's events),
//! `close` (sealing and dropping what a pivot leaves behind), `store` (the
//! writes to messages, parts and jobs that keep the index in step) and
//! `tally` (the figures of the messages a state dropped).
//!
//! Files:
//! - `errors.rs`: `SessionState::errors_set_by`.

mod check;
mod close;
mod compaction;
mod errors;
mod estimates;
mod evolve;
mod index;
mod job;
mod message;
mod session;
mod store;
mod tally;

pub use crate::part::{Body, Part, PruneMark};
pub(crate) use check::{check_fields_object, check_new_body, validate_policy};
pub use job::{Job, JobStatus};
pub use message::Message;
pub(crate) use message::{ends_prune_walk, prune_walk};
pub use session::{LastFinished, SessionState};
pub use tally::Tally;

/// Version of the reducer's output; snapshots of another version are
/// discarded and rebuilt by a full replay (4: the policy in the state
/// gained `threshold_percent`; 5: parts before the window are sealed, their
/// content left in the log; 6: a message records whether it was withdrawn;
/// 7: the policy in the state gained `pivot` and `check_at`; 8: messages
/// the prune walk can no longer reach are dropped at each pivot, with a
/// [`Tally`] of their figures, and the state counts finished steps).
pub const REDUCER_VERSION: u32 = 8;
