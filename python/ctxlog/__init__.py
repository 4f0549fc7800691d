"""ctxlog: an event-sourced, durable context log for LLM agent sessions,
compacted the way OpenCode does (old tool outputs cleared, a summary pivot
on overflow) without ever deleting anything.

- `Store`: the sessions of a store and what ctxlog derives from them.
- `ctxlog.agents.CtxlogSession`: a session for the OpenAI Agents SDK
  (`pip install "ctxlog[agents]"`).
"""

from ._native import CtxlogError
from ._store import AuditEntry, SessionInfo, Simulation, Step, Store, Window

__all__ = [
    "AuditEntry",
    "CtxlogError",
    "SessionInfo",
    "Simulation",
    "Step",
    "Store",
    "Window",
]
__version__ = "0.1.0"
