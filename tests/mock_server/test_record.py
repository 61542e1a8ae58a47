"""The recording proxy, `dshkit.mock_server.record`: the client gets the upstream's bytes as they
arrive and the cassette keeps them read for read with their timing; secrets in every place a
client puts them are scrubbed before anything reaches the disk (long keys wherever they appear,
short ones only under a credential name); restarts on an existing cassette; an upstream that dies
mid-body; crashes and failed writes; every exchange kept as strict JSON; the Anthropic surface
through the official SDK; and the start-up errors of `dshkit record`.

Upstreams are small aiohttp apps or real mock servers on 127.0.0.1:0; waits are bounded by events
and timeouts, never sleeps.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import logging
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from aiohttp import web

from dshkit.cli import main
from dshkit.harness.secrets import MIN_SECRET_LENGTH
from dshkit.mock_server import (
    MockServer,
    MockServerFactory,
    Recorder,
    ReplayServerFactory,
    Script,
    load_cassette,
)
from dshkit.mock_server.cassette_match import CassetteRouter
from dshkit.mock_server.scripts import parse_script

from ..upstream import upstream

KEY = "sk-live-SECRET-0123456789abcdef"
BODY = {"model": "deepseek-v4-flash", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


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



# --- bytes, read boundaries and timing ---------------------------------------------------------


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

    async with (
        upstream(handler) as base,
        Recorder(base, tmp_path / "first") as rec,
        httpx.AsyncClient(timeout=5) as c,
    ):
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

    async with (
        upstream(handler) as base,
        Recorder(base, tmp_path / "paced") as rec,
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



# --- secrets ---------------------------------------------------------------------------------

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
    async with upstream(handler) as base:
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



# Every place issue 18 found a secret kept in a cassette, each a request to an upstream that
# echoes what it got. The echo matters: a secret the recorder scrubs by name must also go wherever
# its value reappears (the response body here), so each value is learned as well as replaced.
PLANTED = {
    "form_client_secret": "FORM-CS-0001",
    "form_password": "FORM-PW-0002",
    "list_token_a": "LIST-TOKEN-0003",
    "list_token_b": "LIST-TOKEN-0004",
    "bearer_field": "BEARER-FIELD-0005",
    "passphrase": "PASSPHRASE-0006",
    "cookie_field": "COOKIE-FIELD-0007",
    "secret_value": "SECRET-VALUE-0008",
    "authentication": "AUTHN-HEADER-0009",
    "x_signature": "XSIG-HEADER-0010",
    "amz_signature": "AMZ-SIG-0011",
    "oauth_code": "OAUTH-CODE-0012",
    "text_bearer": "TEXT-BEARER-0013",
    "url_token": "URLTOKEN0014",
}


async def _echo(request: web.Request) -> web.Response:
    """Answers with everything it received: path, headers and body."""
    body = await request.read()
    return web.json_response({"path": request.path_qs, "headers": dict(request.headers),
                              "body": body.decode("utf-8", "replace")})


async def test_every_place_issue_18_found_a_secret_is_scrubbed(tmp_path: Path) -> None:
    p = PLANTED
    async with upstream(_echo) as base:
        up = base.replace("http://", f"http://{p['url_token']}@")
        async with Recorder(up, tmp_path / "c") as rec, httpx.AsyncClient(timeout=5) as c:
            url = rec.base_url
            answers = [
                await c.post(url + "/oauth/token", content=(
                    f"grant_type=client_credentials&client_secret={p['form_client_secret']}"
                    f"&password={p['form_password']}&scope=read"),
                    headers={"Content-Type": "application/x-www-form-urlencoded"}),
                await c.post(url + "/chat/completions", json={
                    "model": "deepseek-chat", "messages": [{"role": "user", "content": "hi"}],
                    "tokens": [p["list_token_a"], p["list_token_b"]], "bearer": p["bearer_field"],
                    "passphrase": p["passphrase"], "cookie": p["cookie_field"],
                    "secret": {"value": p["secret_value"]}}),
                await c.get(url + "/models", headers={"Authentication": p["authentication"],
                                                      "X-Signature": p["x_signature"]}),
                await c.get(url + f"/download?X-Amz-Signature={p['amz_signature']}&code={p['oauth_code']}&mode=x"),
                await c.post(url + "/notes", content=f"GET / HTTP/1.1\nAuthorization: Bearer {p['text_bearer']}\n",
                             headers={"Content-Type": "text/plain"}),
            ]
            assert p["url_token"] not in rec.upstream
    assert [a.status_code for a in answers] == [200] * 5
    # The client got the real bytes back (the echo holds them); only the cassette is scrubbed.
    assert p["form_password"] in answers[0].text and p["oauth_code"] in answers[3].text
    sent = answers[2].json()["headers"]
    assert sent["Authorization"] == "Basic " + base64.b64encode(f"{p['url_token']}:".encode()).decode()
    files = {f.name: f.read_bytes() for f in tmp_path.iterdir()}
    leaks = [(name, f) for f, data in files.items() for name, value in p.items() if value.encode() in data]
    assert leaks == []
    basic = base64.b64encode(f"{p['url_token']}:".encode()).decode()
    assert all(basic.encode() not in data for data in files.values())

    cassette = load_cassette(tmp_path / "c")
    form, chat, models, download, notes = (x.request for x in cassette.exchanges)
    assert form.body == ("grant_type=client_credentials&client_secret={{scrubbed:client_secret}}"
                         "&password={{scrubbed:password}}&scope=read")
    assert chat.body["tokens"] == ["{{scrubbed:tokens}}"] * 2
    assert chat.body["secret"] == {"value": "{{scrubbed:secret}}"}
    assert [chat.body[k] for k in ("bearer", "passphrase", "cookie")] == [
        "{{scrubbed:bearer}}", "{{scrubbed:passphrase}}", "{{scrubbed:cookie}}"]
    assert models.headers["authentication"] == "{{scrubbed:authentication}}"
    assert models.headers["x-signature"] == "{{scrubbed:x-signature}}"
    assert download.path == "/download?X-Amz-Signature={{scrubbed:X-Amz-Signature}}&code={{scrubbed:code}}&mode=x"
    assert notes.body == "GET / HTTP/1.1\nAuthorization: Bearer {{scrubbed:Authorization}}\n"
    assert cassette.meta["upstream"] == base.replace("http://", "http://{{scrubbed:username}}@")
    # The echoed bodies lost the same values, wherever they reappeared.
    echoed: list[Any] = [json.loads(x.body) for x in cassette.exchanges]
    assert "{{scrubbed:password}}" in echoed[0]["body"] and "{{scrubbed:code}}" in echoed[3]["path"]



# A short API key (`k`, `the`, `data`) is scrubbed where it stands under a credential name and
# nowhere else: the recorder, the cassette's replay and match, the page of `dshkit view` and the
# mock server's journal (served by the admin API) keep every ordinary word that happens to equal
# the key. A key long enough to match safely is still scrubbed wherever it appears.
TEXT = "the data: k, data.csv and the metadata of the kit"

HEADER_LABELS = {"authorization", "access-control-allow-credentials"}


def _labels(text: str) -> set[str]:
    return set(re.findall(r"\{\{scrubbed:([^}]*)\}\}", text))


@pytest.mark.parametrize("key", ["k", "the", "data", "x" * (MIN_SECRET_LENGTH - 1)])
async def test_a_short_key_rewrites_nothing_in_the_cassette_its_replay_or_its_page(
    key: str, dshkit_mock_server: MockServerFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    upstream = await dshkit_mock_server(Script.replies(TEXT))
    body = {"model": "deepseek-chat", "messages": [{"role": "user", "content": TEXT}]}
    out = tmp_path / "short"
    async with Recorder(upstream.base_url, out) as rec, httpx.AsyncClient(timeout=10) as c:
        r = await c.post(rec.base_url + "/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 200
    text = (tmp_path / "short.cassette.jsonl").read_text()
    exchange = json.loads(text.splitlines()[1])
    assert exchange["request"]["body"] == body  # the request as sent, every word kept
    assert exchange["request"]["headers"]["authorization"].startswith("{{scrubbed")  # by its name
    assert TEXT in "".join(read.get("text", "") for read in exchange["reads"])
    assert "scrubbed" not in json.dumps(exchange["request"]["body"]) + json.dumps(exchange["reads"])
    assert _labels(text) <= HEADER_LABELS

    router = CassetteRouter.for_cassette(load_cassette(out))
    async with MockServer(router=router, admin=True) as replay, httpx.AsyncClient(timeout=10) as c:
        r = await c.post(replay.base_url + "/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
        assert r.json()["choices"][0]["message"]["content"] == TEXT
        entry = (await c.get(replay.base_url + "/_dshkit/journal")).json()["entries"][0]
    assert entry["body"] == body and TEXT in entry["response"]
    assert "scrubbed" not in json.dumps(entry["body"]) + entry["response"]

    page = tmp_path / "page.html"
    assert main(["view", str(out) + ".cassette.jsonl", "-o", str(page)]) == 0
    capsys.readouterr()
    html = page.read_text(encoding="utf-8")
    assert "metadata of the kit" in html and "un{{scrubbed" not in html
    assert _labels(html) <= HEADER_LABELS


async def test_a_long_key_is_still_scrubbed_wherever_it_appears(
    dshkit_mock_server: MockServerFactory, tmp_path: Path
) -> None:
    key = "sk-long-enough-0123"
    upstream = await dshkit_mock_server(Script.replies(f"your key is {key}."))
    body = {"model": "deepseek-chat", "messages": [{"role": "user", "content": f"is {key} mine?"}]}
    async with Recorder(upstream.base_url, tmp_path / "long") as rec, httpx.AsyncClient(timeout=10) as c:
        await c.post(rec.base_url + "/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
    text = (tmp_path / "long.cassette.jsonl").read_text()
    assert key not in text
    assert "is {{scrubbed:authorization}} mine?" in text and "your key is {{scrubbed:authorization}}." in text
    # and the live request, key and all, still matches the scrubbed recording
    router = CassetteRouter.for_cassette(load_cassette(tmp_path / "long"))
    async with MockServer(router=router) as replay, httpx.AsyncClient(timeout=10) as c:
        r = await c.post(replay.base_url + "/chat/completions", json=body)
    assert r.status_code == 200 and router.misses == []



# --- restarting on an existing cassette, and a second recorder ------------------------------


async def test_restart_appends_and_overwrite_starts_afresh(tmp_path: Path) -> None:
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        return await _sse(request, b'data: {"n": %d}\n\ndata: [DONE]\n\n' % calls)

    async with upstream(handler) as base:
        for _ in range(2):
            async with Recorder(base, tmp_path / "r") as rec, httpx.AsyncClient(timeout=5) as c:
                await c.post(rec.base_url + "/chat/completions", json=BODY)
        assert [x.body[:13] for x in load_cassette(tmp_path / "r").exchanges] == [b'data: {"n": 1', b'data: {"n": 2']
        async with Recorder(base, tmp_path / "r", overwrite=True) as rec, httpx.AsyncClient(timeout=5) as c:
            await c.post(rec.base_url + "/chat/completions", json=BODY)
    assert [x.body[:13] for x in load_cassette(tmp_path / "r").exchanges] == [b'data: {"n": 3']


def test_record_refuses_an_out_that_is_not_a_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"my": "data"}\n')
    assert main(["record", "--upstream", "http://127.0.0.1:9", "--out", str(notes)]) == 2
    err = capsys.readouterr().err
    assert "is not a cassette" in err and "--overwrite" in err
    assert notes.read_text() == '{"my": "data"}\n'  # nothing was replaced



async def test_a_second_overwrite_recorder_is_refused_while_the_first_records(tmp_path: Path) -> None:
    """Before: the second `record --overwrite` replaced the file; the first kept appending to the
    unlinked inode, printing `exchange n=…` for exchanges no file held."""
    async def handler(request: web.Request) -> web.StreamResponse:
        return await _sse(request, b"data: [DONE]\n\n")

    out = str(tmp_path / "shared")
    async with upstream(handler) as base:
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
    async with upstream(handler) as base, Recorder(base, tmp_path / "r", on_event=saved.append) as rec, \
            httpx.AsyncClient(timeout=10) as c:
        assert (await c.post(rec.base_url + "/chat/completions", json={"model": "m"})).status_code == 200
        replacement = tmp_path / "other.jsonl"
        replacement.write_text('{"type": "cassette", "version": 1}\n', encoding="utf-8")
        replacement.replace(tmp_path / "r.cassette.jsonl")
        with pytest.raises(httpx.HTTPError):
            await c.post(rec.base_url + "/chat/completions", json={"model": "m"})
    assert [e["n"] for e in saved] == [1]
    assert "was replaced by another file while recording" in capsys.readouterr().err



# --- an upstream that dies mid-stream, a client that hangs up ---------------------------------

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
    async with upstream(_dies_mid_stream) as base:
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



# --- append-only writes, failed writes, crashes ----------------------------------------------


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
    async with upstream(handler) as base, Recorder(base, path) as rec, httpx.AsyncClient(timeout=5) as c:
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

    async with upstream(handler) as base:
        proc = await asyncio.create_subprocess_exec(
            *_record_cmd("--upstream", base, "--out", str(tmp_path / "k")),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            ready = await _line(proc.stdout)
            assert ready["type"] == "ready"
            async with httpx.AsyncClient(timeout=5) as c:
                await _post(c, ready["base_url"])
                assert (await _line(proc.stdout))["type"] == "exchange"
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



async def test_sigkill_while_exchanges_stream_leaves_a_loadable_cassette(tmp_path: Path) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await _sse(request, b'data: {"pad": "' + b"y" * 3000 + b'"}\n\n', b"data: [DONE]\n\n")

    async with upstream(handler) as base:
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



# --- every exchange is recorded, as strict JSON (issue 18) -------------------------------------
# A body with a lone surrogate, a header that is not UTF-8, bodies 700 and 100,000 levels deep,
# `NaN`, `1e400` and bytes that are not UTF-8. Before, these dropped the exchange with a traceback,
# or answered 500 while the client had its answer, or wrote a bare `NaN` into the cassette.
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
    async with upstream(handler) as base, Recorder(base, tmp_path / "r") as rec, httpx.AsyncClient(timeout=10) as c:
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



# --- the Anthropic Messages surface ------------------------------------------------------------
# The recorder in front of the mock, the official SDK through it, then the cassette replayed byte
# for byte (sequence and body matching).
ANTHROPIC_KEY = "sk-ant-live-SECRET-0123456789"

REQUEST: dict[str, Any] = {"model": "claude-opus-4-1", "max_tokens": 512,
                           "messages": [{"role": "user", "content": "weather in Zürich?"}]}

STEP = {"reply": {"reasoning": "Look it up — é.", "content": "Let me check.",
                  "tool_calls": [{"name": "weather", "id": "call_00_anthropicrec000000000001",
                                  "arguments": '{"city": "Zürich"}'}]},
        "stream": {"split": {"mode": "fixed", "size": 3},
                   "writes": {"events_per_write": 0, "random_max": 40, "inside_utf8": True}}}


def _final(base_url: str, **extra: Any) -> tuple[Any, list[str]]:
    with anthropic.Anthropic(base_url=base_url, api_key=ANTHROPIC_KEY, max_retries=0, timeout=5.0) as client, \
            client.messages.stream(**REQUEST, **extra) as stream:
        kinds = [e.type for e in stream]
        return stream.get_final_message(), kinds


async def test_record_then_replay_with_the_sdk(
    dshkit_mock_server: MockServerFactory, dshkit_replay: ReplayServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(Script.of(STEP), api_key=ANTHROPIC_KEY, seed=5)
    async with Recorder(upstream.base_url, tmp_path / "anth") as rec:
        live, live_kinds = await asyncio.to_thread(_final, rec.base_url + "/anthropic")
    assert live.model == "deepseek-v4-pro" and live.stop_reason == "tool_use"
    (x,) = load_cassette(tmp_path / "anth").exchanges
    assert x.request.path == "/anthropic/v1/messages" and x.is_chat
    # the reads hold what the upstream sent, however it was cut into reads (one read under
    # load, several when idle); replay writes those very reads back below
    assert x.body == upstream.journal.last.data
    text = (tmp_path / "anth.cassette.jsonl").read_text("utf-8")
    assert ANTHROPIC_KEY not in text  # the SDK's Bearer header is scrubbed

    for match in ("sequence", "body"):
        replay = await dshkit_replay(tmp_path / "anth", speed=0, match=match)
        again, kinds = await asyncio.to_thread(_final, replay.anthropic_base_url)
        assert again.model_dump() == live.model_dump() and kinds == live_kinds
        assert [w.data for w in replay.journal.last.writes] == [r.data for r in x.reads]


async def test_x_api_key_is_scrubbed_and_a_changed_body_is_refused(
    dshkit_mock_server: MockServerFactory, dshkit_replay: ReplayServerFactory, tmp_path: Path
) -> None:
    upstream = await dshkit_mock_server(Script.of({"reply": {"content": "hi"}}))
    body = {**REQUEST, "stream": True}
    async with Recorder(upstream.base_url, tmp_path / "key") as rec, httpx.AsyncClient(timeout=5) as c:
        first = await c.post(rec.base_url + "/anthropic/messages", json=body, headers={"x-api-key": ANTHROPIC_KEY})
    (x,) = load_cassette(tmp_path / "key").exchanges
    assert x.request.headers["x-api-key"] == "{{scrubbed:x-api-key}}"
    assert ANTHROPIC_KEY not in (tmp_path / "key.cassette.jsonl").read_text("utf-8")
    replay = await dshkit_replay(tmp_path / "key", match="body", check_consumed=False,
                                assert_all_requests_served=False)
    async with httpx.AsyncClient(timeout=5) as c:
        h = {"x-api-key": "another-key"}  # any key: the recorded one was scrubbed
        other = await c.post(replay.make_url("/anthropic/messages"), json={**body, "max_tokens": 7}, headers=h)
        assert other.status_code == 418 and "max_tokens" in other.json()["error"]["message"]
        same = await c.post(replay.make_url("/anthropic/messages"), json=body, headers=h)
    assert same.status_code == 200 and same.content == first.content



# --- start-up errors -------------------------------------------------------------------------


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



@pytest.mark.parametrize("upstream", ["notaurl", "ftp://example.com", "http://"])
def test_record_refuses_an_upstream_that_is_not_an_http_url(
    upstream: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["record", "--upstream", upstream, "--out", str(tmp_path / "x")]) == 2
    assert "is not an http(s) URL" in capsys.readouterr().err
    assert not (tmp_path / "x.cassette.jsonl").exists()

