"""Server checks against servers that give them nothing to judge: an endpoint that answers 500 to
everything and a black hole that accepts connections and never answers. No check may pass on
what it did not see, and the run must end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from dshkit.conformance.runner import ScenarioResult
from dshkit.conformance.server_checks import run_server_checks

from ..together import Played, play_together
from .black_hole import black_hole

#: Checks whose verdict used to come from an empty list when the answer was missing.
VACUOUS = ["S17", "S21", "S21b", "S24", "S25", "S34"]


@pytest.fixture
async def always_500() -> AsyncIterator[str]:
    async def handler(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"error": {"message": "boom", "type": "api_error", "param": None, "code": None}},
                                 status=500)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_nothing_passes_against_an_always_500_server(always_500: str) -> None:
    results = await run_server_checks(always_500, "sk-unobservable")
    passed = [r.id for r in results if r.status == "pass"]
    assert not passed, {r.id: r.reason for r in results if r.status == "pass"}
    by_id = {r.id: r for r in results}
    for item in VACUOUS:
        assert by_id[item].status == "fail"
        assert by_id[item].reason == f"could not observe a {'JSON' if item == 'S17' else 'streamed'} answer: HTTP 500"


# The two runs against a black hole wait out their timeouts and budgets: played together once
# (`tests/together.py`), each test judges its own.


async def _against_the_black_hole() -> list[ScenarioResult]:
    # A black hole never answers, so how soon each request gives up changes no verdict (a check
    # that outlives its budget instead says so with the same "could not observe"): 0.1 s each.
    async with black_hole() as url:
        return await asyncio.wait_for(run_server_checks(url, "sk-unobservable", timeout_s=0.1), 120)


async def _outliving_its_budget() -> list[ScenarioResult]:
    # A generous per-read timeout, a tight budget: the budget ends the check.
    async with black_hole() as url:
        return await run_server_checks(url, "sk-unobservable", ids=["S21"], timeout_s=30, budget_s=0.3)


black_holes = pytest.mark.xdist_group("black_holes")


@pytest.fixture(scope="module")
def black_hole_runs() -> Played[str, list[ScenarioResult]]:
    return play_together({"whole run": _against_the_black_hole, "budget": _outliving_its_budget})


@black_holes
def test_nothing_passes_against_a_black_hole_and_the_run_ends(black_hole_runs: Played[str, list[ScenarioResult]]) -> None:
    results = black_hole_runs["whole run"]
    assert not [r.id for r in results if r.status == "pass"]
    by_id = {r.id: r for r in results}
    for item in VACUOUS:
        assert by_id[item].status == "fail", item
        # S17 reads a JSON body, the others a stream; either way the reason says why.
        reason = by_id[item].reason
        assert reason.startswith("could not observe") or "ReadTimeout" in reason, (item, reason)


@black_holes
def test_a_check_that_outlives_its_budget_fails(black_hole_runs: Played[str, list[ScenarioResult]]) -> None:
    (result,) = black_hole_runs["budget"]
    assert result.status == "fail"
    assert result.reason == "could not observe an answer: the check took longer than its 0.3 s budget"


@pytest.mark.parametrize("url", ["notaurl", "ftp://example.com", "http://", "127.0.0.1:8000"])
def test_server_that_is_not_a_url_is_a_usage_error(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from dshkit.cli import main

    assert main(["conformance", "--server", url]) == 2
    err = capsys.readouterr().err
    assert f"--server {url!r} is not an http(s) URL" in err and "e.g. https://api.deepseek.com" in err
