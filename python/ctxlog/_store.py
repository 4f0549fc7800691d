"""`Store`: the sessions of a ctxlog store and what ctxlog derives from them.

What it returns are objects of the native module, built from the same Rust
values the CLI prints with `--json` (`SessionInfo` is a row of
`ctxlog sessions --json`, `AuditEntry` an entry of `ctxlog audit --json`,
`Step` a step of `ctxlog timeline --json`, `Window` the object of
`ctxlog window --json`): their fields are those of the CLI's JSON.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import _native
from ._native import AuditEntry, SessionInfo, Simulation, Step, Window

__all__ = ["AuditEntry", "SessionInfo", "Simulation", "Step", "Store", "Window"]


class Store:
    """A ctxlog store on disk (a directory; created when missing) or in
    memory (`":memory:"`).

    A store is opened once per path per process: every `Store` and
    `CtxlogSession` naming the same path share it (the store's directory is
    locked while this process holds it; other processes read it through
    `ctxlog`). A `postgresql://` URL names a PostgreSQL log instead, which
    any number of processes and hosts share. Sessions are named by a name, a ctxlog id or a unique prefix
    of at least 4 characters, as the CLI takes them.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._native = _native.NativeStore(os.fspath(path))

    @property
    def path(self) -> str:
        """The path the store was opened with (a PostgreSQL connection
        string without its password)."""
        return self._native.path

    def sessions(self) -> list[SessionInfo]:
        """Every session of the store, oldest first (`id` and `name` are
        `session` and `source_session`)."""
        return self._native.sessions()

    def timeline(self, session: str) -> list[Step]:
        """One row per model step: tokens, budget, threshold, the window's
        estimate and what the lifecycle did after it."""
        return self._native.timeline(session)

    def audit(self, session: str) -> list[AuditEntry]:
        """Every prune, restore, withdrawal and compaction step of a
        session, with the parts concerned, their call ids and tokens
        (`part_tokens`: each part's, where the event says)."""
        return self._native.audit(session)

    def window(self, session: str, step: int | None = None) -> Window:
        """The model input after model step `step` (1-based), or now:
        `seq`, `step`, `tokens`, `pivot` and `messages`, each message a
        dict `{role, id, parts}` as `ctxlog window --json` prints it."""
        return self._native.window(session, step)

    def simulate(
        self, session: str, policy: str, *, context_limit: int | None = None
    ) -> Simulation:
        """Runs a session again under `policy` (a preset: `opencode-1.18`,
        `codex`, `claude-code`, ...) in memory; nothing is stored."""
        return self._native.simulate(session, policy, context_limit)

    def report(self, session: str, out: str | os.PathLike[str]) -> Path:
        """Writes the session's HTML report (one self-contained page: the
        token chart, the window after every step, what each compaction
        removed) to `out`; returns its path."""
        path = Path(out)
        self._native.report(session, path)
        return path

    def __repr__(self) -> str:
        return f"ctxlog.Store({self.path!r})"
