//! Trace and span ids derived from ctxlog's ids, so exporting a session
//! twice sends the same spans: a trace is a session (its UUID), a span the
//! SHA-256 of what it stands for and that thing's id, first 8 bytes.

use crate::model::{SpanId, TraceId};
use ctxlog_core::SessionId;
use sha2::{Digest, Sha256};

/// The trace of a session: the session id's 16 bytes (its hex is the
/// trace id a backend shows).
pub fn trace_of(session: SessionId) -> TraceId {
    *session.as_bytes()
}

/// What a span stands for; part of its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A turn, named by its user message.
    Turn,
    /// A model call, named by its step-finish part (a summary: its job).
    Chat,
    /// A tool call, named by its part.
    Tool,
}

/// The span id of `role` for the ctxlog id `of` (16 bytes) in `trace`.
/// Never all zeros (OTLP's "no id").
pub fn span_of(trace: &TraceId, role: Role, of: &[u8; 16]) -> SpanId {
    let tag: &[u8] = match role {
        Role::Turn => b"ctxlog/turn",
        Role::Chat => b"ctxlog/chat",
        Role::Tool => b"ctxlog/tool",
    };
    let digest = Sha256::new()
        .chain_update(tag)
        .chain_update(trace)
        .chain_update(of)
        .finalize();
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest[..8]);
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_depend_on_role_and_id_only() {
        let t = [7u8; 16];
        let a = span_of(&t, Role::Chat, &[1; 16]);
        assert_eq!(a, span_of(&t, Role::Chat, &[1; 16]));
        assert_ne!(a, span_of(&t, Role::Tool, &[1; 16]));
        assert_ne!(a, span_of(&t, Role::Chat, &[2; 16]));
        assert_ne!(a, span_of(&[8; 16], Role::Chat, &[1; 16]));
    }
}
