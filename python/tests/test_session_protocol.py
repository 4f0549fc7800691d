"""CtxlogSession against the Agents SDK's Session protocol: the behaviour
the SDK's own sessions (SQLiteSession) have, item for item."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from pathlib import Path

import pytest
from agents.memory import Session, SessionSettings, SQLiteSession

import ctxlog
from ctxlog.agents import PRUNED_PLACEHOLDER, CtxlogSession

ODD = [
    {"role": "user", "content": "héllo wörld ✓ 🙂 \u2028 \u0000 \\ \" '"},
    {"role": "user", "content": "lone surrogates \ud800 \udfff and a pair \U0001f600"},
    {"role": "system", "content": [{"type": "input_text", "text": "be brief"}]},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "hi", "annotations": []}],
    },
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]},
    {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": '{"path": "a.py"}'},
    {"type": "function_call_output", "call_id": "call_1", "output": "x = 1\n"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "n": 1.5e300, "big": 2**70},
    {"type": "function_call_output", "call_id": "nobody", "output": "orphan"},
    {"type": "function_call", "call_id": "call_2", "name": "read", "arguments": "not json"},
    {"type": "function_call_output", "call_id": "call_2", "output": "bad byte \udc80 kept"},
    {"type": "function_call", "call_id": "call_3", "name": "ls", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_3", "output": [{"type": "input_text", "text": "a list"}]},
]


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(params=["memory", "disk", "postgres"])
def make(request, tmp_path: Path):
    """A factory of sessions, in memory, in a store on disk, or in a
    PostgreSQL database of the test's own."""
    opened: list[CtxlogSession] = []
    where: object = {
        "memory": ":memory:",
        "disk": tmp_path / "store",
    }.get(request.param) or request.getfixturevalue("pg_url")

    def new(name: str = "s", **kw) -> CtxlogSession:
        path = where
        s = CtxlogSession(name, path, **kw)
        opened.append(s)
        return s

    yield new
    for s in opened:
        s.close()


def test_it_is_a_session(make):
    s = make()
    assert isinstance(s, Session)
    assert s.session_id == "s"
    # The SDK's own tests (test_session_settings_default) expect the
    # default settings, not None.
    assert s.session_settings == SessionSettings()
    assert s.session_settings.limit is None


def test_items_round_trip_equal_and_in_order(make, tmp_path):
    s = make()
    run(s.add_items(ODD))
    got = run(s.get_items())
    assert got == ODD
    # byte for byte: the same as the SDK's own SQLite session gives back
    sqlite = SQLiteSession("s", str(tmp_path / "sdk.db"))
    run(sqlite.add_items(ODD))
    assert run(sqlite.get_items()) == got
    assert [repr(x) for x in got] == [repr(x) for x in ODD]


def test_limit_gives_the_latest_in_order(make):
    s = make()
    items = [{"role": "user", "content": str(i)} for i in range(5)]
    run(s.add_items(items))
    assert run(s.get_items(limit=2)) == items[3:]
    assert run(s.get_items(limit=0)) == []
    assert run(s.get_items(limit=10)) == items
    assert run(s.get_items(limit=-1)) == items  # SQLiteSession's LIMIT -1


def test_session_settings_limit_applies_without_a_limit(make):
    items = [{"role": "user", "content": str(i)} for i in range(4)]
    for settings in (SessionSettings(limit=3), {"limit": 3}):
        s = make(f"settings-{type(settings).__name__}", session_settings=settings)
        assert isinstance(s.session_settings, SessionSettings)
        run(s.add_items(items))
        assert run(s.get_items()) == items[1:]
        assert run(s.get_items(limit=1)) == items[3:]


def test_pop_returns_the_last_item_and_the_audit_keeps_it(make):
    s = make()
    run(s.add_items(ODD[:7]))
    assert run(s.pop_item()) == ODD[6]  # an output: the call waits again
    assert run(s.get_items()) == ODD[:6]
    assert run(s.pop_item()) == ODD[5]
    assert run(s.get_items()) == ODD[:5]
    # the call's output comes back after its call was popped and re-added
    run(s.add_items(ODD[5:7]))
    assert run(s.get_items()) == ODD[:7]
    kinds = [e.kind for e in s.audit()]
    assert kinds == ["output_withdrawn", "messages_withdrawn"]
    popped = s.audit()[0]
    assert popped.source_ids == ["call_1"]


def test_pop_on_empty_gives_none(make):
    s = make()
    assert run(s.pop_item()) is None
    run(s.add_items([{"role": "user", "content": "a"}]))
    assert run(s.pop_item()) == {"role": "user", "content": "a"}
    assert run(s.pop_item()) is None
    assert run(s.get_items()) == []


def test_clear_withdraws_everything_and_the_session_goes_on(make):
    s = make()
    run(s.add_items(ODD))
    run(s.clear_session())
    assert run(s.get_items()) == []
    run(s.clear_session())  # nothing left: no event, no error
    run(s.add_items([{"role": "user", "content": "again"}]))
    assert run(s.get_items()) == [{"role": "user", "content": "again"}]
    withdrawn = [e for e in s.audit() if e.kind == "messages_withdrawn"]
    assert len(withdrawn) == 1
    assert "clear_session" in withdrawn[0].what
    assert len(withdrawn[0].ids) == len(ODD) - 3  # three outputs complete their calls' messages


def test_sessions_sharing_a_store_are_separate(tmp_path):
    a = CtxlogSession("a", tmp_path / "db")
    b = CtxlogSession("b", tmp_path / "db")
    run(a.add_items([{"role": "user", "content": "for a"}]))
    run(b.add_items([{"role": "user", "content": "for b"}]))
    assert run(a.get_items()) == [{"role": "user", "content": "for a"}]
    assert run(b.get_items()) == [{"role": "user", "content": "for b"}]
    # a second object on the same name is the same session
    a2 = CtxlogSession("a", tmp_path / "db")
    assert run(a2.get_items()) == [{"role": "user", "content": "for a"}]
    names = sorted(x.name for x in ctxlog.Store(tmp_path / "db").sessions())
    assert names == ["a", "b"]
    for s in (a, b, a2):
        s.close()


def test_reopened_after_close_reads_what_was_written(tmp_path):
    s = CtxlogSession("durable", tmp_path / "db")
    run(s.add_items(ODD))
    assert s.close() is not None  # not awaited: closes anyway
    with pytest.raises(ctxlog.CtxlogError, match="closed"):
        run(s.get_items())
    again = CtxlogSession("durable", tmp_path / "db")
    assert run(again.get_items()) == ODD


    async def awaited() -> None:
        await again.close()

    run(awaited())
    with pytest.raises(ctxlog.CtxlogError, match="closed"):
        run(again.add_items([]))
        run(again.pop_item())


def test_many_threads_each_with_its_own_loop(tmp_path):
    s = CtxlogSession("threads", tmp_path / "db")
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        async def go() -> None:
            for i in range(20):
                await s.add_items([{"role": "user", "content": f"{n}-{i}"}])
                await s.get_items(limit=3)

        try:
            asyncio.run(go())
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = run(s.get_items())
    assert len(got) == 80
    for n in range(4):
        mine = [x["content"] for x in got if x["content"].startswith(f"{n}-")]
        assert mine == [f"{n}-{i}" for i in range(20)]
    s.close()


def test_bad_input_is_a_clear_error_and_writes_nothing(make):
    s = make()
    run(s.add_items([{"role": "user", "content": "kept"}]))
    with pytest.raises(TypeError, match="item 1: expected a dict"):
        run(s.add_items([{"role": "user", "content": "x"}, "not an item"]))
    with pytest.raises(TypeError, match="item 0: not JSON serializable"):
        run(s.add_items([{"role": "user", "content": object()}]))
    assert run(s.get_items()) == [{"role": "user", "content": "kept"}]


def test_unknown_policy_names_the_presets(tmp_path):
    with pytest.raises(ctxlog.CtxlogError, match="unknown policy preset \"nope\"; known: .*opencode-1.18"):
        CtxlogSession("p", tmp_path / "db", policy="nope")


def test_errors_carry_the_clis_messages(tmp_path, ctxlog_bin):
    db = tmp_path / "db"
    store = ctxlog.Store(db)
    CtxlogSession("known", db).close()

    def cli_error(*args: str) -> str:
        done = subprocess.run([ctxlog_bin, "--db", str(db), *args], capture_output=True, text=True)
        assert done.returncode == 2, done
        # (the line before it says the store is held by this process)
        return done.stderr.strip().splitlines()[-1].removeprefix("ctxlog: ")

    for call, args in [
        (lambda: store.audit("nope"), ["audit", "nope"]),
        (lambda: store.report("nope", tmp_path / "r.html"), ["report", "nope", "--out", str(tmp_path / "r.html")]),
        (lambda: store.simulate("known", "nope"), ["simulate", "known", "--policy", "nope"]),
    ]:
        with pytest.raises(ctxlog.CtxlogError) as raised:
            call()
        assert str(raised.value) == cli_error(*args)


def test_placeholder_constant_is_opencodes():
    assert PRUNED_PLACEHOLDER == "[Old tool result content cleared]"


def test_a_cancelled_write_still_lands(tmp_path):
    s = CtxlogSession("cancel", tmp_path / "db")

    async def go() -> None:
        task = asyncio.ensure_future(s.add_items([{"role": "user", "content": "kept"}]))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(go())
    assert run(s.get_items()) == [{"role": "user", "content": "kept"}]
    s.close()


def test_a_forced_compaction_uses_the_sessions_summarizer(make):
    seen: list[list[dict]] = []

    def summarize(messages: list[dict]) -> str:
        seen.append(messages)
        return "We greeted each other."

    s = make("summarized", summarizer=summarize)
    run(s.add_items([{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]))
    run(s.run_compaction({"force": True}))
    assert [j["status"] for j in s.last_compaction["jobs"]] == ["completed"]
    assert seen and seen[0][0]["role"] == "system"
    assert "hello" in str(seen[0])
    assert run(s.get_items()) == [
        {"role": "user", "content": "What did we do so far?"},
        {"role": "assistant", "content": "We greeted each other."},
    ]
    # Nothing is lost: pop takes back the pivot's own messages, never the past.
    kinds = [e.kind for e in s.audit()]
    assert "summary_completed" in kinds


def test_a_failing_summarizer_leaves_history_as_it_was(make):
    def summarize(messages: list[dict]) -> str:
        raise RuntimeError("model unavailable")

    s = make("failing", summarizer=summarize)
    items = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    run(s.add_items(items))
    run(s.run_compaction({"force": True}))
    job = s.last_compaction["jobs"][0]
    assert job["status"] == "failed" and "model unavailable" in job["error"]
    assert run(s.get_items())[:2] == items


def test_the_cli_lists_and_transcribes_what_python_wrote(tmp_path, ctxlog_bin):
    db = tmp_path / "db"
    s = CtxlogSession("cli-sees-this", db)
    run(s.add_items([{"role": "user", "content": "first"}, {"role": "user", "content": "taken back"}]))
    run(s.pop_item())

    def cli(*args: str) -> str:
        done = subprocess.run(
            [ctxlog_bin, "--db", str(db), *args], check=True, capture_output=True, text=True
        )
        return done.stdout

    # The store is held by this process: the CLI reads through it.
    rows = json.loads(cli("--json", "sessions"))
    rows = rows if isinstance(rows, list) else rows["sessions"]
    assert any("cli-sees-this" in json.dumps(r) and "openai-agents" in json.dumps(r) for r in rows)
    transcript = cli("export", "cli-sees-this", "--format", "markdown")
    assert "first" in transcript
    assert "taken back" in transcript and "withdrawn" in transcript
    s.close()


def _random_item(rng, n: int, calls: list[str]) -> dict:
    kind = rng.choice(["user", "assistant", "call", "output", "reasoning", "other"])
    if kind == "user":
        return {"role": "user", "content": f"prompt {n} " + rng.choice(["", "é", "🙂", "\ud800", "\n\t"])}
    if kind == "assistant":
        return {"type": "message", "role": "assistant", "id": f"msg_{n}",
                "content": [{"type": "output_text", "text": f"answer {n}", "annotations": []}]}
    if kind == "call":
        call_id = f"call_{n}"
        calls.append(call_id)
        return {"type": "function_call", "call_id": call_id, "name": "read", "arguments": json.dumps({"n": n})}
    if kind == "output":
        call_id = rng.choice(calls) if calls and rng.random() < 0.8 else f"orphan_{n}"
        return {"type": "function_call_output", "call_id": call_id, "output": "out " * rng.randint(0, 50)}
    if kind == "reasoning":
        return {"type": "reasoning", "id": f"rs_{n}", "summary": [{"type": "summary_text", "text": f"r{n}"}]}
    return {"type": "file_search_call", "id": f"fs_{n}", "queries": ["q"], "status": "completed"}


@pytest.mark.parametrize("where", ["disk", "postgres"])
@pytest.mark.parametrize("seed", range(6))
def test_random_operations_match_the_sdks_sqlite_session(seed, where, tmp_path, request):
    """Any sequence of adds, pops, limited gets and clears gives what the
    SDK's SQLiteSession gives, step by step (nothing is compacted here), on
    disk and on PostgreSQL."""
    import random

    rng = random.Random(seed)
    store = tmp_path / "db" if where == "disk" else request.getfixturevalue("pg_url")
    ours = CtxlogSession("same", store)
    theirs = SQLiteSession("same", str(tmp_path / "sdk.db"))
    calls: list[str] = []
    n = 0
    for step in range(120):
        op = rng.choices(["add", "pop", "get", "clear"], weights=[6, 3, 3, 1])[0]
        if op == "add":
            batch = []
            for _ in range(rng.randint(0, 4)):
                batch.append(_random_item(rng, n, calls))
                n += 1
            run(ours.add_items(batch))
            run(theirs.add_items(batch))
        elif op == "pop":
            assert run(ours.pop_item()) == run(theirs.pop_item()), f"step {step}"
        elif op == "get":
            limit = rng.choice([None, 0, 1, 3, 10, -1])
            assert run(ours.get_items(limit)) == run(theirs.get_items(limit)), f"step {step}"
        else:
            run(ours.clear_session())
            run(theirs.clear_session())
        assert run(ours.get_items()) == run(theirs.get_items()), f"step {step} ({op})"
    ours.close()
    theirs.close()
