"""Every exchange that passes through the recorder is recorded, as strict JSON (issue 18): a body
with a lone surrogate, a header that is not UTF-8, bodies 700 and 100,000 levels deep, `NaN`,
`1e400` and bytes that are not UTF-8. Before, these dropped the exchange with a traceback, or
answered 500 while the client had its answer, or wrote a bare `NaN` into the cassette."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from dshkit.mock_server import Recorder, load_cassette

from .test_recorder_hardening import _sse, upstream_app

DEEP_700 = b'{"model":"m","x":' + b"[" * 700 + b"]" * 700 + b"}"
DEEP_100K = b"[" * 100_000 + b"]" * 100_000
BODIES: list[tuple[str, bytes, dict[str, Any]]] = [
    ("surrogate", b'{"model":"m","messages":[{"role":"user","content":"a\\ud800b"}]}', {}),
    ("header", b'{"model":"m"}', {"X-Note": b"caf\xe9 \xff"}),
    ("deep-700", DEEP_700, {}),
    ("deep-100k", DEEP_100K, {}),
    ("nan", b'{"model":"m","temperature":NaN}', {}),
    ("huge-float", b'{"model":"m","temperature":1e400}', {}),
    ("not-utf8", b'{"model":"m","content":"\xff\xfe"}', {}),
]


def _strict(line: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"bare {name} in the cassette")

    return json.loads(line.decode("utf-8"), parse_constant=refuse)


async def test_every_exchange_that_passed_through_is_recorded_as_strict_json(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        return await _sse(request, b'data: {"ok": 1}\n\ndata: [DONE]\n\n')

    caplog.set_level(logging.ERROR)
    async with upstream_app(handler) as base, Recorder(base, tmp_path / "r") as rec, httpx.AsyncClient(timeout=10) as c:
        for _, content, headers in BODIES:
            r = await c.post(rec.base_url + "/chat/completions", content=content,
                             headers={"Content-Type": "application/json", **headers})
            assert r.status_code == 200 and r.content.startswith(b'data: {"ok": 1}')
    err = capsys.readouterr().err
    assert "Traceback" not in err + caplog.text, err + caplog.text
    path = tmp_path / "r.cassette.jsonl"
    for line in path.read_bytes().splitlines():
        _strict(line)
    exchanges = load_cassette(path).exchanges
    assert len(exchanges) == len(BODIES)
    got = {name: x.request for (name, _, _), x in zip(BODIES, exchanges, strict=True)}
    assert got["surrogate"].body["messages"][0]["content"] == "a\ud800b"
    assert got["header"].headers["x-note"].encode("utf-8", "surrogateescape") == b"caf\xe9 \xff"
    for name in ("deep-700", "deep-100k", "nan", "huge-float"):  # kept whole, as the text sent
        sent = dict((n, c) for n, c, _ in BODIES)[name]
        assert got[name].body == sent.decode("utf-8"), name
    assert got["not-utf8"].body.encode("utf-8", "surrogateescape") == BODIES[-1][1]


# --- item 7: timings a replay cannot honour are refused at load --------------------------------

HEADER = '{"type": "cassette", "version": 1}\n'


def _exchange(dt: str = "0", headers_ms: str = "0") -> str:
    return ('{"type": "exchange", "request": {"method": "POST", "path": "/chat/completions"}, "status": 200, '
            f'"headers_ms": {headers_ms}, "reads": [{{"text": "data: [DONE]\\n\\n", "dt_ms": {dt}}}]}}\n')


@pytest.mark.parametrize(("dt", "headers_ms", "field"), [
    ("Infinity", "0", "reads[0].dt_ms"), ("1e308", "0", "reads[0].dt_ms"), ("NaN", "0", "reads[0].dt_ms"),
    ("-1", "0", "reads[0].dt_ms"), ("3600001", "0", "reads[0].dt_ms"),
    ("0", "Infinity", "headers_ms"), ("0", "NaN", "headers_ms"), ("0", "1e308", "headers_ms"), ("0", "true", "headers_ms"),
])
def test_non_finite_and_absurd_timings_are_refused_at_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dt: str, headers_ms: str, field: str
) -> None:
    """Before: `dt_ms: Infinity` or `1e308` stalled `serve --replay` for ever and `headers_ms: NaN`
    crashed it. Now the load names the line and field and says the limit; serve exits 2."""
    from dshkit.cli import main
    from dshkit.mock_server.cassette import CassetteError

    path = tmp_path / "t.cassette.jsonl"
    path.write_text(HEADER + _exchange(dt, headers_ms), encoding="utf-8")
    with pytest.raises(CassetteError) as info:
        load_cassette(path)
    assert (info.value.line, info.value.field) == (2, field)
    assert "from 0 to 3600000 (one hour)" in str(info.value) or "must be a number" in str(info.value)
    assert main(["serve", "--replay", str(path), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2" in err and field in err and "Traceback" not in err


def test_the_longest_allowed_timing_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "t.cassette.jsonl"
    path.write_text(HEADER + _exchange("3600000", "3600000"), encoding="utf-8")
    assert load_cassette(path).exchanges[0].headers_ms == 3_600_000


def test_a_deep_last_line_is_an_error_not_a_torn_tail(tmp_path: Path) -> None:
    """A line too deep to parse was never cut by a crash: it is reported, not set aside."""
    from dshkit.mock_server.cassette import CassetteError

    path = tmp_path / "d.cassette.jsonl"
    path.write_text(HEADER + _exchange() + "[" * 50_000 + "]" * 50_000 + "\n", encoding="utf-8")
    with pytest.raises(CassetteError, match="nested 50000 levels deep") as info:
        load_cassette(path)
    assert info.value.line == 3


# --- item 3: a second recorder never makes the first one's exchanges vanish ----------------------


async def test_a_second_overwrite_recorder_is_refused_while_the_first_records(tmp_path: Path) -> None:
    """Before: the second `record --overwrite` replaced the file; the first kept appending to the
    unlinked inode, printing `exchange n=…` for exchanges no file held."""
    import asyncio
    import signal
    import subprocess

    from .test_recorder_hardening import _line, _record_cmd

    async def handler(request: web.Request) -> web.StreamResponse:
        return await _sse(request, b"data: [DONE]\n\n")

    out = str(tmp_path / "shared")
    async with upstream_app(handler) as base:
        first = await asyncio.create_subprocess_exec(*_record_cmd("--upstream", base, "--out", out, "--overwrite"),
                                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert first.stdout is not None
            ready = await _line(first.stdout)
            second = await asyncio.to_thread(
                subprocess.run, _record_cmd("--upstream", base, "--out", out, "--overwrite"),
                capture_output=True, text=True, timeout=60, check=False,
            )
            assert second.returncode == 2, second.stderr
            assert "another recorder is writing this cassette" in second.stderr and "Traceback" not in second.stderr
            async with httpx.AsyncClient(timeout=10) as c:
                for _ in range(3):
                    r = await c.post(ready["base_url"] + "/chat/completions", json={"model": "m"})
                    assert r.status_code == 200
            for n in (1, 2, 3):
                assert (await _line(first.stdout))["n"] == n
        finally:
            first.send_signal(signal.SIGINT)
            await asyncio.wait_for(first.communicate(), 30)
    assert len(load_cassette(out).exchanges) == 3  # every exchange the first printed is in the file


async def test_a_cassette_replaced_under_the_recorder_fails_loudly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Something that ignores the lock (`mv`, an editor) replaces the file: the next exchange is
    not reported as saved; stderr says the file was replaced and the client's connection breaks."""
    async def handler(request: web.Request) -> web.StreamResponse:
        return await _sse(request, b"data: [DONE]\n\n")

    saved: list[dict[str, Any]] = []
    async with upstream_app(handler) as base, Recorder(base, tmp_path / "r", on_event=saved.append) as rec, \
            httpx.AsyncClient(timeout=10) as c:
        assert (await c.post(rec.base_url + "/chat/completions", json={"model": "m"})).status_code == 200
        replacement = tmp_path / "other.jsonl"
        replacement.write_text('{"type": "cassette", "version": 1}\n', encoding="utf-8")
        replacement.replace(tmp_path / "r.cassette.jsonl")
        with pytest.raises(httpx.HTTPError):
            await c.post(rec.base_url + "/chat/completions", json={"model": "m"})
    assert [e["n"] for e in saved] == [1]
    assert "was replaced by another file while recording" in capsys.readouterr().err
