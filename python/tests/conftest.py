"""Shared helpers: the ctxlog binary the CLI tests run, built from this
checkout when `CTXLOG_BIN` does not name one."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def ctxlog_bin() -> str:
    """The `ctxlog` CLI: `CTXLOG_BIN`, else built with cargo."""
    given = os.environ.get("CTXLOG_BIN")
    if given:
        return given
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("no CTXLOG_BIN and no cargo to build the ctxlog CLI")
    subprocess.run(
        [cargo, "build", "--release", "-q", "-p", "ctxlog-cli"], cwd=REPO, check=True
    )
    return str(REPO / "target" / "release" / "ctxlog")


@pytest.fixture(autouse=True, scope="session")
def _no_tracing() -> None:
    """No network: the SDK's trace export stays off."""
    from agents import set_tracing_disabled

    set_tracing_disabled(True)


def _psql() -> str | None:
    """Debian's psql: on PATH, else beside the server's binaries."""
    found = shutil.which("psql")
    if found:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"))
    return str(candidates[-1]) if candidates else None


@pytest.fixture
def pg_url() -> object:
    """A PostgreSQL database of this test's own on the test server
    (`CTXLOG_TEST_POSTGRES`, which `.ci/postgres start` prints), dropped
    after it. Without a server the test is skipped, unless
    `CTXLOG_REQUIRE_POSTGRES` is set (CI), where it fails."""
    import uuid

    admin = os.environ.get("CTXLOG_TEST_POSTGRES")
    psql = _psql()
    if not admin or psql is None:
        why = "no PostgreSQL server (CTXLOG_TEST_POSTGRES) or no psql"
        if os.environ.get("CTXLOG_REQUIRE_POSTGRES"):
            pytest.fail(why)
        pytest.skip(why)
    name = f"t_py_{uuid.uuid4().hex[:16]}"
    subprocess.run([psql, admin, "-q", "-c", f'CREATE DATABASE "{name}"'], check=True)
    yield admin.rsplit("/", 1)[0] + "/" + name
    subprocess.run(
        [psql, admin, "-q", "-c", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'], check=False
    )
