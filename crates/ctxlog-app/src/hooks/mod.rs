//! The agents' own hooks, plugins and extensions bringing their sessions in
//! as they work: what each agent hands its hook ([`payload`]), which
//! process runs the session ([`process`]), and the capture itself: the
//! session's recording imported incrementally and the moment recorded
//! ([`capture`]), and the hooks' own log of every call ([`runs`]).

pub mod capture;
pub mod payload;
pub mod process;
pub mod runs;

pub use capture::{capture, CaptureError, Captured};
pub use payload::{parse, HookAgent, HookCall, PayloadError};
pub use process::{agent_process, is_running};
