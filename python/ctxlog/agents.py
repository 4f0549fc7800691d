"""`CtxlogSession`: ctxlog as the session memory of the OpenAI Agents SDK.

```python
from agents import Agent, Runner
from ctxlog.agents import CtxlogSession

session = CtxlogSession("support-42", "sessions.ctxlog", context_limit=128_000)
result = await Runner.run(agent, "Hello", session=session)
```

Every operation is an event in a ctxlog session named by `session_id`:
nothing is deleted. `get_items` returns what the model should see: old
tool outputs cleared to `[Old tool result content cleared]` by ctxlog's
prune, and after a compaction its question and summary, then what the
policy keeps. `pop_item` and `clear_session` withdraw items; `audit()`
still lists every original. The SDK calls `run_compaction` after each
turn: ctxlog records the step's usage, runs its overflow check, the
compaction it decides and the prune.

Requires `openai-agents` (`pip install "ctxlog[agents]"`).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Generator, Mapping
from typing import TYPE_CHECKING, Any

from . import _native
from ._store import AuditEntry, Store

try:
    from agents.memory.session_settings import SessionSettings, coerce_session_settings
except ImportError as e:  # pragma: no cover - exercised without the extra
    raise ImportError(
        'ctxlog.agents needs the OpenAI Agents SDK: pip install "ctxlog[agents]"'
    ) from e

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory.session import OpenAIResponsesCompactionArgs
    from agents.run_context import RunContextWrapper

__all__ = ["CtxlogSession", "PRUNED_PLACEHOLDER"]

PRUNED_PLACEHOLDER = "[Old tool result content cleared]"
"""What a cleared tool output reads as (OpenCode's words)."""

_CALLS = ("function_call", "custom_tool_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
_INPUT_ROLES = ("user", "system", "developer")


def _clean(text: str) -> str:
    """`text` as valid UTF-8 (a lone surrogate becomes `?`): what ctxlog
    measures and shows. The item itself is kept exactly."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def _content_text(content: Any) -> str:
    """The text the model reads of a message's or an output's content."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping):
                for key in ("text", "refusal"):
                    value = part.get(key)
                    if isinstance(value, str):
                        texts.append(value)
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(texts)
    return json.dumps(content, ensure_ascii=False, default=str)


def _optional_str(item: Mapping[str, Any], key: str) -> str | None:
    value = item.get(key)
    return value if isinstance(value, str) else None


_Record = tuple[str, str, str, "str | None", "str | None", "str | None"]


def _record(index: int, item: Any) -> _Record:
    """`(kind, raw, text, call_id, name, template)` of one item, as ctxlog
    records it. `template`, for an output whose `output` is a string ctxlog
    keeps exactly: the item with `output` as `null`, which ctxlog keeps
    instead of `raw` when the output completes its call (the tool part
    holds the output: a large output is stored once)."""
    if not isinstance(item, Mapping):
        raise TypeError(f"item {index}: expected a dict, got {type(item).__name__}")
    try:
        # ASCII with escapes: exact for every Python string, lone
        # surrogates included; json.loads gives back an equal dict.
        raw = json.dumps(item, ensure_ascii=True)
    except (TypeError, ValueError) as e:
        raise TypeError(f"item {index}: not JSON serializable: {e}") from e
    kind_of = item.get("type")
    role = item.get("role")
    call_id = _optional_str(item, "call_id")
    if kind_of in (None, "message") and role in _INPUT_ROLES:
        return ("input", raw, _clean(_content_text(item.get("content"))), None, None, None)
    if kind_of in (None, "message") and role == "assistant":
        return ("assistant", raw, _clean(_content_text(item.get("content"))), None, None, None)
    if kind_of == "reasoning":
        text = "\n".join(
            _content_text([p]) for key in ("summary", "content") for p in item.get(key) or []
        )
        return ("reasoning", raw, _clean(text), None, None, None)
    if kind_of in _CALLS and call_id is not None:
        arguments = item.get("arguments", item.get("input", ""))
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        name = _clean(item.get("name") or "")
        return ("call", raw, _clean(arguments), call_id, name, None)
    if kind_of in _OUTPUTS and call_id is not None:
        output = item.get("output")
        text = _clean(_content_text(output))
        template = None
        if isinstance(output, str) and text == output:
            template = json.dumps({**item, "output": None}, ensure_ascii=True)
        return ("output", raw, text, call_id, str(kind_of), template)
    name = kind_of if isinstance(kind_of, str) else "item"
    return ("other", raw, "", call_id, _clean(name), None)


def _item(view: tuple[str | None, bool, str | None, str | None]) -> TResponseInputItem:
    """An item of `get_items`, from what ctxlog gives back."""
    raw, cleared, role, text = view
    if raw is None:
        written: dict[str, Any] = {"role": role, "content": text}
        return written  # type: ignore[return-value]
    item = json.loads(raw)
    if cleared:
        item["output"] = PRUNED_PLACEHOLDER
    elif text is not None:
        item["output"] = text  # kept once, in the tool part
    return item  # type: ignore[no-any-return]


def _usage(wrapper: Any) -> tuple[int, int, int, int] | None:
    """The last model request's usage in a run context, as
    `(input, output, cached, reasoning)`; `None` when it reports none."""
    usage = getattr(wrapper, "usage", None)
    if usage is None:
        return None
    entries = getattr(usage, "request_usage_entries", None) or []
    last = entries[-1] if entries else usage
    input_tokens = int(getattr(last, "input_tokens", 0) or 0)
    output_tokens = int(getattr(last, "output_tokens", 0) or 0)
    if input_tokens == 0 and output_tokens == 0:
        return None
    cached = int(getattr(getattr(last, "input_tokens_details", None), "cached_tokens", 0) or 0)
    details = getattr(last, "output_tokens_details", None)
    reasoning = int(getattr(details, "reasoning_tokens", 0) or 0)
    return (input_tokens, output_tokens, cached, reasoning)


async def _settled(task: asyncio.Future[Any]) -> Any:
    """`task`'s result, waiting for it to end even when the caller is
    cancelled meanwhile; the cancellation is raised after."""
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as e:
            cancelled = cancelled or e
    if cancelled is not None:
        raise cancelled
    return task.result()


class _Closed:
    """What `close()` returns: already done, and awaitable."""

    def __await__(self) -> Generator[None, None, None]:
        return
        yield  # pragma: no cover


class CtxlogSession:
    """An Agents SDK session kept by ctxlog.

    `session_id` names the stored session (`ctxlog sessions` lists it by
    that name; `ctxlog report <session_id>` draws it). `db_path` is a store
    directory, shared by every session of this process that names it, a
    `postgresql://` URL (a log that worker processes and hosts share: a
    session written by several at once keeps every item, each writer's in
    its order), or `":memory:"` (a store of its own, gone with the object). `policy` is a
    ctxlog preset (`opencode-seed`, both layers on, for a new session;
    `opencode-1.18` prunes nothing, as OpenCode today); `context_limit` the
    model's context window in tokens (without it ctxlog never compacts on
    its own, but still prunes). Both are recorded as changes when an
    existing session had others, and kept when not given.

    `summarizer` writes the compactions' summaries: a callable given the
    summary request as chat messages (`[{"role": "system", ...}, {"role":
    "user", ...}]`, no tools) that returns the summary text, e.g. a call to
    your model; it runs in a worker thread and must not call this session.
    Without one, ctxlog's extractive summarizer (no model, no network)
    writes them. An exception it raises fails the compaction (recorded;
    history stays as it was).

    The object is safe to share between threads, each with its own event
    loop: calls into ctxlog release the GIL and are serialized per session.
    """

    session_id: str
    session_settings: SessionSettings

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = ":memory:",
        *,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
        policy: str | None = None,
        context_limit: int | None = None,
        summarizer: Callable[[list[dict[str, Any]]], str] | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self.session_id = session_id
        if isinstance(session_settings, Mapping):
            session_settings = dict(session_settings)
        # As the SDK's own sessions: no settings are the default settings.
        self.session_settings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self._store: Store | None = Store(db_path)
        # As the store shows it: a connection string without its password.
        self._path = self._store.path
        self._native: _native.NativeSession | None = self._store._native.open_session(
            session_id, policy, context_limit, summarizer
        )
        self._lock = threading.Lock()
        self.last_compaction: dict[str, Any] | None = None
        """What the last `run_compaction` did: the step it finished, the
        overflow count, the compactions run, what was pruned."""

    @property
    def store(self) -> Store:
        """The store the session is kept in."""
        if self._store is None:
            raise _native.CtxlogError(f"session {self.session_id!r} is closed")
        return self._store

    def _session(self) -> _native.NativeSession:
        native = self._native
        if native is None:
            raise _native.CtxlogError(f"session {self.session_id!r} is closed")
        return native

    async def _call(self, f: Any, *args: Any) -> Any:
        """Calls `f` under the session's lock; on disk in a worker thread,
        since a write waits for the flush. A call is never abandoned half
        way: when the caller is cancelled, it still ends before the
        cancellation is raised (as the SDK's own sessions do)."""

        def locked() -> Any:
            with self._lock:
                return f(*args)

        if self._path == ":memory:":
            return locked()
        return await _settled(asyncio.ensure_future(asyncio.to_thread(locked)))

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The items the model should see, oldest first; the latest `limit`
        (else `session_settings.limit`) when given (none for 0, all for a
        negative limit)."""
        if limit is None:
            limit = self.session_settings.limit
        if limit is not None and limit < 0:
            limit = None  # as SQLiteSession: a negative limit is no limit
        if limit == 0:
            return []
        views = await self._call(self._session().get_items, limit)
        return [_item(v) for v in views]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Records `items` in one atomic append."""
        session = self._session()
        records = [_record(i, item) for i, item in enumerate(items)]
        if records:
            await self._call(session.add_items, records)

    async def pop_item(self) -> TResponseInputItem | None:
        """Takes back the most recent item and returns it (as `get_items`
        gave it); `None` when the session has none. The log keeps it."""
        view = await self._call(self._session().pop_item)
        return None if view is None else _item(view)

    async def clear_session(self) -> None:
        """Withdraws every item. The log keeps them; `audit()` lists them."""
        await self._call(self._session().clear)

    async def run_compaction(
        self,
        args: OpenAIResponsesCompactionArgs | None = None,
        *,
        wrapper: RunContextWrapper[Any] | None = None,
    ) -> None:
        """The end of a turn: finishes the model step with the usage the
        run context reports (ctxlog's estimate of the window without one),
        runs the overflow check and the compaction it decides, then prunes
        as the policy says. `force` in `args` compacts now.

        The SDK calls it after saving a turn whose model response has an id
        (the Responses API). A Chat Completions model has none, and the SDK
        then never calls it: call `await session.run_compaction(
        wrapper=result.context_wrapper)` after each `Runner.run`."""
        force = bool(args.get("force")) if args else False
        usage = _usage(wrapper) if wrapper is not None else None
        result = await self._call(self._session().compact, usage, force)
        self.last_compaction = result

    def audit(self) -> list[AuditEntry]:
        """The session's audit trail: every prune (the parts, their call ids
        and tokens), withdrawal and compaction step."""
        return self.store.audit(self._session().id)

    def close(self) -> _Closed:
        """Lets go of the store (it closes with the last user in this
        process). Works awaited or not; the session is unusable after."""
        with self._lock:
            self._native = None
            self._store = None
        return _Closed()

    def __repr__(self) -> str:
        return f"CtxlogSession({self.session_id!r}, {self._path!r})"
