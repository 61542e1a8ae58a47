"""The commands teach, at their own options: `conformance --only` and `--server --only` suggest
the closest id, tag or area; `serve --repeat-last` is applied or refused, never ignored; `serve`
run in a host process leaves that process as it found it and reads its key afresh on each call.
(The top-level parser's did-you-mean and usage texts are `test_cli.py`'s.)"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from dshkit.cli import main

from .mock_server.cli_process import ServeProcess
from .mock_server.wire import chat


@pytest.mark.parametrize(("selector", "meant"), [
    ("tool-split-args", "tool-split-arguments"), ("area:tool", "area:tools"), ("A55", "A5")])
def test_only_suggests_the_closest_id_tag_or_area(selector: str, meant: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--only", selector]) == 2
    err = capsys.readouterr().err
    assert f"--only {selector!r} matches no scenario; did you mean {meant!r}" in err
    assert "areas: " in err and "tools" in err


def test_serve_repeat_last_applies_to_a_script(tmp_path: Path) -> None:
    script = tmp_path / "one.yaml"
    script.write_text("name: one\nsteps:\n  - fault: success\n")
    p = ServeProcess("--script", str(script), "--repeat-last")
    try:
        with httpx.Client(base_url=p.base_url, timeout=5, headers={"X-Mock-Session": "s"}) as c:
            codes = [c.post("/chat/completions", json=chat()).status_code for _ in range(3)]
        assert codes == [200, 200, 200]  # without --repeat-last the 2nd is a 418 "no step left"
    finally:
        p.kill()


def test_serve_repeat_last_without_steps_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--repeat-last"]) == 2
    assert "--repeat-last applies to the steps of --sequence or --script" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["serve", "--repeat-last"], ["serve", "--help"], ["serve", "--bogus"]])
def test_serve_run_in_a_host_process_leaves_its_collector_on(argv: list[str]) -> None:
    """`serve` starts with the cyclic collector off; run in a caller's process and ended before
    it serves (refused options, help, a usage error), it leaves the collector on as it found it."""
    assert gc.isenabled()
    with contextlib.suppress(SystemExit):
        main(argv)
    assert gc.isenabled()


@pytest.mark.parametrize(("argv", "meant"), [
    (["--only", "S411"], "'S41'"), (["--only", "area:server-strem"], "'area:server-stream'"),
    (["--protocol", "anthropic", "--only", "AN144"], "'AN14'")])
def test_server_only_suggests_the_closest_check(argv: list[str], meant: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--server", "http://127.0.0.1:9", *argv]) == 2  # refused before any connection
    err = capsys.readouterr().err
    assert f"names no {'Anthropic ' if 'anthropic' in argv else ''}server check; did you mean {meant}" in err


class _ProbeWhenReady(asyncio.Future[int]):
    """What `serve`'s wait for a signal becomes here: `serve` awaits it right after printing its
    ready line, and then one request without a key goes to the port that line names; the call
    ends with that request's status as its exit code."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        super().__init__()
        self._capsys = capsys
        self._probe: asyncio.Task[None] | None = None

    def add_done_callback(self, fn: Any, *, context: Any = None) -> None:
        super().add_done_callback(fn, context=context)
        if self._probe is None:
            self._probe = asyncio.get_running_loop().create_task(self._ask())

    async def _ask(self) -> None:
        ready = next(json.loads(line) for line in self._capsys.readouterr().out.splitlines()
                     if json.loads(line)["type"] == "ready")
        async with httpx.AsyncClient(timeout=30) as http:
            answer = await http.get(ready["base_url"] + "/models")
        self.set_result(answer.status_code)


def test_serve_reads_its_key_from_the_environment_of_each_call_in_one_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """`main` keeps each command's parser for the next call in the process, so nothing a call
    depends on may be fixed in it: `$DSHKIT_MOCK_API_KEY` set after a first `serve` still
    guards the second, and unset again it guards nothing."""
    from dshkit.mock_server import cli as serve_cli

    monkeypatch.setattr(serve_cli, "exit_on_signals", lambda: _ProbeWhenReady(capsys))
    monkeypatch.delenv("DSHKIT_MOCK_API_KEY", raising=False)
    assert main(["serve", "--port", "0"]) == 200
    monkeypatch.setenv("DSHKIT_MOCK_API_KEY", "sk-dshkit-from-env")
    assert main(["serve", "--port", "0"]) == 401
    assert main(["serve", "--port", "0", "--api-key", ""]) == 200  # an empty key still means none
    monkeypatch.delenv("DSHKIT_MOCK_API_KEY")
    assert main(["serve", "--port", "0"]) == 200

