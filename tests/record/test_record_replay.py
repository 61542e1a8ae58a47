"""Recording proxy and wire-level replay: bytes, read boundaries, timing, scrubbing, atomicity.

Every server binds port 0; waits are bounded by events and timeouts, never sleeps.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from dshkit.harness.llm import Finish, GenerateOptions, StreamChunk, UserMessage
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.mock_server import (
    MockServerFactory,
    Recorder,
    ReplayServerFactory,
    Script,
    cassette_to_scripts,
    load_cassette,
)
from dshkit.mock_server.cassette import CassetteError, script_to_cassette
from dshkit.mock_server.scripts import parse_script

KEY = "sk-live-SECRET-0123456789abcdef"
BODY = {"model": "deepseek-v4-flash", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def _walk_script() -> Script:
    return parse_script({"name": "up", "steps": [{
        "reply": {"reasoning": "Think é first.", "content": "Answer — with ünïcode.",
                  "tool_calls": [{"name": "read", "id": "call_00_rec000000000000000000001", "arguments": '{"file_path": "a.md"}'}]},
        "stream": {"thinking": True, "split": {"mode": "fixed", "size": 5},
                   "writes": {"events_per_write": 0, "random_max": 40, "inside_utf8": True}},
    }]}, source="test")


async def _post(client: httpx.AsyncClient, url: str, body: Any = BODY, **headers: str) -> tuple[int, bytes]:
    r = await client.post(url + "/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}", **headers})
    return r.status_code, r.content


async def test_record_then_replay_is_byte_and_read_identical(
    dshkit_mock_server: MockServerFactory, dshkit_replay: ReplayServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(_walk_script(), seed=3)
    async with Recorder(upstream.base_url, tmp_path / "walk") as rec, httpx.AsyncClient(timeout=5) as c:
        status, live = await _post(c, rec.base_url)
    assert status == 200
    cassette = load_cassette(tmp_path / "walk")
    (x,) = cassette.exchanges
    assert x.body == live == b"".join(w.data for w in upstream.journal.last.writes)
    # How many reads the recorder saw depends on TCP timing (a loaded machine merges them); the
    # replay below must reproduce whatever it saw, read for read.
    assert x.reads and all(r.dt_ms >= 0 for r in x.reads)

    replay = await dshkit_replay(tmp_path / "walk", speed=0)
    async with httpx.AsyncClient(timeout=5) as c:
        status, again = await _post(c, replay.base_url)
    assert (status, again) == (200, live)
    # Compared server side: the replay server wrote the recorded reads one for one.
    assert [w.data for w in replay.journal.last.writes] == [r.data for r in x.reads]


async def test_client_sees_first_byte_before_upstream_finishes(tmp_path: Path) -> None:
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b"data: {\"first\": true}\n\n")
        await release.wait()  # the upstream cannot finish before the client has read
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with Recorder(f"http://127.0.0.1:{port}", tmp_path / "first") as rec, httpx.AsyncClient(timeout=5) as c:
            async with c.stream("POST", rec.base_url + "/chat/completions", json=BODY) as r:
                it = r.aiter_raw()
                first = await asyncio.wait_for(anext(it), 5)
                assert first.startswith(b"data: {\"first\"")
                assert not release.is_set()
                release.set()
                rest = b"".join([chunk async for chunk in it])
            assert rest.endswith(b"data: [DONE]\n\n")
        (x,) = load_cassette(tmp_path / "first").exchanges
        assert [r.data for r in x.reads] == [b"data: {\"first\": true}\n\n", b"data: [DONE]\n\n"]
    finally:
        await runner.cleanup()


async def test_timing_fidelity_at_speed_one(dshkit_replay: ReplayServerFactory, tmp_path: Path) -> None:
    # An upstream in lock step with the client: it sends write i+1 only once the client has
    # received write i through the recorder, so the recorder sees one read per write however
    # loaded the machine is (a paced upstream alone lets a slow recorder read two writes as one).
    # The gaps (ms) after each piece are the timing the replay must keep; the queue, not the
    # gaps, is what keeps the writes apart.
    gaps = [20, 35, 25, 40, 30, 22, 0]
    pieces = [f"data: {{\"n\": {i}}}\n\n".encode() for i in range(6)] + [b"data: [DONE]\n\n"]
    turn = asyncio.Queue[None]()

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for piece, gap in zip(pieces, gaps, strict=True):
            await resp.write(piece)
            await turn.get()
            await asyncio.sleep(gap / 1000)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with (
            Recorder(f"http://127.0.0.1:{port}", tmp_path / "paced") as rec,
            httpx.AsyncClient(timeout=5) as c,
            c.stream("POST", rec.base_url + "/chat/completions", json=BODY) as r,
        ):
            got, released = b"", 0
            async for chunk in r.aiter_raw():
                got += chunk
                while released < got.count(b"\n\n"):
                    released += 1
                    turn.put_nowait(None)
        assert got == b"".join(pieces)
    finally:
        await runner.cleanup()
    (x,) = load_cassette(tmp_path / "paced").exchanges
    assert [r.data for r in x.reads] == pieces
    recorded = [r.dt_ms for r in x.reads[1:]]
    # each read with its own measured gap, no shorter than the upstream's pause before it
    assert all(d >= g for d, g in zip(recorded, gaps, strict=False)), (recorded, gaps)
    replay = await dshkit_replay(tmp_path / "paced", speed=1)
    async with httpx.AsyncClient(timeout=5) as c:
        await _post(c, replay.base_url)
    entry = replay.journal.last
    ts = [w.t for w in entry.writes]
    replayed = [(b - a) * 1000 for a, b in itertools.pairwise(ts)]
    # The replay keeps a schedule from one clock reading taken after the request arrived, so no
    # write goes out before its recorded offset from that reading: a machine under load can only
    # make a write late, never early. Measured from the arrival (which is before the reading),
    # not from the first write, which may itself be late and so leave the next ones less room.
    # (How late is a speed question, printed here rather than asserted.)
    offsets = [(t - entry.t) * 1000 for t in ts]
    due = list(itertools.accumulate([x.reads[0].dt_ms, *recorded]))
    assert all(o >= d - 1 for o, d in zip(offsets, due, strict=True)), (offsets, due)
    errors = [abs(a - b) for a, b in zip(recorded, replayed, strict=True)]
    print(f"timing fidelity: recorded {recorded} replayed {[round(g, 2) for g in replayed]} "
          f"median error {statistics.median(errors):.3f} ms")


async def test_speed_zero_and_resplit_keep_bytes(
    dshkit_mock_server: MockServerFactory, dshkit_replay: ReplayServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(_walk_script(), seed=3)
    async with Recorder(upstream.base_url, tmp_path / "w") as rec, httpx.AsyncClient(timeout=5) as c:
        _, live = await _post(c, rec.base_url)
    replay = await dshkit_replay(tmp_path / "w", resplit=11)
    adapter = DeepSeekAdapter(replay.base_url, KEY)
    try:
        options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text("hi"),))
        chunks: list[StreamChunk] = [c async for c in adapter.stream(options)]
    finally:
        await adapter.aclose()
    writes = [w.data for w in replay.journal.last.writes]
    assert b"".join(writes) == live
    recorded = [r.data for r in load_cassette(tmp_path / "w").exchanges[0].reads]
    assert writes != recorded  # other boundaries, same bytes
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "tool-calls"


async def test_scrubbing_default_and_custom_pattern(dshkit_mock_server: MockServerFactory, tmp_path: Path) -> None:
    upstream = await dshkit_mock_server(
        # `whole`: the ticket must reach the proxy inside one read, patterns apply per read
        Script.of({"reply": {"content": "Your ticket TCK-4711 is open."}, "stream": {"split": {"mode": "whole"}}}),
        seed=2,
    )
    body = {**BODY, "messages": [{"role": "user", "content": f"ticket TCK-4711, key {KEY}"}], "api_key": KEY}
    async with Recorder(upstream.base_url, tmp_path / "s", scrub=[r"ticket=TCK-\d+"]) as rec, \
            httpx.AsyncClient(timeout=5) as c:
        status, _ = await _post(c, rec.base_url, body, **{"x-api-key": KEY})
    assert status == 200
    for f in tmp_path.iterdir():
        assert KEY.encode() not in f.read_bytes(), f
    text = (tmp_path / "s.cassette.jsonl").read_text()
    assert "{{scrubbed:authorization}}" in text and "{{scrubbed:x-api-key}}" in text
    assert "{{scrubbed:api_key}}" in text
    assert "TCK-4711" not in text and text.count("{{scrubbed:ticket}}") >= 2


async def test_failed_append_keeps_previous_exchanges_and_cuts_the_client(
    dshkit_mock_server: MockServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream = await dshkit_mock_server(Script.replies("one", "two"), seed=2)
    async with Recorder(upstream.base_url, tmp_path / "a") as rec, httpx.AsyncClient(timeout=5) as c:
        await _post(c, rec.base_url)
        before = (tmp_path / "a.cassette.jsonl").read_bytes()

        def broken(*_: Any) -> None:
            raise OSError("disk gone mid-write")

        monkeypatch.setattr(os, "fsync", broken)
        # The exchange could not be saved: the client must not see a body that ends cleanly.
        with pytest.raises(httpx.HTTPError):
            await _post(c, rec.base_url)
        monkeypatch.undo()
    assert (tmp_path / "a.cassette.jsonl").read_bytes() == before  # the half-saved line is cut off
    assert len(load_cassette(tmp_path / "a").exchanges) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.cassette.jsonl"]  # no temp file left


async def _read_line(stream: asyncio.StreamReader) -> dict[str, Any]:
    line = await asyncio.wait_for(stream.readline(), 30)
    assert line, "the recorder exited early"
    return dict(json.loads(line))


async def test_recorder_killed_mid_exchange_leaves_previous_cassette(tmp_path: Path) -> None:
    release = asyncio.Event()
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b"data: {\"n\": %d}\n\n" % calls)
        if calls > 1:
            await release.wait()
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/chat/completions", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dshkit.mock_server", "record", "--upstream", f"http://127.0.0.1:{port}",
        "--out", str(tmp_path / "k"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        ready = await _read_line(proc.stdout)
        assert ready["type"] == "ready"
        async with httpx.AsyncClient(timeout=5) as c:
            await _post(c, ready["base_url"])
            assert (await _read_line(proc.stdout))["type"] == "exchange"
            async with c.stream("POST", ready["base_url"] + "/chat/completions", json=BODY) as r:
                await asyncio.wait_for(anext(r.aiter_raw()), 5)  # the second exchange is in flight
                proc.send_signal(signal.SIGKILL)
                await proc.wait()
        cassette = load_cassette(tmp_path / "k")
        assert len(cassette.exchanges) == 1
        assert cassette.exchanges[0].body == b"data: {\"n\": 1}\n\ndata: [DONE]\n\n"
    finally:
        release.set()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await runner.cleanup()


async def test_body_mismatch_answers_418_with_a_diff(
    dshkit_mock_server: MockServerFactory, dshkit_replay: ReplayServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(Script.replies("a", "b"), seed=2)
    async with Recorder(upstream.base_url, tmp_path / "m") as rec, httpx.AsyncClient(timeout=5) as c:
        await _post(c, rec.base_url)
        await _post(c, rec.base_url, {**BODY, "messages": [{"role": "user", "content": "second"}]})
    replay = await dshkit_replay(tmp_path / "m", match="body", check_consumed=False,
                                assert_all_requests_served=False)
    async with httpx.AsyncClient(timeout=5) as c:
        # by body, the second recorded exchange answers first
        status, data = await _post(c, replay.base_url, {**BODY, "messages": [{"role": "user", "content": "second"}]})
        assert status == 200 and b"[DONE]" in data
        r = await c.post(replay.url, json={**BODY, "messages": [{"role": "user", "content": "drifted"}]},
                         headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 418
    message = r.json()["error"]["message"]
    assert "--- recorded request" in message and "+++ live request" in message
    assert '-      "content": "hi"' in message and '+      "content": "drifted"' in message
    with pytest.raises(AssertionError, match=r"exchange 1: POST /chat/completions"):
        replay.assert_consumed()


def test_cassette_converts_to_script_and_back(tmp_path: Path) -> None:
    cassette = load_cassette(Path(__file__).parents[2] / "recordings" / "rate-limit-then-success")
    scripts = cassette_to_scripts(cassette, match="body")
    back = script_to_cassette(scripts)
    assert [x.body for x in back.exchanges] == [x.body for x in cassette.exchanges]
    assert [[r.data for r in x.reads] for x in back.exchanges] == [[r.data for r in x.reads] for x in cassette.exchanges]
    assert [x.status for x in back.exchanges] == [429, 200]
    for a, b in zip(back.exchanges, cassette.exchanges, strict=True):
        assert [round(r.dt_ms, 3) for r in a.reads] == [round(r.dt_ms, 3) for r in b.reads]
        assert a.request.body == b.request.body


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"type": "nope"}', r"bad\.cassette\.jsonl:1: type: the first line must be the header"),
        ('{"type": "cassette", "version": 9}', r":1: version: unsupported cassette version 9"),
        ('{"type": "cassette", "version": 1}\n{"type": "exchange", "request": {"method": "POST", "path": "/"},'
         ' "status": 200, "reads": [{"text": "x"}]}', r":2: reads\[0\]\.dt_ms: missing `dt_ms`"),
        ('{"type": "cassette", "version": 1}\n{"type": "exchange", "request": {"method": "POST", "path": "/"},'
         ' "status": 200, "reads": [{"b64": "!!", "dt_ms": 0}]}', r":2: reads\[0\]\.b64: `b64` is not valid base64"),
    ],
)
def test_bad_cassette_lines_are_located(tmp_path: Path, line: str, expected: str) -> None:
    (tmp_path / "bad.cassette.jsonl").write_text(line + "\n")
    with pytest.raises(CassetteError, match=expected):
        load_cassette(tmp_path / "bad")


async def test_replay_through_the_serve_cli(tmp_path: Path) -> None:
    """`serve --replay` serves the recorded bytes; a cassette whose last line a killed recorder
    left torn still serves its complete exchanges, and stderr says which line was dropped."""
    from tests.mock_server.cli_process import ServeProcess

    rec = Path(__file__).parents[2] / "recordings" / "plain-text.cassette.jsonl"
    torn = tmp_path / "torn.cassette.jsonl"
    torn.write_bytes(rec.read_bytes() + rec.read_bytes().splitlines(keepends=True)[1][:50])
    proc = await asyncio.to_thread(ServeProcess, "--replay", str(torn), "--speed", "0")
    try:
        async with httpx.AsyncClient(timeout=5) as c:
            status, data = await _post(c, proc.base_url)
        assert status == 200
        assert data == load_cassette(rec).exchanges[0].body
    finally:
        code, _ = await asyncio.to_thread(proc.stop)
    assert code == 130
    lines = len(rec.read_bytes().splitlines()) + 1
    assert f"warning: {torn}:{lines}: the last line is torn" in proc.stderr


def test_replaying_a_torn_cassette_warns_by_default(tmp_path: Path) -> None:
    from dshkit.mock_server.replay import replay_scripts

    rec = Path(__file__).parents[2] / "recordings" / "plain-text.cassette.jsonl"
    torn = tmp_path / "torn.cassette.jsonl"
    torn.write_bytes(rec.read_bytes() + b'{"type": "exch')
    with pytest.warns(UserWarning, match=r"torn\.cassette\.jsonl:\d+: the last line is torn"):
        scripts = replay_scripts(torn)
    assert sum(len(s.steps) for s in scripts) == len(load_cassette(rec).exchanges)
    seen: list[str] = []
    replay_scripts(rec, warn=seen.append)
    assert seen == []



@pytest.mark.parametrize("upstream", ["notaurl", "ftp://example.com", "http://"])
def test_record_refuses_an_upstream_that_is_not_an_http_url(
    upstream: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dshkit.cli import main

    assert main(["record", "--upstream", upstream, "--out", str(tmp_path / "x")]) == 2
    assert "is not an http(s) URL" in capsys.readouterr().err
    assert not (tmp_path / "x.cassette.jsonl").exists()
