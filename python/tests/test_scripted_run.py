"""A multi-turn agent run with the SDK's own deterministic ScriptedModel,
large tool outputs and a usage that grows: ctxlog prunes old outputs and
compacts on overflow, the model's input shows it, and the audit still
lists every original."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from agents import Agent, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage

import ctxlog
from ctxlog.agents import PRUNED_PLACEHOLDER, CtxlogSession

OUTPUT_CHARS = 120_000  # 30,000 tokens at 4 characters a token
TURNS = 5
LIMIT = 200_000


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}\n" + "x" * OUTPUT_CHARS


def usage(tokens: int) -> Usage:
    return Usage(requests=1, input_tokens=tokens, output_tokens=100, total_tokens=tokens + 100)


def script() -> ScriptedModel:
    steps = []
    for t in range(TURNS):
        # the prompt grows by one output a turn; turn 4 crosses the limit
        prompt = 20_000 + 40_000 * t
        steps.append(
            ModelStep(
                output=[function_call("read_file", {"path": f"f{t}.py"}, call_id=f"call_{t}")],
                usage=usage(prompt),
            )
        )
        steps.append(ModelStep(output=[assistant_message(f"read f{t}.py")], usage=usage(prompt + 20_000)))
    return ScriptedModel(steps)


def texts(items: list[dict]) -> list[str]:
    out = []
    for i in items:
        value = i.get("output", i.get("content"))
        if isinstance(value, list):
            value = " ".join(p.get("text", "") for p in value)
        out.append(str(value))
    return out


def test_prunes_and_compacts_while_the_audit_keeps_the_originals(tmp_path: Path, ctxlog_bin: str):
    db = tmp_path / "store"
    session = CtxlogSession("scripted", db, context_limit=LIMIT)
    model = script()
    agent = Agent(name="reader", model=model, tools=[read_file])
    done = []

    async def turns() -> None:
        for t in range(TURNS):
            result = await Runner.run(agent, f"read f{t}.py", session=session)
            assert result.final_output == f"read f{t}.py"
            done.append((await session.get_items(), session.last_compaction))

    asyncio.run(turns())
    model.assert_complete()

    # Pruning: after turn 3 ends, the oldest outputs are cleared in what
    # the model sees, and the next request carried the placeholder.
    # (OpenCode's prune: the two latest turns are protected, then 40,000
    # tokens of outputs are kept, and a prune must clear over 20,000.)
    assert [c["pruned"] for _, c in done[:3]] == [None, None, None]
    after_three, compaction_three = done[3]
    assert compaction_three["pruned"]["tokens"] >= 30_000
    cleared = [i for i in after_three if i.get("output") == PRUNED_PLACEHOLDER]
    assert [i["call_id"] for i in cleared] == ["call_0"]
    sent = json.dumps(model.calls[8].input)
    assert PRUNED_PLACEHOLDER in sent and "contents of f0.py" not in sent

    # The summary pivot: turn 4's last step overflowed; what the model
    # sees starts with the compaction's question and summary.
    last_items, last_compaction = done[-1]
    assert last_compaction["overflow"] is not None
    assert [j["status"] for j in last_compaction["jobs"]] == ["completed"]
    assert last_items[0] == {"role": "user", "content": "What did we do so far?"}
    assert last_items[1]["role"] == "assistant" and last_items[1]["content"]
    assert "read f0.py" not in texts(last_items)[2:]

    # The audit still lists every pruned original, with its call id and tokens.
    audit = session.audit()
    pruned = [e for e in audit if e.kind == "parts_pruned"]
    call_ids = sorted(c for e in pruned for c in e.source_ids)
    assert call_ids[:2] == ["call_0", "call_1"]
    assert all(e.tokens and e.tokens >= 30_000 for e in pruned)
    for e in pruned:
        assert len(e.part_tokens) == len(e.ids) == len(e.source_ids)
        assert sum(e.part_tokens) == e.tokens
        assert all(t >= 30_000 for t in e.part_tokens)
    kinds = [e.kind for e in audit]
    for kind in ("compaction_requested", "compaction_started", "summary_completed"):
        assert kind in kinds
    # ... and the log still holds every output in full.
    store = ctxlog.Store(db)
    full = store.window("scripted", step=3)
    assert any("contents of f0.py" in json.dumps(m) for m in full.messages)
    # One step a turn: the SDK reports usage to the session only when a
    # turn's response leaves no tool output to run (run_compaction).
    steps = store.timeline("scripted")
    assert len(steps) == TURNS
    assert [s.overflow for s in steps] == [False] * (TURNS - 1) + [True]

    # The CLI reads what Python wrote, by the SDK's session id, while this
    # process holds the store.
    session.close()
    listed = subprocess.run(
        [ctxlog_bin, "--db", str(db), "--json", "sessions"], check=True, capture_output=True, text=True
    )
    rows = json.loads(listed.stdout)
    row = next(r for r in (rows if isinstance(rows, list) else rows["sessions"]) if "scripted" in json.dumps(r))
    assert row
    window = subprocess.run(
        [ctxlog_bin, "--db", str(db), "--json", "window", "scripted"], check=True, capture_output=True, text=True
    )
    assert "What did we do so far?" in window.stdout
    audit_cli = subprocess.run(
        [ctxlog_bin, "--db", str(db), "--json", "audit", "scripted"], check=True, capture_output=True, text=True
    )
    assert "call_0" in audit_cli.stdout
    page = tmp_path / "report.html"
    subprocess.run(
        [ctxlog_bin, "--db", str(db), "report", "scripted", "--out", str(page)], check=True, capture_output=True
    )
    assert page.stat().st_size > 0

    # Python's own report and a simulation under another policy.
    again = ctxlog.Store(db)
    assert again.report("scripted", tmp_path / "py.html").stat().st_size > 0
    sim = again.simulate("scripted", "codex")
    assert sim.steps == TURNS


def test_without_response_ids_the_caller_ends_the_turn(tmp_path: Path):
    """A Chat Completions model gives no response id, and the SDK then never
    calls run_compaction: the caller does, with the run's context."""
    session = CtxlogSession("chat-completions", tmp_path / "store", context_limit=LIMIT)
    model = ScriptedModel(
        [ModelStep(output=[assistant_message(f"answer {t}")], usage=usage(1_000 * (t + 1)), response_id=None)
         for t in range(2)]
    )
    agent = Agent(name="chat", model=model)

    async def turns() -> None:
        for t in range(2):
            before = session.last_compaction
            result = await Runner.run(agent, f"question {t}", session=session)
            assert session.last_compaction is before  # the SDK did not call it
            await session.run_compaction(wrapper=result.context_wrapper)
            assert session.last_compaction["step"] is not None

    asyncio.run(turns())
    steps = session.store.timeline("chat-completions")
    assert [s.tokens["input"] for s in steps] == [1_000, 2_000]
    session.close()
