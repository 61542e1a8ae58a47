"""Runs of client drivers that several client test modules judge, each played once per process.

The deliberately broken drivers (tests/conformance/broken_clients.py) stand in for client
libraries, so the runner, the judge and the matrix are proven without Node or a client library.
A run over `SUBSET` is cached here (`broken_run`), so the judge's tests and the matrix's test of
one driver share it; tests that share a run carry the same xdist group (`group`), so `--dist
loadgroup` plays each run once while the runs of different drivers go to different workers.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from dshkit.conformance.client_runner import (
    BUNDLED_CLIENTS,
    ClientCommand,
    ClientScenarioResult,
    describe_client,
    resolve_client,
    run_client_catalogue,
)
from dshkit.conformance.scenario import Scenario

from .catalogue_runs import catalogue

__all__ = ["BROKEN", "MUST_FAIL", "SUBSET", "broken", "broken_run", "driver_hello", "group", "result", "run",
           "scenarios"]

BROKEN = Path(__file__).resolve().parent / "broken_clients.py"
SUBSET = ("tool-split-arguments", "tool-arguments-byte-exact", "text-reasoning-then-answer",
          "rt-thinking-tool-call", "rt-arguments-not-reencoded")
"""Scenarios the openai-python driver passes, and that the two defects split between them."""
MUST_FAIL = {
    "drops-passback": {"rt-thinking-tool-call", "rt-arguments-not-reencoded"},
    "reencodes-arguments": {"tool-arguments-byte-exact", "rt-arguments-not-reencoded"},
}


def scenarios(ids: Sequence[str], **update: Any) -> list[Scenario]:
    """The catalogue's scenarios `ids`, in that order, with `update` applied to each."""
    by_id = {s.id: s for s in catalogue()}
    return [by_id[i].model_copy(update=update) for i in ids]


def broken(mode: str, env: dict[str, str] | None = None) -> ClientCommand:
    """The command of the broken driver `mode` (one of broken_clients.MODES)."""
    return ClientCommand(name=f"broken-{mode}", argv=(sys.executable, str(BROKEN), mode), env=env or {})


def run(cmd: ClientCommand, played: list[Scenario], **kw: Any) -> dict[str, ClientScenarioResult]:
    """`run_client_catalogue` of `played` with `cmd`, its results by scenario id."""
    results = asyncio.run(run_client_catalogue(played, cmd, **kw))
    return {r.id: r for r in results}


@functools.cache
def driver_hello(driver: str) -> dict[str, Any]:
    """The `hello` of a bundled or broken driver from its describe run, as `run_client_catalogue`
    asks for it first."""
    cmd = resolve_client(driver) if driver in BUNDLED_CLIENTS else broken(driver)
    return asyncio.run(describe_client(cmd))


@functools.cache
def broken_run(mode: str) -> dict[str, ClientScenarioResult]:
    """The broken driver `mode`'s one run over `SUBSET`."""
    return run(broken(mode), scenarios(SUBSET), hello=driver_hello(mode))


def result(sid: str, status: str, reason: str = "") -> ClientScenarioResult:
    """A client scenario result as the runner makes it, for the report and matrix tests."""
    return ClientScenarioResult(id=sid, tags=["A5", "area:tools"], status=status, reason=reason)  # type: ignore[arg-type]


def group(driver: str) -> pytest.MarkDecorator:
    """The xdist group of the tests that judge `driver`'s shared run."""
    return pytest.mark.xdist_group(f"clients-{driver}")
