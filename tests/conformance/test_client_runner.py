"""`client_runner`: each scenario played by a driver process and judged, whatever the driver does.

The drivers that break the protocol (tests/conformance/broken_clients.py: one crashes, one prints
garbage, one breaks the schema, one stops early, one hangs with a child, one never says hello)
must each get a clear failure that says what happened, never a runner traceback, and a hung
driver's whole process group must be gone afterwards.
"""

from __future__ import annotations

import os
import select
from pathlib import Path

import pytest

from dshkit.conformance.report import write_json
from dshkit.view import render_paths

from .client_runs import broken, result, run, scenarios


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie left for a parent that does not reap counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _exits_within(pid: int, timeout_s: float) -> bool:
    """Whether the process ends within `timeout_s`, waited for on a pidfd (no polling): SIGKILL is
    delivered when the kernel next runs the process, which on a loaded machine is not at once."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
        return bool(ready) or not _alive(pid)
    finally:
        os.close(fd)


@pytest.mark.parametrize(("mode", "failed", "words"), [
    ("crash", ["driver"], ["exited with status 1", "RuntimeError: the driver fell over"]),
    ("garbage", ["driver"], ["stdout line 2 is not JSON", "calling the model now"]),
    ("bad-schema", ["driver"], ["violates the protocol schema at `tool_calls[0].arguments`", "is not of type 'string'"]),
    ("silent", ["step0.played"], ["step 0 was not played (the driver stopped early)"]),
])
def test_protocol_breakers_get_a_clear_failure(mode: str, failed: list[str], words: list[str]) -> None:
    res = run(broken(mode), scenarios(["tool-split-arguments"]))["tool-split-arguments"]
    assert res.status == "fail"
    assert res.failed == failed
    text = res.reason + res.diff
    assert all(w in text for w in words), text
    assert "Traceback" not in res.reason


def test_hung_driver_is_killed_with_its_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    cmd = broken("hang-child", {"BROKEN_CLIENT_PIDFILE": str(pidfile)})
    res = run(cmd, scenarios(["tool-split-arguments"], budget_s=1.0))["tool-split-arguments"]
    assert res.status == "fail" and res.failed == ["driver"]
    assert res.reason.startswith("timeout: the driver did not finish within the scenario's 1 s budget")
    assert _exits_within(int(pidfile.read_text()), 30.0)


def test_driver_that_never_says_hello_fails_within_the_startup_time() -> None:
    # `slow-hello` sleeps for an hour before its hello, so no startup time is ever enough: a short one
    res = run(broken("slow-hello"), scenarios(["tool-split-arguments"]), hello={"type": "hello"},
              startup_s=0.3)["tool-split-arguments"]
    assert res.status == "fail"
    assert "printed no `hello` line within 0.3 s" in res.reason


def test_client_report_renders_in_dshkit_view(tmp_path: Path) -> None:
    report = tmp_path / "client.json"
    write_json(report, [result("tool-split-arguments", "pass")], adapter=None, client="demo",
               driver={"libraries": {"demo-lib": "1.2.3"}})
    html, kind = render_paths([report])
    assert kind == "conformance"
    assert '<th title="client demo">client demo' in html and "<small>demo-lib 1.2.3</small>" in html
    assert '<tr data-scenario="tool-split-arguments">' in html and '<td class="pass">pass</td>' in html
