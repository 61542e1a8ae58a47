"""`dshkit conformance --protocol anthropic`: the adapter direction (our adapter by default, the
SDK one on request, a broken one failing) and the server direction (`--server URL`: the AN checks
pass on the mock's Anthropic surface, fail on an endpoint that is not one)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.conformance import run_anthropic_checks
from dshkit.mock_server import MockServer


def _totals(out: str) -> dict[str, int]:
    m = re.search(r"^total\s+(\d+)\s+(\d+)\s+(\d+)$", out, re.M)
    assert m, out
    return {"pass": int(m[1]), "fail": int(m[2]), "n/a": int(m[3])}


def test_adapter_run_defaults_to_the_anthropic_adapter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    code = main(["conformance", "--protocol", "anthropic", "--only", "area:anthropic", "--json", str(report)])
    out = capsys.readouterr().out
    assert code == 0, out
    doc = json.loads(report.read_text())
    assert doc["adapter"] == "dshkit.harness.providers.anthropic:AnthropicAdapter"
    assert _totals(out) == {"pass": len(doc["scenarios"]), "fail": 0, "n/a": 0}
    assert {s["id"] for s in doc["scenarios"]} >= {"an-signature-passback", "an-neutral-text"}


def test_sdk_adapter_and_a_broken_one(capsys: pytest.CaptureFixture[str]) -> None:
    sdk = "dshkit.harness.providers.anthropic_sdk:AnthropicSDKAdapter"
    assert main(["conformance", "--protocol", "anthropic", "--adapter", sdk, "--only", "AN27"]) == 0
    capsys.readouterr()
    broken = "tests.conformance.broken_anthropic:BlanksSignaturesAdapter"
    assert main(["conformance", "--protocol", "anthropic", "--adapter", broken, "--only", "AN28"]) == 1
    assert "an-signature-passback" in capsys.readouterr().out


def test_chat_run_leaves_anthropic_only_scenarios_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    assert main(["conformance", "--only", "area:anthropic", "--json", str(report)]) == 0
    ids = {s["id"] for s in json.loads(report.read_text())["scenarios"]}
    assert ids == {"an-neutral-text", "an-neutral-tool-round-trip"}


def test_server_checks_pass_on_the_mock_anthropic_surface(capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(api_key="sk-an-server") as server:
        code = main(["conformance", "--server", server.base_url + "/anthropic", "--protocol", "anthropic",
                     "--api-key", "sk-an-server"])
    out = capsys.readouterr().out
    assert code == 0, out
    totals = _totals(out)
    assert totals["fail"] == 0 and totals["pass"] >= 14


async def test_server_checks_fail_on_an_endpoint_that_is_not_anthropic() -> None:
    """The chat route's root is no Anthropic surface: the checks must say so, not pass."""
    async with MockServer() as server:
        results = await run_anthropic_checks(server.base_url, "sk-x", ids=["AN1", "AN43", "AN40"])
    assert {r.id: r.status for r in results} == {"AN1": "fail", "AN43": "fail", "AN40": "fail"}


def test_unknown_server_check_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--server", "http://127.0.0.1:9", "--protocol", "anthropic", "--only", "S7"]) == 2
    assert "names no Anthropic server check" in capsys.readouterr().err


def test_pytest_plugin_on_the_anthropic_protocol(pytester: pytest.Pytester) -> None:
    """`pytest --pyargs dshkit.conformance --dshkit-protocol anthropic`: scenarios as tests, a broken
    adapter failing its own (each a pytest session of its own, run in this process by pytester)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")

    def run(adapter: str) -> tuple[int, str]:
        result = pytester.runpytest_inprocess(
            "-p", "no:cacheprovider", "-p", "no:xdist", "--pyargs", "dshkit.conformance", "--dshkit-adapter", adapter,
            "--dshkit-protocol", "anthropic", "--dshkit-only", "AN28", "-v",
        )
        return int(result.ret), "\n".join(result.outlines)

    code, out = run("dshkit.harness.providers.anthropic:AnthropicAdapter")
    assert code == 0, out
    assert "test_scenario[an-signature-passback] PASSED" in out
    code, out = run("tests.conformance.broken_anthropic:BlanksSignaturesAdapter")
    assert code == 1 and "test_scenario[an-signature-passback] FAILED" in out, out
