"""Scenario fields for credentials: `api_key: required` plays the scenario on a mock that requires
the scenario's key (a request without it, or with another, gets a 401), and
`request.headers_present` requires a header (`a|b`: either name), the counterpart of
`headers_absent`. Both on the chat and the Anthropic protocol, with the real adapters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dshkit.conformance import run_catalogue
from dshkit.conformance.scenario import load_scenario_file
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.deepseek import DeepSeekAdapter

SCENARIOS = """\
area: anthropic
protocols: [chat, anthropic]
scenarios:
  - id: key-required
    title: the key is required
    tags: [AN9]
    api_key: required
    wire: {reply: {content: "in"}, stream: {thinking: false}}
    expect: {finish: {kind: stop}}
  - id: header-present
    title: a header is required
    tags: [AN9]
    wire: {reply: {content: "in"}, stream: {thinking: false}}
    expect:
      finish: {kind: stop}
      request: {headers_present: ["x-api-key|authorization", "content-type"]}
  - id: header-missing
    title: a header nobody sends
    tags: [AN9]
    wire: {reply: {content: "in"}, stream: {thinking: false}}
    expect:
      finish: {kind: stop}
      request: {headers_present: ["x-never-sent|x-not-either"]}
"""


@pytest.fixture
def scenarios(tmp_path: Path) -> list[Any]:
    path = tmp_path / "keys.yaml"
    path.write_text(SCENARIOS, encoding="utf-8")
    return load_scenario_file(path)


def _wrong_key(adapter: type) -> Any:
    def factory(base_url: str, api_key: str, **kw: Any) -> Any:
        return adapter(base_url, api_key + "-not-it", **kw)
    return factory


@pytest.mark.parametrize(("protocol", "adapter"), [("chat", DeepSeekAdapter), ("anthropic", AnthropicAdapter)])
async def test_required_key_and_present_headers(scenarios: list[Any], protocol: str, adapter: type) -> None:
    results = {r.id: r for r in await run_catalogue(scenarios, adapter, protocol=protocol)}
    assert results["key-required"].status == "pass", results["key-required"].diff
    assert results["header-present"].status == "pass", results["header-present"].diff
    missing = results["header-missing"]
    assert missing.status == "fail" and missing.failed == ["step0.serialize"]
    assert '"header x-never-sent|x-not-either": "<absent>"' in missing.diff

    required = [s for s in scenarios if s.id == "key-required"]
    (wrong,) = await run_catalogue(required, _wrong_key(adapter), protocol=protocol)
    assert wrong.status == "fail" and "code=AUTH status=401" in wrong.diff, wrong.diff
