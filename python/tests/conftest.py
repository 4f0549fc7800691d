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
