"""ctxlog on PostgreSQL from Python: `Store("postgresql://…")`, and
`CtxlogSession(db_path="postgresql://…")` shared by worker processes.
Needs a server (`CTXLOG_TEST_POSTGRES`); see the `pg_url` fixture."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

import ctxlog
from ctxlog.agents import CtxlogSession

WORKER = """
import asyncio, sys
from ctxlog.agents import CtxlogSession

url, me, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

async def go():
    shared = CtxlogSession("shared", url)
    own = CtxlogSession(f"own-{me}", url)
    for i in range(n):
        await shared.add_items([{"role": "user", "content": f"{me}-{i}"}])
        await own.add_items([{"role": "user", "content": f"{me}-{i}"}])
        await shared.get_items(limit=2)
    shared.close()
    own.close()

asyncio.run(go())
"""


def password_of(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]


def test_worker_processes_share_a_session(pg_url):
    workers, n = 4, 25
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, pg_url, f"w{k}", str(n)])
        for k in range(workers)
    ]
    for p in procs:
        assert p.wait(timeout=300) == 0
    shared = CtxlogSession("shared", pg_url)
    got = [x["content"] for x in asyncio.run(shared.get_items())]
    assert len(got) == workers * n
    for k in range(workers):
        mine = [c for c in got if c.startswith(f"w{k}-")]
        assert mine == [f"w{k}-{i}" for i in range(n)], "each worker's items in its order"
        own = CtxlogSession(f"own-w{k}", pg_url)
        assert [x["content"] for x in asyncio.run(own.get_items())] == [
            f"w{k}-{i}" for i in range(n)
        ]
        own.close()
    shared.close()
    store = ctxlog.Store(pg_url)
    names = sorted(s.name for s in store.sessions())
    assert names == sorted(["shared"] + [f"own-w{k}" for k in range(workers)])


def test_a_store_on_postgres_answers_as_on_disk(pg_url, tmp_path):
    items = [
        {"role": "user", "content": "read a.py"},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x = 1\n" * 50},
    ]
    for where in (pg_url, tmp_path / "db"):
        s = CtxlogSession("same", where)
        asyncio.run(s.add_items(items))
        asyncio.run(s.run_compaction({"force": True}))
        s.close()
    on_pg, on_disk = ctxlog.Store(pg_url), ctxlog.Store(tmp_path / "db")
    assert [(s.name, s.events, s.compactions) for s in on_pg.sessions()] == [
        (s.name, s.events, s.compactions) for s in on_disk.sessions()
    ]
    assert len(on_pg.timeline("same")) == len(on_disk.timeline("same"))
    assert on_pg.report("same", tmp_path / "pg.html").stat().st_size > 0
    assert password_of(pg_url) not in on_pg.path
    assert ":***@" in on_pg.path


def test_a_wrong_password_is_an_error_that_never_shows_it(pg_url):
    password = password_of(pg_url)
    wrong = pg_url.replace(f":{password}@", ":not-the-password-42@")
    with pytest.raises(ctxlog.CtxlogError) as e:
        CtxlogSession("x", wrong)
    assert "not-the-password-42" not in str(e.value)
    assert password not in str(e.value)
    assert ":***@" in str(e.value)
