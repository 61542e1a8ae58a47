"""The cassette format, `dshkit.mock_server.cassette`: loading with located errors (bad header,
bad reads, timings a replay cannot honour, a line too deep to parse), a torn last line set aside
and moved away by the next recorder's appender along with a dead writer's temp files, and the
conversion between raw-step scripts and cassettes.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from dshkit.cli import main
from dshkit.mock_server import Recorder, cassette_to_scripts, load_cassette
from dshkit.mock_server.cassette import CassetteError, script_to_cassette

from ..upstream import upstream
from .test_record import BODY, _sse

RECORDINGS = Path(__file__).parents[2] / "recordings"


def test_cassette_converts_to_script_and_back(tmp_path: Path) -> None:
    cassette = load_cassette(RECORDINGS / "rate-limit-then-success")
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



# --- a torn last line, orphan temp files --------------------------------------------------------


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

    async with upstream(handler) as base, Recorder(base, path) as rec, httpx.AsyncClient(timeout=5) as c:
        assert rec.appender.existing == 2
        await c.post(rec.base_url + "/chat/completions", json=BODY)
    cassette = load_cassette(path)
    assert [x.body for x in cassette.exchanges] == [b"data: 1\n\n", b"data: 2\n\n", b"data: 4\n\n"]
    assert cassette.torn_line is None
    assert (tmp_path / "t.cassette.jsonl.torn").read_text() == torn + "\n"
    assert not orphan.exists()



# --- timings a replay cannot honour, lines too deep: refused at load ------------------------------

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
    path = tmp_path / "d.cassette.jsonl"
    path.write_text(HEADER + _exchange() + "[" * 50_000 + "]" * 50_000 + "\n", encoding="utf-8")
    with pytest.raises(CassetteError, match="nested 50000 levels deep") as info:
        load_cassette(path)
    assert info.value.line == 3

