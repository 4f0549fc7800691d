//! The sessions of a log as a user names them: storing an imported
//! recording (whole, or only what it grew by since the last import), and
//! resolving a session by its ctxlog id or its recording's own id.
//!
//! Files: `storing` stores a recording (the prefix check, the settings an
//! import adopts, the two passes), `appending` appends in bounded batches
//! and keeps snapshots, `descriptions` reads a session's description
//! stream back (and whether its last import was cut short), `captures`
//! records and reads the moments an agent's hook brought a session in,
//! `replaced` marks and finds the newer version of a recording, `copies`
//! makes the `<source id>@manual` copy a user's own work goes to,
//! `resolve` names sessions (by id, recording id or prefix), and `error`
//! says why an operation failed.

mod appending;
mod captures;
mod copies;
mod descriptions;
mod error;
mod replaced;
mod resolve;
mod storing;

pub use appending::{CHUNK_BYTES, CHUNK_EVENTS};
pub use captures::{captures, record_capture};
pub use copies::{manual_copy, mirrors_recording, MANUAL};
pub use descriptions::{
    descriptions_after, interrupted, load_described, load_listed, ListedSession,
};
pub use error::CatalogError;
pub use replaced::{mark_replaced, replaced_by};
pub use resolve::{closest, resolve_session, sessions, source_of, MIN_PREFIX};
pub use storing::{store_recording, store_recording_adopting, Adopt, Stored};
