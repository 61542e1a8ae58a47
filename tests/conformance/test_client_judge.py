"""`client_judge`: a client library's observations and requests judged with the catalogue's checks.

Two deliberately broken Chat Completions drivers (tests/conformance/broken_clients.py), each with
one realistic defect, play `SUBSET` once per process (`client_runs.broken_run`): each must fail
exactly the scenarios its defect touches, with a verdict that shows the defect.
"""

from __future__ import annotations

import pytest

from .client_runs import MUST_FAIL, broken_run, group


@pytest.mark.parametrize("mode", [pytest.param(m, marks=group(m)) for m in sorted(MUST_FAIL)])
def test_broken_driver_fails_exactly_its_scenarios(mode: str) -> None:
    results = broken_run(mode)
    failed = {i for i, r in results.items() if r.status == "fail"}
    assert failed == MUST_FAIL[mode], {i: r.reason for i, r in results.items()}


@group("drops-passback")
def test_dropped_passback_is_named_in_the_request_and_the_server_answer() -> None:
    res = broken_run("drops-passback")["rt-thinking-tool-call"]
    assert "step1.serialize" in res.failed and "step1.finish" in res.failed
    assert "reasoning_content" in res.diff and "<absent>" in res.diff
    assert "The `reasoning_content` in the thinking mode must be passed back" in res.reason


@group("reencodes-arguments")
def test_reencoded_arguments_show_the_byte_difference() -> None:
    res = broken_run("reencodes-arguments")["tool-arguments-byte-exact"]
    assert res.failed == ["step0.assemble"]
    assert '\\"ratio\\":1.50' in res.diff and '\\"ratio\\": 1.5,' in res.diff
