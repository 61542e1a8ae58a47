"""docs/pytest_plugin.md is a user project: every example on it runs as written under `-W error`.

The page's fenced blocks each start with the name of their file (`# test_app.py`); they are
written to one fresh folder outside this repository and run with `pytest -W error` in a
subprocess, so a warning from pytest-asyncio's default (strict) mode, from our plugin or from
the example itself (an unclosed client's ResourceWarning) fails the test.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "pytest_plugin.md"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def page_project_files(text: str) -> dict[str, str]:
    """The page's example files by name; every python, ini and yaml block is one."""
    files: dict[str, str] = {}
    for lang, body in _BLOCK.findall(text):
        if lang not in ("python", "ini", "yaml"):
            continue
        first = body.partition("\n")[0]
        assert first.startswith("# ") and "." in first, f"a {lang} example without its file name: {first!r}"
        name = first[2:].strip()
        assert name not in files, f"two examples named {name}"
        files[name] = body  # the name line stays: a comment in all three formats
    return files


def _run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-W", "error", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "no:randomly", *args],
        capture_output=True, text=True, timeout=300, cwd=project, check=False,
    )


GC_EACH_TEST = '''
import gc

import pytest


def pytest_collection_finish(session):
    # what collection imported (openai, pydantic, the plugin) cannot be a test's leak: set aside
    # from the collections below, which then scan only what the tests made
    gc.collect()
    gc.freeze()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    # a client an example never closed is found now, inside its test, not at some later collection
    try:
        return (yield)
    finally:
        gc.collect()
'''
"""Not part of the page: a conftest that collects garbage after each test, so a leaked client's
ResourceWarning surfaces in the test that leaked it (and `-W error` fails that test). The objects
that exist once collection is done (the imported modules') are frozen out of those collections
(`gc.freeze`): a full collection over openai's and pydantic's objects took about 0.3 s a test."""


def _write(project: Path, files: dict[str, str]) -> None:
    (project / "conftest.py").write_text(GC_EACH_TEST, encoding="utf-8")
    for name, body in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(body, encoding="utf-8")


def test_every_example_of_the_pytest_page_passes_under_w_error(tmp_path: Path) -> None:
    files = page_project_files(PAGE.read_text(encoding="utf-8"))
    assert {"pytest.ini", "scripts/greeting.yaml", "test_app.py", "test_env.py", "test_callbacks.py"} <= set(files)
    assert "asyncio_mode" not in files["pytest.ini"]  # strict, pytest-asyncio's default
    _write(tmp_path, files)
    result = _run_pytest(tmp_path)
    tests = sum(len(re.findall(r"^(?:async )?def test_", body, re.M)) for body in files.values())
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{tests} passed" in result.stdout and "warning" not in result.stdout.lower(), result.stdout


LEAKY = '''
import openai
import pytest

from dshkit.mock_server import Script


def ask(base_url):  # never closes its client: the README's old example
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    return client.chat.completions.create(model="deepseek-chat", messages=[{"role": "user", "content": "q"}])


@pytest.mark.dshkit_script(Script.replies("a"))
def test_leaks(mock_deepseek):
    ask(mock_deepseek.base_url)
'''


CLIENTS = frozenset({"OpenAI", "AsyncOpenAI", "Anthropic", "AsyncAnthropic", "Client", "AsyncClient"})


def unclosed_clients(source: str) -> list[str]:
    """Each client an example builds outside a `with`/`async with` (it may never be closed: the
    openai SDK of some versions warns about its socket only at exit, where `-W error` cannot
    see it, so the rule is checked on the code itself)."""
    tree = ast.parse(source)
    managed = {id(item.context_expr) for node in ast.walk(tree) if isinstance(node, ast.With | ast.AsyncWith)
               for item in node.items}
    return [f"line {node.lineno}: {ast.unparse(node.func)}(...) outside a with"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) in CLIENTS
            and id(node) not in managed]


def test_every_client_an_example_builds_is_closed() -> None:
    files = page_project_files(PAGE.read_text(encoding="utf-8"))
    assert {name: unclosed_clients(body) for name, body in files.items() if name.endswith(".py")} == {
        name: [] for name in files if name.endswith(".py")}
    assert unclosed_clients(LEAKY) == ["line 9: openai.OpenAI(...) outside a with"]


INLINE = '''
import httpx
import pytest

from dshkit.mock_server import Script


def post(server, text):
    return httpx.post(server.url, json={"model": "deepseek-chat", "messages": [{"role": "user", "content": text}]},
                      timeout=5).json()["choices"][0]["message"]["content"]


@pytest.mark.dshkit_script(Script.replies("a"), [{"reply": {"content": "b"}}], {"steps": [{"reply": {"content": "c"}}]},
                           "s.yaml")
def test_four_scripts_four_sessions(mock_deepseek_sync):
    got = [httpx.post(mock_deepseek_sync.url, headers={"X-Mock-Session": s},
                      json={"model": "deepseek-chat", "messages": [{"role": "user", "content": "x"}]},
                      timeout=5).json()["choices"][0]["message"]["content"] for s in "1234"]
    assert got == ["a", "b", "c", "from file"]


@pytest.mark.dshkit_script([{"reply": {"content": "unused"}}])
def test_unused_inline_step_fails_at_teardown(mock_deepseek_sync):
    pass


@pytest.mark.dshkit_script([{"reply": {"contnet": "typo"}}])
def test_bad_inline_script(mock_deepseek_sync):
    pass


@pytest.mark.dshkit_script(42)
def test_not_a_script(mock_deepseek_sync):
    pass


def test_sync_factory_closes_at_teardown(dshkit_mock_server_sync):
    a = dshkit_mock_server_sync()
    b = dshkit_mock_server_sync(Script.replies("z"))
    assert a.port != b.port and post(b, "q") == "z"
'''


def test_inline_scripts_and_sync_fixtures_in_a_strict_mode_run(pytester: pytest.Pytester) -> None:
    # A pytest session of its own, in this process (pytester); the README project above is the
    # one run exactly as a user would, in a subprocess.
    (pytester.path / "s.yaml").write_text("steps:\n  - reply: {content: from file}\n")
    (pytester.path / "test_inline.py").write_text(INLINE)
    (pytester.path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_inprocess("-q", "-W", "error", "-p", "no:cacheprovider", "-p", "no:xdist", "-rE")
    out = "\n".join(result.outlines)
    assert "3 passed, 3 errors" in out, out + "\n".join(result.errlines)
    assert "ERROR test_inline.py::test_unused_inline_step_fails_at_teardown" in out
    assert "1 scripted step(s) were never used" in out
    # a bad inline script names the test, the argument and the bad field
    assert re.search(r"argument 1 of test_inline.py::test_bad_inline_script.*contnet", out)
    assert "42 (int) is not a script" in out
