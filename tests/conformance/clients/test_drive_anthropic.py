"""The anthropic-python driver (conformance/clients/drive_anthropic.py) with the real `anthropic`
SDK on the Anthropic Messages wire; skipped with the suite's one reason
(`drivers.library_missing`) where the SDK is not installed."""

from __future__ import annotations

from dshkit.conformance.client_matrix import BEHAVIOURS

from ..client_runs import run, scenarios
from .drivers import (
    assert_declarations_fit_the_catalogue,
    assert_describes_itself_before_its_import,
    need_library,
)

NAME = "anthropic-python"


def test_describes_itself_before_importing_the_sdk() -> None:
    assert_describes_itself_before_its_import(NAME)


def test_declarations_fit_the_catalogue() -> None:
    assert_declarations_fit_the_catalogue(NAME)


def test_anthropic_driver_observes_a_reset_mid_stream() -> None:
    """`an-reset-mid-stream`: text, then a TCP reset on the Anthropic wire. The anthropic-python
    driver reports what the SDK did (the partial text, no finish, the error class that escaped)
    and the verdict names it; the scenario is in the matrix's TCP reset column."""
    assert "an-reset-mid-stream" in BEHAVIOURS[5].ids("anthropic") and BEHAVIOURS[5].name == "TCP reset"
    res = run(need_library(NAME), scenarios(["an-reset-mid-stream"]), protocol="anthropic")["an-reset-mid-stream"]
    (obs,) = res.observations
    assert obs["content"] == "cut short" and obs["finish"] is None
    err = obs["error"]
    assert err is not None and err["class"] and err["status"] is None
    if err["own"]:  # a library that wraps the reset in its own error passes
        assert res.status == "pass", res.reason
    else:  # anthropic 2.x lets the transport's ReadError through (issue: a raw transport error)
        assert res.status == "fail" and res.failed == ["step0.translate"]
        assert f"the library let {err['class']} escape" in res.reason
