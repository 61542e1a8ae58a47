"""The pytest plugin: fixtures, the `dshkit_script` marker, the consumption check."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from dshkit.mock_server import MockServer, MockServerFactory, RequestView, Script

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


REPO = Path(__file__).resolve().parents[2]
CASSETTE = REPO / "recordings" / "plain-text.cassette.jsonl"

BOTH_FORMS = '''
import httpx, pytest

from dshkit.mock_server import Script

CASSETTE = {cassette!r}


def ask(base_url):
    r = httpx.post(base_url + "/chat/completions", timeout=5,
                   json={{"model": "deepseek-chat", "stream": False, "messages": [{{"role": "user", "content": "q"}}]}})
    return r.json()["choices"][0]["message"]["content"]


async def aask(base_url):
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(base_url + "/chat/completions",
                         json={{"model": "deepseek-chat", "stream": False, "messages": [{{"role": "user", "content": "q"}}]}})
    return r.json()["choices"][0]["message"]["content"]


def test_sync_factory(dshkit_mock_server):
    server = dshkit_mock_server(sequence="success")   # no await: a started server
    assert ask(server.base_url) == "mock response recovered"


@pytest.mark.asyncio
async def test_async_factory(dshkit_mock_server):
    server = await dshkit_mock_server(Script.replies("on the loop"))
    assert await aask(server.base_url) == "on the loop"
    assert server.journal.last.outcome == "completed"  # journaled before the client read it


def test_sync_replay(dshkit_replay):
    server = dshkit_replay(CASSETTE, check_consumed=False)
    r = httpx.post(server.url, json={{"model": "deepseek-chat", "messages": [{{"role": "user", "content": "Say hello."}}]}}, timeout=5)
    assert r.status_code == 200 and "data: [DONE]" in r.text


@pytest.mark.asyncio
async def test_async_replay(dshkit_replay):
    server = await dshkit_replay(CASSETTE, check_consumed=False)
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(server.url, json={{"model": "deepseek-chat", "messages": [{{"role": "user", "content": "Say hello."}}]}})
    assert r.status_code == 200 and "data: [DONE]" in r.text


@pytest.mark.dshkit_script(Script.replies("marker"))
def test_sync_marker(mock_deepseek):
    assert ask(mock_deepseek.base_url) == "marker"


@pytest.mark.asyncio
@pytest.mark.dshkit_script(Script.replies("marker"))
async def test_async_marker(mock_deepseek):
    assert await aask(mock_deepseek.base_url) == "marker"


@pytest.mark.asyncio
async def test_async_sync_twins(dshkit_mock_server_sync, mock_deepseek_sync):
    server = dshkit_mock_server_sync(Script.replies("twin"))
    assert await aask(server.base_url) == "twin"
    assert await aask(mock_deepseek_sync.base_url) != ""


@pytest.mark.asyncio
async def test_forgotten_await(dshkit_mock_server):
    server = dshkit_mock_server()
    with pytest.raises(RuntimeError, match="await the fixture's factory"):
        server.base_url
'''


@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_every_fixture_serves_sync_and_async_tests(pytester: pytest.Pytester, mode: str) -> None:
    (pytester.path / "test_forms.py").write_text(BOTH_FORMS.format(cassette=str(CASSETTE)))
    (pytester.path / "pytest.ini").write_text(
        f"[pytest]\nasyncio_mode = {mode}\nasyncio_default_fixture_loop_scope = function\n")
    r = pytester.runpytest_inprocess("-q", "-W", "error", "-p", "no:cacheprovider", "-p", "no:xdist")
    out = "\n".join(r.outlines)
    assert "8 passed" in out and "error" not in out.lower(), out + "\n".join(r.errlines)


SWALLOWED = '''
import httpx, pytest

from dshkit.mock_server import Script


def app(base_url, text):
    """An application that swallows every error and answers something anyway."""
    try:
        r = httpx.post(base_url + "/chat/completions", timeout=5,
                       json={"model": "deepseek-chat", "stream": False, "messages": [{"role": "user", "content": text}]})
        r.raise_for_status()
        return r.json()["choices"][0]["message"]["content"]
    except httpx.HTTPError:
        return "sorry"


@pytest.mark.dshkit_script(Script.replies("one"))
def test_exhausted(mock_deepseek):
    assert app(mock_deepseek.base_url, "first") == "one"
    assert app(mock_deepseek.base_url, "second question") == "sorry"


@pytest.mark.dshkit_script(Script.of({"match": {"user": "weather"}, "reply": {"content": "sun"}}))
def test_no_match(mock_deepseek):
    assert app(mock_deepseek.base_url, "what time is it") == "sorry"
    assert app(mock_deepseek.base_url, "weather?") == "sun"


@pytest.mark.dshkit_script(Script.replies("one"), assert_all_requests_served=False)
def test_marker_opt_out(mock_deepseek):
    assert app(mock_deepseek.base_url, "first") == "one"
    assert app(mock_deepseek.base_url, "second") == "sorry"


def test_factory(dshkit_mock_server):
    server = dshkit_mock_server(Script.replies("one"))
    app(server.base_url, "a"), app(server.base_url, "factory extra")


def test_factory_opt_out(dshkit_mock_server):
    server = dshkit_mock_server(Script.replies("one"), assert_all_requests_served=False)
    app(server.base_url, "a"), app(server.base_url, "b")


def test_failing_test_reports_only_its_own_failure(dshkit_mock_server):
    server = dshkit_mock_server(Script.replies("one"))
    app(server.base_url, "a"), app(server.base_url, "b")
    assert False, "the test's own failure"
'''


def test_rejected_requests_fail_the_test_even_when_the_app_swallowed_them(pytester: pytest.Pytester) -> None:
    (pytester.path / "test_swallowed.py").write_text(SWALLOWED)
    (pytester.path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    r = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-rE")
    out = "\n".join(r.outlines)
    assert "1 failed, 5 passed, 3 errors" in out, out + "\n".join(r.errlines)
    errors = {line.split("::")[1].split()[0] for line in r.outlines if line.startswith("ERROR ")}
    assert errors == {"test_exhausted", "test_no_match", "test_factory"}
    # the message names the request (number, path, prompt) and why the mock refused it
    assert re.search(r"request 2: POST /chat/completions \(session '[^']+', last user message "
                     r"'second question'\) got 418 mock_script_exhausted", out), out
    assert re.search(r"request 1: POST /chat/completions .*'what time is it'\) got 418 mock_no_match: "
                     r"no step of script .* matches", out), out
    assert "'factory extra'" in out and "assert_all_requests_served=False" in out


ENV = '''
import os

import anthropic
import openai
import pytest

from dshkit.mock_server import Script

BEFORE = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "DEEPSEEK_BASE_URL")}


def app_answer():
    """An application that builds its own client from the environment."""
    with openai.OpenAI(max_retries=0) as client:
        reply = client.chat.completions.create(model="deepseek-chat", messages=[{"role": "user", "content": "hi"}])
    return reply.choices[0].message.content


@pytest.mark.dshkit_script(Script.replies("from the environment"), env=True, api_key="sk-scripted")
def test_openai_client_from_the_environment(mock_deepseek):
    assert app_answer() == "from the environment"
    assert os.environ["OPENAI_BASE_URL"] == mock_deepseek.base_url + "/v1"
    assert os.environ["DEEPSEEK_BASE_URL"] == mock_deepseek.base_url
    assert os.environ["OPENAI_API_KEY"] == os.environ["DEEPSEEK_API_KEY"] == "sk-scripted"


@pytest.mark.asyncio
async def test_anthropic_client_from_the_environment(dshkit_mock_server):
    await dshkit_mock_server(Script.replies("claude via the mock"), env=True)
    async with anthropic.AsyncAnthropic(max_retries=0) as client:
        message = await client.messages.create(model="claude-sonnet-4-6", max_tokens=64,
                                               messages=[{"role": "user", "content": "hi"}])
    assert [b.text for b in message.content if b.type == "text"] == ["claude via the mock"]
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-dshkit-test"


def test_restored_after_each_test():
    assert {k: os.environ.get(k) for k in BEFORE} == BEFORE
'''


def test_env_points_clients_built_from_the_environment_at_the_mock(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://example.invalid/v1")  # restored by the plugin
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    (pytester.path / "test_env.py").write_text(ENV)
    (pytester.path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    r = pytester.runpytest_inprocess("-q", "-W", "error", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly")
    out = "\n".join(r.outlines)
    assert "3 passed" in out, out + "\n".join(r.errlines)
    assert os.environ["OPENAI_BASE_URL"] == "https://example.invalid/v1" and "ANTHROPIC_BASE_URL" not in os.environ


def _echo(request: RequestView) -> str:
    return f"you said {request.last_user!r} to {request.model}"


@pytest.mark.dshkit_script(reply=_echo)
def test_a_reply_callback_in_the_marker_answers_every_request_from_it(mock_deepseek: MockServer) -> None:
    with openai.OpenAI(base_url=mock_deepseek.base_url, api_key="k", max_retries=0) as client:
        got = [client.chat.completions.create(model="deepseek-chat", messages=[{"role": "user", "content": text}])
               .choices[0].message.content for text in ("one", "two")]
    assert got == ["you said 'one' to deepseek-chat", "you said 'two' to deepseek-chat"]
    assert mock_deepseek.journal.step_counts() == {("_echo", 0): 2}
    assert mock_deepseek.journal.bodies()[1]["messages"] == [{"role": "user", "content": "two"}]


async def test_callback_steps_counts_and_parsed_access(dshkit_mock_server: MockServerFactory) -> None:
    def weather(request: RequestView) -> dict[str, Any]:
        city = request.body["messages"][-1]["content"].split()[-1]
        return {"reply": {"tool_calls": [{"name": "weather", "arguments": {"city": city}}]}}

    script = Script.of(weather, {"call": lambda r: {"fault": "rate_limit"} if "again" in r.last_user else "sunny"},
                       repeat_last=True)
    server = await dshkit_mock_server(script)
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        stream = await client.chat.completions.create(
            model="deepseek-chat", stream=True, messages=[{"role": "user", "content": "weather in Paris"}])
        _ = [chunk async for chunk in stream]
        events = server.journal.last.events()
        assert events[-1] == "[DONE]"
        calls = [d["tool_calls"][0] for e in events[:-1] for c in e["choices"] if (d := c["delta"]).get("tool_calls")]
        assert calls[0]["function"]["name"] == "weather"
        assert json.loads("".join(c["function"].get("arguments") or "" for c in calls)) == {"city": "Paris"}
        second = await client.chat.completions.create(model="deepseek-chat", messages=[{"role": "user", "content": "and?"}])
        assert second.choices[0].message.content == "sunny"
        assert server.journal.last.response_json()["choices"][0]["message"]["content"] == "sunny"
        with pytest.raises(openai.RateLimitError):
            await client.chat.completions.create(model="deepseek-chat", messages=[{"role": "user", "content": "again"}])
    assert [b["messages"][-1]["content"] for b in server.journal.bodies()] == ["weather in Paris", "and?", "again"]
    assert server.journal.step_counts() == {("script", 0): 1, ("script", 1): 2}


def test_a_failing_callback_is_a_418_naming_it(dshkit_mock_server: MockServerFactory) -> None:
    def broken(request: RequestView) -> str:
        raise KeyError("city")

    server = dshkit_mock_server(Script.of(lambda r: 42), reply=broken, assert_all_requests_served=False)
    first = httpx.post(server.url, json=chat("x", stream=False), headers={"X-Mock-Session": "a"}, timeout=5)
    assert first.status_code == 418 and first.json()["error"]["code"] == "mock_callback_error"
    assert "returned int 42" in first.json()["error"]["message"]  # the first script: Script.of(fn)
    second = httpx.post(server.url, json=chat("x", stream=False), timeout=5)  # the reply= script
    assert second.status_code == 418 and "the reply callback " in second.json()["error"]["message"]
    assert "broken raised KeyError" in second.json()["error"]["message"]


PAGE = REPO / "docs" / "pytest_plugin.md"


def _page_tables(text: str) -> dict[str, list[str]]:
    """Each table of the page's Reference by the title of its first column → the names in it."""
    reference = text[text.index("## Reference"):]
    tables: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in reference.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        first = line.split("|")[1].strip()
        if current is None:
            current = tables.setdefault(first, [])
        elif first.startswith("`"):
            current.append(first.strip("`"))
    return tables


def test_the_reference_page_lists_every_registration_of_both_plugins(pytester: pytest.Pytester) -> None:
    from _pytest.fixtures import FixtureFunctionDefinition

    from dshkit.conformance import pytest_plugin as conformance_plugin
    from dshkit.mock_server import pytest_plugin as mock_plugin

    (pytester.path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    config = pytester.parseconfigure()
    for module in (mock_plugin, conformance_plugin):  # both plugins are those the entry points load
        assert config.pluginmanager.is_registered(module) or any(
            getattr(p, "__name__", None) == module.__name__ for p in config.pluginmanager.get_plugins())
    parser = config._parser
    flags = sorted(n for group in parser._groups for opt in group.options for n in opt.names() if n.startswith("--dshkit"))
    inis = sorted(n for n in parser._inidict if n.startswith("dshkit"))
    markers = {line.split("(")[0].split(":")[0]: line for line in config.getini("markers") if line.startswith("dshkit")}
    fixtures = sorted(v.name for module in (mock_plugin, conformance_plugin) for v in vars(module).values()
                      if isinstance(v, FixtureFunctionDefinition))
    cassette_args = re.findall(r"(\w+)=", markers["dshkit_cassette"].split(":")[0])

    tables = _page_tables(PAGE.read_text(encoding="utf-8"))
    assert len(fixtures) >= 9 and sorted(tables["fixture"]) == fixtures
    assert sorted(tables["flag"]) == flags and len(flags) >= 5
    assert sorted(tables["option"]) == inis == ["dshkit_cassette_dir", "dshkit_record_mode"]
    assert sorted(tables["marker"]) == sorted(markers) == ["dshkit_cassette", "dshkit_script"]
    assert sorted(tables["keyword"]) == sorted(mock_plugin.PLUGIN_OPTIONS)
    assert sorted(tables["argument"]) == sorted(cassette_args) and "upstream" in cassette_args
