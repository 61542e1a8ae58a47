"""The recorder under stress: secrets in every place a client puts them, restarts on an existing
cassette, an upstream that dies mid-body, crashes while appending, and CLI start-up errors.

Upstreams are small aiohttp apps on 127.0.0.1:0; waits are events and timeouts, never sleeps.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from dshkit.mock_server import Recorder, ReplayServerFactory, load_cassette
from dshkit.mock_server.cassette import CassetteError

BODY = {"model": "deepseek-v4-flash", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def upstream_app(handler: Handler) -> AsyncIterator[str]:
    """An upstream answering every path with `handler`; yields its base URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def _sse(request: web.Request, *pieces: bytes) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for p in pieces:
        await resp.write(p)
    await resp.write_eof()
    return resp


def _record_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "dshkit.mock_server", "record", *args]


async def _line(stream: asyncio.StreamReader) -> dict[str, Any]:
    line = await asyncio.wait_for(stream.readline(), 30)
    assert line, "the recorder exited early"
    return dict(json.loads(line))


# --- item 1: secrets -------------------------------------------------------------------------

SECRETS = {
    "query_api_key": "qk-QUERYSECRET-111111",
    "query_key": "qk-PLAINKEY-222222",
    "ocp": "ocp-SUBSCRIPTION-333333",
    "apikey_header": "hdr-APIKEY-444444",
    "api_key_header": "hdr-API_KEY-555555",
    "x_custom_key": "hdr-XCUSTOM-666666",
    "token_field": "fld-TOKEN-777777",
    "key_field": "fld-KEY-888888",
    "client_secret": "fld-CLIENTSECRET-999999",
    "upper_api_key": "fld-UPPERKEY-000000",
    "password": "upPASSWORD-abcdef",
    "bearer": "sk-live-BEARER-0123456789",
}


async def test_secrets_in_query_headers_fields_url_and_split_reads_never_reach_the_cassette(
    tmp_path: Path, dshkit_replay: ReplayServerFactory
) -> None:
    first_read = asyncio.Event()
    seen: list[dict[str, str]] = []
    key = SECRETS["bearer"]

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.headers))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "X-Echo": f"k={key}"})
        await resp.prepare(request)
        # The key is split across two upstream reads: the second waits until the client has the
        # first, so the proxy cannot get them in one read.
        await resp.write(b'data: {"echo": "' + key[:9].encode())
        await first_read.wait()
        await resp.write(key[9:].encode() + b'"}\n\ndata: [DONE]\n\n')
        await resp.write_eof()
        return resp

    body = {**BODY, "token": SECRETS["token_field"], "API_KEY": SECRETS["upper_api_key"],
            "metadata": {"auth": {"key": SECRETS["key_field"], "client_secret": SECRETS["client_secret"]}}}
    headers = {"Authorization": f"Bearer {key}", "Ocp-Apim-Subscription-Key": SECRETS["ocp"],
               "apikey": SECRETS["apikey_header"], "api_key": SECRETS["api_key_header"],
               "X-Custom-Key": SECRETS["x_custom_key"]}
    query = f"?api_key={SECRETS['query_api_key']}&key={SECRETS['query_key']}&mode=fast"
    async with upstream_app(handler) as base:
        up = base.replace("http://", f"http://alice:{SECRETS['password']}@")
        async with Recorder(up, tmp_path / "s") as rec, httpx.AsyncClient(timeout=5) as c:
            assert SECRETS["password"] not in rec.upstream
            async with c.stream("POST", rec.base_url + "/chat/completions" + query, json=body, headers=headers) as r:
                it = r.aiter_raw()
                got = await asyncio.wait_for(anext(it), 5)
                first_read.set()
                got += b"".join([x async for x in it])
            assert key.encode() in got  # the client gets the real bytes; only the cassette is scrubbed
            # No Authorization from the client: the URL's credentials go upstream as Basic auth.
            r2 = await c.get(rec.base_url + "/models")
            assert r2.status_code == 200
    assert seen[1]["Authorization"] == "Basic " + base64.b64encode(f"alice:{SECRETS['password']}".encode()).decode()
    assert seen[0]["Authorization"] == f"Bearer {key}"  # the client's own key wins
    files = list(tmp_path.iterdir())
    for f in files:
        data = f.read_bytes()
        for name, secret in SECRETS.items():
            assert secret.encode() not in data, (f.name, name)
    cassette = load_cassette(tmp_path / "s")
    x = cassette.exchanges[0]
    assert x.request.path == "/chat/completions?api_key={{scrubbed:api_key}}&key={{scrubbed:key}}&mode=fast"
    assert x.request.body["metadata"]["auth"] == {"key": "{{scrubbed:key}}", "client_secret": "{{scrubbed:client_secret}}"}
    assert x.request.body["API_KEY"] == "{{scrubbed:API_KEY}}" and x.request.body["token"] == "{{scrubbed:token}}"
    assert {k: v for k, v in x.request.headers.items() if "scrubbed" in v}.keys() >= {
        "authorization", "ocp-apim-subscription-key", "apikey", "api_key", "x-custom-key"}
    assert x.body == b'data: {"echo": "{{scrubbed:authorization}}"}\n\ndata: [DONE]\n\n'
    assert len(x.reads) >= 2
    assert x.headers["x-echo"] == "k={{scrubbed:authorization}}"
    assert cassette.meta["upstream"] == base.replace("http://", "http://alice:{{scrubbed:password}}@")
    # The scrubbed cassette still replays.
    replay = await dshkit_replay(tmp_path / "s", check_consumed=False)
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(replay.base_url + "/chat/completions", json=BODY)
    assert r.content == x.body


@pytest.mark.parametrize(("user_part", "shown", "secret"), [
    (f"bob:{SECRETS['password']}", "bob:{{scrubbed:password}}", SECRETS["password"]),
    ("URLTOKEN0014", "{{scrubbed:username}}", "URLTOKEN0014"),  # a token alone is the credential
], ids=["password", "username-only"])
async def test_the_ready_line_hides_the_upstream_password(tmp_path: Path, user_part: str, shown: str, secret: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        *_record_cmd("--upstream", f"http://{user_part}@127.0.0.1:9", "--out", str(tmp_path / "p")),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        ready = await _line(proc.stdout)
        assert ready["upstream"] == f"http://{shown}@127.0.0.1:9"
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 130
    assert secret.encode() not in out + err + (tmp_path / "p.cassette.jsonl").read_bytes()


# --- item 2: restarting on an existing cassette ---------------------------------------------


async def test_restart_appends_and_overwrite_starts_afresh(tmp_path: Path) -> None:
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        return await _sse(request, b'data: {"n": %d}\n\ndata: [DONE]\n\n' % calls)

    async with upstream_app(handler) as base:
        for _ in range(2):
            async with Recorder(base, tmp_path / "r") as rec, httpx.AsyncClient(timeout=5) as c:
                await c.post(rec.base_url + "/chat/completions", json=BODY)
        assert [x.body[:13] for x in load_cassette(tmp_path / "r").exchanges] == [b'data: {"n": 1', b'data: {"n": 2']
        async with Recorder(base, tmp_path / "r", overwrite=True) as rec, httpx.AsyncClient(timeout=5) as c:
            await c.post(rec.base_url + "/chat/completions", json=BODY)
    assert [x.body[:13] for x in load_cassette(tmp_path / "r").exchanges] == [b'data: {"n": 3']


def test_record_refuses_an_out_that_is_not_a_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dshkit.cli import main

    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"my": "data"}\n')
    assert main(["record", "--upstream", "http://127.0.0.1:9", "--out", str(notes)]) == 2
    err = capsys.readouterr().err
    assert "is not a cassette" in err and "--overwrite" in err
    assert notes.read_text() == '{"my": "data"}\n'  # nothing was replaced


# --- item 3: an upstream that dies mid-stream ------------------------------------------------

PREFIX = b'data: {"choices": [{"index": 0, "delta": {"content": "half"}}]}\n\n'


async def _dies_mid_stream(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(PREFIX)
    await resp.drain()
    assert request.transport is not None
    request.transport.abort()  # the upstream process dies: no terminating chunk
    return resp


async def test_an_upstream_cut_mid_body_is_recorded_as_cut_and_replayed_as_a_cut(
    tmp_path: Path, dshkit_replay: ReplayServerFactory
) -> None:
    async with upstream_app(_dies_mid_stream) as base:
        proc = await asyncio.create_subprocess_exec(
            *_record_cmd("--upstream", base, "--out", str(tmp_path / "cut")),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            ready = await _line(proc.stdout)
            got = b""
            async with httpx.AsyncClient(timeout=5) as c:
                with pytest.raises(httpx.RemoteProtocolError):  # the client sees the cut too
                    async with c.stream("POST", ready["base_url"] + "/chat/completions", json=BODY) as r:
                        async for piece in r.aiter_raw():
                            got += piece
            event = await _line(proc.stdout)
            proc.send_signal(signal.SIGINT)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert got == PREFIX
    assert event["type"] == "exchange" and "broke" in event["cut"]
    text = err.decode()
    assert "Traceback" not in text and "Error handling request" not in text, text
    assert "recorded as a cut exchange" in text
    (x,) = load_cassette(tmp_path / "cut").exchanges
    assert x.body == PREFIX and x.cut is not None and "ClientPayloadError" in x.cut
    replay = await dshkit_replay(tmp_path / "cut")
    again = b""
    async with httpx.AsyncClient(timeout=5) as c:
        with pytest.raises(httpx.TransportError):
            async with c.stream("POST", replay.base_url + "/chat/completions", json=BODY) as r:
                async for piece in r.aiter_raw():
                    again += piece
    assert again == PREFIX


async def test_a_client_that_hangs_up_mid_request_leaves_no_traceback(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *_record_cmd("--upstream", "http://127.0.0.1:9", "--out", str(tmp_path / "h")),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        ready = await _line(proc.stdout)
        _, writer = await asyncio.open_connection("127.0.0.1", ready["port"])
        writer.write(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
                     b"Content-Type: application/json\r\n\r\n{\"model\":")
        await writer.drain()
        writer.transport.abort()  # 10 of the promised 1000 bytes, then gone
        note = await asyncio.wait_for(proc.stderr.readline(), 30)  # the recorder noticed
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert b"the client hung up before sending its whole request" in note
    assert b"Traceback" not in note + err, (note + err).decode()
    assert load_cassette(tmp_path / "h").exchanges == ()


# --- item 4: append-only writes, torn lines, crashes -----------------------------------------


def _written_bytes() -> int:
    """Bytes this process passed to write(2) so far (Linux `/proc/self/io`, `wchar`)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


async def test_each_exchange_costs_its_own_bytes_not_the_whole_cassette(tmp_path: Path) -> None:
    if not Path("/proc/self/io").exists():
        pytest.skip("needs Linux /proc/self/io to count written bytes")
    payload = b"data: " + json.dumps({"pad": "x" * 8000}).encode() + b"\n\ndata: [DONE]\n\n"

    async def handler(request: web.Request) -> web.StreamResponse:
        return await _sse(request, payload)

    path = tmp_path / "big.cassette.jsonl"
    sizes: list[int] = []
    costs: list[int] = []
    async with upstream_app(handler) as base, Recorder(base, path) as rec, httpx.AsyncClient(timeout=5) as c:
        inode = path.stat().st_ino
        head = path.read_bytes()
        for _ in range(40):
            before = _written_bytes()
            r = await c.post(rec.base_url + "/chat/completions", json=BODY)
            assert r.content == payload
            costs.append(_written_bytes() - before)
            sizes.append(path.stat().st_size)
            assert path.stat().st_ino == inode  # appended in place, never rewritten and replaced
        assert path.read_bytes().startswith(head)
        growth = [b - a for a, b in zip([len(head), *sizes], sizes, strict=False)]
        # Every exchange adds exactly its own line, and the recorder wrote nothing else to disk.
        assert rec.appender.bytes_written == sum(growth) == sizes[-1] - len(head)
        assert max(growth) - min(growth) <= 8  # same exchange, same line (timings vary a little)
    # Everything this process wrote per exchange (sockets included) stays flat as the cassette
    # grows; rewriting the file would make the last exchanges cost 40x the first.
    first, last = sum(costs[:10]), sum(costs[-10:])
    print(f"bytes written per exchange: first 10 {first / 10:.0f}, last 10 {last / 10:.0f}, line {growth[-1]}")
    assert last < 1.5 * first


def _exchange_line(n: int) -> str:
    return json.dumps({"type": "exchange", "request": {"method": "POST", "path": "/chat/completions"},
                       "status": 200, "reads": [{"text": f"data: {n}\n\n", "dt_ms": 0}]}) + "\n"


async def test_a_torn_last_line_is_set_aside_and_orphan_temps_are_removed(tmp_path: Path) -> None:
    path = tmp_path / "t.cassette.jsonl"
    header = json.dumps({"type": "cassette", "version": 1}) + "\n"
    torn = _exchange_line(3)[:40]
    path.write_text(header + _exchange_line(1) + _exchange_line(2) + torn)
    orphan = tmp_path / ".t.cassette.jsonl.tmp-999999999-dead"  # no such pid: its writer died
    orphan.write_text("half a cassette")
    cassette = load_cassette(path)
    assert [x.body for x in cassette.exchanges] == [b"data: 1\n\n", b"data: 2\n\n"]
    assert cassette.torn_line == 4
    # A broken line that is not the last one is still an error, located.
    (tmp_path / "mid.cassette.jsonl").write_text(header + torn + "\n" + _exchange_line(2))
    with pytest.raises(CassetteError, match=r"mid\.cassette\.jsonl:2: not a JSON line"):
        load_cassette(tmp_path / "mid")

    async def handler(request: web.Request) -> web.StreamResponse:
        return await _sse(request, b"data: 4\n\n")

    async with upstream_app(handler) as base, Recorder(base, path) as rec, httpx.AsyncClient(timeout=5) as c:
        assert rec.appender.existing == 2
        await c.post(rec.base_url + "/chat/completions", json=BODY)
    cassette = load_cassette(path)
    assert [x.body for x in cassette.exchanges] == [b"data: 1\n\n", b"data: 2\n\n", b"data: 4\n\n"]
    assert cassette.torn_line is None
    assert (tmp_path / "t.cassette.jsonl.torn").read_text() == torn + "\n"
    assert not orphan.exists()


async def test_sigkill_while_exchanges_stream_leaves_a_loadable_cassette(tmp_path: Path) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await _sse(request, b'data: {"pad": "' + b"y" * 3000 + b'"}\n\n', b"data: [DONE]\n\n")

    async with upstream_app(handler) as base:
        proc = await asyncio.create_subprocess_exec(
            *_record_cmd("--upstream", base, "--out", str(tmp_path / "k")),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        stop = asyncio.Event()

        async def client(c: httpx.AsyncClient, url: str) -> None:
            while not stop.is_set():
                try:
                    await c.post(url + "/chat/completions", json=BODY)
                except httpx.HTTPError:
                    return  # the recorder is gone

        try:
            assert proc.stdout is not None
            ready = await _line(proc.stdout)
            async with httpx.AsyncClient(timeout=5) as c:
                clients = [asyncio.create_task(client(c, ready["base_url"])) for _ in range(4)]
                for _ in range(12):  # twelve exchanges saved, more in flight
                    assert (await _line(proc.stdout))["type"] == "exchange"
                proc.send_signal(signal.SIGKILL)
                await proc.wait()
                stop.set()
                await asyncio.gather(*clients)
        finally:
            stop.set()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    cassette = load_cassette(tmp_path / "k")
    assert len(cassette.exchanges) >= 12
    assert all(x.body.endswith(b"data: [DONE]\n\n") for x in cassette.exchanges)


# --- item 7: start-up errors -----------------------------------------------------------------


def test_port_in_use_names_the_port_and_leaks_no_session(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            _record_cmd("--upstream", "http://127.0.0.1:9", "--out", str(tmp_path / "x"), "--port", str(port)),
            capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONWARNINGS": "default"},
        )
    assert done.returncode == 1
    assert f"127.0.0.1:{port}" in done.stderr and "already in use" in done.stderr
    assert "Unclosed" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "x.cassette.jsonl").exists()  # nothing recorded, nothing made
