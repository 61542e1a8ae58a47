"""The catalogue as tests, collected only by `pytest --pyargs dshkit.conformance --dshkit-adapter …`."""

from __future__ import annotations

import pytest

from dshkit.conformance.runner import ScenarioResult


def test_scenario(dshkit_scenario_result: ScenarioResult) -> None:
    result = dshkit_scenario_result
    if result.status == "n/a":
        pytest.skip(result.reason)
    if result.status == "fail":
        pytest.fail(f"{result.reason}\n{result.diff}", pytrace=False)
