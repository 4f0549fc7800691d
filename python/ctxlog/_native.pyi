"""Type stubs of ctxlog's native module (python/src/lib.rs)."""

from collections.abc import Callable
from os import PathLike
from typing import Any

class CtxlogError(Exception):
    """A ctxlog operation failed; the message is the one the CLI prints.
    Nothing was written."""

_View = tuple[str | None, bool, str | None, str | None]

class SessionInfo:
    """One stored session: a row of `ctxlog sessions --json`."""

    @property
    def session(self) -> str:
        """ctxlog's id of the session."""
    @property
    def source_session(self) -> str | None:
        """Its name: the Agents SDK's `session_id`, a recording's own id,
        or `<source>@<policy>` for a kept simulation."""
    @property
    def id(self) -> str:
        """The same as `session`."""
    @property
    def name(self) -> str | None:
        """The same as `source_session`."""
    @property
    def title(self) -> str | None: ...
    @property
    def started_at(self) -> int:
        """When it started, ms since the epoch."""
    @property
    def date(self) -> str:
        """The same, RFC 3339 in UTC."""
    @property
    def events(self) -> int: ...
    @property
    def messages(self) -> int: ...
    @property
    def withdrawn(self) -> int:
        """Messages taken back (`pop_item`, `clear_session`); the log keeps them."""
    @property
    def steps(self) -> int: ...
    @property
    def peak_tokens(self) -> int:
        """The largest total tokens a step reported."""
    @property
    def compactions(self) -> int:
        """Completed compactions."""
    @property
    def pruned_parts(self) -> int:
        """Tool outputs cleared now."""
    @property
    def policy(self) -> str:
        """The compaction policy in force."""
    @property
    def context_limit(self) -> int:
        """The model's context window in tokens; 0: no automatic compaction."""
    @property
    def window_tokens(self) -> int:
        """The estimated tokens of what the model sees now."""
    @property
    def directory(self) -> str | None: ...
    @property
    def project(self) -> str | None:
        """The directory's last two components."""
    @property
    def agent(self) -> str | None:
        """The agent that wrote it (`openai-agents`, `opencode-1.18.33`, ...)."""
    @property
    def model(self) -> str | None: ...
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def replaced_by(self) -> str | None:
        """The newer version of the recording that replaced it."""
    @property
    def interrupted(self) -> bool:
        """Its last import was cut short: importing the recording again
        completes it."""
    @property
    def simulation(self) -> dict[str, str] | None:
        """For a kept simulation: `{"of": <recording id>, "policy": <name>}`."""
    @property
    def captured(self) -> dict[str, int | str] | None:
        """The last time an agent's hook brought it in: `{"at": <ms>,
        "what": "captured at Stop"}`."""
    @property
    def live(self) -> bool:
        """Its agent still runs it (its last hook was not the session's
        end, and the agent's process runs)."""

class AuditEntry:
    """One line of a session's audit trail: an entry of `ctxlog audit --json`."""

    @property
    def seq(self) -> int: ...
    @property
    def at(self) -> int:
        """When, ms since the epoch."""
    @property
    def kind(self) -> str:
        """`parts_pruned`, `messages_withdrawn`, `compaction_requested`, ..."""
    @property
    def ids(self) -> list[str]:
        """The parts or messages concerned."""
    @property
    def source_ids(self) -> list[str | None]:
        """The agent's own id of each (a tool part's call id)."""
    @property
    def tokens(self) -> int | None:
        """The tokens involved (pruned tokens, the overflow count, ...)."""
    @property
    def policy(self) -> str: ...
    @property
    def what(self) -> str:
        """What happened, in words."""
    @property
    def part_tokens(self) -> list[int | None]:
        """The tokens of each of `ids` where the event says (a prune's
        estimate of each output it cleared)."""

class Step:
    """One model step: a step of `ctxlog timeline --json`."""

    @property
    def seq(self) -> int: ...
    @property
    def time(self) -> int: ...
    @property
    def message(self) -> str: ...
    @property
    def tokens(self) -> dict[str, Any]:
        """The tokens as the provider reported them."""
    @property
    def count(self) -> int:
        """What the overflow check compared with `threshold`."""
    @property
    def usable(self) -> int | None: ...
    @property
    def percent(self) -> float | None: ...
    @property
    def threshold(self) -> int | None: ...
    @property
    def overflow(self) -> bool: ...
    @property
    def window_estimate(self) -> int: ...
    @property
    def events(self) -> list[dict[str, Any]]:
        """What the lifecycle did after this step."""
    @property
    def open(self) -> bool:
        """Its end is not recorded yet (the last step only)."""
    @property
    def no_usage(self) -> bool:
        """It reported no usage (an aborted or interrupted call)."""
    @property
    def error(self) -> str | None:
        """The error its message ended with (`MessageAbortedError`)."""

class Window:
    """The model input at a point of a session: `ctxlog window --json`."""

    @property
    def seq(self) -> int:
        """The session's event the window is taken after."""
    @property
    def step(self) -> int | None: ...
    @property
    def tokens(self) -> int:
        """Its estimated tokens."""
    @property
    def pivot(self) -> str | None:
        """The compaction marker it starts from, if any."""
    @property
    def messages(self) -> list[dict[str, Any]]:
        """Each message `{role, id, parts}`; a part `{type, ...}`: `text`,
        `reasoning`, `file` or `tool` (with `output` or `error`)."""

class Simulation:
    """A session run again under another policy, in memory."""

    @property
    def policy(self) -> str: ...
    @property
    def decisions(self) -> list[dict[str, Any]]:
        """Every prune and compaction the policy decided, at its step."""
    @property
    def steps(self) -> int: ...
    @property
    def turns(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def final_window(self) -> int:
        """The estimated tokens of the window at the end."""

class NativeStore:
    def __init__(self, path: str) -> None: ...
    @property
    def path(self) -> str: ...
    def sessions(self) -> list[SessionInfo]: ...
    def timeline(self, session: str) -> list[Step]: ...
    def audit(self, session: str) -> list[AuditEntry]: ...
    def window(self, session: str, step: int | None = None) -> Window: ...
    def simulate(
        self, session: str, policy: str, context_limit: int | None = None
    ) -> Simulation: ...
    def report(self, session: str, out: str | PathLike[str]) -> int: ...
    def open_session(
        self,
        name: str,
        policy: str | None = None,
        context_limit: int | None = None,
        summarizer: Callable[[list[dict[str, Any]]], str] | None = None,
    ) -> NativeSession: ...

class NativeSession:
    @property
    def name(self) -> str: ...
    @property
    def id(self) -> str: ...
    def add_items(
        self, items: list[tuple[str, str, str, str | None, str | None, str | None]]
    ) -> None: ...
    def get_items(self, limit: int | None = None) -> list[_View]: ...
    def pop_item(self) -> _View | None: ...
    def clear(self) -> int: ...
    def compact(
        self, usage: tuple[int, int, int, int] | None = None, force: bool = False
    ) -> dict[str, Any]: ...
