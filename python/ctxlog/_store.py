"""`Store`: the sessions of a ctxlog store and what ctxlog derives from them."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _native


@dataclass(frozen=True)
class SessionInfo:
    """One stored session, as `ctxlog sessions` lists it."""

    id: str
    """ctxlog's id of the session."""
    name: str | None
    """Its name: the Agents SDK's `session_id`, or a recording's own id."""
    title: str | None
    agent: str | None
    """The agent that wrote it (`openai-agents`, `opencode-1.18.33`, ...)."""
    model: str | None
    policy: str
    """The compaction policy in force."""
    context_limit: int
    """The model's context window in tokens; 0: no automatic compaction."""
    events: int
    messages: int
    withdrawn: int
    """Messages taken back (`pop_item`, `clear_session`); the log keeps them."""
    compactions: int
    """Completed compactions."""
    pruned_parts: int
    """Tool outputs cleared now."""
    window_tokens: int
    """The estimated tokens of what the model sees now."""
    started_at: int
    """When the session started, ms since the epoch."""
    interrupted: bool = False
    """Its last import was cut short (killed midway): importing the
    recording again completes it."""


@dataclass(frozen=True)
class AuditEntry:
    """One line of a session's audit trail: a prune, restore, withdrawal,
    compaction step, pause or synthetic continue."""

    seq: int
    """The event's seq in the session."""
    at: int
    """When, ms since the epoch."""
    kind: str
    """`parts_pruned`, `messages_withdrawn`, `compaction_requested`, ..."""
    ids: list[str]
    """The parts or messages concerned."""
    source_ids: list[str | None]
    """The agent's own id of each (a tool part's call id)."""
    tokens: int | None
    """The tokens involved (pruned tokens, the overflow count, ...)."""
    policy: str
    what: str
    """What happened, in words."""
    part_tokens: list[int | None] = field(default_factory=list)
    """The tokens of each of `ids` where the event says (a prune's estimate
    of each output it cleared)."""


@dataclass(frozen=True)
class Step:
    """One model step of a session's timeline."""

    seq: int
    time: int
    message: str
    tokens: dict[str, Any]
    """The tokens as the provider reported them."""
    count: int
    """What the overflow check compared with `threshold`."""
    usable: int | None
    percent: float | None
    threshold: int | None
    overflow: bool
    window_estimate: int
    events: list[dict[str, Any]] = field(default_factory=list)
    """What the lifecycle did after this step."""
    open: bool = False
    """Its end is not recorded yet (the last step only): its tokens are
    what the model reported so far, and no overflow check ran on it."""


@dataclass(frozen=True)
class Window:
    """The model input at a point of a session."""

    seq: int
    """The session's event the window is taken after."""
    step: int | None
    tokens: int
    """Its estimated tokens."""
    messages: list[dict[str, Any]]
    """The messages, as `ctxlog window --json` prints them."""


@dataclass(frozen=True)
class Simulation:
    """A session run again under another policy, in memory."""

    policy: str
    decisions: list[dict[str, Any]]
    """Every prune and compaction the policy decided, at its step."""
    steps: int
    turns: int
    events: int
    final_window: int
    """The estimated tokens of the window at the end."""


class Store:
    """A ctxlog store on disk (a directory; created when missing) or in
    memory (`":memory:"`).

    A store is opened once per path per process: every `Store` and
    `CtxlogSession` naming the same path share it (the store's directory is
    locked while this process holds it; other processes read it through
    `ctxlog`). Sessions are named by a name, a ctxlog id or a unique prefix
    of at least 4 characters, as the CLI takes them.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._native = _native.NativeStore(os.fspath(path))

    @property
    def path(self) -> str:
        """The path the store was opened with."""
        return self._native.path

    def sessions(self) -> list[SessionInfo]:
        """Every session of the store."""
        return [SessionInfo(**row) for row in json.loads(self._native.sessions())]

    def timeline(self, session: str) -> list[Step]:
        """One row per model step: tokens, budget, threshold, the window's
        estimate and what the lifecycle did after it."""
        t = json.loads(self._native.timeline(session))
        return [Step(**row) for row in t["steps"]]

    def audit(self, session: str) -> list[AuditEntry]:
        """Every prune, restore, withdrawal and compaction step of a
        session, with the parts concerned, their call ids and tokens."""
        return [AuditEntry(**row) for row in json.loads(self._native.audit(session))]

    def window(self, session: str, step: int | None = None) -> Window:
        """The model input after model step `step` (1-based), or now."""
        return Window(**json.loads(self._native.window(session, step)))

    def simulate(
        self, session: str, policy: str, *, context_limit: int | None = None
    ) -> Simulation:
        """Runs a session again under `policy` (a preset: `opencode-1.18`,
        `codex`, `claude-code`, ...) in memory; nothing is stored."""
        r = json.loads(self._native.simulate(session, policy, context_limit))
        return Simulation(
            policy=policy,
            decisions=r["decisions"],
            steps=r["steps"],
            turns=r["turns"],
            events=r["events"],
            final_window=r["final_window"],
        )

    def report(self, session: str, out: str | os.PathLike[str]) -> Path:
        """Writes the session's HTML report (one self-contained page: the
        token chart, the window after every step, what each compaction
        removed) to `out`; returns its path."""
        path = Path(out)
        self._native.report(session, path)
        return path

    def __repr__(self) -> str:
        return f"ctxlog.Store({self.path!r})"
