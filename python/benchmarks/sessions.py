"""CtxlogSession against the Agents SDK's SQLiteSession, in one run on one
machine: 250 add_items of 4 items (a prompt, a call, a 2 KB output, an
answer), then get_items() of the 1,000 items and get_items(limit=10).

    target/python-venv/bin/python python/benchmarks/sessions.py

(python/run-tests makes that venv). Nothing asserts a speed; BENCHMARKS.md
keeps what it printed.
"""

import asyncio, time, json, tempfile, os
from agents.memory import SQLiteSession
from ctxlog.agents import CtxlogSession

def items(n):
    out = []
    for i in range(n):
        out.append({"role": "user", "content": f"prompt {i} " + "w" * 200})
        out.append({"type": "function_call", "call_id": f"c{i}", "name": "read", "arguments": json.dumps({"path": f"f{i}.py"})})
        out.append({"type": "function_call_output", "call_id": f"c{i}", "output": "x" * 2000})
        out.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"done {i}", "annotations": []}]})
    return out

async def bench(make, label):
    d = tempfile.mkdtemp()
    s = make(d)
    its = items(250)
    t = time.perf_counter()
    for k in range(0, len(its), 4):
        await s.add_items(its[k:k+4])
    add = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(20):
        got = await s.get_items()
    get = (time.perf_counter() - t) / 20
    t = time.perf_counter()
    for _ in range(200):
        await s.get_items(limit=10)
    lim = (time.perf_counter() - t) / 200
    print(f"{label}: 250 add_items of 4 items {add*1000:.0f} ms ({add/250*1000:.2f} ms each); get_items() of {len(got)} {get*1000:.1f} ms; get_items(10) {lim*1000:.2f} ms")
    s.close()

async def main():
    await bench(lambda d: SQLiteSession("b", os.path.join(d, "x.db")), "SQLiteSession (file)")
    await bench(lambda d: CtxlogSession("b", os.path.join(d, "store")), "CtxlogSession (disk)")
    await bench(lambda d: SQLiteSession("b"), "SQLiteSession (:memory:)")
    await bench(lambda d: CtxlogSession("b"), "CtxlogSession (:memory:)")
asyncio.run(main())
