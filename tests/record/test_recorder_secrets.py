"""The recorder scrubs by the one secrets policy: every place issue 18 found a secret kept in a
cassette, each a request through a real `Recorder` to an upstream that echoes what it got.

The echo matters: a secret the recorder scrubs by name must also go wherever its value
reappears (the response body here), so each value is learned as well as replaced. The ready
line with a username-only upstream credential is tested with the password one, in
test_recorder_hardening.py.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
from aiohttp import web

from dshkit.mock_server import Recorder, load_cassette

from .test_recorder_hardening import upstream_app

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
    async with upstream_app(_echo) as base:
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
