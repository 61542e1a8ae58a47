"""The admin HTTP API (`/_dshkit/`): every endpoint and its errors, with httpx against a real
server, and `dshkit serve` driven from another language (the Node example of docs/admin_api.md,
run with Node when it is installed)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from dshkit.mock_server import MockServer, Recorder, Script, load_cassette
from dshkit.mock_server.admin import _Admin, _loopback
from dshkit.mock_server.cassette_match import CassetteRouter
from dshkit.mock_server.runtime import Runtime
from tests.mock_server.cli_process import SHARES_PLAIN_SERVE, ServeProcess

ROOT = Path(__file__).resolve().parents[2]
_BODY = {"model": "deepseek-chat", "messages": [{"role": "user", "content": "hi"}]}
WEATHER_YAML = """\
name: weather
steps:
  - reply: {content: sunny}
  - reply: {content: rain}
"""


@pytest_asyncio.fixture
async def server() -> AsyncIterator[MockServer]:
    async with MockServer(Script.replies("first"), admin=True, api_key="sk-wire-key") as s:
        yield s


@pytest_asyncio.fixture
async def client(server: MockServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as c:
        yield c


async def _ask(c: httpx.AsyncClient, text: str = "hi", session: str | None = None) -> httpx.Response:
    headers = {"Authorization": "Bearer sk-wire-key", **({"X-Mock-Session": session} if session else {})}
    return await c.post("/chat/completions", headers=headers,
                        json={"model": "deepseek-chat", "messages": [{"role": "user", "content": text}]})


def _content(r: httpx.Response) -> str:
    assert r.status_code == 200, r.text
    return str(r.json()["choices"][0]["message"]["content"])


async def test_index_lists_the_endpoints_off_the_wire_auth(client: httpx.AsyncClient) -> None:
    r = await client.get("/_dshkit/")  # no Authorization: the admin API is outside the wire's auth
    assert r.status_code == 200
    assert set(r.json()["endpoints"]) == {
        "GET /_dshkit/", "PUT /_dshkit/scripts", "POST /_dshkit/scripts", "DELETE /_dshkit/scripts",
        "POST /_dshkit/reset",
        "GET /_dshkit/journal", "GET /_dshkit/counts",
    }
    assert (await client.get("/_dshkit")).status_code == 200
    wire = await client.post("/chat/completions", json={"model": "deepseek-chat", "messages": []})
    assert wire.status_code == 401  # while the wire keeps its own


async def test_put_replaces_the_scripts_and_sessions_start_over(client: httpx.AsyncClient) -> None:
    assert _content(await _ask(client)) == "first"
    r = await client.put("/_dshkit/scripts", content=WEATHER_YAML, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 200
    assert r.json() == {"scripts": [{"name": "weather", "session": None, "steps": 2}]}
    assert [_content(await _ask(client)) for _ in range(2)] == ["sunny", "rain"]
    exhausted = await _ask(client)
    assert exhausted.status_code == 418 and exhausted.json()["error"]["code"] == "mock_script_exhausted"


async def test_put_takes_json_by_content_type_and_a_file_of_several_scripts(client: httpx.AsyncClient) -> None:
    body = {"scripts": [{"name": "a", "steps": [{"reply": {"content": "A"}}]},
                        {"name": "b", "steps": [{"reply": {"content": "B"}}]}]}
    r = await client.put("/_dshkit/scripts", json=body)
    assert r.status_code == 200 and [s["name"] for s in r.json()["scripts"]] == ["a", "b"]
    assert _content(await _ask(client, session="one")) == "A"
    assert _content(await _ask(client, session="two")) == "B"


async def test_put_of_no_scripts_returns_to_default_replies(client: httpx.AsyncClient) -> None:
    r = await client.delete("/_dshkit/scripts")
    assert r.status_code == 200 and r.json() == {"scripts": []}
    assert "hello there" in _content(await _ask(client, "hello there"))  # the generated default quotes it


@pytest.mark.parametrize(("body", "content_type", "message"), [
    ("name: x\nsteps:\n  - reply: {content: 3, bogus: 1}\n", "application/yaml", r"admin PUT /_dshkit/scripts body:3: steps\[0\]\.reply\.content"),
    ("steps: [nonexistent_fault]\n", "application/yaml", r"body:1: steps\[0\].*nonexistent_fault"),
    ("{not json", "application/json", r"body:1: not valid JSON"),
    ("a: [b\n", "text/yaml", r"body:\d+: not valid YAML"),
    ("", "application/yaml", r"body: empty"),
    (b"\xff\xfe steps: []", "application/yaml", r"body: not UTF-8 text \(byte 0\)"),
    ("[" * 100_000, "application/json", r"body"),
    ("scripts: []", "application/yaml", r"`scripts` must be a non-empty list"),
    ("42", "application/json", r"a script must be a mapping"),
])
async def test_a_bad_script_is_a_located_400_and_changes_nothing(
    client: httpx.AsyncClient, body: str | bytes, content_type: str, message: str
) -> None:
    r = await client.put("/_dshkit/scripts", content=body, headers={"Content-Type": content_type})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_script"
    assert re.search(message, error["message"]), error["message"]
    assert _content(await _ask(client)) == "first"  # the old script still serves


async def test_a_script_larger_than_the_body_limit_is_a_413() -> None:
    async with MockServer(admin=True, max_body_bytes=1000) as s, httpx.AsyncClient(base_url=s.base_url) as c:
        r = await c.put("/_dshkit/scripts", content="steps: [success]\n" + "#" * 5000)
        assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
        assert (await c.put("/_dshkit/scripts", content="steps: [success]")).status_code == 200


async def test_the_same_message_as_script_on_the_command_line(tmp_path: Path, client: httpx.AsyncClient) -> None:
    bad = "name: x\nsteps:\n  - reply: {content: 3, bogus: 1}\n"
    (tmp_path / "bad.yaml").write_text(bad)
    cli = subprocess.run(["dshkit", "serve", "--script", str(tmp_path / "bad.yaml")], capture_output=True,
                         text=True, timeout=60, check=False, env=_env())
    assert cli.returncode == 2
    r = await client.put("/_dshkit/scripts", content=bad)
    located = cli.stderr.strip().removeprefix("dshkit serve: ").replace(str(tmp_path / "bad.yaml"), "FILE")
    assert r.json()["error"]["message"].replace("admin PUT /_dshkit/scripts body", "FILE") == located


async def test_post_adds_a_script_and_can_reserve_a_session(client: httpx.AsyncClient) -> None:
    r = await client.post("/_dshkit/scripts?session=mine", content="steps: [{reply: {content: MINE}}]")
    assert r.status_code == 201 and r.json()["scripts"][0]["steps"] == 1
    assert _content(await _ask(client, session="mine")) == "MINE"
    assert _content(await _ask(client, session="other")) == "first"  # the first script is still there
    taken = await client.post("/_dshkit/scripts?session=mine", content="steps: [success]")
    assert taken.status_code == 409 and "already has a script" in taken.json()["error"]["message"]
    two = await client.post("/_dshkit/scripts?session=x", content="scripts: [{steps: [success]}, {steps: [success]}]")
    assert two.status_code == 400 and "reserves one script" in two.json()["error"]["message"]


async def test_put_with_two_scripts_for_one_session_is_refused_and_changes_nothing(client: httpx.AsyncClient) -> None:
    r = await client.put("/_dshkit/scripts", content="scripts: [{session: s, steps: [success]}, {session: s, steps: [success]}]")
    assert r.status_code == 400 and "'s' have more than one script" in r.json()["error"]["message"]
    assert _content(await _ask(client)) == "first"


async def test_a_replayed_cassette_takes_no_scripts_but_resets(tmp_path: Path) -> None:
    upstream = MockServer(Script.replies("A"))
    async with upstream, Recorder(upstream.base_url, tmp_path / "c") as rec, httpx.AsyncClient() as c:
        await c.post(rec.base_url + "/chat/completions", json=_BODY)
    router = CassetteRouter.for_cassette(load_cassette(tmp_path / "c"))
    async with MockServer(router=router, admin=True) as s, httpx.AsyncClient(base_url=s.base_url) as c:
        for method in ("PUT", "POST"):
            r = await c.request(method, "/_dshkit/scripts", content="steps: [success]")
            assert r.status_code == 400 and r.json()["error"]["code"] == "scripts_not_accepted"
        assert (await c.delete("/_dshkit/scripts")).json()["error"]["code"] == "scripts_not_accepted"
        assert _content(await c.post("/chat/completions", json=_BODY)) == "A"
        assert (await c.post("/chat/completions", json=_BODY)).status_code == 418  # used
        assert (await c.post("/_dshkit/reset")).status_code == 200
        assert _content(await c.post("/chat/completions", json=_BODY)) == "A"  # unused again


async def test_reset_starts_every_script_over_and_clears_the_journal(client: httpx.AsyncClient) -> None:
    assert _content(await _ask(client)) == "first"
    assert (await _ask(client)).status_code == 418  # used up
    assert len((await client.get("/_dshkit/journal")).json()["entries"]) == 2
    r = await client.post("/_dshkit/reset")
    assert r.status_code == 200 and r.json()["reset"] is True
    assert (await client.get("/_dshkit/journal")).json()["entries"] == []
    assert _content(await _ask(client)) == "first"  # claimable again, its step unused


async def test_journal_is_parsed_json_with_secrets_scrubbed(client: httpx.AsyncClient) -> None:
    await _ask(client, "what is the weather?", session="s1")
    await _ask(client, "again", session="s2")
    entries = (await client.get("/_dshkit/journal")).json()["entries"]
    assert [e["body"]["messages"][0]["content"] for e in entries] == ["what is the weather?", "again"]
    first = entries[0]
    assert first["method"] == "POST" and first["path"] == "/chat/completions" and first["status"] == 200
    assert first["script"] == "script" or first["script"]  # the script that answered
    assert first["step"] == 0 and first["outcome"] == "completed"
    assert json.loads(first["response"])["choices"][0]["message"]["content"] == "first"
    assert first["headers"]["authorization"].startswith("{{scrubbed")
    assert "sk-wire-key" not in json.dumps(entries)
    only = (await client.get("/_dshkit/journal", params={"session": "s2"})).json()["entries"]
    assert [e["session"] for e in only] == ["s2"]


async def test_counts_per_step(client: httpx.AsyncClient) -> None:
    await client.put("/_dshkit/scripts", content="name: w\nrepeat_last: true\nsteps: [{reply: {content: a}}, {reply: {content: b}}]")
    r = await client.get("/_dshkit/counts")
    assert r.json()["requests"] == 0 and r.json()["unused_steps"] == ["script 'w': never claimed by any session (2 steps)"]
    for _ in range(3):
        await _ask(client)
    counts = (await client.get("/_dshkit/counts")).json()
    assert counts["requests"] == 3 and counts["outcomes"] == {"completed": 3}
    assert counts["steps"] == [{"script": "w", "step": 0, "calls": 1}, {"script": "w", "step": 1, "calls": 2}]
    assert counts["unused_steps"] == []


async def test_unknown_paths_and_methods(client: httpx.AsyncClient) -> None:
    r = await client.get("/_dshkit/nothing")
    assert r.status_code == 404 and "PUT /_dshkit/scripts" in r.json()["error"]["message"]
    r = await client.get("/_dshkit/scripts")
    assert r.status_code == 405 and r.headers["Allow"] == "PUT, POST, DELETE"
    r = await client.delete("/_dshkit/journal")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"


async def test_admin_requests_do_not_reach_the_journal_or_the_wire(client: httpx.AsyncClient, server: MockServer) -> None:
    await client.get("/_dshkit/counts")
    await client.put("/_dshkit/scripts", content="steps: [success]")
    assert len(server.journal) == 0


async def test_without_admin_the_prefix_is_an_ordinary_404() -> None:
    async with MockServer() as s, httpx.AsyncClient(base_url=s.base_url) as c:
        r = await c.get("/_dshkit/counts")
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        assert "not an admin endpoint" not in r.text


class _Transport:
    """What aiohttp asks a transport for the peer's address."""

    def __init__(self, address: str) -> None:
        self.address = address

    def get_extra_info(self, name: str, default: object = None) -> object:
        return (self.address, 1234) if name == "peername" else default


def test_only_loopback_peers_are_answered() -> None:
    def peer(address: str) -> bool:
        return _loopback(make_mocked_request("GET", "/_dshkit/", transport=_Transport(address)))

    assert peer("127.0.0.1") and peer("127.3.4.5") and peer("::1") and peer("::ffff:127.0.0.1")
    assert not peer("10.0.0.7") and not peer("192.168.1.2") and not peer("::ffff:10.0.0.1") and not peer("junk")


async def test_a_remote_peer_gets_403_from_every_endpoint(server: MockServer) -> None:
    admin = _Admin(server.router, Runtime(server.config, server.journal))
    for handler in (admin.index, admin.replace, admin.add, admin.reset, admin.journal, admin.counts, admin.not_found):
        request = make_mocked_request("PUT", "/_dshkit/scripts", transport=_Transport("10.0.0.7"))
        r = await admin.guard(handler)(request)
        assert isinstance(r, web.Response) and r.status == 403
        assert r.text is not None and "loopback clients only" in r.text


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PATH"] = str(ROOT / ".venv" / "bin") + os.pathsep + env.get("PATH", "")
    return env


@SHARES_PLAIN_SERVE
def test_dshkit_serve_has_the_admin_api_and_no_admin_turns_it_off(plain_serve: ServeProcess) -> None:
    proc = plain_serve
    assert proc.ready["admin_url"] == proc.base_url + "/_dshkit/"
    with httpx.Client(base_url=proc.base_url, timeout=10) as c:
        assert c.put("/_dshkit/scripts", content=WEATHER_YAML).status_code == 200
        r = c.post("/chat/completions", json={"model": "deepseek-chat", "messages": [{"role": "user", "content": "x"}]})
        assert r.json()["choices"][0]["message"]["content"] == "sunny"
    proc = ServeProcess("--no-admin")
    try:
        assert "admin_url" not in proc.ready
        with httpx.Client(base_url=proc.base_url, timeout=10) as c:
            assert c.get("/_dshkit/").status_code == 404
    finally:
        proc.stop()


NODE = shutil.which("node")


def _node_example() -> str:
    """The Node example of docs/admin_api.md (the fenced ```js block)."""
    doc = (ROOT / "docs" / "admin_api.md").read_text()
    blocks = re.findall(r"```js\n(.*?)```", doc, re.S)
    assert len(blocks) == 1, "docs/admin_api.md holds one ```js example"
    return str(blocks[0])


def test_the_docs_hold_a_node_example() -> None:
    example = _node_example()
    assert "fetch(" in example and "/_dshkit" in example
    assert all(f'admin("/{name}"' in example for name in ("scripts", "journal", "counts", "reset"))


@SHARES_PLAIN_SERVE
@pytest.mark.skipif(NODE is None, reason="node is not installed (the Node example of docs/admin_api.md needs Node >= 18)")
def test_the_node_example_runs_against_dshkit_serve(tmp_path: Path, plain_serve: ServeProcess) -> None:
    assert NODE is not None
    script = tmp_path / "example.mjs"
    script.write_text(_node_example())
    run = subprocess.run([NODE, str(script)], capture_output=True, text=True, timeout=60, check=False,
                         env={**_env(), "DSHKIT_URL": plain_serve.base_url})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ok: sunny, then rain; 2 requests" in run.stdout
