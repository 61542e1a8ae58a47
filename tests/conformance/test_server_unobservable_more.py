"""Both server-check suites against servers that give them nothing to judge: always 500, always
429, 200 with an empty body (and 200 with `{}`), and a black hole that accepts connections and never
answers. No check passes on what it did not see; `--timeout` bounds every request on both wires
(the Anthropic SDK check too), and the run ends."""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from dshkit.cli import main
from dshkit.conformance.anthropic_checks import run_anthropic_checks
from dshkit.conformance.runner import ScenarioResult
from dshkit.conformance.server_checks import run_server_checks
from dshkit.mock_server import MockServer

from ..together import Played, play_together
from .black_hole import black_hole

#: Every check the brief names as passing against a 200 with an empty body.
EMPTY_200_CHAT = ["S1", "S8", "S10", "S12", "S17", "S18", "S39"]
EMPTY_200_ANTHROPIC = ["AN1", "AN9", "AN12", "AN20", "AN48"]


async def _serve(status: int, body: bytes, content_type: str = "application/json") -> tuple[web.AppRunner, str]:
    async def handler(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=status, body=body, content_type=content_type)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


SERVERS = {
    "always 500": (500, b'{"error": {"message": "boom", "type": "api_error"}}'),
    "always 429": (429, b'{"error": {"message": "slow down", "type": "rate_limit_error"}}'),
    "200 empty": (200, b""),
    "200 {}": (200, b"{}"),
}


@pytest.fixture(params=list(SERVERS))
async def useless(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    status, body = SERVERS[request.param]
    runner, url = await _serve(status, body)
    yield url
    await runner.cleanup()


async def test_no_chat_check_passes_against_a_useless_server(useless: str) -> None:
    results = await run_server_checks(useless, "sk-unobservable", timeout_s=5)
    passed = {r.id: r.reason for r in results if r.status == "pass"}
    assert not passed, passed
    by_id = {r.id: r for r in results}
    for item in EMPTY_200_CHAT:
        assert by_id[item].status == "fail", item


async def test_no_anthropic_check_passes_against_a_useless_server(useless: str) -> None:
    results = await run_anthropic_checks(useless + "/anthropic", "sk-unobservable", timeout_s=5)
    passed = {r.id: r.reason for r in results if r.status == "pass"}
    assert not passed, passed
    by_id = {r.id: r for r in results}
    for item in EMPTY_200_ANTHROPIC:
        assert by_id[item].status == "fail", item


async def test_an_empty_200_is_reported_as_unobserved() -> None:
    runner, url = await _serve(200, b"")
    try:
        chat = {r.id: r for r in await run_server_checks(url, "k", ids=EMPTY_200_CHAT, timeout_s=5)}
        anth = {r.id: r for r in await run_anthropic_checks(url + "/anthropic", "k", ids=EMPTY_200_ANTHROPIC, timeout_s=5)}
    finally:
        await runner.cleanup()
    for r in [*chat.values(), *anth.values()]:
        assert r.status == "fail" and r.reason.startswith("could not observe"), (r.id, r.reason)
        assert "empty body" in r.reason, (r.id, r.reason)


# The three runs against servers that never answer wait out their timeouts and budgets: played
# together once (`tests/together.py`), each test judges its own.


async def _anthropic_against_a_black_hole() -> list[ScenarioResult]:
    async with black_hole() as url:
        return await asyncio.wait_for(run_anthropic_checks(url + "/anthropic", "k", timeout_s=0.3), 60)


async def _anthropic_outliving_its_budget() -> list[ScenarioResult]:
    async with black_hole() as url:
        return await run_anthropic_checks(url + "/anthropic", "k", ids=["AN48"], timeout_s=30, budget_s=0.3)


async def _cli_against_a_full_backlog() -> tuple[list[int], bool, list[dict[str, Any]]]:
    """The CLI's exit codes, whether it still runs after the hang guard, and its report's scenarios.

    --timeout 0.2: every request gives up after 0.2 s, every check after 0.8 s; before the fix
    the probe waited 60 s per request and the SDK 600 s. The CLI runs in this process (its own
    event loop, in a daemon thread so that a regression fails its test instead of hanging the
    worker); the 90 s is that hang guard only. The server is a listening socket nobody accepts
    from: connections queue in the backlog, no byte comes back."""
    with socket.socket() as s, tempfile.TemporaryDirectory() as tmp:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        report = Path(tmp) / "r.json"
        argv = ["conformance", "--server", f"http://127.0.0.1:{s.getsockname()[1]}/anthropic",
                "--protocol", "anthropic", "--timeout", "0.2", "--json", str(report)]
        codes: list[int] = []
        run = threading.Thread(target=lambda: codes.append(main(argv)), daemon=True)
        run.start()
        await asyncio.to_thread(run.join, 90)
        results = json.loads(report.read_text())["scenarios"] if codes else []
        return codes, run.is_alive(), results


black_holes = pytest.mark.xdist_group("black_holes_more")


@pytest.fixture(scope="module")
def silent_runs() -> Played[str, Any]:
    return play_together({"black hole": _anthropic_against_a_black_hole,
                          "budget": _anthropic_outliving_its_budget, "cli": _cli_against_a_full_backlog})


@black_holes
def test_anthropic_checks_end_against_a_black_hole(silent_runs: Played[str, Any]) -> None:
    results = silent_runs["black hole"]
    assert results and not [r.id for r in results if r.status == "pass"]


@black_holes
def test_anthropic_check_budget(silent_runs: Played[str, Any]) -> None:
    (result,) = silent_runs["budget"]
    assert result.status == "fail"
    assert result.reason == "could not observe an answer: the check took longer than its 0.3 s budget"


@black_holes
def test_cli_timeout_bounds_the_anthropic_run(silent_runs: Played[str, Any]) -> None:
    codes, still_running, results = silent_runs["cli"]
    assert codes == [1], "the run did not end" if still_running else codes
    assert results and all(r["status"] != "pass" for r in results), results


async def test_our_mock_still_passes_both_suites() -> None:
    # The stricter rules must not fail a server that does answer.
    async with MockServer(api_key="sk-right", unscripted="default") as server:
        chat = await run_server_checks(server.base_url, "sk-right", timeout_s=10)
        anth = await run_anthropic_checks(server.anthropic_base_url, "sk-right", timeout_s=10)
    assert {r.id: r.reason for r in chat if r.status == "fail"} == {}
    assert {r.id: r.reason for r in anth if r.status == "fail"} == {}
