"""The server direction against our own mock server: every claimed item passes."""

from __future__ import annotations

from dshkit.conformance import run_server_checks
from dshkit.conformance.server_checks import SERVER_CHECKS
from dshkit.mock_server import MockServer
from dshkit.mock_server.claims import CLAIMED_S_ITEMS

#: Claimed items a client cannot verify from outside (replay needs a recording on the server).
NOT_VISIBLE = {"S35"}


async def test_mock_server_passes_every_claimed_item() -> None:
    async with MockServer(api_key="sk-conformance-claims") as server:
        results = await run_server_checks(server.base_url, "sk-conformance-claims")
    status = {r.id: r.status for r in results}
    assert set(status) == set(SERVER_CHECKS)
    diffs = {r.id: r.diff or r.reason for r in results if r.id in CLAIMED_S_ITEMS and r.status != "pass"}
    assert set(diffs) == NOT_VISIBLE, diffs
    assert status["S35"] == "n/a"


async def test_without_api_key_auth_is_not_applicable() -> None:
    async with MockServer() as server:
        results = await run_server_checks(server.base_url, None, ids=["S2", "S1"])
    assert {r.id: r.status for r in results} == {"S2": "n/a", "S1": "pass"}


async def test_a_server_that_needs_no_key_makes_the_key_check_not_applicable() -> None:
    # A default `dshkit serve` accepts any key: with a key given (or $DEEPSEEK_API_KEY set) the
    # no-key/wrong-key check has nothing to judge, as on the Anthropic surface (AN14).
    async with MockServer() as server:
        results = await run_server_checks(server.base_url, "sk-whatever", ids=["S2"])
    (s2,) = results
    assert s2.status == "n/a", s2.diff
    assert "accepts any key" in s2.reason and "--api-key" in s2.reason
