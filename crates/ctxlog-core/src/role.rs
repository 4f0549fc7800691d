//! [`Role`]: who wrote a message, as the agent sent it.

use serde::{Deserialize, Serialize};

/// Who wrote a message, as the agent sent it.
///
/// `Developer` and `System` are input like `User`: every decision treats
/// the three alike ([`Role::is_input`]); only the request shows the role.
/// They come after `Assistant` so logs written before them read as before
/// (bincode names a variant by its index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// The user (or a synthetic user message written by the runtime).
    User,
    /// The model.
    Assistant,
    /// Instructions the runtime sends with the `developer` role (Codex's
    /// injected context).
    Developer,
    /// Instructions the runtime sends with the `system` role.
    System,
}

impl Role {
    /// Whether the message is input to the model (user, developer or
    /// system), not the model's own.
    pub fn is_input(self) -> bool {
        self != Role::Assistant
    }

    /// The role's name as the agents' APIs spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Developer => "developer",
            Role::System => "system",
        }
    }

    /// The role named `name` as the agents' APIs spell it.
    pub fn from_name(name: &str) -> Option<Role> {
        Some(match name {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "developer" => Role::Developer,
            "system" => Role::System,
            _ => return None,
        })
    }
}
