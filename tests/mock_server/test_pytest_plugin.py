"""The pytest plugin: fixtures, the `dshkit_script` marker, the consumption check."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from dshkit.mock_server import MockServer

from .wire import chat

HERE = Path(__file__).parent


async def test_async_fixture_serves_on_the_test_loop(mock_deepseek: MockServer) -> None:
    async with httpx.AsyncClient(timeout=1) as c:
        r = await c.post(mock_deepseek.url, json=chat("x", stream=False))
    assert r.status_code == 200 and mock_deepseek.journal.last.behavior == "default"


def test_sync_fixture_serves_from_a_thread(mock_deepseek: MockServer) -> None:
    r = httpx.post(mock_deepseek.url, json=chat("x", stream=False), timeout=1)
    assert r.status_code == 200


INNER = '''
import httpx, pytest

SCRIPT = "script.yaml"

@pytest.mark.dshkit_script(SCRIPT)
def test_consumes(mock_deepseek):
    r = httpx.post(mock_deepseek.url, json={"model": "deepseek-chat", "messages": [{"role": "user", "content": "a"}]}, timeout=1)
    assert r.json()["choices"][0]["message"]["content"] == "from the file"

@pytest.mark.dshkit_script(SCRIPT)
def test_leaves_a_step_unused(mock_deepseek):
    pass

@pytest.mark.dshkit_script(SCRIPT, check_consumed=False)
def test_opted_out(mock_deepseek):
    pass

@pytest.mark.dshkit_script(sequence="rate_limit", api_key="k")
async def test_options(mock_deepseek, dshkit_mock_server):
    other = await dshkit_mock_server()
    assert other.port != mock_deepseek.port
    async with httpx.AsyncClient(timeout=1) as c:
        r = await c.post(mock_deepseek.url, json={"model": "deepseek-chat", "messages": [{"role": "user", "content": "a"}]},
                         headers={"Authorization": "Bearer k"})
    assert r.status_code == 429
'''


def test_marker_and_consumption_check_in_a_pytest_run(pytester: pytest.Pytester) -> None:
    # The outer suite runs under `pytest -n auto`, which covers xdist; this inner run is serial,
    # a fresh pytest session in this process (pytester) with the inner project's own ini.
    (pytester.path / "script.yaml").write_text("steps:\n  - reply: {content: from the file}\n")
    (pytester.path / "test_inner.py").write_text(INNER)
    (pytester.path / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    r = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(pytester.path))
    out = "\n".join(r.outlines)
    assert "4 passed, 1 error" in out, out + "\n".join(r.errlines)
    assert "ERROR" in out and "test_leaves_a_step_unused" in out
    assert "1 scripted step(s) were never used" in out
