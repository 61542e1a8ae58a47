"""`driverkit`: the plumbing the bundled Python drivers share (describe answer, protocol lines on
the real stdout, client options, errors described as the observation schema wants)."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dshkit.conformance.client_protocol import CLIENTS_DIR, parse_line
from dshkit.conformance.client_runner import ClientCommand, ClientError, describe_client
from dshkit.conformance.clients import driverkit


def _driver(monkeypatch: pytest.MonkeyPatch, task: dict[str, Any], **kw: Any) -> tuple[driverkit.Driver, io.StringIO, io.StringIO]:
    """A `Driver` reading `task` on stdin, and what it leaves on stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(task)))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    return driverkit.Driver("demo", protocols=["chat"], packages=[], **kw), out, err


def test_a_driver_whose_library_is_missing_does_not_describe_itself(tmp_path: Path) -> None:
    """The bundled drivers answer a describe request before importing their library; one whose
    package is not installed must still fail the describe (as the import would have), naming the
    package, rather than pass it and crash in every scenario."""
    driver = tmp_path / "drive_ghost.py"
    driver.write_text(f"import sys\nsys.path.insert(0, {str(CLIENTS_DIR)!r})\nimport driverkit\n"
                      "DRIVER = driverkit.Driver('ghost', protocols=['chat'], packages=['dshkit-ghost-library'])\n"
                      "DRIVER.answer_describe()\nimport dshkit_ghost_library\n")
    with pytest.raises(ClientError, match=r"client 'ghost' did not describe itself: the driver exited with status 1 "
                                          r"before printing `hello`(.|\n)*ghost: not installed: dshkit-ghost-library"):
        asyncio.run(describe_client(ClientCommand(name="ghost", argv=(sys.executable, str(driver)))))


def test_play_prints_observations_on_the_real_stdout_and_stops_after_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a library prints goes to stderr, so stdout holds only protocol lines, each valid
    against the observation schema; the step after one that ended in an error is not played."""
    task = {"steps": [{"then_user": None}, {"then_user": None}, {"then_user": None}]}
    drv, out, err = _driver(monkeypatch, task)
    played: list[int] = []

    def call(k: int, step: Any) -> driverkit.Observation:
        played.append(k)
        print(f"library chatter on call {k}")
        obs = driverkit.Observation(content=f"answer {k}", finish="stop")
        if k == 1:
            obs.finish, obs.error = None, {"class": "lib.Boom", "message": "boom", "status": None, "own": True,
                                           "provider": None}
        return obs

    drv.play(call)
    lines = out.getvalue().splitlines()
    assert played == [0, 1]
    assert [parse_line(line.encode(), n, expect="observation")["step"] for n, line in enumerate(lines, 1)] == [0, 1]
    assert json.loads(lines[1])["error"]["class"] == "lib.Boom"
    assert err.getvalue() == "library chatter on call 0\nlibrary chatter on call 1\n"


def test_an_undocumented_client_option_ends_the_run_with_status_2(monkeypatch: pytest.MonkeyPatch) -> None:
    drv, out, err = _driver(monkeypatch, {"client_options": {"max_retries": "0", "speed": "11"}},
                            options={"max_retries": "the client's retries"})
    with pytest.raises(SystemExit) as exc:
        drv.options()
    assert exc.value.code == 2 and out.getvalue() == ""
    assert err.getvalue() == "demo: unknown client option(s) speed; known: max_retries\n"
    drv.task["client_options"] = {"max_retries": "0"}
    assert drv.options() == {"max_retries": "0"}


class _StatusError(Exception):
    def __init__(self, status: object, body: object) -> None:
        super().__init__("Error code: 429 - slow down")
        self.status_code, self.body = status, body


class _AiohttpStyle(Exception):
    status = 503


def test_describe_error_keeps_the_status_and_the_provider_error() -> None:
    body = {"error": {"type": "rate_limit_error", "code": 429, "message": "slow down", "param": ["x"], "extra": "y"}}
    assert driverkit.describe_error(_StatusError(429, body), (_StatusError,)) == {
        "class": "tests._StatusError", "message": "Error code: 429 - slow down", "status": 429, "own": True,
        "provider": {"type": "rate_limit_error", "code": 429, "message": "slow down", "param": "['x']"}}
    # a body that is the error object itself; a status that is not a number is no status
    flat = driverkit.describe_error(_StatusError("429", {"type": "overloaded_error"}), ())
    assert (flat["status"], flat["own"], flat["provider"]) == (None, False, {"type": "overloaded_error"})
    # the library's `status` attribute where there is no `status_code`, and no body at all
    other = driverkit.describe_error(_AiohttpStyle("gone"), (_StatusError,))
    assert (other["class"], other["status"], other["provider"]) == ("tests._AiohttpStyle", 503, None)
